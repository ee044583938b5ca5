"""A run's results as typed objects: who met whom (win rates with their Wilson intervals), the
Bradley–Terry ratings with their bootstrap intervals, and each game's headline metrics.

The report writes stats.json from these objects (`report.build_stats`), and training loops read
them straight from a run's records (`run_results`), so a loop needs no report and never parses
one: the two cannot disagree.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sparring.analysis import metrics as M
from sparring.analysis.measures import (
    JUDGE_ACCURACY,
    GroupMetrics,
    MatchupResult,
    MetricValue,
    rating_values,
    run_metrics,
)
from sparring.analysis.report_sections import ReportContext, ReportSection, section_for
from sparring.records.reader import RunData
from sparring.records.record import EpisodeRecord
from sparring.stats.ratings import Comparison, RatingTable

Sections = dict[str, tuple[ReportSection | None, list[EpisodeRecord]]]


def abandoned(rec: EpisodeRecord) -> bool:
    """An episode a player left before the end (stored aborted, `metrics["abandoned"]`)."""
    return rec.outcome is not None and bool(rec.outcome.metrics.get("abandoned"))


def game_sections(run: RunData) -> Sections:
    """Per game of the run: its report section (None if it registers none) and its episodes
    (those a player left are listed with no episodes: counted, never rated or measured)."""
    by_game: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for rec in run.episodes:
        if abandoned(rec):
            by_game.setdefault(rec.game, [])
        else:
            by_game[rec.game].append(rec)
    for rec in run.failures:
        by_game.setdefault(rec.game, [])
    return {g: (section_for(g), recs) for g, recs in sorted(by_game.items())}


@dataclass
class RunResults:
    """What a run shows: the competing `agents`, the episodes that count (`rated`), their pairwise
    `comparisons`, the `matchups` and the `ratings`; `sections` says which section counted which
    episodes of each game."""

    agents: list[str]
    rated: list[EpisodeRecord]
    comparisons: list[Comparison]
    matchups: list[MatchupResult]
    ratings: RatingTable
    sections: Sections

    def vs(self, agent: str) -> dict[str, MetricValue]:
        """`agent`'s win rate against each agent it met (itself too, after self-play: the first
        seat's share then, which shows a seat advantage)."""
        return {(m.agent_b if m.agent_a == agent else m.agent_a): m.win_rate_of(agent)
                for m in self.matchups if agent in (m.agent_a, m.agent_b)}

    def rating_values(self) -> dict[str, MetricValue]:
        """Each agent's rating with its interval (None for an agent without games)."""
        return rating_values(self.ratings)

    def game_metrics(self, game: str) -> GroupMetrics:
        """`game`'s headline metrics over all of its episodes in the run."""
        return run_metrics(self.sections.get(game, (None, []))[1], game)

    def judge_accuracy(self, game: str) -> MetricValue | None:
        """The judges' accuracy over the run, for a game that declares one (None otherwise or
        without a verdict)."""
        value = self.game_metrics(game).values.get(JUDGE_ACCURACY)
        return value if value is not None and value.n else None


def run_results(run: RunData, ctx: ReportContext | None = None) -> RunResults:
    """The typed results of `run` (deterministic per `ctx.seed`)."""
    ctx = ctx or ReportContext()
    sections = game_sections(run)
    rated: list[EpisodeRecord] = []
    comps: list[Comparison] = []
    for sec, recs in sections.values():
        mine = sec.rated(recs) if sec else [r for r in recs if r.status == "complete" and r.outcome]
        rated.extend(mine)
        custom = sec.comparisons(mine) if sec else None
        comps.extend(custom if custom is not None else M.comparisons(mine))
    agents = sorted({s.agent for r in run.episodes + run.failures for p, s in r.seats.items()
                     if s.role not in M.game_rules(r.game)[0]})
    return RunResults(agents=agents, rated=rated, comparisons=comps,
                      matchups=M.matchup_results(rated, ctx.seed),
                      ratings=M.rating_table(comps, agents, ctx.n_bootstrap, ctx.seed), sections=sections)
