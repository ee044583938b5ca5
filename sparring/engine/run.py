"""Run an experiment: load -> resolve -> schedule -> shard -> skip stored -> play -> store.

Entry points (`scripts/run_debate.py`, `scripts/run_negotiation.py`, `sparring run`) are thin
wrappers around `run_experiment`. Models are loaded before the first episode so that a broken
model fails the command at once instead of recording every episode as failed; `--dry-run` stops
before that and never loads weights. Ctrl-C stops after the current tick, storing every finished
episode and dropping the unfinished ones (a second Ctrl-C stops at once); whatever was stored
stays, and the same command resumes. The engine writes no report: the layers above it (the CLI,
bench, loops) ask analysis for one after the run (`sparring.analysis.report.report_run`).
"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from sparring.engine.config import open_store
from sparring.engine.episode import EpisodeJob
from sparring.engine.loader import build_agents
from sparring.engine.plan import Plan, RunOptions, RunResult, describe, models_to_load, prepare
from sparring.engine.play import InProcessRunner
from sparring.engine.progress import RunProgress, print_plan, print_summary
from sparring.engine.runner import EpisodeRunner, sparse_gc
from sparring.engine.shard import select, shard_label
from sparring.engine.workers import ParallelRunner, resolve_workers
from sparring.errors import ConfigError, SparringError
from sparring.records.reader import iter_records
from sparring.records.record import EpisodeRecord
from sparring.records.store import RunStore

__all__ = ["Plan", "RunOptions", "RunResult", "RunSession", "describe", "prepare", "run_experiment"]


class _Counters:
    """Counters of this invocation, fed by the store's group commits."""

    def __init__(self) -> None:
        self.done = self.aborted = self.failed = self.skipped = 0
        self.verdicts: dict[str, int] = {}  # how this session's verdicts were obtained (score, ...)
        self.started = time.time()
        self.load_s = 0.0


class RunSession:
    """One invocation of a run, in its four steps: `load` (resolve the experiment, open the store,
    load the models or start the workers), `schedule` (the first round's jobs, written to the
    manifest), `play` (every round, resumable, Ctrl-C aware) and `close` (store, runner, models;
    the summary). Every knob is an explicit field of `RunOptions`; `run()` does all four.

        with RunSession(RunOptions(configuration="debate-quickstart", max_live=8)) as session:
            result = session.run()
    """

    def __init__(self, opts: RunOptions, *, console: Console | None = None, pool: Any = None):
        self.opts = opts
        self.console = console or Console()
        self.pool, self._own_pool = pool, pool is None
        self.plan: Plan | None = None
        self.store: RunStore | None = None
        self.runner: EpisodeRunner | None = None
        self.agents: dict[str, Any] = {}
        self.workers = 1
        self.status = "incomplete"
        self.counters = _Counters()
        self.first: list[EpisodeJob] = []
        self._closed = False

    # -- the four steps ---------------------------------------------------------------------------
    def load(self) -> Plan:
        """Resolve the experiment (no weights yet), then open the store and load the models."""
        with sparse_gc():
            plan = self.plan = prepare(self.opts)
        if self.opts.dry_run:
            return plan
        from sparring.models.pool import ModelPool

        exp = plan.exp
        self.workers = resolve_workers(exp.config.run.workers)
        if self.workers > 1 and self.pool is not None:
            raise ConfigError("run.workers > 1 builds models inside each worker; it cannot use a model pool "
                              "passed in by the caller")
        self.pool = ModelPool(exp.specs) if self.pool is None else self.pool
        self.store = open_store(plan.run_dir, exp.config, redact=self.pool.redact)
        if self.workers > 1:  # start them now: they load their models while the schedule is built
            if not self.opts.quiet:
                self.console.print(f"starting {self.workers} worker processes (each loads its own models) ...")
            self.runner = ParallelRunner(self.opts, self.workers, self.store, plan, start=exp.config.run.worker_start)
        for alias, model in plan.extra_models.items():
            self.pool.add(alias, model)
        self.agents = build_agents(exp)
        # With workers, each worker loads its own models (and a broken one fails them all at once).
        for alias in models_to_load(plan) if self.workers == 1 else []:
            if not self.opts.quiet:
                self.console.print(f"loading model {alias} ...")
            self.pool.get(alias)
        self.counters.load_s = time.time() - self.counters.started
        self.counters.started = time.time()
        return plan

    def schedule(self) -> dict[str, int]:
        """The first round's jobs; the totals (all, in this shard) go to the manifest."""
        plan, store = self._loaded()
        with sparse_gc():
            self.first = plan.schedule.jobs(1, {})
        total = _total(plan, self.first)
        store.write_manifest(status="running", schedule={"total": total["all"], "shard": shard_label(plan.shard),
                                                          "in_shard": total["in_shard"]})
        return total

    def play(self, total: dict[str, int]) -> str:
        """Every round's jobs not stored yet; returns the status (complete, incomplete, interrupted)."""
        plan, store = self._loaded()
        opts, console, session = self.opts, self.console, self.counters
        exp = plan.exp
        interrupted = False
        scheduled: list[str] = []  # ids this invocation was responsible for (all rounds played)
        with RunProgress(total["in_shard"], console=console, enabled=not opts.quiet, description=exp.name) as bar:
            assert self.pool is not None
            active: EpisodeRunner = self.runner if self.runner is not None else InProcessRunner(
                exp, plan.instances, self.agents, self.pool.get, on_done=store.add_done, on_failed=store.add_failed)
            self.runner = active
            active.on_tick = _committer(store, session, active, bar)
            with _sigint(active, console):
                results: dict[str, EpisodeRecord] = {}
                for rnd in range(1, plan.schedule.rounds + 1):
                    if plan.schedule.swiss and rnd > 1:
                        results = {r.id: r for r in iter_records(plan.run_dir, transcripts=False)}
                    jobs = select(self.first if rnd == 1 else plan.schedule.jobs(rnd, results), plan.shard)
                    todo = [j for j in jobs if not store.stored(j.id)
                            and (opts.retry_failed or j.id not in store.failed)]
                    skipped_failed = 0 if opts.retry_failed else sum(1 for j in jobs if j.id in store.failed)
                    if skipped_failed and not opts.quiet:
                        console.print(f"[yellow]{skipped_failed} episode(s) failed in an earlier attempt and are "
                                      "skipped; add --retry-failed to play them again[/yellow]")
                    scheduled.extend(j.id for j in jobs)
                    session.skipped += len(jobs) - len(todo)
                    bar.update(session.skipped + session.done, session.failed, active.stats, session.skipped)
                    active.run(todo)
                    if active.draining:
                        interrupted = active.stopped_by is None  # a user's Ctrl-C, not a circuit breaker
                        break
        missing = [i for i in scheduled if not store.stored(i)]
        self.status = "interrupted" if interrupted else ("incomplete" if missing or active.errors
                                                         or active.stopped_by else "complete")
        return self.status

    def close(self) -> None:
        """Close the runner (workers), the store (with the status) and the models this session
        loaded; idempotent."""
        if self._closed:
            return
        self._closed = True
        if self.runner is not None:
            self.runner.close()
        if self.store is not None:
            self.store.close(status=self.status)
        if self._own_pool and self.pool is not None:
            self.pool.close()

    # -- all of it ------------------------------------------------------------------------------------
    def run(self) -> RunResult:
        """load, schedule, play, close; then the summary (and why a run is incomplete)."""
        try:
            plan = self.load()
            if self.opts.dry_run:
                info = describe(plan)
                print_plan(self.console, info)
                return RunResult(run_dir=None, status="dry-run", plan=info)
            self.play(self.schedule())
        except KeyboardInterrupt:
            self.status = "interrupted"
            if self.store is None:  # nothing opened yet: nothing to summarise
                raise
        finally:
            self.close()
        return self._result()

    def __enter__(self) -> RunSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers --------------------------------------------------------------------------------------
    def _loaded(self) -> tuple[Plan, RunStore]:
        if self.plan is None or self.store is None:
            raise SparringError("RunSession: call load() first (a dry run plays nothing)")
        return self.plan, self.store

    def _result(self) -> RunResult:
        plan, store = self._loaded()
        session, runner, console, status = self.counters, self.runner, self.console, self.status
        wall = time.time() - session.started
        tokens = runner.stats.completion_tokens if runner else 0
        prompt_tokens = runner.stats.prompt_tokens if runner else 0
        counts = store.counts()
        summary: dict[str, Any] = {
            "experiment": plan.exp.name, "done": session.done, "aborted": session.aborted, "failed": session.failed,
            "skipped": session.skipped, "stored_done": counts["done"], "stored_failed": counts["failed"],
            "tokens": tokens, "prompt_tokens": prompt_tokens, "turns": runner.stats.turns if runner else 0,
            "tokens_per_s": (tokens + prompt_tokens) / max(wall, 1e-9),
            "generated_tokens_per_s": tokens / max(wall, 1e-9),
            "episodes_per_s": (session.done + session.failed) / max(wall, 1e-9), "wall_s": wall,
            "load_s": session.load_s, "verdict_methods": dict(sorted(session.verdicts.items())),
            "status": status, "run_dir": str(plan.run_dir)}
        if runner is not None and runner.errors:
            summary["worker_errors"] = list(runner.errors)
        if not self.opts.quiet:
            print_summary(console, summary)
        for err in summary.get("worker_errors", []):
            console.print(f"[red]{err}[/red]")
        if summary.get("worker_errors") and session.done + session.failed == 0:
            raise SparringError(f"every worker failed before storing an episode; first error: {summary['worker_errors'][0]}")
        if status == "interrupted":
            console.print(f"[yellow]interrupted; stored episodes are safe. Resume with --resume {plan.run_dir}[/yellow]")
        elif status == "incomplete":
            _explain_incomplete(console, plan.run_dir, store, runner)
        return RunResult(run_dir=plan.run_dir, status=status, summary=summary)


def run_experiment(opts: RunOptions, *, console: Console | None = None, pool: Any = None) -> RunResult:
    """Play one run to the end (`RunSession.run`): what `sparring run` does, minus the report."""
    with RunSession(opts, console=console, pool=pool) as session:
        return session.run()


def _explain_incomplete(console: Console, run_dir: Path, store: RunStore, runner: EpisodeRunner | None) -> None:
    """Why the run is incomplete, and the command that finishes it."""
    if runner is not None and runner.stopped_by:
        console.print(f"[red]stopped early: {runner.stopped_by}[/red]")
    failed = len(store.failed)
    if failed:
        console.print(f"[red]{failed} episode(s) failed (reasons in {run_dir / 'failures.jsonl'}); once the cause "
                      f"is fixed, play them again with: sparring run --resume {run_dir} --retry-failed[/red]")
    else:
        console.print(f"[red]the run is incomplete; play the missing episodes with: "
                      f"sparring run --resume {run_dir}[/red]")


def _total(plan: Plan, first: list[EpisodeJob]) -> dict[str, int]:
    rounds = plan.schedule.rounds
    return {"all": len(first) * rounds, "in_shard": len(select(first, plan.shard)) * rounds}


def _committer(store: RunStore, session: _Counters, runner: EpisodeRunner, bar: RunProgress):
    def commit() -> None:
        for rec in store.commit():
            for method in rec.verdict_methods:
                session.verdicts[method] = session.verdicts.get(method, 0) + 1
            if rec.status == "failed":
                session.failed += 1
            else:
                session.done += 1
                session.aborted += rec.status == "aborted"
        bar.update(session.skipped + session.done, session.failed, runner.stats, session.skipped)

    return commit


class _sigint:
    """First Ctrl-C: stop after the current tick (one batched model call per model), storing every
    episode that has finished; unfinished ones are dropped and replayed on resume. A second
    Ctrl-C stops at once (KeyboardInterrupt)."""

    def __init__(self, runner: EpisodeRunner, console: Console):
        self.runner, self.console = runner, console
        self.previous: Any = None

    def __enter__(self) -> _sigint:
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        if self.runner.draining:
            raise KeyboardInterrupt
        self.runner.stop_now()
        self.console.print("[yellow]stopping after the current model call; finished episodes are kept, "
                           "unfinished ones replay on resume (Ctrl-C again to stop now)[/yellow]")

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


