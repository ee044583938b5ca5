"""The Wordle section of the report (both `wordle` and `wordle_withcritic`), in clembench's terms:
% played (not aborted), mean quality score (100/n for a win at guess n), success rate with a
95% Wilson interval, mean guesses of won games and the information each feedback gave.
Aborted games count with quality 0, as in clembench's overall score."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from sparring.analysis import plots as P
from sparring.analysis.report_sections import ReportContext, ReportSection, register_report_section
from sparring.records.reader import RunData
from sparring.records.record import EpisodeRecord
from sparring.stats.stats_tests import bootstrap_ci, wilson_interval


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def summarize(metrics: list[dict[str, Any]], seed: int = 0, n_boot: int = 1000) -> dict[str, Any]:
    """clembench-style numbers over outcome metrics of Wordle (or Taboo) episodes."""
    n = len(metrics)
    played = [m for m in metrics if not m.get("aborted")]
    wins = [m for m in metrics if m.get("success")]
    quality = [float(m.get("quality_score") or 0.0) for m in metrics]
    gains = [g for m in played for g in (m.get("info_gain") or [])]
    first = [m["info_gain"][0] for m in played if m.get("info_gain")]
    out: dict[str, Any] = {
        "episodes": n, "played": len(played), "played_rate": len(played) / n if n else None,
        "played_ci": list(wilson_interval(len(played), n)),
        "success_rate": len(wins) / n if n else None, "success_ci": list(wilson_interval(len(wins), n)),
        "success_rate_played": len(wins) / len(played) if played else None,
        "quality": _mean(quality), "quality_ci": list(bootstrap_ci(quality, n_boot=n_boot, seed=seed)) if quality else None,
        "quality_played": _mean([float(m.get("quality_score") or 0.0) for m in played]),
        "mean_guesses_won": _mean([float(m.get("n_guesses") or 0) for m in wins]),
        "mean_guesses_played": _mean([float(m.get("n_guesses") or 0) for m in played]),
        "mean_info_gain": _mean(gains), "mean_first_gain": _mean(first),
        "invalid_per_episode": _mean([float(m.get("n_invalid_total") or 0) for m in metrics]),
    }
    if any("critic_keep" in m for m in metrics):
        keep = sum(int(m.get("critic_keep") or 0) for m in metrics)
        change = sum(int(m.get("critic_change") or 0) for m in metrics)
        out["critic_change_rate"] = change / (keep + change) if keep + change else None
        out["guesser_changed"] = sum(int(m.get("guesser_changed") or 0) for m in metrics)
        out["followed_critic_rate"] = (sum(int(m.get("followed_critic") or 0) for m in metrics) / (keep + change)
                                       if keep + change else None)
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in out.items()}


def gain_by_turn(metrics: list[dict[str, Any]], max_turns: int = 6) -> list[float | None]:
    by: dict[int, list[float]] = defaultdict(list)
    for m in metrics:
        for i, g in enumerate(m.get("info_gain") or []):
            by[i].append(g)
    return [_mean(by[i]) for i in range(max_turns)]


@register_report_section("wordle", "wordle_withcritic")
class WordleSection(ReportSection):
    name = "wordle"
    title = "Wordle: played, quality score, guesses, information gain"
    template = "report_section.html.jinja"

    counts_aborted = True

    def compute(self, records: list[EpisodeRecord], run: RunData, ctx: ReportContext) -> dict[str, Any]:
        recs = self.rated(records)
        by_agent: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in recs:
            by_agent[" + ".join(f"{s.agent} ({p.lower()})" for p, s in sorted(r.seats.items()))].append(
                r.outcome.metrics)  # type: ignore[union-attr]
        ms = [r.outcome.metrics for r in recs]  # type: ignore[union-attr]
        return {"episodes": len(recs), "games": sorted({r.game for r in recs}),
                "overall": summarize(ms, ctx.seed, ctx.n_bootstrap),
                "by_agent": {k: summarize(v, ctx.seed, ctx.n_bootstrap) for k, v in sorted(by_agent.items())},
                "gain_by_turn": gain_by_turn(ms)}

    def plots(self, s: dict[str, Any]) -> dict[str, bytes]:
        figs: dict[str, bytes | None] = {}
        names = list(s.get("by_agent", {}))
        if names:
            rows = s["by_agent"]
            figs["quality"] = P.bar_ci(names, [rows[n]["quality"] for n in names], [rows[n]["quality_ci"] or (None, None)
                                       for n in names], title="Mean quality score (95% bootstrap)",
                                       ylabel="quality (0-100)", ylim=(0, 100))
        gains = s.get("gain_by_turn") or []
        if any(g is not None for g in gains):
            figs["gain"] = P.bar_ci([f"guess {i + 1}" for i in range(len(gains))], gains, title="Mean information gain per guess",
                                    ylabel="bits")
        return {k: v for k, v in figs.items() if v}

    def csv_columns(self, rec: EpisodeRecord) -> dict[str, Any]:
        m = rec.outcome.metrics if rec.outcome else {}
        return {k: m.get(k) for k in ("target", "success", "aborted", "quality_score", "n_guesses", "mean_info_gain",
                                      "critic_keep", "critic_change", "guesser_changed")}
