"""The TextWorld cooking section of the report: success, score, steps and invalid commands per
agent (and per fold), with Wilson intervals on the success rate.

Every finished episode counts, unfinished ones (out of steps) included: leaving them out would
flatter agents that wander.
"""

from __future__ import annotations

from collections import defaultdict
from statistics import fmean
from typing import Any

from sparring.analysis import plots as P
from sparring.analysis.report_sections import ReportContext, ReportSection, register_report_section
from sparring.records.reader import RunData
from sparring.records.record import EpisodeRecord
from sparring.stats.stats_tests import wilson_interval

PLAYER = "player"


def summarize(metrics: list[dict[str, Any]]) -> dict[str, Any]:
    """Means over episodes' outcome metrics (pure: tests and other tools call it directly)."""
    n = len(metrics)
    if not n:
        return {"episodes": 0}
    wins = sum(bool(m.get("success")) for m in metrics)
    steps = sum(int(m.get("steps") or 0) for m in metrics)
    solved = [m for m in metrics if m.get("success")]
    return {
        "episodes": n,
        "success_rate": wins / n,
        "success_ci": list(wilson_interval(wins, n)),
        "failure_rate": sum(bool(m.get("failure")) for m in metrics) / n,
        "mean_score": fmean(float(m.get("score") or 0.0) for m in metrics),
        "mean_steps": steps / n,
        "mean_steps_solved": fmean(int(m.get("steps") or 0) for m in solved) if solved else None,
        "mean_gold_steps": fmean(int(m.get("gold_steps") or 0) for m in metrics),
        # over all commands, so long episodes weigh more (a rate of commands, not of episodes)
        "invalid_rate": sum(int(m.get("n_invalid") or 0) for m in metrics) / steps if steps else 0.0,
        "followed_gold_rate": sum(bool(m.get("followed_gold")) for m in metrics) / n,
    }


@register_report_section("textworld_cooking")
class CookingSection(ReportSection):
    name = "textworld_cooking"
    title = "TextWorld cooking: success, score, steps"
    template = "report_section.html.jinja"

    counts_aborted = True

    def compute(self, records: list[EpisodeRecord], run: RunData, ctx: ReportContext) -> dict[str, Any]:
        recs = self.rated(records)
        by_agent: dict[str, list[dict[str, Any]]] = defaultdict(list)
        by_fold: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in recs:
            m = r.outcome.metrics  # type: ignore[union-attr]
            seat = r.seats.get(PLAYER)
            by_agent[seat.agent if seat else "?"].append(m)
            by_fold[str(m.get("fold") or "?")].append(m)
        return {"episodes": len(recs), "overall": summarize([r.outcome.metrics for r in recs]),  # type: ignore[union-attr]
                "agents": {a: summarize(ms) for a, ms in sorted(by_agent.items())},
                "folds": {f: summarize(ms) for f, ms in sorted(by_fold.items())}}

    def plots(self, s: dict[str, Any]) -> dict[str, bytes]:
        agents = s.get("agents") or {}
        if not agents:
            return {}
        names = list(agents)
        figs = {
            "success": P.bar_ci(names, [agents[a].get("success_rate") for a in names],
                                [agents[a].get("success_ci") for a in names],
                                title="Meals cooked (95% Wilson)", ylabel="success rate", ylim=(0, 1)),
            "quality": P.grouped_bars(names, {"mean score": [agents[a].get("mean_score") for a in names],
                                              "invalid commands": [agents[a].get("invalid_rate") for a in names]},
                                      title="Score and invalid commands per agent", ylabel="rate", ylim=(0, 1)),
        }
        return {k: v for k, v in figs.items() if v}

    def csv_columns(self, rec: EpisodeRecord) -> dict[str, Any]:
        m = rec.outcome.metrics if rec.outcome else {}
        return {k: m.get(k) for k in ("fold", "score", "raw_score", "success", "failure", "steps", "n_invalid",
                                      "invalid_rate", "gold_steps", "followed_gold", "end")}
