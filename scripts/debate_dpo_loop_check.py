#!/usr/bin/env python
"""The pre-check of a whole debate DPO design before any held-out debate (issue #58): the design's
warm start, then each iteration's branched play, pairs, training, pair fit and the greedy check on
training prompts — the loop's own stages, stopped before its held-out games. (`debate_dpo_precheck.py`
compares loss variants on one set of pairs, outside the loop; this runs a design as the experiment
would.) What the full experiment costs most (96 held-out debates per stage under every judge, the
control arms, the judge-accuracy table) is spent only on a design whose pairs fit and whose greedy
speeches on the training questions quote at least as often as the warm start's.

    python scripts/debate_dpo_loop_check.py --output runs/loop-check                  # debate-dpo-contrast as it is
    python scripts/debate_dpo_loop_check.py --output runs/loop-check-v3 --demo-steps 42 --temperature 0.7 --heldout --control
    python scripts/debate_dpo_loop_check.py --suite quick --output /tmp/loop-check    # a tiny model: runs, not a result

A design is the experiment's arm with the overrides given (warm-start steps, the branch sampling
temperature, the learning rate, the iterations). Writes OUTPUT/precheck.json (the warm start, and
per iteration the pairs, the training result, the pair fit and the greedy check) and prints each
check's paired differences; exit status 1 when a greedy check found the new policy's valid quotes
per speech below the previous policy's (mean difference < 0), 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

ARMS = ("debate-dpo-contrast", "debate-dpo-evidence", "debate-dpo")
STAGES = ("play", "export", "train", "register", "check")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--experiment", default="debate-dpo-contrast", choices=ARMS, help="the design to start from")
    ap.add_argument("--suite", default="full", choices=("quick", "full"), help="the experiment's size")
    ap.add_argument("--output", required=True, help="folder of the run (a rerun resumes its finished stages)")
    ap.add_argument("--demo-steps", type=int, default=None, help="warm-start SFT steps (-1: one epoch)")
    ap.add_argument("--temperature", type=float, default=None, help="the policy's sampling temperature in the "
                    "branched debates")
    ap.add_argument("--learning-rate", type=float, default=None, help="the DPO iterations' learning rate")
    ap.add_argument("--iterations", type=int, default=1, help="DPO iterations to pre-check")
    ap.add_argument("--control", action="store_true", help="with --heldout: also the extra-SFT control (the warm "
                    "start + as many more SFT steps on the demonstrations as the iterations' DPO took), held out, "
                    "and the last iteration paired against it")
    ap.add_argument("--heldout", action="store_true", help="then the experiment's held-out debates of the warm "
                    "start and each iteration (the policy against the base model, every held-out question both "
                    "ways, under every judge), paired per question against the warm start")
    return ap


def design(name: str, suite: str, args: argparse.Namespace) -> Any:
    """The experiment's arm with the command line's overrides."""
    from sparring.learning.experiments import debate_dpo, debate_dpo_contrast, debate_dpo_evidence

    arm = {"debate-dpo-contrast": debate_dpo_contrast.ARM, "debate-dpo-evidence": debate_dpo_evidence.ARM,
           "debate-dpo": debate_dpo.DEBATE_DPO}[name]
    size = {**arm.sizes[suite], "iterations": args.iterations}
    if args.demo_steps is not None:
        size["demo_steps"] = args.demo_steps
    if not arm.check or "check" not in size:
        size.setdefault("check", 8 if suite == "full" else 1)
    train = {**arm.train, **({"learning_rate": args.learning_rate} if args.learning_rate is not None else {})}
    return replace(arm, sizes={**arm.sizes, suite: size}, train=train, check=True,
                   temperature=args.temperature if args.temperature is not None else arm.temperature)


def extra_sft(ctx: Any, arm: Any, size: dict[str, Any], warm: str, loop: Any, iterations: int) -> tuple[str, str]:
    """The extra-SFT control: the warm start + as many more SFT steps on the demonstrations as the
    iterations' DPO took together (`debate_controls`' first arm). (stage name, adapter)."""
    from sparring.learning.debate_controls import continue_sft
    from sparring.learning.experiments.debate_dpo import demonstrations
    from sparring.train.export import ExportFilters, sft_rows

    steps = max(1, sum(int(loop.state["iterations"][str(k)]["train"]["steps"]) for k in range(1, iterations + 1)))
    name = f"{arm.runs}-extra-sft"
    rows = sft_rows(demonstrations(ctx, size, arm).records, ExportFilters(agent="policy"))
    adapter, info, _ = continue_sft(ctx, size, warm, rows, steps, name)
    print(f"extra-SFT control: the warm start + {info['steps']} SFT steps on {info['rows']} demonstration rows")
    return name, adapter


def heldout(ctx: Any, arm: Any, size: dict[str, Any], warm: str, loop: Any, iterations: int,
            control: tuple[str, str] | None = None) -> dict[str, Any]:
    """The experiment's held-out evaluation (`debate_eval.evaluate`) of the warm start, each
    iteration and the `control`; each iteration − the warm start and − the iteration before, the
    control − the warm start and the last iteration − the control, paired per held-out question,
    under every judge."""
    from sparring.learning.debate_eval import Measured, evaluate
    from sparring.learning.experiments.debate_dpo import arm_judges
    from sparring.learning.results import paired

    judges, measured = arm_judges(ctx, arm), Measured()
    its = [f"{arm.name}-{k}" for k in range(1, iterations + 1)]
    stages = {f"{arm.runs}-warm": warm, **{name: loop.state["iterations"][str(k)]["train"]["adapter"]
                                          for k, name in enumerate(its, start=1)}, **dict([control] if control else [])}
    out: dict[str, Any] = {}
    for name, adapter in stages.items():
        out[name], _, _ = evaluate(ctx, ctx.register(name, adapter), name, size, judges, measured)
    names = list(stages)
    pairs = [(names[0], name) for name in names[1:]] + list(zip(its, its[1:], strict=False))
    pairs += [(control[0], its[-1])] if control else []
    for before, after in pairs:
        for label in (judges.training_label, *(j.label for j in judges.held_out)):
            d = out[f"{after} - {before} ({label})"] = paired(measured.per[label][before], measured.per[label][after])
            print(f"{after} - {before}, mean judge probability ({label}): {d['mean_diff']:+.3f} "
                  f"[{d['mean_diff_ci_low']:+.3f}, {d['mean_diff_ci_high']:+.3f}] over {d['n']} questions")
    return out


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from rich.console import Console

    from sparring.learning.context import Context
    from sparring.learning.experiments.debate_dpo import loop_config, warm_start
    from sparring.learning.suite import quick_model
    from sparring.train.loop.driver import Loop
    from sparring.train.step_cost import matmul_flops

    console = Console()
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    arm = design(args.experiment, args.suite, args)
    size = arm.sizes[args.suite]
    model = quick_model(out) if args.suite == "quick" else "smollm2-135m"
    ctx = Context(out=out, size=args.suite, model=model, label="tiny" if args.suite == "quick" else "smollm2-135m",
                  flops=matmul_flops(), console=console)
    ctx.load_adapters()
    ctx.write_models()
    report: dict[str, Any] = {"experiment": args.experiment, "suite": args.suite,
                              "design": {"demo_steps": size["demo_steps"], "temperature": arm.temperature,
                                         "learning_rate": arm.train["learning_rate"], "k": arm.k,
                                         "dpo": arm.dpo, "export": arm.export, "check": size["check"]}}
    path = out / "precheck.json"
    previous = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    warm_dir = out / "adapters" / f"{arm.runs}-warm"
    if previous.get("warm") and previous.get("design") == json.loads(json.dumps(report["design"])) \
            and (warm_dir / "adapter_config.json").is_file():  # a rerun (e.g. --heldout) keeps the warm start
        adapter, report["warm"] = str(warm_dir), previous["warm"]
    else:
        adapter, report["warm"], _ = warm_start(ctx, size, arm)
    loop = Loop(loop_config(ctx, size, adapter, arm), "<pre-check>", console=console)
    loop.start()
    fell = False
    for k in range(1, args.iterations + 1):
        found = {stage: loop.stage(k, stage) for stage in STAGES}
        report[f"iteration {k}"] = found
        quotes = ((found.get("check") or {}).get("diff") or {}).get("valid_quotes") or {}
        fell = fell or float(quotes.get("diff", 0.0)) < 0
    if args.heldout:
        control = extra_sft(ctx, arm, size, adapter, loop, args.iterations) if args.control else None
        report["heldout"] = heldout(ctx, arm, size, adapter, loop, args.iterations, control)
    path.write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    console.print(f"wrote {path}")
    return 1 if fell else 0


if __name__ == "__main__":
    sys.exit(main())
