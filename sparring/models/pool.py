"""The model pool: each named model is built once, on first use, and shared by every agent.

Why: a tournament seats the same model in many agents (debater A, debater B, judge) and loading
a local model takes seconds to minutes and gigabytes; aliases of one spec must share that one
instance. Creation is lazy so a run never loads models it does not use, and thread-safe because
the runner may ask for models from worker threads.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sparring.models.base import Model
from sparring.models.registry import create_model, load_model_specs, resolve_name
from sparring.models.spec import ModelSpec

log = logging.getLogger(__name__)


class ModelPool:
    """Names/aliases -> one live Model each. `add` injects ready-made models (tests, replay)."""

    def __init__(self, specs: Mapping[str, ModelSpec] | None = None,
                 factory: Callable[[ModelSpec], Model] | None = None):
        self.specs: dict[str, ModelSpec] = dict(load_model_specs() if specs is None else specs)
        self._factory = factory or (lambda spec: create_model(spec))
        self._models: dict[str, Model] = {}
        self._injected: dict[str, str] = {}  # name or alias of an injected model -> its key
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def resolve(self, name: str) -> str:
        """Canonical name (injected names first, then spec names and aliases)."""
        with self._lock:
            if name in self._injected:
                return self._injected[name]
        return resolve_name(name, self.specs)

    def add(self, name: str, model: Model, aliases: Iterable[str] = ()) -> Model:
        """Register an already built model under `name` (and aliases); the pool will close it."""
        with self._lock:
            for key in (name, *aliases):
                self._injected[key] = name
            self._models[name] = model
        return model

    def get(self, name: str) -> Model:
        """The model for a name or alias, created on first use (UnknownNameError if unknown)."""
        key = self.resolve(name)
        with self._lock:
            model = self._models.get(key)
            if model is not None:
                return model
            creating = self._locks.setdefault(key, threading.Lock())
        # Per-model lock: loading one model does not block users of the others.
        with creating:
            with self._lock:
                model = self._models.get(key)
            if model is None:
                log.info("loading model %s (%s)", key, self.specs[key].backend)
                model = self._factory(self.specs[key])
                with self._lock:
                    self._models[key] = model
            return model

    def __contains__(self, name: str) -> bool:
        try:
            self.resolve(name)
        except KeyError:
            return False
        return True

    def loaded(self) -> dict[str, Model]:
        """Models built so far, by canonical name."""
        with self._lock:
            return dict(self._models)

    def redact(self, text: str) -> str:
        """`text` without the credential values (API keys) of the models built so far: the store
        passes every line it writes through this, so a server that echoes a key in a reply cannot
        get it into a run directory."""
        from sparring.models.secrets import MASK, PLACEHOLDER_KEY, Secret

        with self._lock:
            models = list(self._models.values())
        for model in models:
            for secret in model.secrets():
                value = secret.get() if isinstance(secret, Secret) else str(secret)
                if value and value != PLACEHOLDER_KEY and value in text:
                    text = text.replace(value, MASK)
        return text

    def close(self) -> None:
        """Close every built model (even if one fails); safe to call twice."""
        with self._lock:
            models, self._models = list(self._models.items()), {}
            self._injected.clear()
        errors: list[tuple[str, Exception]] = []
        for name, model in models:
            try:
                model.close()
            except Exception as e:  # keep closing the others
                log.warning("closing model %s failed: %s", name, e)
                errors.append((name, e))
        if errors:
            name, err = errors[0]
            raise RuntimeError(f"closing model {name!r} failed: {err}") from err

    def __enter__(self) -> ModelPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
