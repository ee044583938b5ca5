"""The arms a debate DPO experiment is measured against besides its warm start (issue #58), so that
a DPO gain is told from what else could have caused it:

- **extra SFT**: the warm start trained on the same demonstrations for as many more steps as the
  DPO iterations took together (a warm start short of its best would make any later stage look
  like a gain);
- **rejection-sampling SFT**: the warm start trained on the judge's best sibling of each pair
  iteration 1 trained on (the chosen speeches as SFT rows, one epoch): the pairs without their
  rejected side;
- **Best-of-N**: the warm start at inference time, N sampled speeches per turn with the training
  judge keeping its favourite (NYU's Best-of-4): what search buys without training.

Each arm is one held-out evaluation (`debate_eval.evaluate`), under every judge, paired with the
warm start and with the final DPO iteration.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sparring.learning.context import Context, Played
from sparring.learning.results import Experiment, Stage

# alias, stage name, best_of -> (metrics, per-instance training-judge value, the held-out run)
Evaluate = Callable[[str, str, int], tuple[dict[str, Any], dict[str, float], Played]]
ARMS = ("extra-sft", "rs-sft", "best-of-n")


def demo_sft_settings(ctx: Context, size: dict[str, Any], steps: int, adapter: str | None = None) -> Any:
    """The SFT settings of the debate warm start (LoRA r 8, lr 5e-4, batch 4); the SFT arms continue
    the warm adapter with the same settings."""
    from sparring.train.config import LoraSettings, TrainSettings

    return TrainSettings(model=ctx.model, method="sft", adapter=adapter, learning_rate=5e-4, max_steps=steps,
                         batch_size=4, max_length=size["max_length"], lora=LoraSettings(r=8, alpha=16))


def continue_sft(ctx: Context, size: dict[str, Any], warm: str, rows: list[dict[str, Any]], steps: int,
                 name: str) -> tuple[str, dict[str, Any], float]:
    """The warm adapter trained on with `rows` for `steps` more SFT steps (-1: one epoch), saved as
    adapters/NAME: (adapter, {rows, steps, loss}, seconds). The SFT arms and the loop check's
    extra-SFT control."""
    from sparring.train.trainers import train_sft

    t = time.perf_counter()
    result = train_sft(rows, demo_sft_settings(ctx, size, steps, warm), ctx.out / "adapters" / name)
    return str(result.adapter), {"rows": result.rows, "steps": result.steps, "loss": result.loss}, \
        time.perf_counter() - t


def chosen_rows(dpo_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """SFT rows of the preferred speech of each DPO row (its prompt + chosen reply)."""
    return [{"messages": [*r["prompt"], *r["chosen"]], "meta": {**r.get("meta", {}), "source": "chosen"}}
            for r in dpo_rows]


def run_controls(ctx: Context, exp: Experiment, size: dict[str, Any], warm: str, warm_alias: str,
                 demo_rows: list[dict[str, Any]],
                 pairs: list[dict[str, Any]], dpo_steps: int, evaluate: Evaluate, runs: str,
                 best_of: int = 4, only: tuple[str, ...] = ARMS) -> dict[str, str]:
    """Train and measure the arms named in `only` (of `ARMS`); a Stage each. Returns arm -> stage
    name (the keys of `evaluate`'s per-instance values), for the paired comparisons the caller draws."""
    stages: dict[str, str] = {}
    arms = [("extra-sft", demo_rows, max(1, dpo_steps),
             f"the warm start + {max(1, dpo_steps)} more SFT steps on the demonstrations (as many as the DPO "
             "iterations took together)"),
            ("rs-sft", chosen_rows(pairs), -1,
             f"the warm start + one epoch of SFT on the {len(pairs)} chosen speeches of iteration 1's trained pairs")]
    for arm, rows, steps, what in arms:
        if arm not in only:
            continue
        if not rows:
            exp.notes.append(f"{arm}: no rows, not trained")
            continue
        name = f"{runs}-{arm}"
        adapter, info, train_s = continue_sft(ctx, size, warm, rows, steps, name)
        alias = ctx.register(name, adapter)
        metrics, _, played = evaluate(alias, name, 1)
        exp.stages.append(Stage(name, 0, metrics, {"train": train_s, **played.walls("heldout")},
                                info={**info, "arm": what}))
        stages[arm] = name
        ctx.progress(exp)
    if "best-of-n" not in only:
        return stages
    name = f"{runs}-warm-best-of-{best_of}"
    metrics, _, played = evaluate(warm_alias, name, best_of)
    exp.stages.append(Stage(name, 0, metrics, played.walls("heldout"),
                            info={"arm": f"the warm start, best of {best_of} sampled speeches per turn "
                                         "under the training judge (temperature 0.9)"}))
    stages["best-of-n"] = name
    ctx.progress(exp)
    return stages
