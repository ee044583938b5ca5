"""The Model interface every backend implements, and the backend registry.

Backends implement `_generate` for single-sample requests (n == 1) and optionally `_score`.
The public `generate` expands `n` into n rows with derived seeds, so every backend supports
best-of-N sampling and batches the rows together.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from sparring.errors import ScoringNotSupported
from sparring.registry import Registry
from sparring.types import Completion, GenerateRequest, ScoreRequest, Strict

BACKENDS: Registry[type[Model]] = Registry(
    "backend", scan=["sparring.models"], marker="@register_backend(", entry_points="sparring.backends"
)


def register_backend(*names: str):
    """Class decorator: `@register_backend("hf")`."""
    return BACKENDS.register(*names)


def _raise_if_all_failed(outs: list[Any]) -> list[Any]:
    """Per-row results; when every row failed there is nothing to isolate: the call raises (a
    single request fails as an exception, as callers expect)."""
    if outs and all(isinstance(o, BaseException) for o in outs):
        raise outs[0]
    return outs


_SURROGATES = re.compile("[\ud800-\udfff]")


def clean_completion(c: Any) -> Any:
    """Text from a model is untrusted: code points that cannot be encoded as UTF-8 (lone UTF-16
    surrogates, e.g. from a JSON escape "\\udcff") would make the record unstorable. They are
    replaced by U+FFFD here, where text enters, and the completion says so (`sanitized`)."""
    if not isinstance(c, Completion) or c.text.isascii():
        return c
    try:
        c.text.encode("utf-8")
    except UnicodeEncodeError:
        return c.model_copy(update={"text": _SURROGATES.sub("\ufffd", c.text), "sanitized": True})
    return c


class Model(ABC):
    """A language model behind one batched interface.

    `name` is the alias it was created under (for records); `can_score` tells callers whether
    `score` works or whether they must fall back to parsing generated text.
    """

    can_score: ClassVar[bool] = True
    # True for backends whose calls are remote/slow per request and should be issued concurrently.
    concurrent: ClassVar[bool] = False

    class Args(Strict):
        """Backend arguments (the `args:` mapping of a model spec). Subclasses extend this."""

    def __init__(self, name: str = "model", **kwargs: Any):
        # Raises pydantic.ValidationError on unknown/invalid args; the registry turns that into a
        # ConfigError naming the models file and key.
        self.args = self.Args(**kwargs)
        self.name = name

    # -- public API -------------------------------------------------------------------------
    def generate(self, requests: Sequence[GenerateRequest]) -> list[list[Completion]]:
        """One list of `n` completions per request, in request order — or, for a request that
        failed on its own (a 400, a prompt too long), the exception in its place: one bad request
        never fails the others of its batch. When every request failed, the call raises."""
        if all(req.sampling.n == 1 for req in requests):  # the common case: one row per request
            outs = _raise_if_all_failed(self._generate(list(requests)) if requests else [])
            if len(outs) != len(requests):
                raise RuntimeError(f"{type(self).__name__} returned {len(outs)} completions for {len(requests)} rows")
            return [o if isinstance(o, BaseException) else [clean_completion(o)] for o in outs]  # type: ignore[misc]
        flat: list[GenerateRequest] = []
        counts: list[int] = []
        for req in requests:
            n = req.sampling.n
            counts.append(n)
            for i in range(n):
                seed = None if req.sampling.seed is None else req.sampling.seed + i
                flat.append(req.model_copy(update={"sampling": req.sampling.model_copy(
                    update={"n": 1, "seed": seed})}))
        outs = _raise_if_all_failed(self._generate(flat) if flat else [])
        if len(outs) != len(flat):
            raise RuntimeError(f"{type(self).__name__} returned {len(outs)} completions for {len(flat)} rows")
        grouped: list[Any] = []
        pos = 0
        for n in counts:
            rows = outs[pos : pos + n]
            failed = next((o for o in rows if isinstance(o, BaseException)), None)
            grouped.append(failed if failed is not None else [clean_completion(o) for o in rows])
            pos += n
        return grouped

    def secrets(self) -> list[Any]:
        """Credential values this model holds (API keys), so that whatever the engine stores can
        be redacted of them; none for local models."""
        return []

    def score(self, requests: Sequence[ScoreRequest]) -> list[list[float]]:
        """Log-probability of each option (summed over its tokens) as the next continuation (or,
        per request, the exception that request failed with)."""
        if not self.can_score:
            raise ScoringNotSupported(f"backend {type(self).__name__} cannot score options; parse a generated answer")
        return _raise_if_all_failed(self._score(list(requests)) if requests else [])

    def close(self) -> None:  # noqa: B027 — optional hook, a no-op for most backends
        """Release clients/threads. Safe to call twice."""

    # -- backend hooks ----------------------------------------------------------------------
    @abstractmethod
    def _generate(self, requests: list[GenerateRequest]) -> list[Completion]:
        """Generate one completion per request; every request has sampling.n == 1."""

    def _score(self, requests: list[ScoreRequest]) -> list[list[float]]:
        raise ScoringNotSupported(f"backend {type(self).__name__} cannot score options")

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
