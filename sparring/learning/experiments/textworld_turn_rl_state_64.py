"""Experiment: `textworld-turn-rl-state`'s RL from the start on 64 gold games, which has room to gain.

Every per-step design so far ran either from `textworld-easy-rl`'s start (64 gold games, 0.41 of
the held-out games won: `textworld-turn-rl`, turn-number baseline, no change) or from the start on
256 gold games (0.89: four designs, each lost games). The design that lost least from 0.89 —
each command measured only against the group's commands played from the same game state (GiGPO's
anchor states), discounted returns (gamma 0.9), refused commands charged 0.05 — never ran where
the start leaves room: from 0.41 the games are lost to the wrong appliance (the start does not
read the recipe) and to running out of steps, and a group's games of one world differ exactly
there, at the same state (the same accepted commands before the cooking command). Here that RL
runs from `textworld-easy-rl`'s start with `textworld-turn-rl`'s sizes (14 steps of 16 games,
lr 2e-4): against `textworld-turn-rl` the credit is the one change (baseline, gamma and the
refused-command charge, `textworld-turn-rl-state`'s arm); against `textworld-turn-rl-state`, the
start and the rate. The start adapter is `textworld-easy-rl`'s, reused when that experiment (or
`textworld-turn-rl`) ran into the same output.
"""

from __future__ import annotations

from typing import Any

from sparring.learning.context import Context
from sparring.learning.experiments import textworld_turn_rl as turn
from sparring.learning.experiments.textworld_turn_rl_state import ARM_STATE
from sparring.learning.registry import experiment
from sparring.learning.results import Experiment

NAME = "textworld-turn-rl-state-64"
# full: textworld-turn-rl's sizes with refused commands charged as in textworld-turn-rl-refused
# (~36 min alone on 2 cores with the start fitted here, as textworld-turn-rl)
SIZES: dict[str, dict[str, Any]] = {k: {**v, "invalid_penalty": 0.05} for k, v in turn.SIZES.items()}


@experiment(NAME)
def run(ctx: Context) -> Experiment:
    return turn.run_from(ctx, NAME, SIZES[ctx.size], turn.START, ARM_STATE)
