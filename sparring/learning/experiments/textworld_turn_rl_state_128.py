"""Experiment: `textworld-turn-rl-state-64` from a start fitted on twice the gold games.

The same-state credit has now run from both ends. From the start on 64 gold games (0.41 of the
held-out games won) the start picks the appliance at chance and RL moved its appliance marginal to
the toaster (spoiled meals 13 -> 26, paired +0.047, not above 0); from the start on 256 gold games
(0.89, the recipe's appliance every time) there was little room and RL lost games to a knife left
in its drawer (-0.062). `textworld-sft-data` saw success and recipe reading grow with the gold
games, so a start between the two should read the recipe often enough that a group's cooking
commands are compared on a policy that already conditions on it, and still lose games RL can win.
Here the start is SFT on the gold games of 128 training-fold worlds (one epoch); the RL, its sizes
and rate, the held-out games and every measurement are `textworld-turn-rl-state-64`'s
(`textworld_turn_rl.run_from` with `textworld-turn-rl-state`'s arm): the start is the one change.
"""

from __future__ import annotations

from typing import Any

from sparring.learning.context import Context
from sparring.learning.experiments import textworld_turn_rl as turn
from sparring.learning.experiments.textworld_turn_rl_state import ARM_STATE
from sparring.learning.experiments.textworld_turn_rl_state_64 import SIZES as STATE64_SIZES
from sparring.learning.registry import experiment
from sparring.learning.results import Experiment

NAME = "textworld-turn-rl-state-128"
# full: 128 gold games, 128 SFT steps (4-9 s a step alone), then textworld-turn-rl-state-64's RL (14
# steps of 16 games, ~35 min): ~50-55 min in all on 2 cores
SIZES: dict[str, dict[str, Any]] = {"quick": {**STATE64_SIZES["quick"], "train": 3},
                                    "full": {**STATE64_SIZES["full"], "train": 128, "steps": 128}}


@experiment(NAME)
def run(ctx: Context) -> Experiment:
    return turn.run_from(ctx, NAME, SIZES[ctx.size], f"{NAME}-start", ARM_STATE)
