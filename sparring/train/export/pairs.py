"""DPO rows: `{"prompt", "chosen", "rejected", "preference", "margin", "meta"}` (TRL's
conversational preference format plus a soft target).

Sources: best-of-N candidates (each candidate's evaluator score is its value) and branched
rollouts (sibling alternatives; the value of an alternative is the mean outcome over its subtree,
`export/branches.py`). Either way chosen and rejected answered one identical prompt. Soft targets follow the NYU debate work: `prob` p = σ(γ·(v_c − v_r)),
`log_prob` σ(γ·(log v_c − log v_r)), `logit` σ(γ·(logit v_c − logit v_r)), `binary` p = 1.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from sparring.records.record import CallRecord, EpisodeRecord
from sparring.train.export.branches import branch_pairs
from sparring.train.export.contrast import PairRule, Rejected, likeness, pick_pairs
from sparring.train.export.conversation import check_chat, meta, turns
from sparring.train.export.filters import ExportFilters, select
from sparring.train.export.targets import Target, pair_row, soft_target


def candidate_pairs(call: CallRecord, rule: PairRule, key: str = "") -> list[tuple[str, str, float, float]]:
    """(chosen, rejected, v_chosen, v_rejected) among the call's best-of-N candidates, as `rule`
    pairs them (`contrast.py`; identical texts with different scores are merged, keeping the best)."""
    if not call.completions or not call.candidate_scores or len(call.completions) < 2:
        return []
    best: dict[str, float] = {}
    for comp, score in zip(call.completions, call.candidate_scores, strict=False):
        if math.isfinite(score):
            text = f"{call.assistant_prefix}{comp.text}"
            best[text] = max(score, best.get(text, -math.inf))
    return [(c, r, best[c], best[r]) for c, r in pick_pairs(best, {t: t for t in best}, rule, key)]


def dpo_rows(records: Iterable[EpisodeRecord], filters: ExportFilters | None = None, *, target: Target = "prob",
             gamma: float = 1.0, min_gap: float = 0.0, rejected: Rejected = "each", max_similarity: float | None = None,
             seed: int = 0, abort_value: float | None = 0.0) -> list[dict[str, Any]]:
    """Preference rows from the best-of-N candidates and the branched rollouts in `records`
    (`min_gap`, `rejected`, `max_similarity`, `seed`: which alternatives pair up, `contrast.py`;
    `abort_value`: what an aborted leaf is worth, `branches.leaf_value`)."""
    f = filters or ExportFilters()
    rule = PairRule(min_gap=min_gap, rejected=rejected, max_similarity=max_similarity, seed=seed)
    records = list(records)
    rows: list[dict[str, Any]] = []
    for rec, player in select(records, f):
        for t in turns(rec, player, f.after_rejection):
            for chosen, other, v_c, v_r in candidate_pairs(t.call, rule, key=f"{rec.id}:{player}:{t.call.turn}"):
                rows.append(pair_row(t.prompt, chosen, other, v_c, v_r, target, gamma,
                                     meta(rec, player, source="best_of_n", turn=t.call.turn,
                                          **likeness(chosen, other))))
    rows.extend(branch_pairs(records, f, target=target, gamma=gamma, rule=rule, abort_value=abort_value))
    for n, row in enumerate(rows):
        check_chat(row["prompt"] + row["chosen"], f"DPO row {n}", ends_with="assistant")
    return rows


__all__ = ["PairRule", "Target", "candidate_pairs", "dpo_rows", "pair_row", "soft_target"]
