"""Experiment: `textworld-turn-rl`'s per-step RL from a start fitted on 4x the gold games.

`textworld-turn-rl`'s start (SFT on 64 gold games) picked the recipe's appliance about as often as
chance (12 of 26 held-out games that cooked), and RL moved its appliance marginal towards the
training fold's commonest (the toaster), not its reading of the recipe; `textworld-sft-data` saw
the score grow with the gold games. Here the start is SFT on the gold games of 256 training-fold
worlds (one epoch); the RL, the held-out games and every measurement are `textworld-turn-rl`'s
(`textworld_turn_rl.run_from`).
"""

from __future__ import annotations

from typing import Any

from sparring.learning.context import Context
from sparring.learning.experiments.textworld_turn_rl import NAME as TURN
from sparring.learning.experiments.textworld_turn_rl import SIZES as TURN_SIZES
from sparring.learning.experiments.textworld_turn_rl import run_from
from sparring.learning.registry import experiment
from sparring.learning.results import Experiment

NAME = f"{TURN}-256"
# full: 256 gold games, 256 SFT steps (3.6-4.1 s a step alone); 46.1 min in all on 2 cores
SIZES: dict[str, dict[str, Any]] = {"quick": {**TURN_SIZES["quick"], "train": 3},
                                    "full": {**TURN_SIZES["full"], "train": 256, "steps": 256}}


@experiment(NAME)
def run(ctx: Context) -> Experiment:
    return run_from(ctx, NAME, SIZES[ctx.size], f"{NAME}-start")
