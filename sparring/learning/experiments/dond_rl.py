"""Experiment: Deal or No Deal, learning from the game's exact reward — GRPO on sparring's trainer
from the self-play SFT policy of `dond-selfplay`, against a fixed partner.

Self-play SFT taught the policy to agree, mostly by one side taking the whole pool (the other
accepts a deal worth nothing to it: `dond-selfplay`'s split distribution). Against a partner that
does not capitulate — `fair-negotiator`, which accepts a proposal only if it leaves the partner half
of what the pool is worth to it, and never proposes first — claiming everything ends without a deal.
Here the reward is the learner's own points in the game (`objective: self`, minus 0.1 per refused
reply), in the same game `dond-selfplay` trains and measures (8 turns, proposals from turn 4,
revealed, prefilled), the learner in both seats; groups are games of one scenario and seat, so a
proposal that leaves the partner enough stands out against the group's claims.

Start: `LABEL@dond-selfplay-2`, the last self-play iteration `dond-selfplay` registered in the same
output folder (run it first: `--only dond-selfplay,dond-rl`). Both the start and the trained policy
play the held-out scenarios (the generated test split, disjoint from every training scenario:
checked) against `fair-negotiator` in both seats — mean own points, the partner's, agreement, deals
where both sides score; paired per (scenario, seat) — and against themselves (agreement).
"""

from __future__ import annotations

import time
from typing import Any

from sparring.learning.arms import AS_MEASURED, Measured, run_arm
from sparring.learning.context import Context
from sparring.learning.dond_eval import FAIR, MAX_LIVE, against, dataset, game_args, selfplay, walls
from sparring.learning.registry import experiment
from sparring.learning.report import plot_training, training_panels
from sparring.learning.results import Experiment, Stage

SIZES: dict[str, dict[str, Any]] = {
    "quick": {"train": 4, "heldout": 2, "partner_heldout": 1, "steps": 1, "generations": 2, "prompts": 1, "max_errors": 2,
              "tokens": 16, "max_turns": 4},
    # full: 25 steps of 8 games (4 of a scenario and seat, 2 scenarios); 64 held-out scenarios x 2 seats
    # against each partner
    "full": {"train": 64, "heldout": 64, "partner_heldout": 64, "steps": 25, "generations": 4, "prompts": 2,
             "tokens": 32, "max_turns": 8},
}
LEARNING_RATE = 2e-4
START = "dond-selfplay-2"
# the per-step curves drawn for the page (OUT/curves/dond-rl-training.png)
TRAINING_PANELS = training_panels("own points, -0.1 a refused reply",
                                  {"reward/Player_1": "reward as Player_1", "reward/Player_2": "reward as Player_2"})


def arm_config(ctx: Context, size: dict[str, Any], start: str) -> dict[str, Any]:
    experiment = {"game": "dond", "view": size.get("view", "rendered"), "game_args": game_args(size), "dataset": dataset("train", size["train"]),
                  "models_file": str(ctx.models_file.resolve()),
                  "agents": {"learner": {"role": "negotiator", "model": "learner",
                                         "sampling": {"temperature": 1.0, "max_new_tokens": size["tokens"]}},
                             "partner": {"role": "negotiator", "model": FAIR}},
                  "tournament": {"type": "custom", "matchups": [["learner", "partner"]]},
                  "run": {"seed": 0, "max_live": MAX_LIVE}}
    return {"algorithm": "grpo", "trainer": "sparring", "model": ctx.model, "adapter": start,
            "learner_agent": "learner", "experiment": experiment, "seats": [0, 1],
            "num_generations": size["generations"], "prompts_per_step": size["prompts"], "max_steps": size["steps"],
            "learning_rate": LEARNING_RATE, "beta": 0.0, "format_penalty": 0.1, "train_rejected": True,
            "save_steps": 5, "seed": 0,
            "lr_scheduler_type": "constant", **AS_MEASURED}


def grpo_note(size: dict[str, Any], extra: str = "") -> str:
    """The note that says what `dond-rl`'s GRPO ran (its arms' variants add `extra`)."""
    return (f"GRPO: {size['steps']} steps of {size['generations'] * size['prompts']} games against {FAIR}, the learner "
            f"in both seats, lr {LEARNING_RATE}, beta 0, reward = own points - 0.1 a refused reply, refused replies "
            f"trained{'; ' + extra if extra else ''}")


def grpo_arm(ctx: Context, exp: Experiment, experiment_name: str, run: str, size: dict[str, Any], start: str,
             start_m: Measured, baselines: dict[str, Measured] | None = None, note: str = "") -> None:
    """`dond-rl`'s GRPO arm `run` from the adapter `start` in `size`'s view: trained, measured by
    `measure_policy` under `run`, paired with the start (`start_m`) and each of `baselines`, its
    curves drawn as OUT/curves/EXPERIMENT_NAME-training.png and its note added (`note`: what the
    variant changes)."""
    result = run_arm(ctx, exp, run, arm_config(ctx, size, start),
                     lambda trained: measure_policy(ctx, trained, run, size), stage="grpo", step=size["steps"],
                     start=start_m, info={"view": size["view"]} if "view" in size else None, baselines=baselines)
    plot_training({"grpo": result.curves()}, ctx.out / "curves" / f"{experiment_name}-training.png", TRAINING_PANELS)
    exp.notes.append(grpo_note(size, note))


def measure_policy(ctx: Context, alias: str, name: str, size: dict[str, Any]) -> Measured:
    """Against fair-negotiator in both seats, and in self-play (does it still agree with itself?),
    in `size`'s view."""
    fair, per_fair, run_fair = against(ctx, alias, FAIR, f"{name}-vs-fair", size)
    own, _, run_self = selfplay(ctx, alias, name, size)
    metrics = {**fair, **{f"selfplay_{k}": v for k, v in own.items() if k in ("agreement", "mutual_deal_rate")}}
    return Measured(metrics, {"points vs fair-negotiator": per_fair}, walls([run_fair, run_self]),
                    sorted({r.instance_id for r in run_fair.records}))


@experiment("dond-rl")
def run(ctx: Context) -> Experiment:
    size = SIZES[ctx.size]
    begin = time.perf_counter()
    alias, start = ctx.registered(START, "dond-selfplay", "dond-rl")
    start_m = measure_policy(ctx, alias, "dond-rl-start", size)
    exp = Experiment(name="dond-rl", description="Deal or No Deal: GRPO on sparring's trainer (the learner's own points) "
                     "from the self-play SFT policy, against fair-negotiator in both seats; held-out scenarios "
                     "against fair-negotiator (both seats) and in self-play.", model=ctx.label, primary="vs_fair_points",
                     training_ids=[], heldout_ids=start_m.instances,
                     target="held-out points against fair-negotiator above the start (paired interval above 0), "
                            "agreement not lower")
    exp.stages.append(Stage("start", 0, start_m.metrics, start_m.walls, info={"adapter": start}))
    ctx.progress(exp)
    grpo_arm(ctx, exp, "dond-rl", "dond-rl-grpo", size, start, start_m)
    exp.wall_s = time.perf_counter() - begin
    return exp
