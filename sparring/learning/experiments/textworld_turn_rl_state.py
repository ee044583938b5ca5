"""Experiment: `textworld-turn-rl-refused` with each command measured against the commands played
from the same game state (GiGPO's anchor states, `turn_baseline: state`).

Every per-step design from the 0.89 start lost held-out games the same way: the trained policy
writes `take knife` before opening the cutlery drawer it is in. `take knife` is the same tokens
whether the drawer is open (accepted, one of the best-credited commands) or closed (refused), and
the baselines tried compare commands at the same turn number or the same score, which mix both
states: the tokens are paid more where they succeed than they cost where they fail. Here a
command is compared only with what the group's games played from the same state — the same
accepted commands before it (a refused command changes nothing, so the command after it is at the
same state again): with the drawer closed, `take knife` (refused, charged 0.05, a turn lost)
against `open cutlery drawer`. The only change from `textworld-turn-rl-refused` is the baseline
(a state only one command reached is measured at its score, as there); its start adapter is
`textworld-turn-rl-256`'s, reused when that experiment ran into the same output.
"""

from __future__ import annotations

from typing import Any

from sparring.learning.context import Context
from sparring.learning.experiments import textworld_turn_rl_refused as refused
from sparring.learning.experiments.textworld_turn_rl import run_from
from sparring.learning.experiments.textworld_turn_rl_256 import NAME as STRONG
from sparring.learning.registry import experiment
from sparring.learning.results import Experiment

NAME = "textworld-turn-rl-state"
ARM_STATE = ("grpo-state", {**refused.ARM_REFUSED[1], "turn_baseline": "state"})
# full: as textworld-turn-rl-refused: ~35 min with textworld-turn-rl-256's start reused; fitting it here took
# 64.4 min on 2026-12-05 (its SFT 1,773 s, against 1,086 s in textworld-turn-rl-256's own run)
SIZES: dict[str, dict[str, Any]] = refused.SIZES


@experiment(NAME)
def run(ctx: Context) -> Experiment:
    return run_from(ctx, NAME, SIZES[ctx.size], f"{STRONG}-start", ARM_STATE)
