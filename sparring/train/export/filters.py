"""Which players' turns become training rows: by role, agent, and by how the episode went."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import Field

from sparring.records.record import EpisodeRecord
from sparring.train.export.conversation import AfterRejection
from sparring.types import Strict

Keep = Literal["all", "winners", "correct", "above_avg", "nonzero", "top_k"]


class ExportFilters(Strict):
    """Selection of (episode, player) pairs. `keep`:
    `all`; `winners` (the judge's probability for the player's side > 0.5, or the game's winner);
    `correct` (the player argued the true answer); `above_avg` (reward above the mean of the
    selected players' rewards over the runs, as lm-selfplay); `nonzero` (reward != 0); `top_k`
    (the `k` highest rewards)."""

    role: str | None = Field(None, description="only seats of this role (debater, judge, negotiator, ...)")
    agent: str | None = Field(None, description="only seats played by this agent")
    keep: Keep = "all"
    k: int = Field(100, ge=1, description="top_k: how many (episode, player) pairs to keep")
    after_rejection: AfterRejection = Field(
        "correction", description="what a prompt holds after a rejected reply: the game's correction the model "
                                  "saw (`correction`, the rejected reply removed) or neither (`clean`); a "
                                  "rejected reply is never a target")
    include_aborted: bool = Field(False, description="also export aborted episodes")
    require: list[str] = Field(
        default_factory=list, description="outcome metrics that must be true for a player's turns to be kept; a "
        "pair failing one counts as reward 0 (no gain) in `above_avg`'s mean and is never kept. E.g. `[scored_both]` "
        "in Deal or No Deal: a deal worth nothing to one side is a capitulation, which neither side should learn")
    judge_target: Literal["verdict", "correct"] = Field(
        "verdict", description="judge rows: the judge's own verdict, or the correct answer as the target")


def reward(rec: EpisodeRecord, player: str) -> float:
    return float(rec.outcome.rewards.get(player, 0.0)) if rec.outcome else 0.0


def argued_correct(rec: EpisodeRecord, player: str) -> bool | None:
    """Whether `player` argued the true answer (debate records), None when the game has no truth."""
    metrics = rec.outcome.metrics if rec.outcome else {}
    positions = metrics.get("positions") or {}
    if player in positions:
        return positions[player] == "correct"
    return None


def won(rec: EpisodeRecord, player: str) -> bool:
    metrics = rec.outcome.metrics if rec.outcome else {}
    probs = metrics.get("probs")
    side = (metrics.get("player_side") or {}).get(player)
    if isinstance(probs, dict) and side in probs:
        return float(probs[side]) > 0.5
    return bool(rec.outcome and rec.outcome.winner == player)


def select(records: Iterable[EpisodeRecord], f: ExportFilters) -> list[tuple[EpisodeRecord, str]]:
    """The (record, player) pairs `f` keeps, in record order."""
    pairs = []
    for rec in records:
        if rec.status == "failed" or rec.outcome is None:
            continue
        if rec.status == "aborted" and not f.include_aborted:
            continue
        for player, seat in rec.seats.items():
            if f.role and seat.role != f.role:
                continue
            if f.agent and seat.agent != f.agent:
                continue
            pairs.append((rec, player))
    if f.require:
        _check_required([r for r, _ in pairs], f.require)
        failing = {id(r) for r, _ in pairs if not meets(r, f.require)}
        if f.keep == "above_avg" and pairs:
            mean = sum(0.0 if id(r) in failing else reward(r, p) for r, p in pairs) / len(pairs)
            return [(r, p) for r, p in pairs if id(r) not in failing and reward(r, p) > mean]
        pairs = [(r, p) for r, p in pairs if id(r) not in failing]
    if f.keep == "all":
        return pairs
    if f.keep == "winners":
        return [(r, p) for r, p in pairs if won(r, p)]
    if f.keep == "correct":
        return [(r, p) for r, p in pairs if argued_correct(r, p)]
    if f.keep == "nonzero":
        return [(r, p) for r, p in pairs if reward(r, p) != 0.0]
    if f.keep == "above_avg":
        if not pairs:
            return []
        mean = sum(reward(r, p) for r, p in pairs) / len(pairs)
        return [(r, p) for r, p in pairs if reward(r, p) > mean]
    ranked = sorted(range(len(pairs)), key=lambda i: (-reward(*pairs[i]), i))[: f.k]
    return [pairs[i] for i in sorted(ranked)]


def meets(rec: EpisodeRecord, required: list[str]) -> bool:
    """Whether every metric of `required` is true in the episode's outcome."""
    metrics = rec.outcome.metrics if rec.outcome else {}
    return all(bool(metrics.get(k)) for k in required)


def _check_required(records: list[EpisodeRecord], required: list[str]) -> None:
    """A metric no episode reports is a typo or the wrong game: say so instead of keeping nothing."""
    from sparring.errors import ConfigError

    seen = {k for r in records if r.outcome for k in r.outcome.metrics}
    missing = [k for k in required if k not in seen]
    if records and missing:
        raise ConfigError(f"export require: no episode has the outcome metric(s) {missing}; the episodes' "
                          f"metrics are {sorted(seen)}", key="require")
