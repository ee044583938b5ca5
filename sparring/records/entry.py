"""One episode's row in the index: where its line is, and what a table shows of it (no transcript).

Kept apart from the scan (`index`) and the persistent summaries (`sidecar`), which both build it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

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
        self.game, self.experiment = str(obj.get("game", "")), str(obj.get("experiment", ""))
        self.instance_id, self.matchup = str(obj.get("instance_id", "")), str(obj.get("matchup", ""))
        self.status = str(obj.get("status", ""))
        self.seats = {str(p): {k: str(s.get(k, "")) for k in ("agent", "model", "role")}
                      for p, s in _dict(obj.get("seats")).items() if isinstance(s, dict)}
        self.winner, self.reason = outcome.get("winner"), outcome.get("reason")
        self.rewards = _rewards(outcome.get("rewards"))
        self.best_reward = max(self.rewards.values()) if self.rewards else None
        self.metrics = _summary_metrics(outcome.get("metrics"))
        p = self.metrics.get("p_correct")
        self.judge_probability = float(p) if isinstance(p, (int, float)) and not isinstance(p, bool) else None
        self.error = obj.get("error")
        self.started_at = float(obj.get("started_at") or 0.0)
        self.duration_s = float(obj.get("duration_s") or 0.0)
        self.repeat, self.flip = int(obj.get("repeat") or 0), bool(obj.get("flip", False))
        outcome_words = f"winner {self.winner}" if self.winner else ("no winner" if self.status == "complete" else "")
        self.search = " ".join((self.id, self.matchup, self.instance_id, *self.agents, outcome_words,
                                str(self.reason or ""), (self.error or "").split("\n")[0][:120])).lower()
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
            try:
                loaded = json.loads(self.metrics_json)
            except ValueError:
                loaded = None
            self._metrics, self.metrics_json = _dict(loaded), None
        return self._metrics

    @metrics.setter
    def metrics(self, value: Mapping[str, Any]) -> None:
        self._metrics, self.metrics_json = value, None

    @property
    def rewards(self) -> Mapping[str, float]:
        """Reward per player (lazily parsed like `metrics`)."""
        if self.rewards_json is not None:
            try:
                loaded = json.loads(self.rewards_json)
            except ValueError:
                loaded = None
            self._rewards, self.rewards_json = _rewards(loaded), None
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
