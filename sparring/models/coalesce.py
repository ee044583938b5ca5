"""One model shared by many threads, whose concurrent calls become one batched call.

Why: each web game (a person playing in the browser) runs its own engine episode in its own
thread. Calling the shared model one thread at a time would cost ten people ten sequential
forward passes per tick; here the first caller becomes the *leader*, waits `window` seconds for
the other games' turns to arrive, and sends every queued request in one `generate` (or `score`)
call; each caller gets its own rows back. While a batch is in flight, new calls queue for the
next one, so a busy model is never idle and never called re-entrantly (local backends are not
thread-safe).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sparring.models.base import Model, _raise_if_all_failed
from sparring.types import Completion, GenerateRequest, ScoreRequest


@dataclass
class _Call:
    op: str  # "generate" | "score"
    requests: list[Any]
    result: list[Any] | None = None
    error: BaseException | None = None
    done: bool = field(default=False)


class Coalescing(Model):
    """Wraps `inner`; `generate`/`score` from many threads are merged into batches."""

    def __init__(self, inner: Model, window: float = 0.02):
        super().__init__(inner.name)
        self.inner, self.window = inner, window
        self.can_score = inner.can_score  # type: ignore[misc]
        self.concurrent = inner.concurrent  # type: ignore[misc]
        self._cond = threading.Condition()
        self._queue: list[_Call] = []
        self._busy = False
        self.batches: list[int] = []  # requests per inner call (for tests and diagnostics)

    @property
    def waiting(self) -> int:
        """Calls queued for the next batch."""
        with self._cond:
            return len(self._queue)

    def generate(self, requests: Sequence[GenerateRequest]) -> list[list[Completion]]:
        return self._submit("generate", list(requests))

    def score(self, requests: Sequence[ScoreRequest]) -> list[list[float]]:
        return self._submit("score", list(requests))

    def _generate(self, requests: list[GenerateRequest]) -> list[Completion]:
        """Single-sample rows (the backend hook), through the same batching as `generate`."""
        return [out if isinstance(out, BaseException) else out[0]  # type: ignore[misc]
                for out in self._submit("generate", list(requests))]

    def secrets(self) -> list[Any]:
        return self.inner.secrets()

    def _submit(self, op: str, requests: list[Any]) -> list[Any]:
        if not requests:
            return []
        call = _Call(op, requests)
        with self._cond:
            self._queue.append(call)
            while not call.done:
                if not self._busy:  # lead the next batch
                    self._busy = True
                    break
                self._cond.wait()
        if not call.done:
            try:
                time.sleep(self.window)  # let the other games' turns of this tick arrive
                self._run_batches(until=call)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
        if call.error is not None:
            raise call.error
        assert call.result is not None
        return call.result

    def _run_batches(self, until: _Call) -> None:
        """Send the queue, one inner call per operation, until `until` is answered."""
        while not until.done:
            with self._cond:
                op = self._queue[0].op
                batch = [c for c in self._queue if c.op == op]
                self._queue = [c for c in self._queue if c.op != op]
            rows = [r for c in batch for r in c.requests]
            self.batches.append(len(rows))
            try:
                outs = self.inner.generate(rows) if op == "generate" else self.inner.score(rows)
            except BaseException as e:  # noqa: BLE001 — every caller of the batch gets it
                for c in batch:
                    c.error = e
            else:
                pos = 0
                for c in batch:
                    mine = outs[pos: pos + len(c.requests)]
                    pos += len(c.requests)
                    try:  # a caller alone would have raised when all its rows failed
                        c.result = _raise_if_all_failed(list(mine))
                    except BaseException as e:  # noqa: BLE001
                        c.error = e
            with self._cond:
                for c in batch:
                    c.done = True
                self._cond.notify_all()
