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

Start method: `fork` where it is safe (Linux, this process runs no other thread and has not
imported torch — a forked copy of a threaded runtime can deadlock), `spawn` otherwise. A forked
worker inherits the resolved experiment and skips the imports and the dataset: about a second
of CPU per worker saved, which is most of a short run's cost. `run.worker_start` overrides it.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import sys
import threading
from collections import deque
from collections.abc import Iterator
from typing import Any

from sparring.engine.runner import RunStats
from sparring.errors import ConfigError, SparringError
from sparring.records.store import RunStore, Stored
from sparring.registry import import_plugin, registered_modules

POLL_S = 0.2


class _Sink:
    """Collects a worker's finished episodes until the end of the tick, serialised (and redacted
    of its models' credentials) here, so the parent only appends lines."""

    def __init__(self, redact: Any = None) -> None:
        self.items: list[Stored] = []
        self.redact = redact

    def add_done(self, record: Any) -> None:
        self.items.append(Stored.of(record, self.redact))

    add_failed = add_done


def _worker(opts: Any, index: int, inbox: Any, out: Any, stop: Any, modules: list[tuple[str, str | None]],
            plan: Any = None) -> None:
    """A worker process: load the models, then play each list of jobs that arrives in `inbox`.

    `plan`: the parent's resolved experiment, inherited by a forked worker. A spawned one
    resolves the experiment itself (the parent sends the instances, first thing in `inbox`, so
    no dataset is read twice).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    _die_with_parent(index)
    from sparring.engine.loader import build_agents
    from sparring.engine.plan import episodes, models_to_load
    from sparring.engine.runner import Runner
    from sparring.models.pool import ModelPool

    pool = None
    try:
        if plan is None:
            plan = _prepare(opts, _receive(inbox), modules)
        exp = plan.exp
        pool = ModelPool(exp.specs)
        for alias, model in plan.extra_models.items():
            pool.add(alias, model)
        agents = build_agents(exp)
        for alias in models_to_load(plan):
            pool.get(alias)
        sink = _Sink(pool.redact)
        runner = Runner(pool.get, max_live=exp.config.run.max_live, on_done=sink.add_done,
                        on_failed=sink.add_failed)

        reported: list[str] = []

        def tick() -> None:
            if sink.items:
                out.put(("episodes", index, sink.items, runner.stats.counters()))
                sink.items = []
            if runner.stopped_by and not reported:  # a circuit breaker tripped here: stop every worker
                reported.append(runner.stopped_by)
                out.put(("stopped", index, runner.stopped_by, runner.stats.counters()))
            if stop.is_set():
                runner.stop_now()

        runner.on_tick = tick
        while (chunk := _receive(inbox)) is not None:  # the first chunk of a round
            runner.run(episodes(exp, plan.instances, _dealt(chunk, index, inbox, out), agents, sink))
            out.put(("end", index, [], runner.stats.counters()))
            if stop.is_set():  # interrupted: the parent stops after this round; chunks may be left unread
                break
    except BaseException as e:  # noqa: BLE001 — reported to the parent, which records the run as incomplete
        out.put(("error", index, f"{type(e).__name__}: {e}", 0))
    finally:
        if pool is not None:
            pool.close()


def _dealt(chunk: list[Any], index: int, inbox: Any, out: Any) -> Iterator[Any]:
    """A round's jobs as the parent deals them: asks for one more chunk whenever it starts one,
    and ends at the empty chunk that closes the round. Read lazily by the runner, which admits
    episodes only as live ones finish."""
    while chunk:
        out.put(("more", index, [], 0))
        yield from chunk
        chunk = _receive(inbox)


def _prepare(opts: Any, instances: list[Any], modules: list[tuple[str, str | None]]) -> Any:
    """A spawned worker's own copy of the experiment: the parent's plugins, then `prepare`."""
    from sparring.engine.plan import prepare

    failed_plugins = []
    for name, file in modules:  # plugins registered in the parent (custom games, backends, sources)
        try:
            import_plugin(name, file)
        except Exception as e:  # noqa: BLE001 — only matters if the experiment needs it (below)
            failed_plugins.append(f"{name}: {type(e).__name__}: {e}")
    try:
        return prepare(opts, instances=instances)
    except Exception as e:
        if failed_plugins:
            raise SparringError(f"{e} (modules that registered plugins in the parent process could not "
                                f"be imported here: {'; '.join(failed_plugins)})") from e
        raise


def _die_with_parent(index: int) -> None:
    """If the parent is killed (even with SIGKILL), its workers must not linger: on Linux the
    kernel kills them (PR_SET_PDEATHSIG); elsewhere `_receive` notices between rounds. The
    process is also named `sparring-w<index>` so that ps/top tell workers apart."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
        libc.prctl(15, f"sparring-w{index}".encode()[:15], 0, 0, 0)  # 15 = PR_SET_NAME
    except (OSError, AttributeError):  # pragma: no cover - exotic libc
        pass


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


def _receive(inbox: Any) -> Any:
    """The next message from the parent; exits quietly if the parent has gone away."""
    parent = mp.parent_process()
    while True:
        try:
            return inbox.get(timeout=1.0)
        except queue.Empty:
            if parent is not None and not parent.is_alive():
                raise SystemExit(0) from None


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
        self._out = ctx.Queue()
        self._stop = ctx.Event()
        self._inboxes = [ctx.Queue() for _ in range(workers)]
        self._tokens: list[tuple[int, int, int, int]] = [(0, 0, 0, 0)] * workers  # RunStats.counters() per worker
        forked = self.start_method == "fork"
        if not forked:
            _check_main_importable()
        modules = registered_modules()
        # Big data goes through the queues (a feeder thread), never through the spawn bootstrap
        # pipe: a child that dies while starting must not leave the parent blocked on a write.
        self._procs = [ctx.Process(target=_worker, name=f"sparring-worker-{i}", daemon=True,
                                   args=(opts, i, self._inboxes[i], self._out, self._stop, modules,
                                         plan if forked else None))
                       for i in range(workers)]
        self._alive = set(range(workers))
        if forked:
            # nothing buffered may be written twice, and no queue feeder thread may exist yet
            sys.stdout.flush()
            sys.stderr.flush()
            for p in self._procs:
                p.start()
            return
        items = list(plan.instances.values())
        for i, p in enumerate(self._procs):
            p.start()
            self._inboxes[i].put(items)

    def stop_admitting(self) -> None:
        self.draining = True
        self._stop.set()

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
                try:
                    kind, index, payload, worker_tokens = self._out.get(timeout=POLL_S)
                except queue.Empty:
                    for i in sorted(waiting):
                        if self._procs[i].exitcode is not None:  # died without a word (killed, crashed)
                            self._lost(i, f"worker {i} exited with code {self._procs[i].exitcode}")
                            waiting.discard(i)
                    continue
                if kind == "more":
                    deal(index)
                    continue
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
        finally:
            if self.on_tick:
                self.on_tick()
        return self.stats

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
