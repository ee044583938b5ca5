"""One worker process of `run.workers` (the parent's side is `sparring.engine.workers`).

Why its own module: this is all the code that runs in the child. It loads its models, plays the
chunks of jobs its inbox deals, and sends each tick's finished episodes (serialised) back on its own
pipe, which nothing else writes: if it dies, whatever it was doing, the other workers and the
parent carry on.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

from sparring.errors import SparringError
from sparring.records.store import Stored
from sparring.registry import import_plugin


class _Sink:
    """Collects a worker's finished episodes until the end of the tick, serialised (and redacted
    of its models' credentials) here, so the parent only appends lines."""

    def __init__(self, redact: Any = None) -> None:
        self.items: list[Stored] = []
        self.redact = redact

    def add_done(self, record: Any) -> None:
        self.items.append(Stored.of(record, self.redact))

    add_failed = add_done


class _Outbox:
    """Sends this worker's messages on its pipe from a thread of its own, so that the engine plays
    on while the parent is busy and a big message waits for the parent to read it (what a queue's
    feeder thread would do, without a queue's lock shared with the other workers)."""

    def __init__(self, pipe: Any) -> None:
        self.pipe = pipe
        self._messages: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._send_all, name="sparring-outbox", daemon=True)
        self._thread.start()

    def send(self, message: tuple[str, int, Any, Any]) -> None:
        self._messages.put(message)

    def _send_all(self) -> None:
        while (message := self._messages.get()) is not None:
            try:
                self.pipe.send(message)
            except OSError:  # the parent has gone away: nobody to tell
                return
            except Exception as e:  # noqa: BLE001 — unpicklable (nothing was written): say so and end,
                # rather than live on with results that never arrive
                self.pipe.send(("error", message[1], f"cannot send its {message[0]} message: "
                                f"{type(e).__name__}: {e}", 0))
                os._exit(1)

    def close(self) -> None:
        """Sends what is queued, then closes the pipe (the parent reads its end of file)."""
        self._messages.put(None)
        self._thread.join()
        self.pipe.close()


def worker_main(opts: Any, index: int, inbox: Any, pipe: Any, stop: Any, modules: list[tuple[str, str | None]],
                plan: Any = None) -> None:
    """A worker process: load the models, then play each list of jobs that arrives in `inbox`.

    `pipe`: this worker's own pipe to the parent, for messages `(kind, index, payload, counters)`.
    `stop`: a shared flag (no lock) the parent raises to stop admitting episodes.
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
    out = _Outbox(pipe)
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
                out.send(("episodes", index, sink.items, runner.stats.counters()))
                sink.items = []
            if runner.stopped_by and not reported:  # a circuit breaker tripped here: stop every worker
                reported.append(runner.stopped_by)
                out.send(("stopped", index, runner.stopped_by, runner.stats.counters()))
            if stop.value:
                runner.stop_now()

        runner.on_tick = tick
        while (chunk := _receive(inbox)) is not None:  # the first chunk of a round
            runner.run(episodes(exp, plan.instances, _dealt(chunk, index, inbox, out), agents, sink))
            out.send(("end", index, [], runner.stats.counters()))
            if stop.value:  # interrupted: the parent stops after this round; chunks may be left unread
                break
    except BaseException as e:  # noqa: BLE001 — reported to the parent, which records the run as incomplete
        out.send(("error", index, f"{type(e).__name__}: {e}", 0))
    finally:
        if pool is not None:
            pool.close()
        out.close()


def _dealt(chunk: list[Any], index: int, inbox: Any, out: _Outbox) -> Iterator[Any]:
    """A round's jobs as the parent deals them: asks for one more chunk whenever it starts one,
    and ends at the empty chunk that closes the round. Read lazily by the runner, which admits
    episodes only as live ones finish."""
    while chunk:
        out.send(("more", index, [], 0))
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


def _receive(inbox: Any) -> Any:
    """The next message from the parent; exits quietly if the parent has gone away."""
    parent = mp.parent_process()
    while True:
        try:
            return inbox.get(timeout=1.0)
        except queue.Empty:
            if parent is not None and not parent.is_alive():
                raise SystemExit(0) from None
