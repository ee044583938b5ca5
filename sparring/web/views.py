"""The views of an episode page, built from the record alone.

- public: the events everyone could see (`visible_to` is None) and the outcome;
- a player's view: exactly the messages that player's model was shown, call by call (from the
  record's `calls`, never the events), each with the reply it gave; repeated context is folded;
- everything: every event with its visibility, every call (judge reasoning, scratchpads,
  rejected replies with their corrections, best-of-N candidates with their scores), the outcome;
- replay: the public events one turn at a time (`step`), then the outcome.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from sparring.records.record import CallRecord, EpisodeRecord
from sparring.types import Message

PUBLIC, EVERYTHING, REPLAY = "public", "everything", "replay"


def view_names(rec: EpisodeRecord) -> list[str]:
    """The views of an episode; `replay` steps through the public events one at a time."""
    return [PUBLIC, *(s for s in rec.seats if s not in (PUBLIC, EVERYTHING, REPLAY)), EVERYTHING, REPLAY]


@dataclass
class Candidate:
    text: str
    score: float | None
    chosen: bool


@dataclass
class Step:
    """One call: the messages shown that were not already on screen, and the reply."""

    call: CallRecord
    index: int
    new_messages: list[Message]
    folded: int  # earlier messages repeated verbatim (not shown again)
    reply: str | None = None
    probs: dict[str, float] | None = None
    candidates: list[Candidate] = field(default_factory=list)

    @property
    def correction(self) -> str | None:
        c = self.call.meta.get("correction")
        return str(c) if c else None


def _probs(call: CallRecord) -> dict[str, float] | None:
    if call.op != "score" or not call.logprobs or not call.options:
        return None
    finite = [x for x in call.logprobs if math.isfinite(x)]
    top = max(finite) if finite else 0.0
    ex = [math.exp(x - top) if math.isfinite(x) else 0.0 for x in call.logprobs]
    z = sum(ex) or 1.0
    return {o.strip() or o: e / z for o, e in zip(call.options, ex, strict=False)}


def _reply(call: CallRecord) -> str | None:
    if call.op != "generate" or not call.completions:
        return None
    i = call.chosen if call.chosen is not None and call.chosen < len(call.completions) else 0
    return f"{call.assistant_prefix}{call.completions[i].text}"


def _common_prefix(a: list[Message], b: list[Message]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x.role != y.role or x.content != y.content:
            break
        n += 1
    return n


def steps(rec: EpisodeRecord, player: str | None = None) -> list[Step]:
    """Calls of `player` (all calls when None), each with only what was new on screen."""
    out: list[Step] = []
    previous: dict[str, list[Message]] = {}
    for i, call in enumerate(rec.calls):
        if player is not None and call.player != player:
            continue
        key = call.player
        prev = previous.get(key, [])
        n = _common_prefix(prev, call.messages)
        step = Step(call=call, index=i, new_messages=list(call.messages[n:]), folded=n, reply=_reply(call),
                    probs=_probs(call))
        if call.op == "generate" and call.completions and len(call.completions) > 1:
            scores = call.candidate_scores or []
            step.candidates = [Candidate(text=c.text, score=scores[j] if j < len(scores) else None,
                                         chosen=call.chosen == j) for j, c in enumerate(call.completions)]
        shown = list(call.messages)
        if step.reply is not None:
            shown.append(Message(role="assistant", content=step.reply))
        previous[key] = shown
        out.append(step)
    return out


def public_events(rec: EpisodeRecord) -> list[Any]:
    return [e for e in rec.events if e.visible_to is None]


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str, ensure_ascii=False)
