"""Did a DPO step fit its pairs, and how? The trained adapter against its reference, token by token,
on the very token ids DPO trained (`trainers.preference_tokens`).

Per pair, the log-ratio log π(y) − log π_ref(y) of the chosen and of the rejected reply, summed over
the reply, and each split into the tokens the two replies share (aligned by difflib) and the tokens
where they differ. DPO's margin only sees the difference, and shared tokens cancel in it: when the
chosen log-ratio is negative, and negative on the shared tokens, DPO met its margin by lowering what
both replies say (likelihood displacement, Razin et al. 2024) — for a debater, the quote both
siblings open with. Accuracy is the share of pairs whose margin is above 0; on pairs held back from
training it says whether the preference generalises rather than being memorised.

Why not the trainer's logs: a DPO step logs its batch's reward accuracy before it updates on that
batch, so in one epoch every logged value is measured on pairs not yet trained on, and the last
logged step holds a couple of pairs.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Sequence
from typing import Any

Rows = list[dict[str, Any]]


def shared_tokens(a: Sequence[int], b: Sequence[int]) -> tuple[list[bool], list[bool]]:
    """For each token of `a` and of `b`: is it in a run of tokens the two have in common (the
    longest matching blocks, in order)?"""
    in_a, in_b = [False] * len(a), [False] * len(b)
    for block in difflib.SequenceMatcher(None, list(a), list(b), autojunk=False).get_matching_blocks():
        for t in range(block.size):
            in_a[block.a + t] = in_b[block.b + t] = True
    return in_a, in_b


def reply_logprobs(model: Any, prompt_ids: list[int], reply_ids: list[int]) -> list[float]:
    """log p(token | everything before it) for each reply token, under `model` as it is set now."""
    import torch

    if not reply_ids:
        return []
    device = next(model.parameters()).device
    ids = torch.tensor([prompt_ids + reply_ids], device=device)
    logits = model(input_ids=ids).logits[0, len(prompt_ids) - 1: -1].float()
    logp = torch.log_softmax(logits, dim=-1).gather(1, ids[0, len(prompt_ids):, None]).squeeze(1)
    return [float(x) for x in logp]


def _split(ratio: list[float], shared: list[bool]) -> tuple[float, float]:
    return (sum(r for r, s in zip(ratio, shared, strict=True) if s),
            sum(r for r, s in zip(ratio, shared, strict=True) if not s))


def pair_figures(ratios: list[dict[str, list[float]]], shared: list[dict[str, list[bool]]]) -> dict[str, float]:
    """The summary of per-token log-ratios (`ratios[i][side]`, side chosen / rejected) and their
    shared-token masks: accuracy, mean margin, and each side's mean log-ratio summed, on shared
    and on differing tokens."""
    n = len(ratios)
    if n == 0:
        return {"pairs": 0.0}
    out: dict[str, float] = {"pairs": float(n)}
    sums = {side: [sum(r[side]) for r in ratios] for side in ("chosen", "rejected")}
    margins = [c - j for c, j in zip(sums["chosen"], sums["rejected"], strict=True)]
    per_token = [sum(r["chosen"]) / max(1, len(r["chosen"])) - sum(r["rejected"]) / max(1, len(r["rejected"]))
                 for r in ratios]  # what IPO and the soft loss compare
    out["accuracy"] = sum(m > 0 for m in margins) / n
    out["margin"] = sum(margins) / n
    out["accuracy_per_token"] = sum(m > 0 for m in per_token) / n
    out["margin_per_token"] = sum(per_token) / n
    for side in ("chosen", "rejected"):
        parts = [_split(r[side], s[side]) for r, s in zip(ratios, shared, strict=True)]
        out[f"{side}_logratio"] = sum(sums[side]) / n
        out[f"{side}_logratio_shared"] = sum(p[0] for p in parts) / n
        out[f"{side}_logratio_differing"] = sum(p[1] for p in parts) / n
    tokens = sum(len(s["chosen"]) for s in shared)
    out["shared_token_share"] = sum(sum(s["chosen"]) for s in shared) / max(1, tokens)
    return out


def pair_fit(rows: Rows, model: Any, tokenizer: Any, reference: str | None) -> dict[str, float]:
    """Figures of `model` (a PEFT model whose active adapter is the trained one) against `reference`
    (the name of another adapter loaded in it; None: the base model, adapters disabled) on `rows`."""
    import torch

    from sparring.train.trainers import preference_tokens

    start = time.perf_counter()
    _, tokens = preference_tokens(tokenizer, rows, ("chosen", "rejected"))
    trained = model.active_adapter
    ratios, shared = [], []
    model.eval()
    with torch.inference_mode():
        for t in tokens:
            masks = dict(zip(("chosen", "rejected"), shared_tokens(t["chosen_ids"], t["rejected_ids"]), strict=True))
            logp = {side: reply_logprobs(model, t["prompt_ids"], t[f"{side}_ids"]) for side in ("chosen", "rejected")}
            if reference is None:
                with model.disable_adapter():
                    ref = {side: reply_logprobs(model, t["prompt_ids"], t[f"{side}_ids"]) for side in logp}
            else:
                model.set_adapter(reference)
                ref = {side: reply_logprobs(model, t["prompt_ids"], t[f"{side}_ids"]) for side in logp}
                model.set_adapter(trained)
            ratios.append({side: [a - b for a, b in zip(logp[side], ref[side], strict=True)] for side in logp})
            shared.append(masks)
    return {**pair_figures(ratios, shared), "seconds": time.perf_counter() - start}


def fit_line(name: str, f: dict[str, float]) -> str:
    """One line of `pair_fit`'s figures (the loop prints one per pair set)."""
    if not f.get("pairs"):
        return f"{name}: no pairs"
    return (f"{name}: {f['pairs']:.0f} pairs, accuracy {f['accuracy']:.2f}, margin {f['margin']:+.2f}; "
            f"chosen log-ratio {f['chosen_logratio']:+.2f} (shared tokens {f['chosen_logratio_shared']:+.2f}, "
            f"differing {f['chosen_logratio_differing']:+.2f}), rejected {f['rejected_logratio']:+.2f} "
            f"(shared {f['rejected_logratio_shared']:+.2f}, differing {f['rejected_logratio_differing']:+.2f}); "
            f"{f['shared_token_share']:.0%} of chosen tokens shared")


def fit_adapter(settings: Any, adapter: str, reference: str | None, sets: dict[str, Rows]) -> dict[str, dict[str, float]]:
    """`pair_fit` of the adapter at `adapter` (on `settings.model`) against the adapter at `reference`
    (None: the base model) on each named set of pairs; the model is loaded once, for inference."""
    from sparring.train.policy import load_policy

    model, tokenizer = load_policy(settings.model_copy(update={"adapter": adapter}), trainable=False)
    try:
        if reference is not None:
            trained = model.active_adapter
            model.load_adapter(reference, adapter_name="reference", is_trainable=False)
            model.set_adapter(trained)
        return {name: pair_fit(rows, model, tokenizer, "reference" if reference is not None else None)
                for name, rows in sets.items() if rows}
    finally:
        del model
