"""Experiment: `textworld-turn-rl-progress` with every refused command charged where it was written.

`textworld-turn-rl-progress` lost held-out success (0.89 -> 0.72) and its training games show why:
`take knife` is one of the best-credited commands where the knife can be taken (+0.61 a command)
and only mildly negative where it cannot (-0.16, the cutlery drawer still closed) — the same
tokens — so the trained policy writes it before opening the drawer, 10 of its 11 lost games. Here
the only change is the training games' reward: each command the game refuses costs 0.05 (a
quarter of a scoring command's 0.2-0.25; TextWorld's `invalid_penalty`, charged at the command,
so per-step credit puts it exactly there and on the commands before it, discounted). The held-out
games are scored as before (the simulator's score; success).
"""

from __future__ import annotations

from typing import Any

from sparring.learning.context import Context
from sparring.learning.experiments import textworld_turn_rl_progress as progress
from sparring.learning.experiments.textworld_turn_rl import run_from
from sparring.learning.experiments.textworld_turn_rl_256 import NAME as STRONG
from sparring.learning.registry import experiment
from sparring.learning.results import Experiment

NAME = "textworld-turn-rl-refused"
ARM_REFUSED = ("grpo-refused", progress.ARM_PROGRESS[1])
# full: as textworld-turn-rl-progress (~35 min with textworld-turn-rl-256's start reused)
SIZES: dict[str, dict[str, Any]] = {k: {**v, "invalid_penalty": 0.05} for k, v in progress.SIZES.items()}


@experiment(NAME)
def run(ctx: Context) -> Experiment:
    return run_from(ctx, NAME, SIZES[ctx.size], f"{STRONG}-start", ARM_REFUSED)
