"""The in-memory play API: play episodes through the batched runner without a YAML file on disk.

Online consumers — GRPO rollouts, iterative training loops, the web app, notebooks — build an
`Arena` once (from a config dict or a shipped config name, with any ready-made models injected,
e.g. the policy being trained) and call `arena.play(jobs)` as often as they like: every model call
of every live episode goes out batched per tick, exactly as in `sparring run`, and the records
come back in job order (optionally also appended to a run directory's store). `run_experiment`
(the CLI path) plays through the same `InProcessRunner`.

    arena = Arena.from_config({"game": "dond", "dataset": {"name": "dond_generated", "split": "train"},
                               "agents": {"me": {"role": "negotiator", "model": "policy"}}},
                              models={"policy": my_model})
    records = arena.play(arena.jobs(limit=8))
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from sparring.agents.base import Agent
from sparring.engine.config import RunSettings
from sparring.engine.episode import EpisodeJob
from sparring.engine.instances import load_instances
from sparring.engine.loader import Experiment, build_agents, config_from_data, load_config, resolve
from sparring.engine.plan import episodes
from sparring.engine.runner import Runner, RunStats
from sparring.engine.schedule import Schedule, derive_seed, matchup_name, seats_for
from sparring.errors import SparringError
from sparring.gameapi.game import Instance
from sparring.models.base import Model
from sparring.models.pool import ModelPool
from sparring.records.record import EpisodeRecord
from sparring.records.store import RunStore


class InProcessRunner:
    """Plays lists of jobs in this process (the `EpisodeRunner` protocol, like `ParallelRunner`).

    Finished and failed records go to `on_done` / `on_failed` (a store, a list, or both) as they
    finish; `on_tick` runs after every tick (the store's group commit).
    """

    def __init__(self, exp: Experiment, instances: Mapping[str, Instance], agents: dict[str, Agent],
                 models: Callable[[str], Model], *, max_live: int | None = None,
                 on_done: Callable[[EpisodeRecord], None] | None = None,
                 on_failed: Callable[[EpisodeRecord], None] | None = None):
        self.exp, self.instances, self.agents = exp, instances, agents
        self.runner = Runner(models, max_live=max_live or exp.config.run.max_live, on_done=on_done,
                             on_failed=on_failed)
        self.errors: list[str] = []

    @property
    def stats(self) -> RunStats:
        return self.runner.stats

    @property
    def draining(self) -> bool:
        return self.runner.draining

    @property
    def stopped_by(self) -> str | None:
        return self.runner.stopped_by

    @property
    def on_tick(self) -> Callable[[], object] | None:
        return self.runner.on_tick

    @on_tick.setter
    def on_tick(self, fn: Callable[[], object] | None) -> None:
        self.runner.on_tick = fn

    def stop_admitting(self) -> None:
        self.runner.stop_admitting()

    def stop_now(self) -> None:
        self.runner.stop_now()

    def run(self, jobs: Iterable[EpisodeJob]) -> RunStats:
        sink = _Failures(self.runner)
        return self.runner.run(episodes(self.exp, self.instances, jobs, self.agents, sink))

    def close(self) -> None:
        """Nothing to release: the models belong to the caller's pool."""


class _Failures:
    """Jobs that cannot start are failed records like any other (they never reach the runner)."""

    def __init__(self, runner: Runner):
        self.runner = runner

    def add_failed(self, record: EpisodeRecord) -> None:
        self.runner.stats.failed += 1
        if self.runner.on_failed:
            self.runner.on_failed(record)


class Arena:
    """One experiment's game, agents, instances and models, ready to play jobs in memory.

    `pool`: the models (a `ModelPool`; one is created from the experiment's model specs if not
    given, and closed by `close()`). `models`: ready-made models injected under their aliases
    (e.g. the policy a trainer is updating, or a scripted partner), used before any spec.
    """

    def __init__(self, exp: Experiment, instances: Iterable[Instance] | None = None, *,
                 pool: ModelPool | None = None, models: Mapping[str, Model] | None = None):
        self.exp = exp
        self.instances = {i.id: i for i in (load_instances(exp) if instances is None else instances)}
        self._own_pool = pool is None
        self.pool = ModelPool(exp.specs) if pool is None else pool
        for alias, model in (models or {}).items():
            self.pool.add(alias, model)
        self.agents = build_agents(exp)
        self.schedule = Schedule(exp, list(self.instances))

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | str | Path, *, settings: RunSettings | None = None,
                    instances: Iterable[Instance] | None = None, pool: ModelPool | None = None,
                    models: Mapping[str, Model] | None = None, base_dir: str | Path | None = None) -> Arena:
        """From a shipped config name, a YAML path, or a dict (named `inline` unless it has a
        `name`; relative paths in it are taken from `base_dir`, default the working directory).
        Injected `models` need no entry in the models file."""
        if isinstance(config, Mapping):
            path = Path(base_dir or Path.cwd()) / f"{config.get('name') or 'inline'}.yaml"
            cfg, path = config_from_data(dict(config), path, settings)
        else:
            cfg, path = load_config(config, settings)
        from sparring.models.spec import ModelSpec

        injected = {alias: ModelSpec(name=alias, backend="injected") for alias in models or {}}
        return cls(resolve(cfg, path, extra_specs=injected), instances, pool=pool, models=models)

    # -- jobs ----------------------------------------------------------------------------------
    def jobs(self, instance_ids: Iterable[str] | None = None, *, limit: int | None = None) -> list[EpisodeJob]:
        """The experiment's scheduled jobs (its tournament), optionally only for some instances
        and at most `limit` of them."""
        jobs = self.schedule.jobs(1, {})
        if instance_ids is not None:
            keep = set(instance_ids)
            jobs = [j for j in jobs if j.instance_id in keep]
        return jobs[:limit] if limit is not None else jobs

    def job(self, instance_id: str, agents: tuple[str, ...], *, seed: int | None = None, repeat: int = 0,
            flip: bool = False, experiment: str | None = None) -> EpisodeJob:
        """One episode of `agents` (filling the competing seats in order; the configured judges
        fill evaluator seats) on `instance_id`. The seed defaults to the schedule's derivation."""
        if instance_id not in self.instances:
            raise SparringError(f"unknown instance {instance_id!r} (this arena has {len(self.instances)})")
        missing = [a for a in agents if a not in self.agents]
        if missing:
            raise SparringError(f"unknown agent(s) {missing}; agents: {sorted(self.agents)}")
        seed = derive_seed(self.exp.config.run.seed, instance_id, repeat) if seed is None else seed
        return EpisodeJob(experiment=experiment or self.exp.name, instance_id=instance_id,
                          seats=seats_for(self.exp, tuple(agents)), seed=seed, repeat=repeat, flip=flip,
                          matchup=matchup_name(tuple(agents), self.exp.judges))

    # -- play ----------------------------------------------------------------------------------
    def play(self, jobs: Iterable[EpisodeJob], *, store: RunStore | None = None, max_live: int | None = None,
             on_record: Callable[[EpisodeRecord], None] | None = None) -> list[EpisodeRecord]:
        """Play `jobs` through the batched runner; return their records (failed ones included,
        with `status="failed"`; a branched job gives all its leaves) in job order. With `store`, each record is also appended to that
        run directory (committed after every tick, like a CLI run)."""
        jobs = list(jobs)
        out: dict[str, list[EpisodeRecord]] = {}

        def keep(record: EpisodeRecord) -> None:
            job_id = record.tree["id"] if record.tree else record.id  # a branched tree: its leaves
            out.setdefault(job_id, []).append(record)
            if on_record is not None:
                on_record(record)

        def done(record: EpisodeRecord) -> None:
            keep(record)
            if store is not None:
                store.add_done(record)

        def failed(record: EpisodeRecord) -> None:
            keep(record)
            if store is not None:
                store.add_failed(record)

        runner = InProcessRunner(self.exp, self.instances, self.agents, self.pool.get, max_live=max_live,
                                 on_done=done, on_failed=failed)
        if store is not None:
            runner.on_tick = store.commit
        runner.run(jobs)
        return [r for j in jobs for r in out.get(j.id, [])]

    def close(self) -> None:
        if self._own_pool:
            self.pool.close()

    def __enter__(self) -> Arena:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def play(config: Mapping[str, Any] | str | Path, jobs: Iterable[EpisodeJob] | None = None, *,
         models: Mapping[str, Model] | None = None, store: RunStore | None = None,
         settings: RunSettings | None = None, max_live: int | None = None) -> list[EpisodeRecord]:
    """One-shot: build an `Arena` from `config` (with the caller's run `settings`), play `jobs`
    (default: its whole schedule) `max_live` at a time (default the config's), close."""
    with Arena.from_config(config, models=models, settings=settings) as arena:
        return arena.play(arena.jobs() if jobs is None else jobs, store=store, max_live=max_live)
