"""KTO rows: `{"prompt", "completion", "label", "meta"}` — every reply of the selected seats, labelled
desirable when its episode passes the `keep` filter (e.g. winners) and undesirable otherwise. The
prompt follows `after_rejection`; a rejected reply is never a completion."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sparring.records.record import EpisodeRecord
from sparring.train.export.conversation import check_chat, meta, turns
from sparring.train.export.filters import ExportFilters, select


def kto_rows(records: Iterable[EpisodeRecord], filters: ExportFilters | None = None) -> list[dict[str, Any]]:
    f = filters or ExportFilters(keep="winners")
    records = list(records)
    everyone = select(records, f.model_copy(update={"keep": "all"}))
    good = {(r.id, p) for r, p in select(records, f)}
    rows = []
    for rec, player in everyone:
        label = (rec.id, player) in good
        for t in turns(rec, player, f.after_rejection):
            completion = [{"role": "assistant", "content": t.reply}]
            check_chat(t.prompt + completion, f"KTO row of episode {rec.id}", ends_with="assistant")
            rows.append({"prompt": t.prompt, "completion": completion, "label": label,
                         "meta": meta(rec, player, turn=t.call.turn, calls=[t.index])})
    return rows
