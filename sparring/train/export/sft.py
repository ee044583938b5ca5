"""SFT rows in TRL's conversational formats, one trained target per accepted reply.

- `{"messages", "meta"}` when every assistant turn of every row is one of that player's own
  replies, each trained exactly once: the player's calls whose shown messages extend the previous
  call plus its reply merge into one multi-turn conversation (a debate, wordle); a call shown no
  earlier replies (TextWorld) is a row of its own.
- `{"prompt", "completion", "meta"}` (one row per accepted reply, completion-only loss) as soon as
  a game shows a player its earlier replies in a rewritten form (Deal or No Deal re-renders its
  history every turn, adding `[message] ` and canonical proposals): in a `messages` row those
  turns would be trained again, in the game's words; as a prompt they are context only.

One export is one format (TRL needs one per dataset). The prompt after a rejected reply follows
`ExportFilters.after_rejection` (`conversation.py`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from sparring.errors import SparringError
from sparring.records.record import EpisodeRecord
from sparring.train.export.conversation import Turn, check_chat, meta, turns
from sparring.train.export.filters import ExportFilters, select


def _conversations(ts: list[Turn]) -> list[list[Turn]] | None:
    """The turns grouped into multi-turn conversations, or None when some turn's prompt shows
    an assistant turn that is not one of the group's own replies (then: prompt/completion rows)."""
    groups: list[list[Turn]] = []
    chat: list[dict[str, str]] = []
    for t in ts:
        if groups and len(t.prompt) >= len(chat) and t.prompt[: len(chat)] == chat:
            new = t.prompt[len(chat):]
            groups[-1].append(t)
        else:
            new = t.prompt
            groups.append([t])
        if any(m["role"] == "assistant" for m in new):
            return None
        chat = t.prompt + [{"role": "assistant", "content": t.reply}]
    return groups


def sft_rows(records: Iterable[EpisodeRecord], filters: ExportFilters | None = None) -> list[dict[str, Any]]:
    f = filters or ExportFilters()
    records = list(records)
    units: list[tuple[EpisodeRecord, str, list[Turn]]] = [
        (rec, player, turns(rec, player, f.after_rejection)) for rec, player in select(records, f)]
    grouped = [_conversations(ts) for _, _, ts in units]
    multi_turn = all(g is not None for g in grouped)
    rows: list[dict[str, Any]] = []
    for (rec, player, ts), groups in zip(units, grouped, strict=True):
        if multi_turn:
            assert groups is not None
            for group in groups:
                messages = group[-1].prompt + [{"role": "assistant", "content": group[-1].reply}]
                rows.append({"messages": messages,
                             "meta": meta(rec, player, turns=len(group), calls=[t.index for t in group])})
        else:
            for t in ts:
                rows.append({"prompt": t.prompt, "completion": [{"role": "assistant", "content": t.reply}],
                             "meta": meta(rec, player, turns=1, calls=[t.index], turn=t.call.turn)})
        rows.extend(verdict_rows(rec, player, f, messages=multi_turn))
    check_sft_rows(rows, records)
    return rows


def check_sft_rows(rows: list[dict[str, Any]], records: list[EpisodeRecord]) -> None:
    """The validator every SFT export passes: each chat is well formed, every trained assistant
    turn is an accepted reply of its player, each accepted reply is trained at most once, and a
    `messages` row holds no assistant turn that is not trained."""
    by_id = {r.id: r for r in records}
    seen: set[tuple[str, int]] = set()
    for n, row in enumerate(rows):
        where = f"SFT row {n} (episode {row['meta'].get('episode_id')})"
        chat = row["messages"] if "messages" in row else row["prompt"] + row["completion"]
        check_chat(chat, where, ends_with="assistant")
        calls = row["meta"].get("calls")
        if calls is None:  # a judge's verdict row
            continue
        rec = by_id.get(row["meta"]["episode_id"])
        assistant = [m for m in chat if m["role"] == "assistant"]
        targets = assistant if "messages" in row else assistant[-1:]
        if rec is None or len(targets) != len(calls):
            raise SparringError(f"{where}: {len(targets)} trained assistant turns for {len(calls)} replies")
        for i in calls:
            call = rec.calls[i]
            if call.rejected or call.player != row["meta"]["seat"] or (rec.id, i) in seen:
                raise SparringError(f"{where}: call {i} is rejected, someone else's, or trained twice")
            seen.add((rec.id, i))


def verdict_rows(rec: EpisodeRecord, player: str, f: ExportFilters, messages: bool = True) -> list[dict[str, Any]]:
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
        prompt = [{"role": m.role, "content": m.content} for m in call.messages]
        answer = [{"role": "assistant", "content": f"{call.assistant_prefix}{target}"}]
        total = sum(math.exp(x) for x in call.logprobs)
        probabilities = {o.strip(): math.exp(x) / total for o, x in zip(call.options, call.logprobs, strict=True)}
        info = meta(rec, player, turns=1, target=f.judge_target, probabilities=probabilities)
        rows.append({"messages": prompt + answer, "meta": info} if messages
                    else {"prompt": prompt, "completion": answer, "meta": info})
    return rows
