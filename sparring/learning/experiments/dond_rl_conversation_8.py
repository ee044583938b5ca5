"""Experiment: `dond-rl-conversation` with a step's 8 games all of one scenario and seat (a group
of 8 instead of two groups of 4).

In `dond-rl-conversation` (and `dond-rl` run from the same start) no training game reached a
deal: 21 of 25 steps had no advantage in either group, the only reward the charge on refused
replies, and the policy learnt to claim every item. GRPO learns only from differences within a
group; with 4 samples of a start that deals rarely, a group almost never holds a deal to learn
from. Here a step plays 8 games of one scenario and seat — twice the samples a group, the same
games a step, steps, rate and reward, in the conversation view — and the group's shared prompt
(the rules and the scenario) is read once for 8 games instead of 4, which is issue #59's cost per
trained token for Deal or No Deal (9.2 in `dond-rl-conversation`). One change: the grouping.
Start: `dond-selfplay`'s (run it first into the same output); the start's held-out games are
`dond-rl-conversation`'s, read back when that ran into the same output.
"""

from __future__ import annotations

import time
from typing import Any

from sparring.learning.arms import Measured
from sparring.learning.context import Context
from sparring.learning.experiments import dond_rl
from sparring.learning.experiments import dond_rl_conversation as conversation
from sparring.learning.registry import experiment
from sparring.learning.results import Experiment, Stage

NAME = "dond-rl-conversation-8"
# full: 25 steps of 8 games of one scenario and seat (dond-rl-conversation: 2 groups of 4); quick as its quick
SIZES: dict[str, dict[str, Any]] = {"quick": conversation.SIZES["quick"],
                                    "full": {**conversation.SIZES["full"], "generations": 8, "prompts": 1}}
CONVERSATION_ARM = "dond-rlc-grpo"  # dond-rl-conversation's arm, paired when it ran into the same output


@experiment(NAME)
def run(ctx: Context) -> Experiment:
    size = SIZES[ctx.size]
    begin = time.perf_counter()
    alias, start = ctx.registered(dond_rl.START, "dond-selfplay", NAME)
    start_m = dond_rl.measure_policy(ctx, alias, "dond-rlc-start", size)  # dond-rl-conversation's start games
    exp = Experiment(name=NAME, description="Deal or No Deal: dond-rl-conversation's GRPO (own points, against "
                     "fair-negotiator in both seats, from the self-play SFT policy, the conversation view) with each "
                     "step's 8 games in one group of one scenario and seat.", model=ctx.label,
                     primary="vs_fair_points", training_ids=[], heldout_ids=start_m.instances,
                     target="held-out points against fair-negotiator above the start (paired interval above 0), "
                            "agreement not lower; the cost per trained token below dond-rl-conversation's")
    exp.stages.append(Stage("start", 0, start_m.metrics, start_m.walls, info={"adapter": start, "view": "conversation"}))
    baselines: dict[str, Measured] = {}
    arm_alias = f"{ctx.label}@{CONVERSATION_ARM}"
    if arm_alias in ctx.adapters:  # dond-rl-conversation ran into this output: its arm's games are read back
        groups4 = dond_rl.measure_policy(ctx, arm_alias, CONVERSATION_ARM, conversation.SIZES[ctx.size])
        baselines["dond-rl-conversation"] = groups4
        exp.stages.append(Stage("dond-rl-conversation (2 groups of 4)", size["steps"], groups4.metrics, groups4.walls,
                                info={"view": "conversation"}))
    ctx.progress(exp)
    dond_rl.grpo_arm(ctx, exp, NAME, "dond-rlc8-grpo", size, start, start_m, baselines,
                     f"every game in the conversation view; one group of {size['generations']} games a step "
                     "(one scenario and seat)")
    exp.wall_s = time.perf_counter() - begin
    return exp
