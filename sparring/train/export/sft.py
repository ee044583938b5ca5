"""SFT rows: `{"messages": [...], "meta": {...}}`, TRL's conversational format, one row per player
conversation (the player's own replies are the assistant turns, the trained part)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from sparring.records.record import EpisodeRecord
from sparring.train.export.conversation import conversations, meta
from sparring.train.export.filters import ExportFilters, select


def sft_rows(records: Iterable[EpisodeRecord], filters: ExportFilters | None = None) -> list[dict[str, Any]]:
    f = filters or ExportFilters()
    rows: list[dict[str, Any]] = []
    for rec, player in select(records, f):
        for conv in conversations(rec, player, f.with_corrections):
            rows.append({"messages": conv.messages, "meta": meta(rec, player, turns=conv.turns)})
        rows.extend(verdict_rows(rec, player, f))
    return rows


def verdict_rows(rec: EpisodeRecord, player: str, f: ExportFilters) -> list[dict[str, Any]]:
    """A judge's verdicts (scored, not generated) as SFT rows: the verdict prompt and, as the
    answer, the option it gave most probability — or the correct option (`judge_target: correct`);
    `meta.probabilities` keeps the whole verdict (a soft target; the human judge's for NYU data)."""
    rows = []
    metrics = rec.outcome.metrics if rec.outcome else {}
    for call in rec.calls:
        if call.player != player or call.op != "score" or not call.logprobs or not call.options:
            continue
        if call.meta.get("purpose"):
            continue
        if f.judge_target == "correct":
            letter = metrics.get("correct_letter")
            matching = [o for o in call.options if o.strip() == letter]
            if not matching:
                continue
            target = matching[0]
        else:
            lp = call.logprobs
            target = call.options[max(range(len(lp)), key=lambda i: lp[i])]
        messages = [{"role": m.role, "content": m.content} for m in call.messages]
        messages.append({"role": "assistant", "content": f"{call.assistant_prefix}{target}"})
        total = sum(math.exp(x) for x in call.logprobs)
        probabilities = {o.strip(): math.exp(x) / total for o, x in zip(call.options, call.logprobs, strict=True)}
        rows.append({"messages": messages, "meta": meta(rec, player, turns=1, target=f.judge_target,
                                                        probabilities=probabilities)})
    return rows
