"""The arms of `debate-dpo-contrast` (issue #58) beyond the ones its target is about, measured from
what that experiment stored in the same output folder: its warm start and last-iteration adapters,
iteration 1's pairs, and the held-out debates of both (read back, not replayed).

- rejection-sampling SFT: the warm start + one epoch of SFT on the chosen speeches of iteration 1's
  trained pairs (the pairs without their rejected side);
- Best-of-4: the warm start, 4 sampled speeches per turn, the training judge keeping its favourite;
- the loop's greedy check: each iteration against the one before on 8 training questions;
- NYU's judge-accuracy table by format (debate, consultancy, double consultancy) for the base model,
  the warm start and the last iteration, under every judge.

Apart so that `debate-dpo-contrast` keeps to its hour (2026-12-03: 55.5 min alone); both run in one
suite call: `--only debate-dpo-contrast,debate-dpo-contrast-extras`.
"""

from __future__ import annotations

import time
from dataclasses import replace

from sparring.errors import SparringError
from sparring.learning.context import Context
from sparring.learning.debate_eval import Measured, evaluate
from sparring.learning.experiments.debate_dpo import (
    add_accuracy_table,
    arm_judges,
    demonstrations,
    loop_config,
    play_accuracy_table,
    run_arms,
)
from sparring.learning.experiments.debate_dpo_contrast import ARM
from sparring.learning.registry import experiment
from sparring.learning.results import Experiment, paired


@experiment("debate-dpo-contrast-extras")
def run(ctx: Context) -> Experiment:
    """The arms beyond the ones issue #58 asks for, measured from what `debate-dpo-contrast` stored in
    the same output folder (run it first, or both in one suite run): SFT on iteration 1's chosen
    speeches, Best-of-4 from the warm start, each paired with the warm start and the last iteration
    under every judge; NYU's judge-accuracy table by format (base, warm start, last iteration); the
    loop's greedy check of each iteration against the one before on training prompts. The warm
    start's and the last iteration's held-out debates are read back, not replayed."""
    from sparring.train.loop.check import check_stage
    from sparring.train.loop.driver import Loop

    size = ARM.sizes[ctx.size]
    warm_stage, final = f"{ARM.runs}-warm", f"{ARM.name}-{size['iterations']}"
    warm_alias, final_alias = f"{ctx.label}@{warm_stage}", f"{ctx.label}@{final}"
    missing = [alias for alias in (warm_alias, final_alias) if alias not in ctx.adapters]
    loop = None if missing else Loop(loop_config(ctx, size, ctx.adapters[warm_alias], replace(ARM, check=True)),
                                     "<learning suite>", console=ctx.console)
    if loop is None or "1" not in (loop.state.get("iterations") or {}):
        raise SparringError(f"debate-dpo-contrast-extras: {ctx.models_file} has no adapter "
                            f"{', '.join(missing) or 'of iteration 1'}; run `--only debate-dpo-contrast` with the same "
                            "--output first (these arms measure what it stored)")
    start = time.perf_counter()
    judges, measured = arm_judges(ctx, ARM), Measured()
    training = {r.instance_id for r in demonstrations(ctx, size, ARM).records}  # stored: read back, not replayed
    evaluate(ctx, warm_alias, warm_stage, size, judges, measured)  # stored runs: read back
    evaluate(ctx, final_alias, final, size, judges, measured)
    exp = Experiment(name="debate-dpo-contrast-extras", model=ctx.label, primary="judge_prob",
                     training_ids=sorted(training), heldout_ids=sorted(measured.per[judges.training_label][warm_stage]),
                     description="debate-dpo-contrast's further arms from its stored adapters and pairs: the warm start "
                                 "+ one epoch of SFT on iteration 1's chosen speeches, Best-of-4 from the warm start under "
                                 "the training judge, the judge-accuracy table by format (debate, consultancy, "
                                 "double consultancy) for the base model, the warm start and RPO iteration 2, and the "
                                 "loop's greedy check of each iteration on training questions.",
                     target="reported, no target: what the pairs give without their rejected side, what search gives "
                            "without training, and judge accuracy by format before and after")
    run_arms(ctx, exp, size, ARM, judges, measured, loop, [], ctx.adapters[warm_alias], warm_alias, final,
             ("rs-sft", "best-of-n"))
    table = play_accuracy_table(ctx, size, ARM, judges, {"base": ctx.label, "warm": warm_alias, "final": final_alias})
    add_accuracy_table(exp, table, judges, size)
    for k in range(1, size["iterations"] + 1):  # the greedy check: iteration k vs k - 1 on training prompts
        check = check_stage(loop, k) or {}
        for measure in check.get("diff") or {}:  # paired per training question, as every other row
            before, after = check["before"], check["after"]
            exp.paired[f"check {measure} {ARM.name}-{k} - {k - 1} (greedy, {size['check']} training questions)"] = {
                **paired(before["per_instance"][measure], after["per_instance"][measure]),
                "before": before["means"][measure], "after": after["means"][measure]}
    exp.wall_s = time.perf_counter() - start
    return exp
