"""One episode's row in the index: where its line is, and what a table shows of it (no transcript).

Kept apart from the scan (`index`) and the persistent summaries (`sidecar`), which both build it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sparring.records.record import EpisodeRecord

_EMPTY: Mapping[str, Any] = MappingProxyType({})


class IndexEntry:
    """Where one episode's line is (`file`, `offset`, `length`) and what a table shows of it.

    The summary fields are class defaults until `fill` sets them: a scan creates 10,000 entries
    and only the position is known then (a plain class: dataclass defaults cost a dict each)."""

    def __init__(self, id: str, file: str, offset: int, length: int, line_no: int):
        self.id, self.file, self.offset, self.length, self.line_no = id, file, offset, length, line_no

    game: str = ""
    experiment: str = ""
    instance_id: str = ""
    matchup: str = ""
    status: str = ""
    # (read-only empty mappings until `fill`: 10,000 entries are created per scan, cheaply)
    seats: Mapping[str, dict[str, str]] = _EMPTY  # player -> {agent, model, role}
    winner: str | None = None
    _rewards: Mapping[str, float] = _EMPTY
    rewards_json: str | None = None  # `rewards` as JSON text, parsed when first read (sidecar rows)
    best_reward: float | None = None  # the highest reward of any player (the table sorts by it)
    reason: str | None = None
    _metrics: Mapping[str, Any] = _EMPTY
    metrics_json: str | None = None  # `metrics` as JSON text, parsed when first read (sidecar rows)
    judge_probability: float | None = None  # the probability the judge put on the correct answer (debate)
    error: str | None = None
    started_at: float = 0.0
    duration_s: float = 0.0
    repeat: int = 0
    flip: bool = False
    summarized: bool = False
    problem: str | None = None  # why the line is not shown (the reader's warning), if it is bad
    search: str = ""  # lower-cased text the table's search box matches

    def fill(self, obj: dict[str, Any]) -> None:
        """Take the table's fields from a record's JSON (transcript left out)."""
        outcome = _dict(obj.get("outcome"))
        self._set(str(obj.get("game", "")), str(obj.get("experiment", "")), str(obj.get("instance_id", "")),
                  str(obj.get("matchup", "")), str(obj.get("status", "")),
                  {str(p): {k: str(s.get(k, "")) for k in ("agent", "model", "role")}
                   for p, s in _dict(obj.get("seats")).items() if isinstance(s, dict)},
                  outcome.get("winner"), outcome.get("reason"), _rewards(outcome.get("rewards")),
                  _summary_metrics(outcome.get("metrics")), obj.get("error"), float(obj.get("started_at") or 0.0),
                  float(obj.get("duration_s") or 0.0), int(obj.get("repeat") or 0), bool(obj.get("flip", False)))

    def fill_record(self, rec: EpisodeRecord) -> None:
        """`fill` from a validated record (whose fields already have the types `fill` makes)."""
        o = rec.outcome
        self._set(rec.game, rec.experiment, rec.instance_id, rec.matchup, rec.status,
                  {p: {"agent": s.agent, "model": s.model, "role": s.role} for p, s in rec.seats.items()},
                  o.winner if o else None, o.reason if o else None, dict(o.rewards) if o else {},
                  _summary_metrics(o.metrics) if o else {}, rec.error, rec.started_at, rec.duration_s, rec.repeat,
                  rec.flip)

    def _set(self, game: str, experiment: str, instance_id: str, matchup: str, status: str,
             seats: dict[str, dict[str, str]], winner: str | None, reason: str | None, rewards: dict[str, float],
             metrics: dict[str, Any], error: str | None, started_at: float, duration_s: float, repeat: int,
             flip: bool) -> None:
        self.game, self.experiment, self.instance_id, self.matchup, self.status = (game, experiment, instance_id,
                                                                                   matchup, status)
        self.seats, self.winner, self.reason, self.rewards, self.metrics = seats, winner, reason, rewards, metrics
        self.best_reward = max(rewards.values()) if rewards else None
        p = metrics.get("p_correct")
        self.judge_probability = float(p) if isinstance(p, (int, float)) and not isinstance(p, bool) else None
        self.error, self.started_at, self.duration_s, self.repeat, self.flip = (error, started_at, duration_s,
                                                                                repeat, flip)
        outcome_words = f"winner {winner}" if winner else ("no winner" if status == "complete" else "")
        self.search = " ".join((self.id, matchup, instance_id, *self.agents, outcome_words, str(reason or ""),
                                (error or "").split("\n")[0][:120])).lower()
        self.summarized = True

    def flag(self, problem: str) -> None:
        """Mark a line the reader would skip: it leaves the table, its warning is listed."""
        self.status, self.problem, self.summarized = "unreadable", problem, True

    @property
    def agents(self) -> list[str]:
        return sorted({s.get("agent", "") for s in self.seats.values()})

    @property
    def metrics(self) -> Mapping[str, Any]:
        """Scalar outcome metrics (+ judge probs); from a sidecar they stay JSON text until read
        (only the CSV export reads them all: a table needs `judge_probability` alone)."""
        if self.metrics_json is not None:
            self._metrics, self.metrics_json = _dict(_loads(self.metrics_json)), None
        return self._metrics

    @metrics.setter
    def metrics(self, value: Mapping[str, Any]) -> None:
        self._metrics, self.metrics_json = value, None

    @property
    def rewards(self) -> Mapping[str, float]:
        """Reward per player (lazily parsed like `metrics`)."""
        if self.rewards_json is not None:
            self._rewards, self.rewards_json = _rewards(_loads(self.rewards_json)), None
        return self._rewards

    @rewards.setter
    def rewards(self, value: Mapping[str, float]) -> None:
        self._rewards, self.rewards_json = value, None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _rewards(value: Any) -> dict[str, float]:
    return {str(k): float(v) for k, v in _dict(value).items() if isinstance(v, (int, float))}


def _summary_metrics(metrics: Any) -> dict[str, Any]:
    if not isinstance(metrics, dict):
        return {}
    out: dict[str, Any] = {k: v for k, v in metrics.items() if v is None or isinstance(v, (bool, int, float, str))}
    probs = metrics.get("probs")
    if isinstance(probs, dict) and len(probs) <= 8:
        out["probs"] = probs
    return out


def _loads(text: str) -> Any:
    """A sidecar's JSON text, or None when it does not parse (read as empty, never a crash)."""
    try:
        return json.loads(text)
    except ValueError:
        return None
