"""A player's turns, rebuilt from exactly what its model was shown (the record's calls).

Each generate call holds the messages the player saw and what it replied. Rows are built from
these, never from the game's events, so another player's same-round speech can never appear.

Rejected replies are found by position, never by text (an accepted reply can repeat a rejected
one word for word, e.g. a proposal refused as too early and made again later). When a call retries
after rejected calls, its messages are the first attempt's messages followed by the rejected
reply(ies) and the game's correction(s): those positions are marked. A later call whose messages
extend an earlier call's (a debate keeps the whole history) inherits that call's marks.

What a row's prompt holds after a rejected reply (`after_rejection`, the same rule in SFT, DPO and
KTO rows):
- `correction` (default): the correction the model saw stays: it is the truth of that game, the
  accepted reply answered it. The rejected reply itself is removed (never an assistant turn) and
  the correction joins the user message before it, so the chat still alternates.
- `clean`: the rejected reply and its correction are both removed, as if the first attempt had
  been the accepted reply.
GRPO trains on the exact tokens shown instead (`train/online/sequence.py`): there the rejected reply
and the correction are context (environment tokens) of the retry, never trained.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from sparring.errors import SparringError
from sparring.records.record import CallRecord, EpisodeRecord

AfterRejection = Literal["correction", "clean"]

# calls made for someone else's benefit (look-ahead, evaluation), never this player's own turns
SIDE_PURPOSES = ("best_of_n", "best_of_n_opponent")
SIDE_TAGS = ("scratchpad", "bon_opponent")


@dataclass
class Turn:
    """One accepted reply of the player with the prompt it answered (after the rejection rule)."""

    index: int  # in `record.calls`
    prompt: list[dict[str, str]]
    reply: str
    call: CallRecord


def reply_text(call: CallRecord) -> str | None:
    """The reply the game received: the kept candidate, with the assistant prefix it continued."""
    if call.op != "generate" or not call.completions or call.error:
        return None
    comp = call.completions[call.chosen if call.chosen is not None else 0]
    return f"{call.assistant_prefix}{comp.text}"


def _is_own(c: CallRecord, player: str) -> bool:
    return (c.player == player and c.op == "generate" and not c.error
            and c.meta.get("purpose") not in SIDE_PURPOSES and c.tag not in SIDE_TAGS)


def own_calls(rec: EpisodeRecord, player: str) -> list[CallRecord]:
    """The player's accepted turns (rejected replies are never targets)."""
    return [c for c in rec.calls if _is_own(c, player) and not c.rejected]


def rejection_marks(rec: EpisodeRecord, player: str) -> dict[int, set[int]]:
    """For each of the player's own calls (index in `rec.calls`): the positions in its messages
    that hold a rejected reply (assistant) or a correction (user), found by position."""
    own = [i for i, c in enumerate(rec.calls) if _is_own(c, player)]
    marks: dict[int, set[int]] = {}
    for n, i in enumerate(own):
        msgs = rec.calls[i].messages
        found: set[int] = set()
        for j in reversed(own[:n]):  # the latest earlier call this one extends keeps its marks
            prev = rec.calls[j].messages
            if len(prev) <= len(msgs) and msgs[: len(prev)] == prev:
                found |= marks[j]
                break
        first = n
        while first > 0 and rec.calls[own[first - 1]].rejected:
            first -= 1
        if first < n:  # a retry: after the first attempt's messages come rejections and corrections
            base = rec.calls[own[first]].messages
            if len(base) < len(msgs) and msgs[: len(base)] == base:
                found |= set(range(len(base), len(msgs)))
        marks[i] = found
    return marks


def apply_rule(messages: list[Any], marked: set[int], rule: AfterRejection) -> list[dict[str, str]]:
    """`messages` with the rejected replies removed and the corrections kept (`correction`) or
    removed too (`clean`); consecutive messages of one role are joined so the chat alternates."""
    out: list[dict[str, str]] = []
    for k, m in enumerate(messages):
        if k in marked and (m.role == "assistant" or rule == "clean"):
            continue
        if out and out[-1]["role"] == m.role and m.role != "system":
            out[-1] = {"role": m.role, "content": f"{out[-1]['content']}\n\n{m.content}"}
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def turns(rec: EpisodeRecord, player: str, rule: AfterRejection = "correction") -> list[Turn]:
    """The player's accepted replies, in order, each with the prompt it answered."""
    marks = rejection_marks(rec, player)
    out = []
    for i, c in enumerate(rec.calls):
        if not _is_own(c, player) or c.rejected:
            continue
        reply = reply_text(c)
        if reply is None:
            continue
        out.append(Turn(index=i, prompt=apply_rule(c.messages, marks[i], rule), reply=reply, call=c))
    return out


def check_chat(messages: list[dict[str, str]], where: str, *, ends_with: str) -> None:
    """Every exported chat: an optional system message, then user/assistant strictly alternating,
    starting with user and ending with `ends_with`."""
    roles = [m["role"] for m in messages]
    body = roles[1:] if roles[:1] == ["system"] else roles
    ok = (bool(body) and body[0] == "user" and body[-1] == ends_with
          and all(r == ("user" if k % 2 == 0 else "assistant") for k, r in enumerate(body)))
    if not ok:
        raise SparringError(f"{where}: an exported chat must be an optional system message, then user and "
                            f"assistant turns strictly alternating from user and ending with {ends_with}; "
                            f"got roles {roles}")


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
            **({"quality_score": metrics["quality_score"]} if "quality_score" in metrics else {}),
            # imported episodes say where they came from (clembench: game, experiment, episode, model pair)
            **({"source": rec.instance["source"]} if isinstance(rec.instance, dict) and rec.instance.get("source")
               else {}), **extra}
