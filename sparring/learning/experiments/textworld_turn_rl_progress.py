"""Experiment: `textworld-turn-rl-256` with each command measured against commands made at the same score.

From a start that wins 0.89 of the held-out games, `textworld-turn-rl-256`'s per-step RL lost
(0.69; games out of steps 7 -> 19, invalid `prepare` 24 -> 93): by turn number, once a game has
wasted a command its later turns are compared with the turns of games that already scored, so the
slow game's turns gain because its points are still to come, and with gamma 1 a wasted command
costs almost nothing (in the first step's training games, the same in both runs, invalid commands
had a mean advantage of -0.07, 1 of 39 above 0; -0.43 with this experiment's credit). Here the
baseline is the group's commands made with the same reward collected before them (`turn_baseline:
progress`, one score state of one world) and returns are discounted (gamma 0.9), so at one state
a command that scores now beats one that wastes a turn first. The rate is a quarter (5e-5), so
this run changes two things: a pilot of the new baseline at 2e-4 was
stopped after its third step won 1 of 16 training games, read as the update breaking the start;
that step's two worlds turned out to be hard for every policy (0 of 8 and 4 of 8 at 5e-5, 0 and
1 in the pilot, 1 of 16 in `textworld-turn-rl-256`), so that reading was wrong and the rate's
effect is not separated here. Everything else (the start, its 256 gold games, the other RL
settings, the held-out games and every measurement) is `textworld-turn-rl-256`'s; its start
adapter is reused when that experiment ran into the same output.
"""

from __future__ import annotations

from typing import Any

from sparring.learning.context import Context
from sparring.learning.experiments import textworld_turn_rl_256 as strong
from sparring.learning.experiments.textworld_turn_rl import ARM, run_from
from sparring.learning.registry import experiment
from sparring.learning.results import Experiment

NAME = "textworld-turn-rl-progress"
ARM_PROGRESS = ("grpo-progress", {**ARM[1], "turn_baseline": "progress", "gamma": 0.9})
# full: ~30 min when textworld-turn-rl-256's start is reused, ~48 when it is fitted here
SIZES: dict[str, dict[str, Any]] = {"quick": strong.SIZES["quick"], "full": {**strong.SIZES["full"], "lr": 5e-5}}


@experiment(NAME)
def run(ctx: Context) -> Experiment:
    return run_from(ctx, NAME, SIZES[ctx.size], f"{strong.NAME}-start", ARM_PROGRESS)
