"""Experiment: Kuhn Poker from a start that already depends on the card, and opponents that differ
within a group — the two causes `textarena-kuhn` measured for RL changing no held-out decision.

The game, held-out seeds, held-out opponent (`textarena-kuhn-rule`), GRPO settings and sizes are
`textarena-kuhn`'s. What changes:
- the warm start is SFT on `textarena-kuhn-equilibrium` in hands against itself (one of Kuhn's
  equilibria, alpha = 1/6: its moves depend on the card, drawn per game) instead of a random player;
- the fixed arm trains against `textarena-random-per-game`, a random legal player drawn per game, so
  the 4 games of a group (one seed, the same cards) meet different moves and GRPO has something to
  compare even once the learner is near-deterministic (`textarena-kuhn`'s fixed arm had no advantage
  in 54 of its 60 groups);
- every policy's strategy is scored at all 12 information sets (the decisions of the
  demonstrations, which reach every one) and its exploitability computed exactly
  (`sparring.stats.kuhn`: what a best response wins a hand against it, averaged over its
  seats; 0 at an equilibrium, 1/3 for "always bet and call").
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

from sparring.learning.arms import Measured, run_arm
from sparring.learning.context import Context, Played
from sparring.learning.experiments.textarena_kuhn import (
    DEMO_START,
    HELDOUT_OPPONENT,
    LEARNING_RATE,
    SIZES,
    TRAINING_PANELS,
    arm_config,
    measure,
    scored_strategy,
    warm_start,
)
from sparring.learning.extras import require_extra
from sparring.learning.registry import experiment
from sparring.learning.report import plot_training
from sparring.learning.results import Experiment, Stage
from sparring.stats.kuhn import (
    CARD_RULE,
    INFOSETS,
    best_response_values,
    card_dependence,
    exploitability,
    greedy,
    payoff,
)

DEMONSTRATOR = "textarena-kuhn-equilibrium"
TRAIN_OPPONENT = "textarena-random-per-game"
ARMS = {"fixed": ({"mode": "fixed"}, "group"), "selfplay-rae": ({"mode": "self_play"}, "rae")}


def full_strategy(ctx: Context, alias: str, demos: Played) -> dict[str, Any]:
    """The policy's scored strategy at every information set the demonstrations reached, with its
    exploitability and card dependence (`kuhn.card_dependence`) when they reached all 12 (at quick
    size they may not)."""
    scored = scored_strategy(ctx, alias, demos.records, agent=None)
    out: dict[str, Any] = {"strategy_all": scored}
    if all(k in scored for k in INFOSETS):
        out["exploitability"] = round(exploitability(scored), 4)
        out["card_dependence"] = round(card_dependence(scored), 4)
        out["best_response"] = {k: round(v, 4) for k, v in best_response_values(scored).items()}
        # exact chips a hand against the held-out rule, sampled and greedy (the held-out games are greedy)
        out["payoff_vs_rule"] = {"scored": round(payoff(scored, CARD_RULE), 4),
                                 "greedy": round(payoff(greedy(scored), CARD_RULE), 4)}
    else:
        out["exploitability"] = None
        out["missing_infosets"] = [k for k in INFOSETS if k not in scored]
    return out


def run_arms(ctx: Context, exp: Experiment, prefix: str, configs: dict[str, dict[str, Any]], size: dict[str, Any],
             start: Measured, strategy_info: Callable[[str, Played], dict[str, Any]]) -> None:
    """Each arm's online config in `configs` trained (`PREFIX-ARM`) and measured on the held-out hands
    with the whole strategy, one stage each in order; the training curves to
    OUT/curves/textarena-PREFIX-training.png."""
    per_arm: dict[str, dict[str, list[Any]]] = {}
    for k, (arm, config) in enumerate(configs.items(), start=1):
        result = run_arm(ctx, exp, f"{prefix}-{arm}", config,
                         partial(measure, ctx, name=f"{prefix}-{arm}", size=size, strategy_info=strategy_info),
                         stage=arm, step=k, start=start, info={"steps": size["steps"]})
        per_arm[arm] = result.curves()
    plot_training(per_arm, ctx.out / "curves" / f"textarena-{prefix}-training.png", TRAINING_PANELS)


@experiment("textarena-kuhn-card")
def run(ctx: Context) -> Experiment:
    require_extra("textarena-kuhn-card", "textarena", "textarena", "TextArena")
    size = SIZES[ctx.size]
    begin = time.perf_counter()
    warm, warm_info, demos = warm_start(ctx, size, demonstrator=DEMONSTRATOR, prefix="kuhn-card")
    warm_s = time.perf_counter() - begin
    def strategy_info(alias: str, _heldout: Played) -> dict[str, Any]:  # scored at the demonstrations' decisions
        return full_strategy(ctx, alias, demos)

    start_alias = ctx.register("kuhn-card-start", warm)
    start = measure(ctx, start_alias, "kuhn-card-start", size, strategy_info)
    exp = Experiment(name="textarena-kuhn-card", description="TextArena Kuhn Poker, one hand a game: SFT on Kuhn's "
                     "equilibrium (card-aware), then GRPO against a random player drawn per game and self-play with "
                     "RAE; held-out seeds against a fixed card rule no arm trained against; every policy's exploitability.",
                     model=ctx.label, primary="payoff_per_hand",
                     training_ids=sorted({r.instance_id for r in demos.records}), heldout_ids=start.instances,
                     target="paired payoff per hand over the start above 0 against the held-out rule, and "
                            "exploitability below the start's")
    exp.stages.append(Stage("start", 0, start.metrics, {"train": warm_s, **start.walls}, info={**warm_info, **start.info}))
    ctx.progress(exp)
    run_arms(ctx, exp, "kuhn-card", {arm: arm_config(ctx, size, warm, arm, arms=ARMS, opponent=TRAIN_OPPONENT)
                                     for arm in ARMS}, size, start, strategy_info)
    exp.notes.append(f"start: SFT ({warm_info['steps']} steps) on {warm_info['rows']} moves of {DEMONSTRATOR} in "
                     f"{warm_info['games']} hands against itself (training seeds {DEMO_START}..)")
    exp.notes.append(f"each arm: {size['steps']} GRPO steps of {size['generations'] * size['prompts']} games "
                     f"(sparring's trainer, lr {LEARNING_RATE}, beta 0, format penalty 0.1 per refused move, refused "
                     f"moves trained); the fixed arm against {TRAIN_OPPONENT}; training seeds 0..{size['train'] - 1}")
    exp.notes.append(f"held-out: {size['heldout']} test seeds x 2 seats against {HELDOUT_OPPONENT}, greedy; "
                     "paired by (seed, seat): the same cards for every policy")
    for stage in exp.stages:
        if stage.info.get("exploitability") is not None:
            exp.notes.append(f"{stage.name}: exploitability {stage.info['exploitability']:.4f} chips a hand "
                             f"(best response {stage.info['best_response']})")
    exp.wall_s = time.perf_counter() - begin
    return exp
