"""A player's conversations, rebuilt from exactly what its model was shown (the record's calls).

Each generate call holds the messages the player saw and what it replied. Consecutive calls whose
messages extend the previous conversation (a debate shows each debater its whole history) merge
into one multi-turn conversation; a call that does not extend it (DoND re-renders the history each
turn) starts a new one. Another player's same-round speech can never appear: only the messages
this player's model was actually shown are used, never the game's events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sparring.records.record import CallRecord, EpisodeRecord
from sparring.types import Message

# calls made for someone else's benefit (look-ahead, evaluation), never this player's own turns
SIDE_PURPOSES = ("best_of_n", "best_of_n_opponent")
SIDE_TAGS = ("scratchpad", "bon_opponent")


@dataclass
class Conversation:
    messages: list[dict[str, str]]
    turns: int = 0  # assistant turns that are this player's (trained) replies
    calls: list[CallRecord] = field(default_factory=list)


def reply_text(call: CallRecord) -> str | None:
    """The reply the game received: the kept candidate, with the assistant prefix it continued."""
    if call.op != "generate" or not call.completions or call.error:
        return None
    comp = call.completions[call.chosen if call.chosen is not None else 0]
    return f"{call.assistant_prefix}{comp.text}"


def own_calls(rec: EpisodeRecord, player: str, with_corrections: bool) -> list[CallRecord]:
    out = []
    for c in rec.calls:
        if c.player != player or c.op != "generate" or c.error:
            continue
        if c.meta.get("purpose") in SIDE_PURPOSES or c.tag in SIDE_TAGS:
            continue
        if c.rejected and not with_corrections:
            continue
        out.append(c)
    return out


def _without_rejections(messages: list[Message], rejected: list[tuple[str, str]]) -> list[Message]:
    """Drop rejected replies (assistant) and the corrections that followed them (user)."""
    if not rejected:
        return list(messages)
    bad_replies = {r for r, _ in rejected}
    corrections = [c for _, c in rejected if c]
    out: list[Message] = []
    skip_next_correction = False
    for m in messages:
        if m.role == "assistant" and m.content.strip() in bad_replies:
            skip_next_correction = True
            continue
        if skip_next_correction and m.role == "user" and any(c and c in m.content for c in corrections):
            skip_next_correction = False
            continue
        skip_next_correction = False
        out.append(m)
    return out


def conversations(rec: EpisodeRecord, player: str, with_corrections: bool = False) -> list[Conversation]:
    """The player's conversations in this episode, each ending with one of its own replies."""
    rejected = [] if with_corrections else [
        ((reply_text(c) or "").strip(), str(c.meta.get("correction") or "")) for c in rec.calls
        if c.player == player and c.rejected and c.op == "generate"]
    out: list[Conversation] = []
    current: Conversation | None = None
    for call in own_calls(rec, player, with_corrections):
        reply = reply_text(call)
        if reply is None:
            continue
        shown = [{"role": m.role, "content": m.content}
                 for m in _without_rejections(call.messages, rejected)]
        if current is not None and shown[: len(current.messages)] == current.messages:
            current.messages = shown + [{"role": "assistant", "content": reply}]
            current.turns += 1
            current.calls.append(call)
            continue
        if current is not None:
            out.append(current)
        current = Conversation(messages=shown + [{"role": "assistant", "content": reply}], turns=1, calls=[call])
    if current is not None:
        out.append(current)
    return out


def meta(rec: EpisodeRecord, player: str, **extra: Any) -> dict[str, Any]:
    """What every row says about where it came from (filters and analyses read these)."""
    seat = rec.seats[player]
    metrics = rec.outcome.metrics if rec.outcome else {}
    split = (rec.instance.get("metadata") or {}).get("split") if isinstance(rec.instance, dict) else None
    correct = metrics.get("positions", {}).get(player) if isinstance(metrics.get("positions"), dict) else None
    return {"game": rec.game, "format": metrics.get("format"), "role": seat.role, "seat": player,
            "agent": seat.agent, "model": seat.model, "episode_id": rec.id, "experiment": rec.experiment,
            "instance_id": rec.instance_id, "split": split, "outcome": rec.status,
            "reward": float(rec.outcome.rewards.get(player, 0.0)) if rec.outcome else None,
            "argued_correct": None if correct is None else correct == "correct",
            "correct_side": metrics.get("correct_side"),
            # games scored on a quality scale (clembench: taboo, wordle) say so in every row
            **({"quality_score": metrics["quality_score"]} if "quality_score" in metrics else {}), **extra}
