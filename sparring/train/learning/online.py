"""One online RL arm inside a learning experiment: a config for `run_grpo` written to the suite's
output, run (or resumed, or kept when an identical run finished), and its per-step curves read back
for the experiment's page: reward, KL, entropy, value loss and the step-cost breakdown."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sparring.train.learning.context import Context

CURVES = ("reward", "kl", "entropy", "vf_loss", "pg_loss", "clipfrac", "zero_advantage_groups",
          "cost/total_s", "cost/rollout_s", "cost/training_s", "cost/model_tokens_per_trained_token",
          "cost/training_roof_ratio")

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

    def curves(self) -> dict[str, list[Any]]:
        """Per step: the figures a page draws (reward / KL / entropy / value loss, the step's cost)."""
        keys = [k for k in CURVES if any(k in p for p in self.steps)]
        keys += sorted({k for p in self.steps for k in p if k.startswith("reward/")})
        return {k: [p.get(k) for p in self.steps] for k in keys}

    def cost(self) -> dict[str, Any]:
        """The arm's step-cost summary (all its steps)."""
        from sparring.train.online.trainer.run import cost_summary

        return cost_summary(self.steps)


def train(ctx: Context, name: str, data: dict[str, Any]) -> Arm:
    """Run the online config `data` (its `output_dir` and `name` are set here) from the suite."""
    from sparring.engine.play import Arena
    from sparring.models.scripted import ScriptedModel
    from sparring.train.online.grpo.trainer import load_grpo, run_grpo
    from sparring.train.online.steplog import read_step_log
    from sparring.train.online.trainer.opponents import league_agents
    from sparring.train.online.trainer.run import log_name

    out = ctx.out / "online" / name
    data = {**data, "name": name, "output_dir": str(out)}
    # configs/online/: the evaluation of the trained adapter runs under the same stage name and
    # writes configs/NAME.yaml (Context.play)
    path = ctx.out / "configs" / "online" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    config, file = load_grpo(str(path))
    t = time.perf_counter()
    finished = (out / "adapter" / "adapter_config.json").is_file() and _same(out, config, file)
    if not finished:
        run_grpo(config, file)
    seconds = time.perf_counter() - t
    experiment = league_agents(config.experiment, config.learner_agent, config.opponents)
    with Arena.from_config({"name": "ids", **experiment}, models={"learner": ScriptedModel("learner")}) as arena:
        ids = sorted(arena.instances)
    if config.engine == "sparring":  # one entry per step, a resumed run's replayed steps once
        steps = read_step_log(out / log_name(config))
    else:
        log = out / "rewards.jsonl"
        steps = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines() if x.strip()] if log.is_file() else []
    return Arm(str(out / "adapter"), seconds, ids, steps)


def _same(out: Path, config: Any, file: str) -> bool:
    """An earlier run into `out` used this config (a rerun of the suite re-measures, not retrains)."""
    from sparring.train.fingerprint import fingerprint
    from sparring.train.online.grpo.trainer import state_for

    state = state_for(config, file)
    stored = state.stored()
    return stored is not None and stored.get("fingerprint") == fingerprint(state.snapshot)
