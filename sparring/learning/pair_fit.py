"""Did a DPO iteration fit its own pairs? Its saved adapter against its reference (the adapter
it started from) on the iteration's pairs, scored after training: per pair the implicit reward
margin [log π(chosen) − log π_ref(chosen)] − [log π(rejected) − log π_ref(rejected)], summed over
the reply's tokens and averaged per token (what IPO compares), and the share of pairs above 0.

Why not the trainer's logs: a DPO step logs its batch's reward accuracy before it updates on
that batch, so in a single epoch every logged value is measured on pairs not yet trained on
(generalisation, not fit), and the last logged step holds two pairs. The learning checks
(tests/train/test_learning_checks.py) measure a trainer the same way, on a task with a known optimum.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sparring.learning.context import Context


def _text(side: list[dict[str, str]]) -> str:
    return "".join(m["content"] for m in side)


def pair_fit(ctx: Context, rows_path: str | Path, adapter: str | Path, reference: str | Path | None) -> dict[str, float]:
    """Accuracy and mean margins of `adapter` against `reference` (None: the base model itself) on
    the DPO rows at `rows_path` (adapters of the suite's base model, scored by the `hf` backend)."""
    from sparring.models.hf import BASE_ADAPTER, HFModel
    from sparring.train.trainers import read_rows
    from sparring.types import Message, ScoreRequest

    start = time.perf_counter()
    rows = read_rows(str(rows_path))
    if not rows:
        return {"pairs": 0.0}
    adapters = {"trained": str(adapter), **({"reference": str(reference)} if reference is not None else {})}
    args: dict[str, Any] = {**ctx.base_entry()["args"], "adapters": adapters}
    args.pop("default_adapter", None)
    model = HFModel(name="pair-fit", **args)
    try:
        requests = [ScoreRequest(messages=[Message(role=m["role"], content=m["content"]) for m in row["prompt"]],
                                 options=[_text(row["chosen"]), _text(row["rejected"])], adapter=which)
                    for which in ("trained", "reference" if reference is not None else BASE_ADAPTER) for row in rows]
        scores = model.score(requests)
        lengths = [[max(1, len(model.tokenizer(_text(row[side]), add_special_tokens=False)["input_ids"]))
                    for side in ("chosen", "rejected")] for row in rows]
    finally:
        model.close()
    trained, ref = scores[: len(rows)], scores[len(rows):]
    chosen = [t[0] - r[0] for t, r in zip(trained, ref, strict=True)]
    rejected = [t[1] - r[1] for t, r in zip(trained, ref, strict=True)]
    margins = [c - j for c, j in zip(chosen, rejected, strict=True)]
    per_token = [c / n[0] - j / n[1] for c, j, n in zip(chosen, rejected, lengths, strict=True)]
    n = len(rows)
    return {"pairs": float(n), "accuracy": sum(m > 0 for m in margins) / n,
            "accuracy_per_token": sum(m > 0 for m in per_token) / n,
            "margin": sum(margins) / n, "margin_per_token": sum(per_token) / n,
            "chosen_logratio": sum(chosen) / n, "rejected_logratio": sum(rejected) / n,
            "seconds": time.perf_counter() - start}
