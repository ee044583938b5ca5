"""Game-agnostic metrics over a run directory: loading, win rates, matchups, ratings, failures.

Everything here reads only the episode record (seats, rewards, winner, status, errors), so every
game family gets the same tables; game-specific metrics live in report sections
(`metrics_debate`, `report_negotiation`). Binary results come from comparing rewards between the
competing (non-judge) players: the higher reward wins, equal rewards tie (half a win each).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from sparring.analysis.measures import WIN_RATE, MatchupResult, measure_values
from sparring.records.reader import RunData
from sparring.records.record import EpisodeRecord
from sparring.stats.ratings import Comparison, RatingTable, bradley_terry, mean_reward_comparisons
from sparring.stats.stats_tests import bootstrap_ci, mean_or_nan, wilson_interval


# -- per-episode views --------------------------------------------------------------------------
def game_rules(game: str) -> tuple[frozenset[str], str]:
    """(evaluator roles, ranking) of a game by its registered name — what the game declares;
    records of a game that is not installed here are read as having no evaluators, ranked by reward."""
    from sparring.gameapi.game import GAMES

    if game in GAMES:
        cls = GAMES.get(game)
        return cls.evaluator_roles, cls.ranking
    return frozenset(), "reward"


def competitors(rec: EpisodeRecord) -> list[str]:
    """Players who compete for reward (every seat whose role is not an evaluator role of the
    game, e.g. a debate's judge), sorted."""
    rewards = rec.outcome.rewards if rec.outcome else {}
    evaluators, _ = game_rules(rec.game)
    return sorted(p for p, s in rec.seats.items() if s.role not in evaluators and p in rewards)


def player_scores(rec: EpisodeRecord) -> dict[str, float]:
    """Binary result per competing player: 1 win, 0.5 tie, 0 loss.

    With several competitors it is the mean result of pairwise reward comparisons; a lone
    competitor (a consultant) wins iff it is the declared winner, and without a winner it ties
    only if the game says so (`metrics["tie"]`, or no such key), else it lost."""
    players = competitors(rec)
    if not players or rec.outcome is None:
        return {}
    r = rec.outcome.rewards
    if len(players) == 1:
        p = players[0]
        win = rec.outcome.winner
        if win is None:
            return {p: 0.5 if rec.outcome.metrics.get("tie", True) else 0.0}
        return {p: 1.0 if win == p else 0.0}
    out = {}
    for p in players:
        res = [1.0 if r[p] > r[q] else 0.0 if r[p] < r[q] else 0.5 for q in players if q != p]
        out[p] = sum(res) / len(res)
    return out


def comparisons(records: Iterable[EpisodeRecord]) -> list[Comparison]:
    """Pairwise comparisons between different agents, one bootstrap group per episode."""
    out: list[Comparison] = []
    for rec in records:
        if rec.outcome is None or game_rules(rec.game)[1] == "none":  # cooperative: nobody wins
            continue
        players = competitors(rec)
        seat_agents = {p: rec.seats[p].agent for p in players}
        out.extend(c for c in mean_reward_comparisons({p: rec.outcome.rewards[p] for p in players},
                                                      seat_agents, rec.id) if c.a != c.b)
    return out


def _rate(scores: list[float], rewards: list[float], seed: int) -> dict[str, Any]:
    n = len(scores)
    wins = sum(1 for s in scores if s == 1.0)
    losses = sum(1 for s in scores if s == 0.0)
    k = sum(scores)
    lo, hi = wilson_interval(k, n)
    rlo, rhi = bootstrap_ci(rewards, seed=seed)
    return {"games": n, "wins": wins, "losses": losses, "ties": n - wins - losses,
            "win_rate": k / n if n else math.nan, "win_rate_ci": [lo, hi],
            "mean_reward": mean_or_nan(rewards), "mean_reward_ci": [rlo, rhi]}


def agent_summary(records: list[EpisodeRecord], seed: int = 0) -> dict[str, dict[str, Any]]:
    """Per agent over all its competing seats: games, W/L/T, win rate (Wilson CI), mean reward."""
    scores: dict[str, list[float]] = defaultdict(list)
    rewards: dict[str, list[float]] = defaultdict(list)
    for rec in records:
        for p, s in player_scores(rec).items():
            agent = rec.seats[p].agent
            scores[agent].append(s)
            rewards[agent].append(float(rec.outcome.rewards[p]))  # type: ignore[union-attr]
    return {a: _rate(scores[a], rewards[a], seed) for a in sorted(scores)}


def seat_summary(records: list[EpisodeRecord], seed: int = 0) -> dict[str, dict[str, Any]]:
    """Per player slot (Debater_A, Debater_B, ...): reveals seat/position effects."""
    scores: dict[str, list[float]] = defaultdict(list)
    rewards: dict[str, list[float]] = defaultdict(list)
    for rec in records:
        for p, s in player_scores(rec).items():
            scores[p].append(s)
            rewards[p].append(float(rec.outcome.rewards[p]))  # type: ignore[union-attr]
    return {p: _rate(scores[p], rewards[p], seed) for p in sorted(scores)}


def matchup_results(records: list[EpisodeRecord], seed: int = 0) -> list[MatchupResult]:
    """One result per unordered pair of agents that met (self-play pairs included)."""
    acc: dict[tuple[str, str], dict[str, list[float]]] = {}
    for rec in records:
        if game_rules(rec.game)[1] == "none":  # cooperative or single-player: no head-to-head
            continue
        sc = player_scores(rec)
        players = sorted(sc)
        if len(players) < 2:
            continue
        for i, p in enumerate(players):
            for q in players[i + 1:]:
                a, b = rec.seats[p].agent, rec.seats[q].agent
                if (b, a) < (a, b):
                    a, b, p, q = b, a, q, p
                row = acc.setdefault((a, b), {"score": [], "ra": [], "rb": []})
                rp, rq = rec.outcome.rewards[p], rec.outcome.rewards[q]  # type: ignore[union-attr]
                row["score"].append(1.0 if rp > rq else 0.0 if rp < rq else 0.5)
                row["ra"].append(float(rp))
                row["rb"].append(float(rq))
    return [MatchupResult(agent_a=a, agent_b=b, win_rate=measure_values(WIN_RATE, row["score"], seed=seed),
                          a_wins=sum(1 for s in row["score"] if s == 1.0),
                          b_wins=sum(1 for s in row["score"] if s == 0.0),
                          ties=sum(1 for s in row["score"] if s == 0.5),
                          a_mean_reward=mean_or_nan(row["ra"]), b_mean_reward=mean_or_nan(row["rb"]))
            for (a, b), row in sorted(acc.items())]


def matchups(records: list[EpisodeRecord], seed: int = 0) -> list[dict[str, Any]]:
    """`matchup_results` as the rows of stats.json."""
    return [m.to_dict() for m in matchup_results(records, seed)]


def win_matrix(rows: list[dict[str, Any]], agents: list[str]) -> dict[str, Any]:
    """Row agent's win rate against column agent (None where they never met or on self-play)."""
    idx = {a: i for i, a in enumerate(agents)}
    rate: list[list[float | None]] = [[None] * len(agents) for _ in agents]
    games = [[0] * len(agents) for _ in agents]
    for r in rows:
        i, j = idx.get(r["agent_a"]), idx.get(r["agent_b"])
        if i is None or j is None:
            continue
        games[i][j] = games[j][i] = r["games"]
        if i != j:
            rate[i][j] = r["a_win_rate"]
            rate[j][i] = 1.0 - r["a_win_rate"]
    return {"agents": agents, "win_rate": rate, "games": games}


def rating_table(comps: list[Comparison], agents: list[str], n_bootstrap: int, seed: int) -> RatingTable:
    """Bradley–Terry ratings of `agents` (those without games listed, unrated)."""
    return bradley_terry(comps, players=agents, n_bootstrap=n_bootstrap, seed=seed)


def ratings_dict(table: RatingTable, n_comparisons: int) -> dict[str, Any]:
    """A rating table as stats.json's `ratings`, with a note when ratings cannot say much."""
    out = table.to_dict()
    rated = [a for a, v in out["players"].items() if v["games"] > 0]
    out["n_comparisons"] = n_comparisons
    if len(rated) < 2:
        out["note"] = "ratings need games between at least two different agents"
    elif not out["connected"]:
        out["note"] = "agents form disconnected groups; ratings are comparable only within a group"
    return out


# -- failures -----------------------------------------------------------------------------------
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_NUM = re.compile(r"\d+(\.\d+)?")


def failure_reason(error: str | None) -> str:
    """A stable grouping key for an error message: quoted values and numbers masked."""
    if not error:
        return "unknown"
    text = _NUM.sub("N", _QUOTED.sub("'…'", error.strip().splitlines()[0]))
    return text if len(text) <= 120 else text[:119] + "…"


def failure_summary(run: RunData) -> dict[str, Any]:
    """Counts of failed episodes (by exception type and masked reason) and of game aborts."""
    by_type: Counter[str] = Counter()
    by_reason: Counter[str] = Counter()
    for rec in run.failures:
        err = rec.error or "unknown"
        by_type[err.split(":", 1)[0].strip() if ":" in err else "unknown"] += 1
        by_reason[failure_reason(err)] += 1
    aborted: Counter[str] = Counter()
    for rec in run.episodes:
        if rec.status == "aborted":
            aborted[failure_reason(rec.outcome.reason if rec.outcome else rec.error)] += 1
    return {"failed": len(run.failures), "failed_by_type": dict(by_type.most_common()),
            "failed_by_reason": dict(by_reason.most_common()),
            "aborted": sum(aborted.values()), "aborted_by_reason": dict(aborted.most_common()),
            "examples": [{"id": r.id, "matchup": r.matchup, "error": (r.error or "")[:500]}
                         for r in run.failures[:10]]}


def usage_summary(records: Iterable[EpisodeRecord]) -> dict[str, Any]:
    """Tokens per model alias and episode durations (what a run cost)."""
    per_model: dict[str, dict[str, int]] = defaultdict(lambda: {"prompt_tokens": 0, "completion_tokens": 0})
    durations = []
    for rec in records:
        for model, u in rec.usage.items():
            per_model[model]["prompt_tokens"] += u.prompt_tokens
            per_model[model]["completion_tokens"] += u.completion_tokens
        if rec.duration_s:
            durations.append(rec.duration_s)
    return {"tokens": dict(sorted(per_model.items())), "mean_duration_s": mean_or_nan(durations),
            "total_duration_s": sum(durations)}
