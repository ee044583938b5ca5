"""Run an experiment: load -> resolve -> schedule -> shard -> skip stored -> play -> store -> report.

Entry points (`scripts/run_debate.py`, `scripts/run_negotiation.py`, `sparring run`) are thin
wrappers around `run_experiment`. Models are loaded before the first episode so that a broken
model fails the command at once instead of recording every episode as failed; `--dry-run` stops
before that and never loads weights. Ctrl-C stops admitting episodes and lets the live ones
finish (a second Ctrl-C stops at once); whatever was stored stays, and the same command resumes.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from sparring.agents.base import Agent, AgentGen
from sparring.errors import ConfigError, SparringError
from sparring.experiments.episode import EpisodeDriver, EpisodeJob
from sparring.experiments.instances import load_instances
from sparring.experiments.loader import Experiment, build_agents, load_config, resolve
from sparring.experiments.progress import RunProgress, print_plan, print_summary
from sparring.experiments.record import EpisodeRecord, SeatRecord
from sparring.experiments.runner import Runner, sparse_gc
from sparring.experiments.schedule import Schedule
from sparring.experiments.shard import Shard, parse_shard, select, shard_label
from sparring.experiments.store import (
    CONFIG,
    EPISODES,
    RunStore,
    iter_jsonl,
    iter_records,
    new_run_name,
    runs_root,
)
from sparring.experiments.workers import ParallelRunner, resolve_workers


@dataclass
class RunOptions:
    configuration: str | None = None
    num_iters: int | None = None
    dry_run: bool = False
    resume: str | None = None
    retry_failed: bool = False
    shard: str | None = None
    output_dir: str | None = None
    models_file: str | None = None
    max_live: int | None = None
    workers: int | str | None = None
    seed: int | None = None
    run_name: str | None = None
    quiet: bool = False
    report: bool = True
    family: str | None = None  # "debate" / "negotiation": scripts refuse the other family's configs


@dataclass
class Plan:
    """Everything resolved before any model is loaded."""

    exp: Experiment
    schedule: Schedule
    instances: dict[str, Any]
    shard: Shard | None
    run_dir: Path
    notes: list[str] = field(default_factory=list)
    extra_models: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunResult:
    run_dir: Path | None
    status: str
    summary: dict[str, Any] = field(default_factory=dict)
    plan: dict[str, Any] = field(default_factory=dict)
    report: Path | None = None


def prepare(opts: RunOptions, instances: list[Any] | None = None) -> Plan:
    """Resolve everything short of loading models. `instances`: already loaded (worker processes
    get theirs from the parent instead of reading the dataset again)."""
    if not opts.configuration and not opts.resume:
        raise ConfigError("give a configuration name/path (--configuration) or a run directory (--resume)")
    overrides = {"run.num_iters": opts.num_iters, "run.seed": opts.seed, "run.max_live": opts.max_live,
                 "run.workers": opts.workers,
                 "run.output_dir": opts.output_dir, "run.name": opts.run_name, "models_file": opts.models_file}
    source: str | Path | None = opts.configuration
    if source is None:
        source = Path(str(opts.resume)).expanduser() / CONFIG
        if not Path(source).is_file():
            raise ConfigError("--resume: not a run directory (no config.yaml)", file=str(source))
    cfg, path = load_config(source, overrides)
    exp = resolve(cfg, path)
    _check_family(exp, opts.family)
    if instances is None:
        instances = load_instances(exp)
    ids = [i.id for i in instances]
    shard = parse_shard(opts.shard)
    schedule = Schedule(exp, ids)
    plan_notes: list[str] = []
    extra_models: dict[str, Any] = {}
    if cfg.tournament.type == "replicate":
        from sparring.experiments.replicate import plan_replicate

        jobs, agents, extra_models, info = plan_replicate(exp, ids)
        schedule.replicate_jobs = jobs
        exp.extra_agents.update(agents)
        plan_notes.append(f"replicate: {info['episodes']} episode(s) of {info['source_run']} re-judged; "
                          f"skipped {info['skipped']}")
    if schedule.swiss and shard is not None:
        raise exp.error("swiss rounds are paired from all results; run them unsharded", "tournament.type")
    if opts.resume:
        run_dir = Path(opts.resume).expanduser()
    else:
        run_dir = runs_root(exp.config.run.output_dir) / (exp.config.run.name or new_run_name(exp.name))
    return Plan(exp=exp, schedule=schedule, instances={i.id: i for i in instances}, shard=shard,
                run_dir=run_dir, notes=plan_notes, extra_models=extra_models)


def models_to_load(plan: Plan) -> list[str]:
    """Every model alias the run's agents use, loaded before the first episode so that a broken
    model fails the command at once rather than every episode."""
    return sorted({a.model for a in plan.exp.agent_configs.values()} | set(plan.extra_models))


def _check_family(exp: Experiment, family: str | None) -> None:
    module = type(exp.game).__module__
    if family and module.startswith("sparring.games.") and not module.startswith(f"sparring.games.{family}"):
        other = module.split(".")[2]
        raise exp.error(f"game {exp.config.game!r} is a {other} game; use the {other} entry point "
                        f"(or `sparring run {exp.name}`)", "game")


def describe(plan: Plan) -> dict[str, Any]:
    exp = plan.exp
    sched = plan.schedule.describe()
    models: dict[str, dict[str, Any]] = {}
    agents: dict[str, dict[str, Any]] = {}
    for name, acfg in exp.agent_configs.items():
        spec = exp.specs.get(acfg.model) or next(s for s in exp.specs.values() if acfg.model in s.aliases)
        models.setdefault(spec.name, {"backend": spec.backend, "agents": []})["agents"].append(name)
        s = exp.samplings[name]
        agents[name] = {"role": acfg.role, "model": acfg.model, "prompts": exp.prompts[name].name,
                        "sampling": f"T={s.temperature} top_p={s.top_p} max_new={s.max_new_tokens}"}
    for alias in plan.extra_models:
        models[alias] = {"backend": "replay", "agents": sorted(exp.extra_agents)}
    out = {"name": exp.name, "file": exp.file, "game": exp.config.game, "dataset": exp.config.dataset.name,
           "instances": len(plan.instances), "models": models, "agents": agents, "schedule": sched,
           "tournament": exp.config.tournament.type, "shard": shard_label(plan.shard), "notes": plan.notes}
    if plan.shard is not None:
        out["in_shard"] = len(select(plan.schedule.jobs(1, {}), plan.shard))
    if (plan.run_dir / EPISODES).exists():
        out["already_done"] = len({obj.get("id") for obj in iter_jsonl(plan.run_dir / EPISODES)})
    return out


def failed_record(exp: Experiment, job: EpisodeJob, agents: dict[str, Agent], error: BaseException) -> EpisodeRecord:
    """The record of an episode that could not even start (e.g. a seat without an agent)."""
    seats = {p: SeatRecord(agent=a, model=agents[a].model if a in agents else "?", role=exp.roles.get(p, "?"))
             for p, a in job.seats.items()}
    return EpisodeRecord(id=job.id, experiment=job.experiment, game=exp.game.name, instance_id=job.instance_id,
                         seats=seats, seed=job.seed, repeat=job.repeat, flip=job.flip, matchup=job.matchup,
                         status="failed", error=f"{type(error).__name__}: {error}", started_at=time.time())


class _Session:
    """Counters of this invocation, fed by the store's group commits."""

    def __init__(self) -> None:
        self.done = self.aborted = self.failed = self.skipped = 0
        self.started = time.time()
        self.load_s = 0.0


def run_experiment(opts: RunOptions, *, console: Console | None = None, pool: Any = None) -> RunResult:
    console = console or Console()
    with sparse_gc():
        plan = prepare(opts)
    exp = plan.exp
    if opts.dry_run:
        info = describe(plan)
        print_plan(console, info)
        return RunResult(run_dir=None, status="dry-run", plan=info)

    from sparring.models.pool import ModelPool

    workers = resolve_workers(exp.config.run.workers)
    if workers > 1 and pool is not None:
        raise ConfigError("run.workers > 1 builds models inside each worker; it cannot use a model pool "
                          "passed in by the caller")
    store = RunStore(plan.run_dir, exp.config)
    own_pool = pool is None
    pool = ModelPool(exp.specs) if pool is None else pool
    session = _Session()
    runner: Runner | ParallelRunner | None = None
    status = "incomplete"
    try:
        if workers > 1:  # start them now: they load their models while the schedule is built
            if not opts.quiet:
                console.print(f"starting {workers} worker processes (each loads its own models) ...")
            runner = ParallelRunner(opts, workers, store, plan, start=exp.config.run.worker_start)
        for alias, model in plan.extra_models.items():
            pool.add(alias, model)
        agents = build_agents(exp)
        # With workers, each worker loads its own models (and a broken one fails them all at once).
        for alias in models_to_load(plan) if workers == 1 else []:
            if not opts.quiet:
                console.print(f"loading model {alias} ...")
            pool.get(alias)
        session.load_s = time.time() - session.started
        session.started = time.time()
        with sparse_gc():
            first = plan.schedule.jobs(1, {})
        total = _total(plan, first)
        store.write_manifest(status="running", schedule={"total": total["all"], "shard": shard_label(plan.shard),
                                                          "in_shard": total["in_shard"]})
        interrupted = False
        with RunProgress(total["in_shard"], console=console, enabled=not opts.quiet,
                         description=exp.name) as bar:
            if not isinstance(runner, ParallelRunner):
                runner = Runner(pool.get, max_live=exp.config.run.max_live, on_done=store.add_done,
                                on_failed=store.add_failed)
            runner.on_tick = _committer(store, session, runner, bar)
            with _sigint(runner, console):
                results: dict[str, EpisodeRecord] = {}
                for rnd in range(1, plan.schedule.rounds + 1):
                    if plan.schedule.swiss and rnd > 1:
                        results = {r.id: r for r in iter_records(plan.run_dir, transcripts=False)}
                    jobs = select(first if rnd == 1 else plan.schedule.jobs(rnd, results), plan.shard)
                    todo = [j for j in jobs if j.id not in store.done
                            and (opts.retry_failed or j.id not in store.failed)]
                    session.skipped += len(jobs) - len(todo)
                    bar.update(session.skipped + session.done, session.failed, runner.stats.tokens_per_s)
                    if isinstance(runner, ParallelRunner):
                        runner.run(todo)
                    else:
                        runner.run(_episodes(plan, todo, agents, store))
                    if runner.draining:
                        interrupted = True
                        break
        status = "interrupted" if interrupted else "complete"
        if isinstance(runner, ParallelRunner) and runner.errors:
            status = "incomplete"
    except KeyboardInterrupt:
        status = "interrupted"
    finally:
        if isinstance(runner, ParallelRunner):
            runner.close()
        store.close(status=status)
        if own_pool:
            pool.close()
    wall = time.time() - session.started
    tokens = runner.stats.completion_tokens if runner else 0
    counts = store.counts()
    summary = {"experiment": exp.name, "done": session.done, "aborted": session.aborted, "failed": session.failed,
               "skipped": session.skipped, "stored_done": counts["done"], "stored_failed": counts["failed"],
               "tokens": tokens, "tokens_per_s": tokens / max(wall, 1e-9),
               "episodes_per_s": (session.done + session.failed) / max(wall, 1e-9), "wall_s": wall,
               "load_s": session.load_s,
               "status": status, "run_dir": str(plan.run_dir)}
    if isinstance(runner, ParallelRunner) and runner.errors:
        summary["worker_errors"] = list(runner.errors)
    if not opts.quiet:
        print_summary(console, summary)
    for err in summary.get("worker_errors", []):
        console.print(f"[red]{err}[/red]")
    if summary.get("worker_errors") and session.done + session.failed == 0:
        raise SparringError(f"every worker failed before storing an episode; first error: {summary['worker_errors'][0]}")
    if status == "interrupted":
        console.print(f"[yellow]interrupted; stored episodes are safe. Resume with --resume {plan.run_dir}[/yellow]")
    report = _report(plan.run_dir, console) if opts.report and status != "interrupted" else None
    return RunResult(run_dir=plan.run_dir, status=status, summary=summary, report=report)


def _total(plan: Plan, first: list[EpisodeJob]) -> dict[str, int]:
    rounds = plan.schedule.rounds
    return {"all": len(first) * rounds, "in_shard": len(select(first, plan.shard)) * rounds}


def _episodes(plan: Plan, jobs: list[EpisodeJob], agents: dict[str, Agent], store: RunStore) -> Iterator[AgentGen]:
    exp = plan.exp
    for job in jobs:
        try:
            driver = EpisodeDriver(exp.game, job, plan.instances[job.instance_id], agents)
        except SparringError as e:
            store.add_failed(failed_record(exp, job, agents, e))
            continue
        yield driver.run()


def _committer(store: RunStore, session: _Session, runner: Runner, bar: RunProgress):
    def commit() -> None:
        for rec in store.commit():
            if rec.status == "failed":
                session.failed += 1
            else:
                session.done += 1
                session.aborted += rec.status == "aborted"
        bar.update(session.skipped + session.done, session.failed, runner.stats.tokens_per_s)

    return commit


class _sigint:
    """First Ctrl-C: stop admitting, finish live episodes. Second: stop now (KeyboardInterrupt)."""

    def __init__(self, runner: Runner, console: Console):
        self.runner, self.console, self.previous = runner, console, None

    def __enter__(self) -> _sigint:
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        if self.runner.draining:
            raise KeyboardInterrupt
        self.runner.stop_admitting()
        self.console.print("[yellow]stopping: finishing live episodes (Ctrl-C again to stop now)[/yellow]")

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


def _report(run_dir: Path, console: Console) -> Path | None:
    """Write the report if the report module is available; a failing report never loses the run."""
    try:
        from sparring.experiments.report import write_report
    except ImportError:
        return None
    try:
        path = write_report(run_dir)
    except Exception as e:  # noqa: BLE001 — the run is stored; the report can be redone
        console.print(f"[yellow]report failed ({type(e).__name__}: {e}); retry with `sparring report {run_dir}`[/yellow]")
        return None
    console.print(f"report: {path}")
    return path
