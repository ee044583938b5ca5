"""Experiment: Deal or No Deal self-play SFT that does not learn capitulations — `dond-selfplay`
from the same warm start (the adapter `dond-selfplay` registered, trained here if this output has
none), except that a deal worth nothing to one side counts as no gain for either
(`require: [scored_both]`): only sides of deals where both sides score are kept.

Measured as issue 60's Deal or No Deal target reads, on two held-out sets — the suite's generated
test scenarios and lm-selfplay's own `selfplay.txt` scenarios (their test split) — in self-play,
against `fair-negotiator` in both seats, and (the last iteration) against the base model. Sized to
fit the hour alone on 2 cores with the warm start fitted in the run: the warm start plays the
partner only on the generated set, iteration 1 only in self-play, and every partner plays 16
scenarios in each seat (`dond-selfplay` plays 32).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sparring.learning.context import Context
from sparring.learning.dond_eval import FAIR, contexts, contexts_file, measure, walls
from sparring.learning.experiments.dond_selfplay import (
    SIZES,
    WARM_STAGE,
    dialogues,
    iterate,
    loop_config,
    warm_start_loop,
)
from sparring.learning.registry import experiment
from sparring.learning.results import Experiment, Stage

# dond-selfplay's sizes, with the second held-out set (`contexts` scenarios of selfplay.txt) and
# fewer partner games; the iterations' SFT capped at 24 steps of 4 rows, one pass over ~100 kept
# rows (fewer kept rows are seen more than once: the trainer's max_steps outranks epochs); the warm
# start, fitted with dond-selfplay's own sizes, is the same 32 steps
MUTUAL: dict[str, dict[str, Any]] = {
    "quick": {**SIZES["quick"], "contexts": 1},
    "full": {**SIZES["full"], "partner_heldout": 16, "contexts": 32, "max_steps": 24},
}
TARGET = ("deals where both sides score in self-play >= 0.5 with a paired interval above 0 over the warm start, "
          "each seat's mean points >= 4 of 10, points against fair-negotiator >= 1.08 (dond-rl), on both held-out "
          "sets (issue 60)")


def measure_stage(ctx: Context, size: dict[str, Any], path: Path, alias: str, name: str, last: bool,
                  *, warm: bool = False) -> tuple[dict[str, Any], dict[str, dict[str, float]], list[Any], dict[str, Any]]:
    """Self-play on both sets; `fair-negotiator` on the generated set for the warm start (the
    pairing's baseline), on both sets and the base model on the generated set for the last
    iteration; figures of selfplay.txt prefixed `contexts_` (per-instance keys `contexts `)."""
    suite_partners = (FAIR, ctx.label) if last else (FAIR,) if warm else ()
    # dond-selfplay measures the same warm start against the partners with 32 scenarios a seat as
    # `dond-warm-vs-*` in the same output: these games, of another size, are stored under their own name
    suffix = f"-{size['partner_heldout']}" if warm else ""
    metrics, per, runs, info = measure(ctx, alias, name, size, suite_partners, partner_suffix=suffix)
    if not (last or warm):
        return metrics, per, runs, info
    m, p, played, extra = measure(ctx, alias, f"{name}-contexts", size, (FAIR,) if last else (),
                                  contexts(size["contexts"], path), contexts(size["partner_heldout"], path))
    metrics.update({f"contexts_{k}": v for k, v in m.items()})
    per.update({f"contexts {k}": v for k, v in p.items()})
    info.update({f"contexts_{k}": v for k, v in extra.items()})
    return metrics, per, runs + played, info


@experiment("dond-selfplay-mutual")
def run_mutual(ctx: Context) -> Experiment:
    """From the warm start `dond-selfplay` registered (trained here if this output has none)."""
    from sparring.train.loop.driver import Loop

    size = MUTUAL[ctx.size]
    path = contexts_file(ctx)
    start = time.perf_counter()
    warm_alias = f"{ctx.label}@{WARM_STAGE}"
    warm_s = 0.0
    if warm_alias not in ctx.adapters:
        first, warm_s = warm_start_loop(ctx, SIZES[ctx.size], dialogues(ctx))
        ctx.register(WARM_STAGE, first.state["warm"]["adapter"])
    adapter = ctx.adapters[warm_alias]
    loop = Loop(loop_config(ctx, size, "dond-selfplay-mutual", {"adapter": adapter}, ["scored_both"]),
                "<learning suite>", console=ctx.console)
    loop.start()
    metrics, warm_per, runs, info = measure_stage(ctx, size, path, warm_alias, WARM_STAGE, False, warm=True)
    heldout = sorted({r.instance_id for run in runs for r in run.records})
    exp = Experiment(name="dond-selfplay-mutual", description="Deal or No Deal self-play SFT from the same warm "
                     "start, keeping only sides of deals where both sides score (a deal worth nothing to one side "
                     "counts as no gain for either); held-out generated and selfplay.txt scenarios, in self-play and "
                     "against fair-negotiator and the base model.",
                     model=ctx.label, primary="mutual_deal_rate", training_ids=[], heldout_ids=heldout, target=TARGET)
    exp.stages.append(Stage(WARM_STAGE, 0, metrics, {"train": warm_s, **walls(runs)}, info={"adapter": adapter, **info}))
    ctx.progress(exp)
    iterate(ctx, exp, loop, "dond-mutual", size, warm_per,
            lambda alias, name, final: measure_stage(ctx, size, path, alias, name, final))
    exp.notes.append("filter: above_avg with require [scored_both] — sides of games that did not end in a deal where "
                     "both score count as reward 0 in the round's mean and are never kept")
    exp.notes.append(f"SFT: the warm start as dond-selfplay fits it ({SIZES[ctx.size]['max_steps']} steps"
                     f"{'' if warm_s else ', the adapter dond-selfplay registered in this output'}); each iteration "
                     f"at most {size['max_steps']} steps of 4 rows")
    exp.notes.append(f"held-out, T=0.8: {size['heldout']} generated test scenarios and {size['contexts']} of "
                     f"selfplay.txt's test split in self-play; {size['partner_heldout']} x 2 seats against "
                     "fair-negotiator (the warm start: the generated set; the last iteration: both sets) and against "
                     "the base model (the last iteration, generated set)")
    exp.wall_s = time.perf_counter() - start
    return exp
