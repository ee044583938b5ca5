"""Metrics measured over records, as typed values with their intervals.

A metric (name, which direction is better, which interval) is defined once: a game's headline
metrics by the game (`Game.hooks.metrics`, see `sparring.gameapi.hooks.Metric`), the metrics
every game shares (win rate, rating) here. This module is the one place that turns a metric and
a set of values into a `MetricValue`; the report's stats.json and training loops both read these
objects (`sparring.analysis.results`), so a loop never scrapes strings from a report.
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
from sparring.stats.ratings import RatingTable
from sparring.stats.stats_tests import bootstrap_ci, wilson_interval

# The metrics every game shares, defined here as games define theirs.
WIN_RATE = Metric("win_rate", "higher", "wilson", "share of games won against the other agent; a tie counts half")
RATING = Metric("rating", "higher", "bootstrap", "Bradley–Terry rating on the Elo scale (anchor 1000)")
# A game whose verdicts can be right or wrong declares a headline metric of this name (debate);
# training loops report it, over all of an evaluation run's episodes, as the judge accuracy.
JUDGE_ACCURACY = "judge_accuracy"


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
    return measure_values(metric, [v for v in (metric.of(m) for m in episodes) if v is not None],
                          seed=seed, n_boot=n_boot)


def measure_values(metric: Metric, values: Sequence[float], *, seed: int = 0, n_boot: int = 1000) -> MetricValue:
    """`metric` over per-episode `values` (a share: 0/1, a tie 0.5), with its interval (95%)."""
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


def rating_values(table: RatingTable) -> dict[str, MetricValue]:
    """Each player's rating (None without games) with its bootstrap interval, best first."""
    out = {}
    for p in table.ordered():
        r, ci = table.ratings[p], table.ci.get(p)
        known = ci is not None and not any(math.isnan(x) for x in ci)
        out[p] = MetricValue(RATING, None if math.isnan(r) else r, ci if known else None, table.games.get(p, 0))
    return out


@dataclass(frozen=True)
class MatchupResult:
    """Two agents that met (self-play pairs too): agent_a's win rate (a tie counts half; n = the
    games), the wins, ties and mean rewards. `to_dict` is the row of stats.json's `matchups`."""

    agent_a: str
    agent_b: str
    win_rate: MetricValue
    a_wins: int
    b_wins: int
    ties: int
    a_mean_reward: float
    b_mean_reward: float

    @property
    def games(self) -> int:
        return self.win_rate.n

    def win_rate_of(self, agent: str) -> MetricValue:
        """The win rate from `agent`'s side (agent_b's is 1 − agent_a's, its interval mirrored)."""
        if agent == self.agent_a:
            return self.win_rate
        if agent != self.agent_b:
            raise KeyError(f"{agent!r} did not play in {self.agent_a} vs {self.agent_b}")
        v, ci = self.win_rate.value, self.win_rate.ci
        return MetricValue(WIN_RATE, None if v is None else 1 - v, None if ci is None else (1 - ci[1], 1 - ci[0]),
                           self.win_rate.n)

    def to_dict(self) -> dict[str, Any]:
        ci = list(self.win_rate.ci) if self.win_rate.ci else [math.nan, math.nan]
        return {"agent_a": self.agent_a, "agent_b": self.agent_b, "games": self.games,
                "self_play": self.agent_a == self.agent_b, "a_wins": self.a_wins, "b_wins": self.b_wins,
                "ties": self.ties, "a_win_rate": self.win_rate.value, "a_win_rate_ci": ci,
                "a_mean_reward": self.a_mean_reward, "b_mean_reward": self.b_mean_reward}


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


def group_metrics(records: Sequence[EpisodeRecord], metrics: Sequence[Metric]) -> GroupMetrics:
    """`metrics` over one group of episodes (those with an outcome), and mean reward by agent."""
    ms = [r.outcome.metrics for r in records if r.outcome is not None]
    rewards: dict[str, list[float]] = defaultdict(list)
    for r in records:
        for player, reward in (r.outcome.rewards if r.outcome else {}).items():
            if player in r.seats:
                rewards[r.seats[player].agent].append(float(reward))
    return GroupMetrics(episodes=len(records), values={m.name: measure(m, ms) for m in metrics},
                        reward_by_agent={a: sum(v) / len(v) for a, v in sorted(rewards.items())})


def game_metrics(game: str) -> tuple[Metric, ...]:
    """The headline metrics `game` declares (none for a game not installed here)."""
    from sparring.gameapi import GAMES

    return GAMES.get(game).hooks.metrics if game in GAMES else ()


def run_metrics(records: Iterable[EpisodeRecord], game: str) -> GroupMetrics:
    """`game`'s headline metrics over every counted episode of `records` (game aborts count,
    engine failures not)."""
    return group_metrics(rated_records(list(records), aborted=True), game_metrics(game))


def matchup_metrics(records: Iterable[EpisodeRecord], game: str) -> dict[str, GroupMetrics]:
    """Per matchup ("a vs b", agents sorted) of `records`: `game`'s headline metrics."""
    from sparring.gameapi import GAMES

    metrics = GAMES.get(game).hooks.metrics
    groups: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for r in rated_records(list(records), aborted=True):  # game aborts count, engine failures not
        groups[" vs ".join(sorted(s.agent for s in r.seats.values()))].append(r)
    return {name: group_metrics(rs, metrics) for name, rs in sorted(groups.items())}
