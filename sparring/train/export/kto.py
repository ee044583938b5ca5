"""KTO rows: `{"prompt", "completion", "label", "meta"}` — every reply of the selected seats, labelled
desirable when its episode passes the `keep` filter (e.g. winners) and undesirable otherwise."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sparring.records.record import EpisodeRecord
from sparring.train.export.conversation import meta, own_calls, reply_text
from sparring.train.export.filters import ExportFilters, select


def kto_rows(records: Iterable[EpisodeRecord], filters: ExportFilters | None = None) -> list[dict[str, Any]]:
    f = filters or ExportFilters(keep="winners")
    records = list(records)
    everyone = select(records, f.model_copy(update={"keep": "all"}))
    good = {(r.id, p) for r, p in select(records, f)}
    rows = []
    for rec, player in everyone:
        label = (rec.id, player) in good
        for call in own_calls(rec, player, with_corrections=False):
            reply = reply_text(call)
            if reply is None:
                continue
            rows.append({"prompt": [{"role": m.role, "content": m.content} for m in call.messages],
                         "completion": [{"role": "assistant", "content": reply}], "label": label,
                         "meta": meta(rec, player, turn=call.turn)})
    return rows
