"""Experiment: Deal or No Deal self-play SFT that does not learn capitulations — `dond-selfplay`
from the same warm start (the adapter `dond-selfplay` registered, trained here if this output has
none), except that a deal worth nothing to one side counts as no gain for either
(`require: [scored_both]`): only sides of deals where both sides score are kept. Measured as
`dond-selfplay` is (`dond_eval.py`)."""

from __future__ import annotations

import time

from sparring.learning.context import Context
from sparring.learning.dond_eval import measure, walls
from sparring.learning.experiments.dond_selfplay import (
    SIZES,
    TARGET,
    WARM_STAGE,
    dialogues,
    iterate,
    loop_config,
    warm_start_loop,
)
from sparring.learning.registry import experiment
from sparring.learning.results import Experiment, Stage


@experiment("dond-selfplay-mutual")
def run_mutual(ctx: Context) -> Experiment:
    """From the warm start `dond-selfplay` registered (trained here if this output has none)."""
    from sparring.train.loop.driver import Loop

    size = SIZES[ctx.size]
    start = time.perf_counter()
    warm_alias = f"{ctx.label}@{WARM_STAGE}"
    warm_s = 0.0
    if warm_alias not in ctx.adapters:
        first, warm_s = warm_start_loop(ctx, size, dialogues(ctx))
        ctx.register(WARM_STAGE, first.state["warm"]["adapter"])
    adapter = ctx.adapters[warm_alias]
    loop = Loop(loop_config(ctx, size, "dond-selfplay-mutual", {"adapter": adapter}, ["scored_both"]),
                "<learning suite>", console=ctx.console)
    loop.start()
    metrics, warm_per, runs, info = measure(ctx, warm_alias, WARM_STAGE, size, partners=True)
    exp = Experiment(name="dond-selfplay-mutual", description="Deal or No Deal self-play SFT from the same warm "
                     "start, keeping only sides of deals where both sides score (a deal worth nothing to one side "
                     "counts as no gain for either); held-out self-play and games against fixed partners.",
                     model=ctx.label, primary="mutual_deal_rate", training_ids=[],
                     heldout_ids=sorted(warm_per["mutual"]), target=TARGET)
    exp.stages.append(Stage(WARM_STAGE, 0, metrics, {"train": warm_s, **walls(runs)}, info={"adapter": adapter, **info}))
    iterate(ctx, exp, loop, "dond-mutual", size, warm_per)
    exp.notes.append("filter: above_avg with require [scored_both] — sides of games that did not end in a deal where "
                     "both score count as reward 0 in the round's mean and are never kept")
    exp.notes.append("the warm start is the one dond-selfplay trained (same adapter), measured again here "
                     "(same seeds: the same games)")
    exp.wall_s = time.perf_counter() - start
    return exp
