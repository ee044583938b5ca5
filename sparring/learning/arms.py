"""The one runner of an online RL arm, for every experiment of the suite that trains one.

An arm is always the same outline: its config for `run_online` written to the suite's output
(`OUT/configs/online/NAME.yaml`) and fingerprinted; trained, resumed from its checkpoint, or kept
when an identical run finished (a rerun of the suite measures again without retraining; a run of
another config is moved aside and trained afresh); its training instances added to the
experiment and checked disjoint from the held-out ones; its adapter registered as `LABEL@NAME`;
measured on the held-out set by the experiment's own `measure`; one `Stage` with the arm's
per-step curves and step cost; each paired comparison with the start. `train` alone is the first
half, for an experiment that measures its arm in its own way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sparring.learning.context import Context
from sparring.learning.results import Estimate, Experiment, Stage, paired

CURVES = ("reward", "kl", "entropy", "vf_loss", "pg_loss", "clipfrac", "zero_advantage_groups",
          "cost/total_s", "cost/rollout_s", "cost/training_s", "cost/model_tokens_per_trained_token",
          "cost/training_roof_ratio")
SOURCE = "<learning suite>"

# The suite's RL figures were measured with LoRA's dropout on in the training passes and the
# adapter unmerged in the rollout (before the online trainer's `disable_dropout` and
# `merge_rollout`, default on since 2026-11-29): its arms keep those settings, so each page's
# command reproduces the page's figures.
AS_MEASURED: dict[str, Any] = {"disable_dropout": False, "merge_rollout": False}


@dataclass
class Arm:
    adapter: str
    seconds: float
    training_ids: list[str]
    steps: list[dict[str, Any]] = field(default_factory=list)
    out: Path = Path()
    resumed_from: int = 0  # the step this session started from (steps after it were trained now)

    def curves(self, keys: Sequence[str] | None = None) -> dict[str, list[Any]]:
        """Per step: the figures a page draws (default: reward / KL / entropy / value loss, the
        step's cost, the reward of each seat); `keys`: exactly these."""
        if keys is None:
            keys = [k for k in CURVES if any(k in p for p in self.steps)]
            keys += sorted({k for p in self.steps for k in p if k.startswith("reward/")})
        return {k: [p.get(k) for p in self.steps] for k in keys}

    def cost(self) -> dict[str, Any]:
        """The arm's step-cost summary (all its steps)."""
        from sparring.train.online.trainer.run import cost_summary

        return cost_summary(self.steps)


@dataclass
class Measured:
    """A policy on the held-out set, as an experiment measures it: its metrics, per-unit values to
    pair with the start's (label -> game or instance -> value), the wall times of its runs, the
    held-out instances it played, and what else its stage records (`info`)."""

    metrics: dict[str, Estimate]
    per: dict[str, dict[str, float]]
    walls: dict[str, float]
    instances: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)


def train(ctx: Context, name: str, data: dict[str, Any], out: Path | None = None) -> Arm:
    """Run the online config `data` (its `name` and `output_dir`, default `OUT/online/NAME`, are
    set here): trained, resumed, or kept when a finished run of the same config is there."""
    from sparring.train.online.launch import load_online

    out = out or ctx.out / "online" / name
    data = {**data, "name": name, "output_dir": str(out)}
    # configs/online/: an evaluation run of the trained adapter may share the arm's name and
    # writes configs/NAME.yaml (Context.play)
    path = ctx.out / "configs" / "online" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    config, file = load_online(str(path))
    t = time.perf_counter()
    first = _run(config, file, out)
    return Arm(str(out / "adapter"), time.perf_counter() - t, _training_ids(config), _steps(config, out), out, first)


def run_arm(ctx: Context, exp: Experiment, name: str, data: dict[str, Any], measure: Callable[[str], Measured], *,
            stage: str, step: int, start: Measured, info: dict[str, Any] | None = None,
            register_as: str | None = None, curve_keys: Sequence[str] | None = None,
            baselines: dict[str, Measured] | None = None) -> Arm:
    """One arm of `exp` from the start policy measured as `start`: trained (`train`), registered
    as `LABEL@register_as` (default NAME), measured (`measure(alias)`), recorded as stage `stage`
    at `step` with its curves and cost, each `measure` label paired with the start's as
    `"LABEL STAGE - start"`, and with each of `baselines` (other policies measured the same way,
    e.g. the start's own start) that has it as `"LABEL STAGE - BASELINE"`."""
    arm = train(ctx, name, data)
    exp.training_ids = sorted(set(exp.training_ids) | set(arm.training_ids))
    exp.__post_init__()  # the arm's training instances are disjoint from the held-out ones (checked)
    measured = measure(ctx.register(register_as or name, arm.adapter))
    exp.stages.append(Stage(stage, step, measured.metrics, {"train": arm.seconds, **measured.walls},
                            info={**(info or {}), "curves": arm.curves(curve_keys), "cost": arm.cost(),
                                  **measured.info}))
    for label, per in measured.per.items():
        exp.paired[f"{label} {stage} - start"] = paired(start.per[label], per)
    for base_name, base in (baselines or {}).items():
        for label, per in measured.per.items():
            if label in base.per:
                exp.paired[f"{label} {stage} - {base_name}"] = paired(base.per[label], per)
    ctx.progress(exp)
    return arm


def _run(config: Any, file: str, out: Path) -> int:
    """Train into `out` unless a finished run of this config is there; the step this call started
    from (the config's `max_steps` when nothing was trained now)."""
    from sparring.train.checkpoints import checkpoint_step, last_checkpoint
    from sparring.train.fingerprint import fingerprint
    from sparring.train.online.launch import run_online, state_for

    state = state_for(config, file)
    stored = state.stored()
    same = stored is not None and stored.get("fingerprint") == fingerprint(state.snapshot)
    if same and (out / "adapter" / "adapter_config.json").is_file():
        return int(config.max_steps)
    if stored is None:  # a fresh start: no curve of an older run may precede this one's
        for log in ("rewards.jsonl", "rollouts.jsonl"):
            (out / log).unlink(missing_ok=True)
    checkpoint = last_checkpoint(out / "trainer") if same else None
    run_online(config, file, restart=stored is not None and not same)  # another config: moved aside
    return checkpoint_step(checkpoint)


def instance_ids(experiment: dict[str, Any]) -> list[str]:
    """The instances an experiment config plays, as the engine loads them (no model is loaded)."""
    from sparring.engine.play import Arena
    from sparring.models.scripted import ScriptedModel

    with Arena.from_config({"name": "ids", **experiment}, models={"learner": ScriptedModel("learner")}) as arena:
        return sorted(arena.instances)


def _training_ids(config: Any) -> list[str]:
    """The arm's training instances (to check disjointness)."""
    from sparring.train.online.trainer.opponents import league_agents

    return instance_ids(league_agents(config.experiment, config.learner_agent, config.opponents))


def _steps(config: Any, out: Path) -> list[dict[str, Any]]:
    """The run's per-step log, one entry per step (a resumed run's replayed steps once)."""
    from sparring.train.online.steplog import read_step_log
    from sparring.train.online.trainer.run import log_name

    return read_step_log(out / (log_name(config) if config.engine == "sparring" else "rewards.jsonl"))
