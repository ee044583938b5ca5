"""The negotiation (Deal or No Deal) section of the report.

The numbers come from `sparring.games.negotiation.analysis` (pure functions over outcome
metrics); this module only groups episodes (overall, per matchup, per agent and seat) and draws
them. Aborted games count: both players get 0 under every objective, so leaving them out would
flatter agents that break the protocol.
"""

from __future__ import annotations

import importlib
from collections import defaultdict
from typing import Any

from sparring.analysis import plots as P
from sparring.analysis.report_sections import ReportContext, ReportSection, register_report_section
from sparring.records.reader import RunData
from sparring.records.record import EpisodeRecord
from sparring.stats.stats_tests import wilson_interval

_RATES = ("agreement_rate", "mutual_deal_rate", "pareto_rate", "welfare_optimal_rate", "nash_ratio", "abort_rate")
_PROPORTIONS = ("agreement_rate", "mutual_deal_rate", "pareto_rate", "welfare_optimal_rate", "abort_rate")  # Wilson


def _analysis() -> Any | None:
    try:
        return importlib.import_module("sparring.games.negotiation.analysis")
    except ImportError:
        return None


def _seat_of(rec: EpisodeRecord, player: str) -> str:
    first = (rec.outcome.metrics if rec.outcome else {}).get("first_mover")
    if first is None:
        return "unknown"
    return "first_mover" if player == first else "second_mover"


@register_report_section("dond")
class NegotiationSection(ReportSection):
    name = "negotiation"
    title = "Negotiation: agreement, optimality, dialogue"
    template = "report_section.html.jinja"

    counts_aborted = True

    def compute(self, records: list[EpisodeRecord], run: RunData, ctx: ReportContext) -> dict[str, Any]:
        A = _analysis()
        recs = self.rated(records)
        if A is None:
            return {"available": False, "episodes": len(recs),
                    "note": "sparring.games.negotiation.analysis is not installed; negotiation metrics skipped"}
        ms = [r.outcome.metrics for r in recs]  # type: ignore[union-attr]
        objectives = sorted({str(m.get("objective")) for m in ms if m.get("objective") is not None})
        by_matchup: dict[str, list[EpisodeRecord]] = defaultdict(list)
        for r in recs:
            agents = sorted(s.agent for s in r.seats.values())
            by_matchup[" vs ".join(agents)].append(r)
        matchups = {}
        for name, rs in sorted(by_matchup.items()):
            row = A.summarize([r.outcome.metrics for r in rs])  # type: ignore[union-attr]
            row["reward_by_agent"] = self._by_agent(A, rs, lambda r, p: r.seats[p].agent)
            matchups[name] = row
        overall = A.summarize(ms)
        n = overall.get("episodes") or 0
        return {
            "available": True, "episodes": len(recs), "objectives": objectives,
            "overall": overall,
            "overall_ci": {k: list(wilson_interval(overall[k] * n, n)) for k in _PROPORTIONS
                           if overall.get(k) is not None},
            "matchups": matchups,
            "reward_by_agent_seat": self._by_agent(A, recs, lambda r, p: f"{r.seats[p].agent} · {_seat_of(r, p)}"),
            "points_by_agent": self._by_agent(A, recs, lambda r, p: r.seats[p].agent, field="points"),
        }

    @staticmethod
    def _by_agent(A: Any, recs: list[EpisodeRecord], label, field: str = "rewards") -> dict[str, float]:
        """analysis.mean_reward_by with groups named after the seated agents (metrics carry only
        player ids, so the key function looks the record up)."""
        owner = {id(r.outcome.metrics): r for r in recs}  # type: ignore[union-attr]
        return A.mean_reward_by([r.outcome.metrics for r in recs],  # type: ignore[union-attr]
                                lambda m, p: label(owner[id(m)], p), field)

    def plots(self, s: dict[str, Any]) -> dict[str, bytes]:
        if not s.get("available"):
            return {}
        figs: dict[str, bytes | None] = {}
        overall = s["overall"]
        cis = s.get("overall_ci", {})
        figs["rates"] = P.bar_ci([k.replace("_", " ") for k in _RATES], [overall.get(k) for k in _RATES],
                                 [cis.get(k) for k in _RATES], title="Negotiation outcomes (all games, 95% Wilson)",
                                 ylabel="rate", ylim=(0, 1))
        if len(s["matchups"]) > 1:
            names = list(s["matchups"])
            figs["matchups"] = P.grouped_bars(
                names, {k.replace("_", " "): [s["matchups"][n].get(k) for n in names] for k in _RATES[:4]},
                title="Outcomes per matchup", ylabel="rate", ylim=(0, 1))
        splits = overall.get("split_histogram") or {}
        if splits:
            shown = dict(list(splits.items())[:12])
            figs["splits"] = P.bar_ci([f"({k.replace('-', ', ')})" for k in shown], list(shown.values()),
                                      title="Deals by split of the points (lower side, higher side)",
                                      ylabel="deals")
        seat = s["reward_by_agent_seat"]
        agents = sorted({k.split(" · ")[0] for k in seat})
        figs["reward_by_seat"] = P.grouped_bars(
            agents, {lab: [seat.get(f"{a} · {key}") for a in agents]
                     for lab, key in (("first mover", "first_mover"), ("second mover", "second_mover"))},
            title="Mean reward by agent and seat", ylabel="mean reward")
        return {k: v for k, v in figs.items() if v}

    def csv_columns(self, rec: EpisodeRecord) -> dict[str, Any]:
        mm = rec.outcome.metrics if rec.outcome else {}
        row: dict[str, Any] = {k: mm.get(k) for k in ("objective", "deal", "end", "first_mover", "turns",
                                                        "n_messages", "n_invalid_total", "scored_both", "pareto_optimal",
                                                        "welfare_optimal", "nash_ratio")}
        for p, v in sorted((mm.get("points") or {}).items()):
            row[f"points_{p}"] = v
        ceil = mm.get("ceilings") or {}
        row["max_welfare"] = ceil.get("max_welfare")
        return row
