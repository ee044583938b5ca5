"""Several engine processes for one run (`run.workers` / `--workers N`).

Why: the lockstep runner is one Python thread. When the engine itself is the bottleneck —
scripted doubles, replay re-judging of stored transcripts, a fast API server — a second core
cannot help it (the GIL). Workers are separate processes, each with its own runner and models.
The parent deals the pending episodes in small chunks, on demand: a worker asks for another chunk
as soon as it starts one (so one is always queued), and the round ends for it when none is left.
A worker slowed down by the parent or by other load on the machine simply takes fewer chunks, and
all workers finish together instead of one idling while the other works off an equal share dealt
up front.

The parent stays the only writer of the run directory: workers send finished episodes back as
serialised JSONL lines, one message per runner tick, and the parent appends them with its usual
group commit, keeps the progress bar and the resume bookkeeping. A worker that dies loses only
its in-flight episodes (its live ones and the chunks queued for it; the other workers take
every chunk not yet dealt): they were never stored, so `--resume` plays them (nothing is stored
twice, nothing is lost). They are not dealt again in the same run, since the episode that killed one
worker would kill the next. Workers start (and load their models) while the parent is still
building the schedule. Local models are loaded once per worker: use workers with scripted,
replay or API models, not with a big local model on one device.

Channels: the parent writes to each worker through that worker's own queue (its inbox, read by no
one else; a feeder thread writes it, so the parent never blocks on a busy worker), and each
worker writes back on its own pipe, which only it writes and only the parent reads. No lock is
shared between workers: a worker killed at any instant (SIGKILL, the OOM killer, a crash in
native code, even halfway through a message) takes nothing down with it. The parent waits on
every pipe and every process's sentinel at once (`multiprocessing.connection.wait`), reads what
the dead worker sent completely, drops the rest (a message cut off by the death ends in
end-of-file) and counts the worker lost. A single queue shared by all workers would not do: its
write lock, held by a worker that dies mid-message, is never released and silences the others.

Start method: `fork` where it is safe (Linux, this process runs no other thread and has not
imported torch — a forked copy of a threaded runtime can deadlock), `spawn` otherwise. A forked
worker inherits the resolved experiment and skips the imports and the dataset: about a second
of CPU per worker saved, which is most of a short run's cost. `run.worker_start` overrides it.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable
from multiprocessing.connection import wait
from typing import Any

from sparring.engine.runner import RunStats
from sparring.engine.worker_process import worker_main
from sparring.errors import ConfigError
from sparring.records.store import RunStore
from sparring.registry import registered_modules

POLL_S = 0.2  # the parent's longest wait for a worker's message (a dead one is seen at once)

UNSAFE_TO_FORK = ("torch", "tensorflow", "jax")  # runtimes with native thread pools


def start_method(requested: str = "auto") -> str:
    """`fork` when it is safe, else `spawn` (see the module docstring); `requested` overrides."""
    if requested != "auto":
        if requested not in mp.get_all_start_methods():
            raise ConfigError(f"run.worker_start: {requested!r} is not available on this platform "
                              f"(available: {', '.join(mp.get_all_start_methods())}); use auto")
        return requested
    if not sys.platform.startswith("linux") or "fork" not in mp.get_all_start_methods():
        return "spawn"  # macOS: system frameworks are not fork-safe
    if threading.active_count() > 1 or any(m in sys.modules for m in UNSAFE_TO_FORK):
        return "spawn"
    return "fork"


class ParallelRunner:
    """Plays lists of jobs on `workers` processes; quacks like `Runner` for `run_experiment`.

    Processes start in the constructor; `run(jobs)` once per round; `close()` at the end.
    """

    def __init__(self, opts: Any, workers: int, store: RunStore, plan: Any, on_tick: Any = None,
                 start: str = "auto"):
        self.workers, self.store, self.on_tick = workers, store, on_tick
        self.max_live = plan.exp.config.run.max_live
        self.stats = RunStats()  # tokens and turns: what the workers report
        self.draining = False
        self.errors: list[str] = []
        self.stopped_by: str | None = None
        self.start_method = start_method(start)
        ctx: Any = mp.get_context(self.start_method)
        self._stop = ctx.RawValue("b", 0)  # a byte in shared memory: read without a lock
        self._inboxes = [ctx.Queue() for _ in range(workers)]
        self._tokens: list[tuple[int, int, int, int]] = [(0, 0, 0, 0)] * workers  # RunStats.counters() per worker
        forked = self.start_method == "fork"
        if not forked:
            _check_main_importable()
        modules = registered_modules()
        items = None if forked else list(plan.instances.values())
        if forked:  # nothing buffered may be written twice, and no queue feeder thread may exist yet
            sys.stdout.flush()
            sys.stderr.flush()
        self._procs: list[Any] = []
        self._pipes: list[Any] = []  # the parent's read end of each worker's pipe
        self._cut: dict[int, str] = {}  # workers whose last message was cut off by their death
        for i in range(workers):
            # Each pipe is made just before its worker starts, and the parent closes the write end
            # right after: a worker forked later inherits no other worker's write end, and a dead
            # worker's pipe ends in end-of-file. Big data goes through the queues (a feeder thread),
            # never through the spawn bootstrap pipe: a child that dies while starting must not
            # leave the parent blocked on a write.
            reader, writer = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=worker_main, name=f"sparring-worker-{i}", daemon=True,
                               args=(opts, i, self._inboxes[i], writer, self._stop, modules,
                                     plan if forked else None))
            proc.start()
            writer.close()
            self._procs.append(proc)
            self._pipes.append(reader)
            if items is not None:
                self._inboxes[i].put(items)
        self._alive = set(range(workers))

    def stop_admitting(self) -> None:
        self.draining = True
        self._stop.value = 1

    def stop_now(self) -> None:
        """Ctrl-C: the workers drop their live episodes after their current tick."""
        self.stop_admitting()

    def run(self, jobs: list[Any]) -> RunStats:
        """Deal `jobs` to the live workers chunk by chunk, as they ask, and store what comes back."""
        live = sorted(self._alive)
        size = chunk_size(len(jobs), len(live), self.max_live)
        chunks = deque(jobs[k : k + size] for k in range(0, len(jobs), size))
        closed: set[int] = set()  # workers sent the empty chunk that ends the round

        def deal(i: int) -> None:
            if i in closed or i not in self._alive:
                return
            if chunks and not self.draining:
                self._inboxes[i].put(chunks.popleft())
            else:
                self._inboxes[i].put([])
                closed.add(i)

        # Two chunks each to start; then one per chunk a worker starts. A worker thus always has
        # one queued and never waits for a parent that the OS has not yet scheduled.
        for _ in range(2):
            for i in live:
                deal(i)
        waiting = set(live)
        try:
            while waiting:
                owners: dict[Any, int] = {}
                for i in waiting:
                    owners[self._pipes[i]] = owners[self._procs[i].sentinel] = i
                for ready in wait(list(owners), timeout=POLL_S):
                    i = owners[ready]
                    if i not in waiting:  # lost or ended earlier in this loop
                        continue
                    if ready is self._pipes[i] and (message := self._read(i)) is not None:
                        self._handle(message, waiting, deal)
                        continue
                    # The process ended (or closed its pipe): what it sent in full still counts
                    while i in waiting and (message := self._read(i)) is not None:
                        self._handle(message, waiting, deal)
                    if i in waiting:
                        self._lost(i, self._death(i))
                        waiting.discard(i)
        finally:
            if self.on_tick:
                self.on_tick()
        return self.stats

    def _read(self, i: int) -> Any:
        """Worker i's next message, or None at the end of its pipe: a worker that died. Never
        blocks for long: the worker is writing the message, or dead (then its pipe has ended)."""
        try:
            return self._pipes[i].recv()
        except EOFError:
            return None
        except OSError:  # "got end of file during message": it died in the middle of one
            self._cut[i] = " in the middle of sending a message"
            return None

    def _handle(self, message: Any, waiting: set[int], deal: Callable[[int], None]) -> None:
        kind, index, payload, worker_tokens = message
        if kind == "more":
            deal(index)
            return
        if isinstance(worker_tokens, (tuple, list)):
            self._tokens[index] = tuple(worker_tokens)
            self._sum_counters()
        if kind == "episodes":
            for item in payload:
                self.store.add_serialized(item)
        elif kind == "error":
            self._lost(index, f"worker {index}: {payload}")
            waiting.discard(index)
        elif kind == "stopped":
            if self.stopped_by is None:
                self.stopped_by = f"worker {index}: {payload}"
                self.stop_admitting()
        else:
            waiting.discard(index)
        if self.on_tick:
            self.on_tick()

    def _death(self, i: int) -> str:
        """How worker i ended, for the run's errors (its exit code, or the signal that killed it)."""
        proc = self._procs[i]
        proc.join(timeout=5)  # its pipe or sentinel said so: it is gone or about to be
        if proc.exitcode is None:  # closed its pipe but lingers: it can no longer report anything
            proc.kill()
            proc.join(timeout=5)
            how = "closed its pipe to the parent and was stopped"
        elif proc.exitcode < 0:
            try:
                how = f"was killed by {signal.Signals(-proc.exitcode).name}"
            except ValueError:  # a signal without a name here
                how = f"was killed by signal {-proc.exitcode}"
        else:
            how = f"exited with code {proc.exitcode}"
        return f"worker {i} {how}{self._cut.pop(i, '')}"

    def _sum_counters(self) -> None:
        """The run's counters: the sum of what each worker last reported."""
        total = RunStats()
        for counters in self._tokens:
            total.add(counters)
        (self.stats.completion_tokens, self.stats.prompt_tokens, self.stats.turns,
         self.stats.live) = total.counters()

    def _lost(self, index: int, message: str) -> None:
        self._alive.discard(index)
        generated, prompt, turns, _ = self._tokens[index]
        self._tokens[index] = (generated, prompt, turns, 0)  # its episodes in flight are gone
        self._sum_counters()
        self._inboxes[index].cancel_join_thread()  # nobody will read it: never block exit on it
        self.errors.append(f"{message}; its unfinished episodes were not stored (resume the run to play them)")

    def close(self) -> None:
        for pipe in self._pipes:  # first: a worker still sending gets a broken pipe, not a wait
            pipe.close()
        for i in self._alive:
            self._inboxes[i].put(None)
        for p in self._procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
        for q in self._inboxes:
            q.cancel_join_thread()


def _check_main_importable() -> None:
    """Spawned workers re-import the parent's main module; a program read from stdin cannot be."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if path is not None and not os.path.exists(path):
        raise ConfigError(f"run.workers > 1 starts worker processes that re-import the main program, and "
                          f"{path!r} is not a file; run from a script, a module (-m) or a notebook, or use "
                          "workers: 1")


def chunk_size(jobs: int, workers: int, max_live: int) -> int:
    """Jobs per dealt chunk: about 32 chunks per worker, so that the last ones balance the finish
    within a small fraction of the run, but never more than a worker keeps live at once."""
    return max(1, min(max_live, -(-jobs // (32 * max(1, workers)))))


def resolve_workers(requested: int | str | None) -> int:
    """`auto` = the CPUs this process may use; numbers are taken as given (at least 1)."""
    if requested in (None, "", 1, "1"):
        return 1
    if requested == "auto":
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # pragma: no cover - non-Linux
            return max(1, os.cpu_count() or 1)
    return max(1, int(requested))
