"""Everything about a run that is decided before any model is loaded: options, the resolved
experiment, its schedule and instances, the run directory; and the episode generators of jobs.

Shared by one-process runs (`run.py`) and worker processes (`workers.py`), so neither imports the
other.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from sparring.agents.base import Agent, AgentGen
from sparring.engine.branch import BranchDriver
from sparring.engine.config import ExperimentConfig, RunSettings, read_config
from sparring.engine.episode import EpisodeDriver, EpisodeJob
from sparring.engine.instances import load_instances
from sparring.engine.loader import Experiment, load_config, resolve
from sparring.engine.schedule import Schedule
from sparring.engine.shard import Shard, parse_shard, select, shard_label
from sparring.errors import ConfigError, SparringError
from sparring.records.files import CONFIG, EPISODES
from sparring.records.reader import stored_ids
from sparring.records.record import EpisodeRecord, SeatRecord
from sparring.records.store import new_run_name, runs_root


class FailureSink(Protocol):
    def add_failed(self, record: EpisodeRecord) -> None: ...


@dataclass
class RunOptions:
    """Everything a caller decides about one run, as explicit fields (the command line's options)."""

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

    def settings(self) -> RunSettings:
        """The fields that replace the config's own `run:` values and models file."""
        return RunSettings(num_iters=self.num_iters, seed=self.seed, max_live=self.max_live, workers=self.workers,
                           output_dir=self.output_dir, name=self.run_name, models_file=self.models_file)


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


def prepare(opts: RunOptions, instances: list[Any] | None = None) -> Plan:
    """Resolve everything short of loading models. `instances`: already loaded (worker processes
    get theirs from the parent instead of reading the dataset again)."""
    if not opts.configuration and not opts.resume:
        raise ConfigError("give a configuration name/path (--configuration) or a run directory (--resume)")
    source: str | Path | None = opts.configuration
    if source is None:
        source = Path(str(opts.resume)).expanduser() / CONFIG
        if not Path(source).is_file():
            raise ConfigError("--resume: not a run directory (no config.yaml)", file=str(source))
    cfg, path = load_config(source, opts.settings())
    if opts.resume:
        run_dir = Path(opts.resume).expanduser()
    else:
        run_dir = runs_root(cfg.run.output_dir) / (cfg.run.name or new_run_name(cfg.name))
    cfg = keep_stored_view(cfg, run_dir)
    exp = resolve(cfg, path)
    if instances is None:
        instances = load_instances(exp)
    ids = [i.id for i in instances]
    shard = parse_shard(opts.shard)
    schedule = Schedule(exp, ids)
    plan_notes: list[str] = []
    extra_models: dict[str, Any] = {}
    if cfg.tournament.type == "replicate":
        from sparring.engine.replicate import plan_replicate

        jobs, agents, extra_models, info = plan_replicate(exp, ids)
        schedule.replicate_jobs = jobs
        exp.extra_agents.update(agents)
        plan_notes.append(f"replicate: {info['episodes']} episode(s) of {info['source_run']} re-judged; "
                          f"skipped {info['skipped']}")
    if schedule.swiss and shard is not None:
        raise exp.error("swiss rounds are paired from all results; run them unsharded", "tournament.type")
    return Plan(exp=exp, schedule=schedule, instances={i.id: i for i in instances}, shard=shard,
                run_dir=run_dir, notes=plan_notes, extra_models=extra_models)


def keep_stored_view(cfg: ExperimentConfig, run_dir: Path) -> ExperimentConfig:
    """A config that names no `view`, resumed into a run stored before the conversation view became
    the default, keeps that run's view: the rendered one. Since then a resolved config always names
    its view, so a stored config without one was played rendered."""
    if cfg.view is not None or not (run_dir / CONFIG).is_file():
        return cfg
    try:
        stored = read_config(run_dir)
    except SparringError:
        return cfg  # the store's own check reports an unreadable config, with its file
    return cfg.model_copy(update={"view": "rendered"}) if stored.view is None else cfg


def models_to_load(plan: Plan) -> list[str]:
    """Every model alias the run's agents use, loaded before the first episode so that a broken
    model fails the command at once rather than every episode."""
    return sorted({a.model for a in plan.exp.agent_configs.values()} | set(plan.extra_models))


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
    out = {"name": exp.name, "file": exp.file, "game": exp.config.game, "dataset": exp.config.dataset.name if exp.config.dataset else None,
           "instances": len(plan.instances), "models": models, "agents": agents, "schedule": sched,
           "tournament": exp.config.tournament.type, "shard": shard_label(plan.shard), "notes": plan.notes}
    if plan.shard is not None:
        out["in_shard"] = len(select(plan.schedule.jobs(1, {}), plan.shard))
    if (plan.run_dir / EPISODES).exists():
        out["already_done"] = len(stored_ids(plan.run_dir))
    return out


def failed_record(exp: Experiment, job: EpisodeJob, agents: dict[str, Agent], error: BaseException) -> EpisodeRecord:
    """The record of an episode that could not even start (e.g. a seat without an agent)."""
    seats = {p: SeatRecord(agent=a, model=agents[a].model if a in agents else "?", role=exp.roles.get(p, "?"))
             for p, a in job.seats.items()}
    return EpisodeRecord(id=job.id, experiment=job.experiment, game=exp.game.name, instance_id=job.instance_id,
                         seats=seats, seed=job.seed, repeat=job.repeat, flip=job.flip, matchup=job.matchup,
                         status="failed", error=f"{type(error).__name__}: {error}", started_at=time.time())


def episodes(exp: Experiment, instances: Mapping[str, Any], jobs: Iterable[EpisodeJob], agents: dict[str, Agent],
             sink: FailureSink) -> Iterator[AgentGen]:
    """The episode generators of `jobs` for a runner; a job that cannot even start (a seat without
    an agent, an unknown instance) goes to `sink.add_failed` as a failed record."""
    for job in jobs:
        try:
            instance = instances.get(job.instance_id)
            if instance is None:
                raise SparringError(f"instance {job.instance_id!r} is not loaded")
            branch = exp.config.branch
            driver = (BranchDriver(exp.game, job, instance, agents, branch=branch) if branch is not None
                      else EpisodeDriver(exp.game, job, instance, agents))
        except SparringError as e:
            sink.add_failed(failed_record(exp, job, agents, e))
            continue
        yield driver.run()
