"""A game's headline metrics measured over records, as typed values with their intervals.

The metric itself (name, which direction is better, which interval) is defined once, by the game
(`Game.hooks.metrics`, see `sparring.gameapi.hooks.Metric`); this module is the one place that
turns a metric and a set of episodes into a `MetricValue`. Training loops read these objects,
not strings scraped from a report's stats.json.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparring.analysis.report_sections import rated_records
from sparring.gameapi.hooks import Metric, Metrics
from sparring.records.record import EpisodeRecord
from sparring.stats.stats_tests import bootstrap_ci, wilson_interval


@dataclass(frozen=True)
class MetricValue:
    """One metric over a group of episodes: its value, interval (None when the metric has none
    or there is no data) and the number of episodes it counts."""

    metric: Metric
    value: float | None
    ci: tuple[float, float] | None
    n: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-able, for a loop's state file (the definition travels by name and direction)."""
        return {"value": self.value, "ci": list(self.ci) if self.ci else None, "n": self.n,
                "direction": self.metric.direction, "interval": self.metric.interval}


def measure(metric: Metric, episodes: Sequence[Metrics], *, seed: int = 0, n_boot: int = 1000) -> MetricValue:
    """`metric` over the outcome metrics of `episodes`, with its interval (95%)."""
    if metric.aggregate is not None:
        value = metric.aggregate(list(episodes)) if episodes else None
        return MetricValue(metric, None if value is None else float(value), None, len(episodes))
    values = [v for v in (metric.of(m) for m in episodes) if v is not None]
    if not values:
        return MetricValue(metric, None, None, 0)
    mean = sum(values) / len(values)
    ci: tuple[float, float] | None = None
    if metric.interval == "wilson":
        ci = wilson_interval(sum(values), len(values))
    elif metric.interval == "bootstrap":
        lo, hi = bootstrap_ci(values, n_boot=n_boot, seed=seed)
        ci = None if math.isnan(lo) else (lo, hi)
    return MetricValue(metric, mean, ci, len(values))


@dataclass
class GroupMetrics:
    """A group of episodes (one matchup): every headline metric of its game, and mean reward by
    agent."""

    episodes: int
    values: dict[str, MetricValue] = field(default_factory=dict)
    reward_by_agent: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"episodes": self.episodes, "metrics": {k: v.to_dict() for k, v in self.values.items()},
                "reward_by_agent": dict(self.reward_by_agent)}


def matchup_metrics(records: Iterable[EpisodeRecord], game: str) -> dict[str, GroupMetrics]:
    """Per matchup ("a vs b", agents sorted) of `records`: `game`'s headline metrics."""
    from sparring.gameapi import GAMES

    metrics = GAMES.get(game).hooks.metrics
    groups: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for r in rated_records(list(records), aborted=True):  # game aborts count, engine failures not
        groups[" vs ".join(sorted(s.agent for s in r.seats.values()))].append(r)
    out = {}
    for name, rs in sorted(groups.items()):
        ms = [r.outcome.metrics for r in rs if r.outcome is not None]
        rewards: dict[str, list[float]] = defaultdict(list)
        for r in rs:
            for player, reward in (r.outcome.rewards if r.outcome else {}).items():
                if player in r.seats:
                    rewards[r.seats[player].agent].append(float(reward))
        out[name] = GroupMetrics(episodes=len(rs), values={m.name: measure(m, ms) for m in metrics},
                                 reward_by_agent={a: sum(v) / len(v) for a, v in sorted(rewards.items())})
    return out
