"""Scripted test doubles: deterministic models for fast tests of agents, games and the engine.

Why: engine and game tests must not load a real model, yet they need realistic behaviour —
batching, seeds, stop strings, best-of-N, latency (concurrency), failures, scoring and the
"cannot score" fallback. Every choice made here is a pure function of the request (its messages,
sampling seed) and the model seed, so results never depend on batch size or order — except the
explicitly stateful `cycle_by: conversation|global` and `fail_every` counters.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import random
import re
import threading
import time
from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field, model_validator

from sparring.errors import BackendError, ConfigError, ScoringNotSupported
from sparring.models.base import Model, register_backend
from sparring.types import Completion, GenerateRequest, Message, ScoreRequest, new

# Probabilities are floored before the log so that "impossible" options stay finite (JSON-safe).
PROB_FLOOR = 1e-9
_WORD = re.compile(r"\S+")


def count_tokens(text: str) -> int:
    """Whitespace tokens: the usage unit of backends without a tokenizer."""
    return len(text.split())


def prompt_tokens(messages: list[Message], prefix: str = "") -> int:
    return sum(count_tokens(m.content) for m in messages) + count_tokens(prefix)


def normalised_logprobs(weights: list[float]) -> list[float]:
    """Non-negative weights -> log-probabilities summing to 1 (all-zero weights -> uniform)."""
    if any(w < 0 or math.isnan(w) for w in weights):
        raise BackendError(f"option weights must be non-negative numbers, got {weights}")
    total = sum(weights)
    if total <= 0:
        return [math.log(1.0 / len(weights))] * len(weights)
    return [math.log(max(w / total, PROB_FLOOR)) for w in weights]


def apply_stop(text: str, stop: list[str], max_new_tokens: int) -> tuple[str, str]:
    """Cut at the earliest stop string, then at `max_new_tokens` whitespace tokens.

    Returns (text, finish_reason); mirrors what a real backend does with the same settings.
    """
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
    if cut >= 0:
        text = text[:cut]
    if len(text.split()) <= max_new_tokens:  # the common case, without a match object per word
        return text, "stop"
    words = list(_WORD.finditer(text))
    if len(words) > max_new_tokens:
        return text[: words[max_new_tokens - 1].end()], "length"
    return text, "stop"


def import_callable(path: str) -> Callable[..., Any]:
    """Resolve "package.module:function" (config files cannot hold Python objects)."""
    module, sep, attr = path.partition(":")
    if not sep or not module or not attr:
        raise ConfigError(f"expected 'package.module:function', got {path!r}")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"cannot import {path!r}: {e}") from None
    if not callable(obj):
        raise ConfigError(f"{path!r} is not callable")
    return obj


def request_key(*parts: Any) -> int:
    """Stable 64-bit integer from JSON-able parts (used to seed per-request RNGs)."""
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:8], "big")


_BRIEF_MESSAGES = ("[message] I would like the books; you can keep the hats.",
                   "[message] The balls matter most to me. What do you need?",
                   "[message] Let us split evenly.")
_BRIEF_PROPOSALS = ("[propose] (1 books, 1 hats, 1 balls)", "[propose] (0 books, 1 hats, 1 balls)",
                    "[propose] (1 book, 0 hats, 0 balls)", "[propose] (0 books, 0 hats, 1 ball)")


def brief_negotiator(request: GenerateRequest) -> str:
    """A Deal or No Deal player for the shortest legal game: one message, then a proposal
    (every proposal is within any pool, since each item count is at least 1). The wording is
    picked by the request's seed, so games differ but replay identically."""
    said = any(m.role == "assistant" for m in request.messages)
    pick = (request.sampling.seed or 0) >> 3
    return _BRIEF_PROPOSALS[pick % len(_BRIEF_PROPOSALS)] if said else _BRIEF_MESSAGES[pick % len(_BRIEF_MESSAGES)]


def echo(request: GenerateRequest) -> str:
    """Reply with the last message's text (`function: sparring.models.scripted:echo`)."""
    return request.messages[-1].content if request.messages else ""


@register_backend("scripted")
class ScriptedModel(Model):
    """Deterministic replies and scores without any neural network.

    Generation modes:
      fixed     always `text`.
      cycle     `texts` in turn. `cycle_by: conversation` (default) keeps one counter per
                conversation — the request's context `episode_id` and `player` plus its opening
                (system messages and the first other message) — so every player of every episode walks the list from the start;
                `cycle_by: global` uses one counter over all requests this model receives.
                `cycle_by: turn` is stateless: the index is the number of assistant messages
                already in the conversation (batch-order independent).
      random    a choice from `texts`, seeded by (model seed, request seed, messages, prefix):
                the same request always gets the same reply whatever the batch.
      callable  `function(request) -> str`; a "module:function" path or a Python callable.
    Scoring modes (`score_mode`) return normalised log-probabilities: uniform, fixed (`scores`
    maps option -> weight, absent options weigh 0), random (seeded per request), callable
    (`score_function(request) -> list[float]` weights), prefer_text (options that occur as whole
    words, case-sensitively, in the last message get weight `prefer_weight`, others 1 — a fake
    judge that believes what it read last).
    """

    class Args(Model.Args):
        mode: Literal["fixed", "cycle", "random", "callable"] = "fixed"
        text: str = "I have nothing to add."
        texts: list[str] = Field(default_factory=list)
        function: str | Callable[..., str] | None = None
        cycle_by: Literal["conversation", "global", "turn"] = "conversation"
        seed: int = 0
        latency_s: float = Field(0.0, ge=0.0, description="sleep per generate/score call")
        fail_every: int | None = Field(None, ge=1, description="the k-th, 2k-th... request fails")
        fail_on_text: str | None = Field(None, description="requests whose messages contain it fail")
        fail_retryable: bool = False
        score_mode: Literal["uniform", "fixed", "random", "callable", "prefer_text"] = "uniform"
        scores: dict[str, float] = Field(default_factory=dict)
        score_function: str | Callable[..., list[float]] | None = None
        prefer_weight: float = Field(9.0, gt=0.0)
        scoring: bool = Field(True, description="False: score() raises ScoringNotSupported")
        concurrent: bool = Field(False, description="ask the engine to call it like a remote API")
        record_requests: bool = Field(True, description="keep every request in `.calls` (for test "
                                                        "assertions); false for long runs")

        @model_validator(mode="after")
        def _check_mode(self):
            if self.mode in ("cycle", "random") and not self.texts:
                raise ValueError(f"mode {self.mode!r} needs a non-empty 'texts' list")
            if self.mode == "callable" and self.function is None:
                raise ValueError("mode 'callable' needs 'function' ('package.module:function')")
            if self.score_mode == "callable" and self.score_function is None:
                raise ValueError("score_mode 'callable' needs 'score_function'")
            if any(v < 0 for v in self.scores.values()):
                raise ValueError("'scores' weights must be non-negative")
            return self

    args: Args  # the validated `args:` of this backend's spec

    def __init__(self, name: str = "scripted", **kwargs: Any):
        super().__init__(name, **kwargs)
        a = self.args
        # Instance attributes shadow the class defaults of Model so tests can flip them per model.
        self.can_score = a.scoring  # type: ignore[misc]
        self.concurrent = a.concurrent  # type: ignore[misc]
        self._function = self._resolve(a.function)
        self._score_function = self._resolve(a.score_function)
        self.calls: list[GenerateRequest | ScoreRequest] = []
        self.batch_sizes: list[int] = []
        self._requests_seen = 0
        self._counters: dict[int, int] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _resolve(fn: str | Callable[..., Any] | None) -> Callable[..., Any] | None:
        return import_callable(fn) if isinstance(fn, str) else fn

    # -- shared bookkeeping -------------------------------------------------------------------
    def _admit(self, requests: list[GenerateRequest] | list[ScoreRequest]) -> None:
        """Record the batch and raise the injected failure, if any request triggers one."""
        a = self.args
        with self._lock:
            if a.record_requests:
                self.calls.extend(requests)
                self.batch_sizes.append(len(requests))
            first = self._requests_seen + 1
            self._requests_seen += len(requests)
            last = self._requests_seen
        if a.fail_every is not None:
            hits = [k for k in range(first, last + 1) if k % a.fail_every == 0]
            if hits:
                raise BackendError(f"scripted failure: request #{hits[0]} (fail_every={a.fail_every})",
                                   retryable=a.fail_retryable)
        if a.fail_on_text:
            for req in requests:
                if any(a.fail_on_text in m.content for m in req.messages):
                    raise BackendError(f"scripted failure: a message contains {a.fail_on_text!r}",
                                       retryable=a.fail_retryable)

    def _key(self, req: GenerateRequest | ScoreRequest, *extra: str) -> bytes:
        """A digest of (model seed, request seed, messages, prefix, extra): what a reply depends on.

        Hashed directly (not via JSON): this runs on every request the engine benchmark makes.
        """
        seed = req.sampling.seed if isinstance(req, GenerateRequest) else None
        parts = [str(self.args.seed), str(seed), req.assistant_prefix, *extra]
        for m in req.messages:
            parts += (m.role, m.content)
        return hashlib.blake2b("\x1f".join(parts).encode(), digest_size=32).digest()

    # -- generation --------------------------------------------------------------------------
    def _generate(self, requests: list[GenerateRequest]) -> list[Completion]:
        start = time.perf_counter()
        self._admit(requests)
        if self.args.latency_s:
            time.sleep(self.args.latency_s)
        texts = [self._reply(r) for r in requests]
        latency = time.perf_counter() - start
        out = []
        for req, raw in zip(requests, texts, strict=True):
            text, finish = apply_stop(raw, req.sampling.stop, req.sampling.max_new_tokens)
            usage = {"prompt_tokens": prompt_tokens(req.messages, req.assistant_prefix),
                     "completion_tokens": count_tokens(text)}
            out.append(new(Completion, text=text, finish_reason=finish, usage=usage, latency_s=latency))
        return out

    def _reply(self, req: GenerateRequest) -> str:
        a = self.args
        if a.mode == "fixed":
            return a.text
        if a.mode == "random":
            return a.texts[int.from_bytes(self._key(req)[:8], "big") % len(a.texts)]
        if a.mode == "callable":
            assert self._function is not None
            result = self._function(req)
            if not isinstance(result, str):
                raise BackendError(f"scripted function returned {type(result).__name__}, expected str")
            return result
        return a.texts[self._cycle_index(req) % len(a.texts)]

    def _cycle_index(self, req: GenerateRequest) -> int:
        by = self.args.cycle_by
        if by == "turn":
            return sum(m.role == "assistant" for m in req.messages)
        if by == "global":
            key = 0
        else:
            first_turn = next((i for i, m in enumerate(req.messages) if m.role != "system"), len(req.messages))
            opening = [(m.role, m.content) for m in req.messages[: first_turn + 1]]
            key = request_key(req.context.get("episode_id"), req.context.get("player"), opening)
        with self._lock:
            index = self._counters.get(key, 0)
            self._counters[key] = index + 1
        return index

    # -- scoring -----------------------------------------------------------------------------
    def _score(self, requests: list[ScoreRequest]) -> list[list[float]]:
        if not self.args.scoring:  # reached only if a caller bypasses Model.score
            raise ScoringNotSupported(f"scripted model {self.name!r} has scoring disabled")
        self._admit(requests)
        if self.args.latency_s:
            time.sleep(self.args.latency_s)
        return [normalised_logprobs(self._weights(r)) for r in requests]

    def _weights(self, req: ScoreRequest) -> list[float]:
        a, options = self.args, req.options
        if a.score_mode == "uniform":
            return [1.0] * len(options)
        if a.score_mode == "fixed":
            return [a.scores.get(o, 0.0) for o in options]
        if a.score_mode == "random":
            digest = self._key(req, *options)
            if len(options) <= 4:  # 8 digest bytes per weight: no RNG object needed
                return [int.from_bytes(digest[8 * i : 8 * i + 8], "big") / 2**64 for i in range(len(options))]
            rng = random.Random(int.from_bytes(digest[:8], "big"))
            return [rng.random() for _ in options]
        if a.score_mode == "callable":
            assert self._score_function is not None
            weights = [float(w) for w in self._score_function(req)]
            if len(weights) != len(options):
                raise BackendError(f"score_function returned {len(weights)} weights for {len(options)} options")
            return weights
        last = req.messages[-1].content if req.messages else ""
        return [a.prefer_weight if o.strip() and re.search(rf"(?<!\w){re.escape(o.strip())}(?!\w)", last)
                else 1.0 for o in options]
