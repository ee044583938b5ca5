"""Experiment: Deal or No Deal, GRPO against `fair-negotiator` from the mutual-filter self-play
policy — `dond-rl`'s recipe from `dond-selfplay-mutual`'s last iteration instead of lm-selfplay's.

`dond-rl` moved points against `fair-negotiator` (+0.98) from a start whose self-play deals were
capitulations (deals where both score 0.03, then 0.30); `dond-selfplay-mutual` learns splits in
self-play by SFT on deals where both sides score. This arm asks whether reward learning against a
partner that never capitulates keeps those splits and adds the points issue 60 asks against that
partner. The same GRPO as `dond-rl` (25 steps of 8 games against `fair-negotiator`, the learner in
both seats, groups of 4 games of one scenario and seat, own points − 0.1 a refused reply, lr 2e-4,
β 0), on the trainer's defaults (no dropout in the training passes, the adapter merged for the
rollout). Start and trained policy are measured as `dond-selfplay-mutual` measures its last
iteration: the generated test scenarios and `selfplay.txt`'s test split, in self-play and against
`fair-negotiator` in both seats, the generated set also against the base model.

Start: `LABEL@dond-mutual-2`, registered by `dond-selfplay-mutual` in the same output (run it
first: `--only dond-selfplay-mutual,dond-mutual-rl`). The trained policy is paired with that start
and with the warm start both came from (`LABEL@dond-warm`, measured as `dond-selfplay-mutual`
measures it: the same run names and configs, so the games that experiment stored in the output
are read back rather than played again) — the comparison issue 60 asks for the whole recipe.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

from sparring.learning.arms import Measured, run_arm
from sparring.learning.context import Context
from sparring.learning.dond_eval import contexts_file, walls
from sparring.learning.experiments import dond_rl
from sparring.learning.experiments.dond_selfplay import WARM_STAGE
from sparring.learning.experiments.dond_selfplay_mutual import MUTUAL, TARGET, measure_stage
from sparring.learning.registry import experiment
from sparring.learning.report import plot_training
from sparring.learning.results import Experiment, Stage

START = "dond-mutual-2"
# dond-rl's training size; mutual's held-out sets and partner games
SIZES: dict[str, dict[str, Any]] = {
    size: {**dond_rl.SIZES[size], **{k: MUTUAL[size][k] for k in ("heldout", "partner_heldout", "contexts")}}
    for size in ("quick", "full")}


def arm_config(ctx: Context, size: dict[str, Any], start: str) -> dict[str, Any]:
    """`dond-rl`'s arm from `start`, on the trainer's defaults (not dond-rl's as-measured settings)."""
    config = dond_rl.arm_config(ctx, size, start)
    for key in ("disable_dropout", "merge_rollout"):
        config.pop(key, None)
    return config


def _measure(ctx: Context, size: dict[str, Any], alias: str, *, name: str, warm: bool = False) -> Measured:
    """As `dond-selfplay-mutual` measures its last iteration (`warm`: its warm start)."""
    metrics, per, runs, info = measure_stage(ctx, size, contexts_file(ctx), alias, name, not warm, warm=warm)
    return Measured(metrics, per, walls(runs), sorted({r.instance_id for run in runs for r in run.records}), info)


@experiment("dond-mutual-rl")
def run(ctx: Context) -> Experiment:
    size = SIZES[ctx.size]
    begin = time.perf_counter()
    alias, start_adapter = ctx.registered(START, "dond-selfplay-mutual", "dond-mutual-rl")
    warm_alias, warm_adapter = ctx.registered(WARM_STAGE, "dond-selfplay-mutual", "dond-mutual-rl",
                                              role="pairs its policy with")
    measured = partial(_measure, ctx, size)
    warm = measured(warm_alias, name=WARM_STAGE, warm=True)
    start = measured(alias, name="dond-mrl-start")
    exp = Experiment(name="dond-mutual-rl", description="Deal or No Deal: GRPO on sparring's trainer (own points) "
                     "against fair-negotiator from dond-selfplay-mutual's policy; held-out generated and selfplay.txt "
                     "scenarios, in self-play and against fair-negotiator and the base model.",
                     model=ctx.label, primary="mutual_deal_rate", training_ids=[],
                     heldout_ids=sorted(set(start.instances) | set(warm.instances)), target=TARGET)
    exp.stages.append(Stage("warm start", 0, warm.metrics, warm.walls,
                            info={"adapter": warm_adapter, **warm.info}))
    exp.stages.append(Stage("start", 0, start.metrics, start.walls, info={"adapter": start_adapter, **start.info}))
    ctx.progress(exp)
    result = run_arm(ctx, exp, "dond-mrl-grpo", arm_config(ctx, size, start_adapter),
                     partial(measured, name="dond-mrl-grpo"), stage="grpo", step=size["steps"], start=start,
                     baselines={"warm start": warm})
    plot_training({"grpo": result.curves()}, ctx.out / "curves" / "dond-mutual-rl-training.png",
                  dond_rl.TRAINING_PANELS)
    exp.notes.append(dond_rl.grpo_note(size, "the trainer's defaults (dropout off in training, the adapter merged "
                                                 "for the rollout)"))
    exp.notes.append(f"held-out, T=0.8: {size['heldout']} generated test scenarios and {size['contexts']} of "
                     f"selfplay.txt's test split in self-play; {size['partner_heldout']} x 2 seats of each set against "
                     "fair-negotiator, of the generated set against the base model")
    exp.wall_s = time.perf_counter() - begin
    return exp
