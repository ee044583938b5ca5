"""The lockstep runner: many live episodes, one batched model call per model per tick.

Each tick collects every pending call of every live episode, groups them by (model, op), sends
each group as ONE call to the model (local backends batch it; API backends fan it out with their
concurrency limit, and groups of different API models run concurrently), feeds results back, and
admits new episodes so batches stay full.
Results depend only on the requests (seeded), never on batch composition.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from sparring.agents.base import AgentGen
from sparring.engine.episode import EpisodeFailed
from sparring.errors import ServerGoneError, SparringError
from sparring.models.base import Model
from sparring.records.record import EpisodeRecord
from sparring.types import ModelCall

# Young-generation GC thresholds (allocations) for bursts of allocation (see sparse_gc).
YOUNG_GC_MIN, YOUNG_GC_PER_LIVE = 100_000, 400


@dataclass
class RunStats:
    """Counters of a runner. `turns`: model calls answered (a turn, a judge's score); tokens
    count what the models processed: prompt tokens (prefill) and generated ones."""

    done: int = 0
    failed: int = 0
    completion_tokens: int = 0
    prompt_tokens: int = 0
    turns: int = 0
    live: int = 0  # episodes in flight (worker runs: as each worker last reported)
    started: float = field(default_factory=time.time)

    @property
    def tokens_per_s(self) -> float:
        """Prompt + generated tokens per second: what the models processed."""
        return (self.prompt_tokens + self.completion_tokens) / max(1e-9, time.time() - self.started)

    @property
    def generated_per_s(self) -> float:
        return self.completion_tokens / max(1e-9, time.time() - self.started)

    def counters(self) -> tuple[int, int, int, int]:
        """What a worker process reports to its parent."""
        return self.completion_tokens, self.prompt_tokens, self.turns, self.live

    def add(self, counters: tuple[int, int, int, int]) -> None:
        self.completion_tokens += counters[0]
        self.prompt_tokens += counters[1]
        self.turns += counters[2]
        self.live += counters[3]


class EpisodeRunner(Protocol):
    """Plays lists of jobs and hands each finished record on: `InProcessRunner` (this process) and
    `ParallelRunner` (worker processes) both implement it, so `run_experiment` has one path."""

    on_tick: Callable[[], object] | None

    @property
    def stats(self) -> RunStats: ...

    @property
    def errors(self) -> list[str]:  # workers lost mid-run (the run is then incomplete)
        ...

    @property
    def stopped_by(self) -> str | None:  # set when it stopped admitting on its own (a server gone)
        ...

    @property
    def draining(self) -> bool: ...

    def run(self, jobs: list[Any]) -> RunStats: ...

    def stop_admitting(self) -> None: ...

    def stop_now(self) -> None: ...

    def close(self) -> None: ...


@dataclass
class _Live:
    gen: AgentGen
    calls: list[ModelCall]


def execute(model: Model, op: str, requests: list[Any]) -> list[Any]:
    """Run one batched call. Backends isolate failing requests themselves (an exception in the
    request's place), so a call that raises failed as a whole: every request gets that error —
    it is never re-run request by request."""
    fn = model.generate if op == "generate" else model.score
    try:
        return list(fn(requests))
    except Exception as err:  # noqa: BLE001 — recorded per episode, the run goes on
        return [err] * len(requests)


@contextmanager
def sparse_gc(young: int = YOUNG_GC_MIN):
    """Run the cyclic collector less often during a burst of allocation: building a schedule,
    loading a dataset, playing episodes.

    Such bursts allocate thousands of small tracked objects that die by reference counting, not
    in cycles; with the default threshold (700 allocations) the collector ran every few hundred
    of them and rescanned everything still alive, for nothing. Only cyclic garbage waits longer
    (acyclic garbage is freed at once), so memory stays bounded. The old thresholds come back
    afterwards.
    """
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], young), old[1], max(old[2], 20))
    try:
        yield
    finally:
        gc.set_threshold(*old)


@contextmanager
def _gc_for_throughput(max_live: int):
    """`sparse_gc` while episodes run, with the pre-run heap frozen out of the collector's sight
    (instances, jobs, modules: nothing there becomes garbage during the run).

    Each young collection still rescans every live episode's state, so the threshold scales with
    `max_live`, which bounds that working set: a collection comes only after the live episodes
    have been replaced a few times over. At a fixed 10,000 allocations (less than 256 live
    episodes hold) collections still cost about a tenth of the engine's CPU time.
    """
    gc.freeze()
    try:
        with sparse_gc(max(YOUNG_GC_MIN, YOUNG_GC_PER_LIVE * max_live)):
            yield
    finally:
        gc.unfreeze()


class Runner:
    """Advances episode generators in lockstep. `models(alias)` returns a loaded Model."""

    def __init__(self, models: Callable[[str], Model], max_live: int = 64,
                 on_done: Callable[[EpisodeRecord], None] | None = None,
                 on_failed: Callable[[EpisodeRecord], None] | None = None,
                 progress: Callable[[RunStats], None] | None = None,
                 on_tick: Callable[[], object] | None = None):
        self.models, self.max_live = models, max(1, max_live)
        self.on_done, self.on_failed, self.progress = on_done, on_failed, progress
        # Called after every tick (and at the end): the store commits what finished in the tick
        # with one fsync (group commit) before anything is reported done.
        self.on_tick = on_tick
        self.stats = RunStats()
        self.draining = False
        self.abandon = False
        self.stopped_by: str | None = None  # why the runner stopped admitting on its own
        self._pool: ThreadPoolExecutor | None = None

    def stop_admitting(self) -> None:
        """Finish the live episodes but start no new ones (a server that went away)."""
        self.draining = True

    def stop_now(self) -> None:
        """Ctrl-C: start nothing new and drop the live episodes after the current tick. What
        finished is stored (the tick's commit runs); the dropped ones are replayed on resume."""
        self.draining = True
        self.abandon = True

    def run(self, episodes: Iterable[AgentGen]) -> RunStats:
        source: Iterator[AgentGen] = iter(episodes)
        # Per run (not per Runner) so that one Runner can run several rounds (swiss).
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="sparring-model")
        with _gc_for_throughput(self.max_live):
            self._loop(source)
        return self.stats

    def _loop(self, source: Iterator[AgentGen]) -> None:
        live: list[_Live] = []
        exhausted = False
        try:
            while True:
                while not exhausted and not self.draining and len(live) < self.max_live:
                    gen = next(source, None)
                    if gen is None:
                        exhausted = True
                        break
                    self._advance(gen, None, live)
                self.stats.live = len(live)
                if not live or self.abandon:
                    break
                self._tick(live)
                if self.on_tick:
                    self.on_tick()
        finally:
            if self.on_tick:
                self.on_tick()
            assert self._pool is not None
            self._pool.shutdown(wait=False)

    def _advance(self, gen: AgentGen, results: list[Any] | None, live: list[_Live]) -> None:
        try:
            calls = next(gen) if results is None else gen.send(results)
        except StopIteration as stop:
            self._finish(stop.value)
            return
        except EpisodeFailed as f:
            self._fail(f.record)
            return
        live.append(_Live(gen, calls))

    def _tick(self, live: list[_Live]) -> None:
        groups: dict[tuple[str, str], list[tuple[int, int]]] = {}
        for i, ep in enumerate(live):
            for j, call in enumerate(ep.calls):
                groups.setdefault((call.model, call.op), []).append((i, j))
        results: list[list[Any]] = [[None] * len(ep.calls) for ep in live]

        def run_group(key: tuple[str, str], where: list[tuple[int, int]], model: Any) -> None:
            if isinstance(model, BaseException):
                outs: list[Any] = [model] * len(where)
            else:
                outs = execute(model, key[1], [live[i].calls[j].request for i, j in where])
            for (i, j), out in zip(where, outs, strict=False):
                results[i][j] = out

        items = list(groups.items())
        # Remote (API) models are called concurrently from worker threads; local models run one
        # group after another in this thread: they share one device, gain nothing from threads,
        # and a thread hop per tick costs more than an instant (scripted) call.
        remote: list[tuple[tuple[str, str], list[tuple[int, int]], Any]] = []
        local: list[tuple[tuple[str, str], list[tuple[int, int]], Any]] = []
        for key, where in items:
            try:
                model: Any = self.models(key[0])
            except SparringError as e:
                model = e
            (remote if getattr(model, "concurrent", False) else local).append((key, where, model))
        futures = []
        if remote:
            assert self._pool is not None
            futures = [self._pool.submit(run_group, *g) for g in remote]
        for g in local:
            run_group(*g)
        for f in futures:
            f.result()
        for row in results:
            for out in row:
                if isinstance(out, ServerGoneError) and self.stopped_by is None:
                    # circuit breaker: a server that is gone fails every new episode; stop admitting
                    self.stopped_by = str(out)
                    self.stop_admitting()
                if isinstance(out, list):
                    self.stats.turns += 1
                    for c in out:
                        usage = getattr(c, "usage", None)
                        if usage is not None:
                            self.stats.completion_tokens += usage.completion_tokens
                            self.stats.prompt_tokens += usage.prompt_tokens
        current = list(live)
        live.clear()
        for ep, res in zip(current, results, strict=True):
            self._advance(ep.gen, res, live)

    def _finish(self, result: EpisodeRecord | list[EpisodeRecord]) -> None:
        """A finished episode's record (a branched tree returns all its leaves at once)."""
        for record in result if isinstance(result, list) else [result]:
            self.stats.done += 1
            if self.on_done:
                self.on_done(record)
        if self.progress:
            self.progress(self.stats)

    def _fail(self, record: EpisodeRecord) -> None:
        self.stats.failed += 1
        if self.on_failed:
            self.on_failed(record)
        if self.progress:
            self.progress(self.stats)
