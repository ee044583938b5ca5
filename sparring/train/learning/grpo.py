"""Experiment 4: online GRPO on Deal or No Deal (learner vs the scripted negotiator), the existing
trainer (`sparring.train.grpo`): per-step reward, its within-group spread and the share of steps
whose group had zero reward variance (zero advantage: nothing trained), then the learner against
the same partner on held-out scenarios before and after (mean reward, agreement; paired).

It starts from the base model: `run_grpo` has no way to start from an adapter yet (the TextWorld
SFT adapter or the DoND warm start the issue asks for) — noted in the output.
"""

from __future__ import annotations

import json
import time
from typing import Any

from sparring.train.learning.context import Context
from sparring.train.learning.registry import experiment
from sparring.train.learning.results import Experiment, Stage, mean, paired, rate

SIZES: dict[str, dict[str, Any]] = {
    "quick": {"train": 4, "heldout": 4, "steps": 2, "generations": 2, "tokens": 16, "max_turns": 4},
    "full": {"train": 40, "heldout": 64, "steps": 40, "generations": 4, "tokens": 32, "max_turns": 6},
}
GAME = {"objective": "self", "untagged_as_message": True, "prefill_proposals": True,
        "reveal_proposals": True, "remind_pool": True}

def _experiment(size: dict[str, Any], split: str, n: int, learner: str) -> dict[str, Any]:
    return {"game": "dond", "game_args": {**GAME, "max_turns": size["max_turns"], "propose_after": size["max_turns"] // 2},
            "dataset": {"name": "dond_generated", "split": split, "args": {"n": max(2 * n, 40), "seed": 1}, "limit": n},
            "agents": {"learner": {"role": "negotiator", "model": learner,
                                   "sampling": {"temperature": 1.0, "max_new_tokens": size["tokens"]}},
                       "partner": {"role": "negotiator", "model": "scripted-negotiator"}},
            "tournament": {"type": "custom", "matchups": [["learner", "partner"]]}, "run": {"seed": 0, "max_live": 16}}

def evaluate(ctx: Context, model: str, name: str, size: dict[str, Any]) -> tuple[dict, dict, float, list]:
    cfg = _experiment(size, "test", size["heldout"], model)
    records, seconds, _ = ctx.play(cfg, name)
    rewards, deals, per = [], [], {}
    for r in records:
        seat = next(p for p, s in r.seats.items() if s.agent == "learner")
        reward = float(r.outcome.rewards.get(seat, 0.0)) if r.outcome else 0.0
        rewards.append(reward)
        deals.append(bool((r.outcome.metrics if r.outcome else {}).get("deal")))
        per[r.instance_id] = reward
    return {"mean_reward": mean(rewards), "agreement": rate(deals)}, per, seconds, records

@experiment("grpo")
def run(ctx: Context) -> Experiment:
    from sparring.train.grpo.config import GRPOConfig
    from sparring.train.grpo.trainer import run_grpo

    size = SIZES[ctx.size]
    start = time.perf_counter()
    base_m, base_per, base_s, _ = evaluate(ctx, ctx.label, "grpo-base", size)
    out = ctx.out / "loops" / "grpo"
    experiment_cfg = {**_experiment(size, "train", size["train"], "learner"), "models_file": str(ctx.models_file)}
    config = GRPOConfig(name="learning-grpo", model=ctx.model, experiment=experiment_cfg, seats=[0, 1],
                        num_generations=size["generations"], prompts_per_step=1, max_steps=size["steps"],
                        learning_rate=2e-5, format_penalty=0.1, output_dir=str(out))
    t = time.perf_counter()
    if not (out / "adapter" / "adapter_config.json").is_file():
        (out / "rewards.jsonl").unlink(missing_ok=True)
        run_grpo(config, str(ctx.models_file))
    train_s = time.perf_counter() - t
    curve = [json.loads(x) for x in (out / "rewards.jsonl").read_text().splitlines() if x.strip()]
    alias = ctx.register("grpo", out / "adapter")
    m, per, ev_s, _ = evaluate(ctx, alias, "grpo-after", size)

    exp = Experiment(name="grpo", description="Online GRPO on Deal or No Deal (learner vs the scripted "
                     "negotiator), from the base model; held-out scenarios before/after.", model=ctx.label,
                     primary="mean_reward", training_ids=_train_ids(ctx, size), heldout_ids=sorted(base_per),
                     target="a held-out gain over the starting policy with an interval above 0, or the "
                            "evidence of why not (reward variance, zero-advantage share)")
    zero = [p for p in curve if not p.get("reward_std")]
    exp.stages.append(Stage("base", 0, base_m, {"play_heldout": base_s}))
    exp.stages.append(Stage("grpo", len(curve), m, {"train_with_rollouts": train_s, "play_heldout": ev_s},
                            info={"reward_per_step": [p["reward"] for p in curve],
                                  "reward_std_per_step": [p.get("reward_std") for p in curve],
                                  "zero_variance_share": len(zero) / len(curve) if curve else None}))
    exp.paired["reward grpo - base"] = paired(base_per, per)
    exp.notes.append(f"{len(curve)} GRPO steps of {size['generations']} games; reward per step "
                     + ", ".join(f"{p['reward']:.2f}" for p in curve)
                     + f"; zero-variance groups {len(zero)}/{len(curve)}. Started from the base model "
                     "(starting from an adapter is not supported by run_grpo yet).")
    exp.wall_s = time.perf_counter() - start
    return exp

def _train_ids(ctx: Context, size: dict[str, Any]) -> list[str]:
    """The GRPO training scenarios' ids, as the engine loads them (to check disjointness)."""
    from sparring.engine.play import Arena
    from sparring.models.scripted import ScriptedModel

    arena = Arena.from_config({"name": "ids", **_experiment(size, "train", size["train"], "learner"),
                               "models_file": str(ctx.models_file)},
                              models={"learner": ScriptedModel("learner")})
    try:
        return sorted(arena.instances)
    finally:
        arena.close()
