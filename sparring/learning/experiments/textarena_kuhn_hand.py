"""Experiment: `textarena-kuhn-fit` on the hand's own lines: the same start, gate and arms, with
each observation cut to the current hand (`observation_from`: TextArena's rules, repeated in
every prompt, left out).

`textarena-kuhn-fit`'s start, fitted twice over the equilibrium's moves on the whole observation
(~250 tokens, ~21 s a step of 8), stayed card-blind (card dependence 0.070). A probe on prompts cut
to the hand's lines (~40 tokens) read the card after ~2 passes (0.035 / 0.099 / 0.288 at 1.4 / 2.9
/ 4.3 passes): the card is learnable, the rules' ~200 tokens cost the passes the hour cannot hold
(~50 minutes for 4 passes). Here the game itself shows the hand only, so the demonstrations, the
fit, the arms' games and the held-out games all see the same short view, and `FIT` passes fit in
a third of the time. Everything else is `textarena-kuhn-fit`'s (its sizes, pool, arms and gate).
"""

from __future__ import annotations

from typing import Any

from sparring.learning.context import Context
from sparring.learning.experiments.textarena_kuhn import SIZES as KUHN_SIZES
from sparring.learning.experiments.textarena_kuhn_fit import fitted_then_arms
from sparring.learning.extras import require_extra
from sparring.learning.registry import experiment
from sparring.learning.results import Experiment

NAME = "textarena-kuhn-hand"
# TextArena's line that opens a hand ("[GAME] ### Starting round 1 out of 1 rounds. Your card is: 'Q'")
HAND = "### Starting round"
SIZES: dict[str, dict[str, Any]] = {k: {**v, "game_args": {"observation_from": HAND}} for k, v in KUHN_SIZES.items()}
# 5 passes over the demonstrations' ~226 moves (rendered view: a row a move) in batches of 8: ~142 steps;
# the probe's card dependence was 0.288 after 4.3 passes
FIT: dict[str, dict[str, Any]] = {"quick": {"epochs": 1.0, "batch_size": 2}, "full": {"epochs": 5.0, "batch_size": 8}}
DESCRIPTION = ("TextArena Kuhn Poker, one hand a game, each observation cut to the hand's own lines (the rules left "
               "out): SFT on Kuhn's equilibrium fitted over every demonstrated hand (its card dependence measured "
               "before RL), then GRPO against a pool (the equilibrium player or a random one, drawn per group) and "
               "self-play with RAE; held-out seeds against a fixed card rule no arm trained against; exploitability "
               "and card dependence.")


@experiment(NAME)
def run(ctx: Context) -> Experiment:
    require_extra(NAME, "textarena", "textarena", "TextArena")
    exp = fitted_then_arms(ctx, NAME, "kuhn-hand", SIZES[ctx.size], FIT[ctx.size], DESCRIPTION)
    exp.notes.insert(0, f"every game (demonstrations, arms, held-out) shows each observation from its last "
                        f"{HAND!r} line on: the hand's own lines, without TextArena's rules")
    return exp
