"""Experiment: `dond-rl` in the conversation view — the same GRPO, every game a chat that only grows
(issue #59).

`dond-rl` was measured in the rendered view: every call shows the whole negotiation so far as one
prompt, so each of a game's calls is its own training sequence. In the conversation view a
player's prompt only grows (each message appended, nothing earlier rewritten), so a game is one
training sequence, read once. This experiment asks what that changes, at `dond-rl`'s settings
(start, partner, steps, games, rate, reward; the suite's as-measured trainer settings) with one
difference, the view — in the training games and in the held-out ones:

- start vs start: the same self-play SFT policy (trained in the rendered view) on the same held-out
  scenarios and seats in both views, paired (does the view alone change its play?);
- the arm, trained and measured in the conversation view, paired with that start, with the start in
  the rendered view and, when `dond-rl` ran into the same output, with `dond-rl`'s arm;
- the cost over the run: model tokens per trained token, step and training seconds, memory.

Start: `LABEL@dond-selfplay-2`, registered by `dond-selfplay` (run it first: `--only
dond-selfplay,dond-rl-conversation`). The rendered-view start is measured under `dond-rl`'s run
names, so a `dond-rl` run in the same output is read back, not played again.
"""

from __future__ import annotations

import time
from typing import Any

from sparring.learning.arms import Measured
from sparring.learning.context import Context
from sparring.learning.experiments import dond_rl
from sparring.learning.registry import experiment
from sparring.learning.results import Experiment, Stage, paired

NAME = "dond-rl-conversation"
SIZES: dict[str, dict[str, Any]] = {size: {**dond_rl.SIZES[size], "view": "conversation"} for size in ("quick", "full")}
RENDERED_ARM = "dond-rl-grpo"  # dond-rl's arm: registered and stored under this name


@experiment(NAME)
def run(ctx: Context) -> Experiment:
    size, rendered = SIZES[ctx.size], dond_rl.SIZES[ctx.size]
    begin = time.perf_counter()
    alias, start = ctx.registered(dond_rl.START, "dond-selfplay", NAME)
    start_rendered = dond_rl.measure_policy(ctx, alias, "dond-rl-start", rendered)
    start_m = dond_rl.measure_policy(ctx, alias, "dond-rlc-start", size)
    arm_alias = f"{ctx.label}@{RENDERED_ARM}"
    # dond-rl ran into this output: its arm's games are read back
    rendered_arm = (dond_rl.measure_policy(ctx, arm_alias, RENDERED_ARM, rendered) if arm_alias in ctx.adapters
                    else None)
    exp = Experiment(name=NAME, description="Deal or No Deal: dond-rl's GRPO (own points, against fair-negotiator in "
                     "both seats, from the self-play SFT policy) with every game in the conversation view, in training "
                     "and on the held-out scenarios; the start in both views.", model=ctx.label,
                     primary="vs_fair_points", training_ids=[],
                     heldout_ids=sorted(set(start_m.instances) | set(start_rendered.instances)),
                     target="held-out points against fair-negotiator above the start (paired interval above 0), "
                            "agreement not lower; the cost per trained token below dond-rl's")
    exp.stages.append(Stage("start, rendered view", 0, start_rendered.metrics, start_rendered.walls,
                            info={"adapter": start, "view": "rendered"}))
    exp.stages.append(Stage("start", 0, start_m.metrics, start_m.walls, info={"adapter": start, "view": "conversation"}))
    for label, per in start_m.per.items():
        exp.paired[f"{label} start (conversation view) - start (rendered view)"] = paired(start_rendered.per[label], per)
    baselines: dict[str, Measured] = {"start (rendered view)": start_rendered}
    if rendered_arm is not None:
        baselines["dond-rl (rendered view)"] = rendered_arm
        exp.stages.append(Stage("dond-rl (rendered view)", rendered["steps"], rendered_arm.metrics, rendered_arm.walls,
                                info={"view": "rendered"}))
    ctx.progress(exp)
    dond_rl.grpo_arm(ctx, exp, NAME, "dond-rlc-grpo", size, start, start_m, baselines,
                     "every game (training and held-out) in the conversation view")
    exp.wall_s = time.perf_counter() - begin
    return exp
