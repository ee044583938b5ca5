#!/usr/bin/env python
"""Issue 58's pre-check: before any held-out debate, what DPO does with its own pairs.

    python scripts/debate_dpo_precheck.py --output runs/dpo-precheck            # bundled model, ~1 h
    python scripts/debate_dpo_precheck.py --output /tmp/precheck --size quick   # tiny model, minutes

1. The warm start of `debate-dpo-evidence` (LoRA SFT on the scripted demonstrator's quoting
   speeches in the training debates), one epoch of steps of 4 rows.
2. Branched debates of the warm start against the base model on the training questions (both
   answer assignments, both seat orders), `--k` sampled speeches per branch point, judged by the
   scripted evidence judge: the loop's self-play stage.
3. The pairs exported two ways, each summarised (`export.contrast.pair_summary`): the best speech
   against each lower sibling (as the page's run), and against its lowest-valued sibling only, with
   a minimum judge gap and near copies dropped (NYU's rule). A seeded 20% of the latter is held back.
4. One DPO epoch per loss variant on the kept pairs, from the warm start (its reference), each
   scored token by token on its pairs and on the held-back ones (`train.pair_fit`), and its greedy
   first speeches on the training prompts checked for valid quotes against the warm start's.

Writes OUTPUT/precheck.json and prints one block per variant. Nothing here is played on held-out
questions: the training questions only (`generated` split `train`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

# quick: a tiny random model's siblings score alike, so no gap is asked of its pairs
SIZES = {"quick": {"questions": 2, "tokens": 16, "warm_steps": 1, "max_length": 1024, "min_gap": 0.0},
         # full: one epoch of the demonstrations (-1: by epochs; the page's run stopped at 2/3 of one)
         "full": {"questions": 24, "tokens": 48, "warm_steps": -1, "max_length": 1024, "min_gap": 0.1}}
# name -> (pair rule, DPOSettings, learning rate)
VARIANTS: dict[str, tuple[str, dict[str, Any], float]] = {
    "sigmoid-1e-3-each": ("each", {"loss_type": ["sigmoid"], "beta": 0.1}, 1e-3),  # the page's recipe
    "sigmoid-1e-3": ("worst", {"loss_type": ["sigmoid"], "beta": 0.1}, 1e-3),
    "sigmoid-1e-4": ("worst", {"loss_type": ["sigmoid"], "beta": 0.1}, 1e-4),     # NYU's rate
    "rpo-1e-4": ("worst", {"loss_type": ["sigmoid", "sft"], "loss_weights": [1.0, 1.0], "beta": 0.1}, 1e-4),
    "dpop-1e-4": ("worst", {"soft": True, "positive": 5.0, "beta": 1.0}, 1e-4),
}


def greedy_quotes(ctx: Any, adapters: dict[str, str], prompts: list[tuple[list[dict[str, str]], str]],
                  tokens: int) -> dict[str, float]:
    """Mean valid quotes per greedy speech of each adapter on the (prompt, story) pairs."""
    from sparring.games.debate.quotes import validate_quotes
    from sparring.models.hf import HFModel
    from sparring.types import GenerateRequest, Message, Sampling

    args = {**ctx.base_entry()["args"], "adapters": adapters}
    args.pop("default_adapter", None)
    model = HFModel(name="precheck", **args)
    out: dict[str, float] = {}
    try:
        for name in adapters:
            requests = [GenerateRequest(messages=[Message(**m) for m in p], adapter=name,
                                        sampling=Sampling(temperature=0.0, max_new_tokens=tokens))
                        for p, _ in prompts]
            replies = model.generate(requests)  # per request: its completions, or the error in its place
            texts = [r[0].text if isinstance(r, list) else "" for r in replies]
            valid = [validate_quotes(text, story).stats["n_valid"] for text, (_, story) in zip(texts, prompts, strict=True)]
            out[name] = sum(valid) / max(1, len(valid))
    finally:
        model.close()
    return out


def played_stories(config: Path) -> dict[str, str]:
    """Instance id -> story of the debates the config plays (records keep only the story's length)."""
    from sparring.engine.instances import load_instances
    from sparring.engine.loader import load_config, resolve

    return {inst.id: inst.background for inst in load_instances(resolve(*load_config(config)))}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--output", required=True, type=Path)
    parser.add_argument("--size", choices=list(SIZES), default="full")
    parser.add_argument("--k", type=int, default=4, help="sampled speeches per branch point")
    parser.add_argument("--min-gap", type=float, default=None, help="the worst rule's judge gap (full: 0.1, NYU's)")
    parser.add_argument("--max-similarity", type=float, default=0.9)
    parser.add_argument("--variants", nargs="*", default=[v for v in VARIANTS if v != "sigmoid-1e-3-each"],
                        choices=list(VARIANTS), help="loss variants to train (default: all on the worst pairs)")
    return parser


def main() -> None:
    a = build_parser().parse_args()
    from rich.console import Console

    from sparring.learning.context import Context
    from sparring.learning.debate_eval import GAME, MAX_LIVE, dataset
    from sparring.learning.experiments.debate_dpo import warm_start
    from sparring.learning.experiments.debate_dpo_evidence import ARM
    from sparring.learning.suite import quick_model
    from sparring.train.config import TrainSettings
    from sparring.train.export import ExportFilters, dpo_rows
    from sparring.train.export.contrast import hold_back, pair_line, pair_summary
    from sparring.train.pair_fit import fit_adapter, fit_line
    from sparring.train.trainers import train

    size = SIZES[a.size]
    out = a.output
    out.mkdir(parents=True, exist_ok=True)
    model = quick_model(out) if a.size == "quick" else "smollm2-135m"
    console = Console()
    ctx = Context(out=out, size=a.size, model=model, label="tiny" if a.size == "quick" else "smollm2-135m",
                  flops=0.0, console=console)
    ctx.write_models()
    report: dict[str, Any] = {"args": {k: str(v) for k, v in vars(a).items()}, "size": size}
    t = time.perf_counter()
    warm_size = {"train": size["questions"], "demo_steps": size["warm_steps"], "max_length": size["max_length"]}
    warm, warm_info, _ = warm_start(ctx, warm_size, ARM)
    report["warm"] = {**warm_info, "seconds": round(time.perf_counter() - t)}
    console.print(f"warm start: {warm_info}")
    alias = ctx.register("precheck-warm", warm)

    t = time.perf_counter()
    played = ctx.play({
        "game": "debate", "game_args": GAME, "dataset": dataset("train", size["questions"]),
        "agents": {"policy": {"role": "debater", "model": alias,
                              "sampling": {"temperature": 0.9, "max_new_tokens": size["tokens"]}},
                   "opponent": {"role": "debater", "model": ctx.label,
                                "sampling": {"temperature": 0.0, "max_new_tokens": size["tokens"]}},
                   "judge": {"role": "judge", "model": ARM.judges.training}},
        "tournament": {"type": "custom", "matchups": [["policy", "opponent"], ["opponent", "policy"]],
                       "judges": ["judge"], "flip": True},
        "branch": {"target": "policy", "k": a.k, "mode": "half", "depth": 1},
        "run": {"seed": 0, "max_live": MAX_LIVE}}, "precheck-play")
    report["play_seconds"] = round(time.perf_counter() - t)
    stories = played_stories(ctx.out / "configs" / "precheck-play.yaml")
    f = ExportFilters(agent="policy")
    min_gap = size["min_gap"] if a.min_gap is None else a.min_gap
    rows = {"each": dpo_rows(played.records, f, target="binary", min_gap=min(min_gap, 0.05)),
            "worst": dpo_rows(played.records, f, target="binary", min_gap=min_gap, rejected="worst",
                              max_similarity=a.max_similarity)}
    report["pairs"] = {}
    for rule, rs in rows.items():
        report["pairs"][rule] = {"n": len(rs), **pair_summary(rs)}
        console.print(f"pairs ({rule}): {pair_line(len(rs), pair_summary(rs))}")
    kept, held = hold_back(rows["worst"], 0.2, seed=0)
    report["held_back"] = len(held)
    prompts = [(r["prompt"], stories.get(r["meta"]["instance_id"], "")) for r in rows["worst"]]

    adapters: dict[str, str] = {"warm": warm}
    report["variants"] = {}
    for name in a.variants:
        rule, dpo, lr = VARIANTS[name]
        train_rows = kept if rule == "worst" else rows["each"]
        if not train_rows:
            console.print(f"{name}: no pairs to train on")
            report["variants"][name] = {"rule": rule, "rows": 0}
            continue
        settings = TrainSettings(model=ctx.model, method="dpo", adapter=warm, learning_rate=lr, epochs=1,
                                 batch_size=4, max_length=size["max_length"], lora={"r": 8, "alpha": 16}, dpo=dpo,
                                 seed=0)
        t = time.perf_counter()
        result = train(train_rows, settings, out / "variants" / name)
        fit = fit_adapter(settings, str(result.adapter), warm, {"trained": train_rows, "held back": held})
        adapters[name] = str(result.adapter)
        report["variants"][name] = {"rule": rule, "dpo": dpo, "learning_rate": lr, "rows": result.rows,
                                    "steps": result.steps, "loss": result.loss, "fit": fit,
                                    "seconds": round(time.perf_counter() - t)}
        for set_name, figures in fit.items():
            console.print(f"{name}: {fit_line(set_name, figures)}")
        (out / "precheck.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    report["greedy_valid_quotes"] = greedy_quotes(ctx, adapters, prompts, size["tokens"])
    console.print(f"valid quotes per greedy first speech on the training prompts: {report['greedy_valid_quotes']}")
    (out / "precheck.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    console.print(f"wrote {out / 'precheck.json'}")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(130)
