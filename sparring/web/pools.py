"""Models shared by the web games of one experiment, for the app's lifetime.

Why: playing against a local model (the bundled SmolLM2, an `hf` checkpoint) would otherwise load
it again for every game. Each experiment gets one `ModelPool`; each game sees it through a
`GamePool` that adds the game's own `WebHuman`. Games run in their own threads; their concurrent
calls into a shared model are merged into one batched call (`models.coalesce.Coalescing`), so
ten people playing at once cost one forward pass per tick, and a local backend is never entered
by two threads at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sparring.models.base import Model
from sparring.models.coalesce import Coalescing
from sparring.models.pool import ModelPool
from sparring.models.spec import ModelSpec


class GamePool(ModelPool):
    """One game's view of its experiment's shared pool: its own injected models (the person's
    seat) first, every other name from the shared pool."""

    def __init__(self, shared: SharedPools, experiment: str):
        super().__init__(shared.pool(experiment).specs)
        self.shared, self.experiment = shared, experiment

    def get(self, name: str) -> Model:
        with self._lock:
            injected = name in self._injected
        return super().get(name) if injected else self.shared.model(self.experiment, name)

    def redact(self, text: str) -> str:
        return self.shared.pool(self.experiment).redact(text)


class SharedPools:
    """The app's model pools, one per experiment, closed when the app stops."""

    def __init__(self) -> None:
        self._pools: dict[str, ModelPool] = {}
        self._wrapped: dict[tuple[str, str], Coalescing] = {}
        self._instances: dict[str, list[Any]] = {}
        self._lock = threading.Lock()

    def instances(self, experiment: str, load: Callable[[], Iterable[Any]]) -> list[Any]:
        """The experiment's instances, loaded by its first game (a dataset is read once)."""
        with self._lock:
            cached = self._instances.get(experiment)
        if cached is None:
            cached = list(load())
            with self._lock:
                cached = self._instances.setdefault(experiment, cached)
        return cached

    def ensure(self, experiment: str, specs: Mapping[str, ModelSpec], skip: str) -> None:
        """The pool of `experiment` (created with `specs`, less the per-game `skip` model)."""
        with self._lock:
            if experiment not in self._pools:
                self._pools[experiment] = ModelPool({k: v for k, v in specs.items() if k != skip})

    def pool(self, experiment: str) -> ModelPool:
        with self._lock:
            return self._pools[experiment]

    def model(self, experiment: str, name: str) -> Model:
        pool = self.pool(experiment)
        key = (experiment, pool.resolve(name))
        with self._lock:
            wrapped = self._wrapped.get(key)
        if wrapped is None:
            inner = pool.get(name)  # loads it once (the pool locks per model)
            with self._lock:
                wrapped = self._wrapped.setdefault(key, Coalescing(inner))
        return wrapped

    def close(self) -> None:
        with self._lock:
            pools, self._pools, self._wrapped = list(self._pools.values()), {}, {}
        for pool in pools:
            pool.close()
