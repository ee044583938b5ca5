"""Experiment: `textworld-turn-rl-state-128` on training worlds balanced by the recipe's appliance.

From the start on 128 gold games, which reads the recipe (the recipe's appliance first in 33 of
37 held-out games), the same-state RL moved the appliance to the toaster (18 of 37; spoiled meals
4 -> 19). On its own training games every cooking command was credited the right way in its state,
but the credit summed over the run was largest for the toaster (~ +11, oven ~ +5, stove ~ +8):
grill recipes were the commonest of its training worlds (52 of 116 first cooking commands), and a
policy that reads the recipe rarely tries the toaster where it is wrong, so little charges it.
Whatever part of a LoRA update raises an appliance word regardless of the recipe follows that sum.
Here the RL trains on worlds chosen so that each recipe kind comes equally often: the gold games'
worlds grouped by the appliance their recipe asks for (oven, stove, barbeque/toaster, none), taken
in turn (seed order within a group) up to `rl_games` worlds — one pass over them in the run's 14
steps. The start (its adapter reused when `textworld-turn-rl-state-128` ran into the same output),
the RL settings, the held-out games and every measurement are `textworld-turn-rl-state-128`'s:
the training worlds are the one change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparring.learning.context import Context
from sparring.learning.experiments import textworld_turn_rl as turn
from sparring.learning.experiments.textworld_rl import recipe_appliances
from sparring.learning.experiments.textworld_turn_rl_state import ARM_STATE
from sparring.learning.experiments.textworld_turn_rl_state_128 import NAME as STATE128
from sparring.learning.experiments.textworld_turn_rl_state_128 import SIZES as STATE128_SIZES
from sparring.learning.registry import experiment
from sparring.learning.results import Experiment

NAME = "textworld-turn-rl-balanced"
# full: textworld-turn-rl-state-128's sizes on 28 worlds, 7 of each recipe kind (14 steps x 2 worlds:
# each world once); ~50 min alone on 2 cores with the start fitted here, ~38 with it reused
SIZES: dict[str, dict[str, Any]] = {"quick": STATE128_SIZES["quick"],
                                    "full": {**STATE128_SIZES["full"], "rl_games": 28}}


def recipe_kind(record: Any) -> str:
    """The appliance(s) a game's recipe asks for, `none` when it asks for no cooking."""
    wanted = set().union(*recipe_appliances(record).values())
    return "/".join(sorted(wanted)) or "none"


def balanced_worlds(records: Sequence[Any], n: int) -> list[int]:
    """`n` seeds from the worlds of `records`, taken from each recipe kind in turn (kinds in name
    order, seeds ascending within a kind), so no kind comes more often than another while it lasts."""
    kinds: dict[str, list[int]] = {}
    for r in sorted(records, key=lambda r: r.instance["seed"]):
        seeds = kinds.setdefault(recipe_kind(r), [])
        if r.instance["seed"] not in seeds:
            seeds.append(r.instance["seed"])
    queues = [kinds[k] for k in sorted(kinds)]
    out: list[int] = []
    while len(out) < n and any(queues):
        for q in queues:
            if q and len(out) < n:
                out.append(q.pop(0))
    return out


@experiment(NAME)
def run(ctx: Context) -> Experiment:
    return turn.run_from(ctx, NAME, SIZES[ctx.size], f"{STATE128}-start", ARM_STATE, rl_worlds=balanced_worlds)
