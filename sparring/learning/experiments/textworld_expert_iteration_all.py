"""Experiment: `textworld-expert-iteration`'s first round without its filter — the control.

Expert iteration's round 1 trained on the 85 of its 128 games that were won with every command
accepted and raised held-out success 0.62 -> 0.83. Was that the reward's selection, or SFT on the
policy's own play in 128 new worlds? Here the round trains on every game it played — the 26 lost
and the 17 won with a refused command too — from the same start, on the same worlds. Run into the
same output as `textworld-expert-iteration`, it trains on the very games that experiment played
(the games' run names are that experiment's: stored episodes are not played again); run alone, it
plays them the same way. One round; everything else is `textworld-expert-iteration`'s.
"""

from __future__ import annotations

from typing import Any

from sparring.learning.context import Context
from sparring.learning.experiments import textworld_expert_iteration as ei
from sparring.learning.registry import experiment
from sparring.learning.results import Experiment

NAME = "textworld-expert-iteration-all"
# full: one round, SFT on all 128 games (~12 min) and the held-out games twice: ~20 min with the
# games reused, ~27 without; ~12 more when the start is fitted here
SIZES: dict[str, dict[str, Any]] = {k: {**v, "ei_rounds": 1, "ei_keep": "all"} for k, v in ei.SIZES.items()}


@experiment(NAME)
def run(ctx: Context) -> Experiment:
    return ei.run_rounds(ctx, NAME, SIZES[ctx.size])
