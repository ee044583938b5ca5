"""The Taboo section of the report, in clembench's terms: % played (not aborted), mean quality
score (100/n for success in round n), success rate with a 95% Wilson interval, mean guesses,
and why games were aborted (taboo word used, malformed clue or guess) — per band and per pair."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any

from sparring.analysis import plots as P
from sparring.analysis.report_sections import ReportContext, ReportSection, register_report_section
from sparring.records.reader import RunData
from sparring.records.record import EpisodeRecord
from sparring.stats.stats_tests import bootstrap_ci, wilson_interval


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def summarize(metrics: list[dict[str, Any]], seed: int = 0, n_boot: int = 1000) -> dict[str, Any]:
    n = len(metrics)
    played = [m for m in metrics if not m.get("aborted")]
    wins = [m for m in metrics if m.get("success")]
    quality = [float(m.get("quality_score") or 0.0) for m in metrics]
    out: dict[str, Any] = {
        "episodes": n, "played": len(played), "played_rate": len(played) / n if n else None,
        "played_ci": list(wilson_interval(len(played), n)),
        "success_rate": len(wins) / n if n else None, "success_ci": list(wilson_interval(len(wins), n)),
        "quality": _mean(quality), "quality_ci": list(bootstrap_ci(quality, n_boot=n_boot, seed=seed)) if quality else None,
        "mean_guesses": _mean([float(m.get("n_guesses") or 0) for m in played]),
        "mean_guesses_won": _mean([float(m.get("n_guesses") or 0) for m in wins]),
        "aborts": dict(Counter(str(m.get("abort_kind")) for m in metrics if m.get("aborted"))),
    }
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in out.items()}


@register_report_section("taboo")
class TabooSection(ReportSection):
    name = "taboo"
    title = "Taboo: played, quality score, success, rule violations"
    template = "report_section.html.jinja"

    counts_aborted = True

    def compute(self, records: list[EpisodeRecord], run: RunData, ctx: ReportContext) -> dict[str, Any]:
        recs = self.rated(records)
        ms = [r.outcome.metrics for r in recs]  # type: ignore[union-attr]
        by_pair: dict[str, list[dict[str, Any]]] = defaultdict(list)
        by_band: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in recs:
            d, g = r.seats.get("Describer"), r.seats.get("Guesser")
            by_pair[f"{d.agent if d else '?'} → {g.agent if g else '?'}"].append(r.outcome.metrics)  # type: ignore[union-attr]
            by_band[str(r.outcome.metrics.get("band") or "–")].append(r.outcome.metrics)  # type: ignore[union-attr]
        violations = Counter(str((m.get("violation") or {}).get("matched")) for m in ms if m.get("violation"))
        return {"episodes": len(recs), "overall": summarize(ms, ctx.seed, ctx.n_bootstrap),
                "by_pair": {k: summarize(v, ctx.seed, ctx.n_bootstrap) for k, v in sorted(by_pair.items())},
                "by_band": {k: summarize(v, ctx.seed, ctx.n_bootstrap) for k, v in sorted(by_band.items())},
                "top_violations": dict(violations.most_common(10))}

    def plots(self, s: dict[str, Any]) -> dict[str, bytes]:
        figs: dict[str, bytes | None] = {}
        bands = s.get("by_band") or {}
        if bands:
            names = list(bands)
            figs["bands"] = P.grouped_bars(names, {"% played": [bands[n]["played_rate"] for n in names],
                                                   "success rate": [bands[n]["success_rate"] for n in names],
                                                   "quality / 100": [(bands[n]["quality"] or 0) / 100 for n in names]},
                                           title="Taboo by frequency band", ylabel="rate", ylim=(0, 1))
        return {k: v for k, v in figs.items() if v}

    def csv_columns(self, rec: EpisodeRecord) -> dict[str, Any]:
        m = rec.outcome.metrics if rec.outcome else {}
        v = m.get("violation") or {}
        return {"target": m.get("target"), "band": m.get("band"), "success": m.get("success"),
                "aborted": m.get("aborted"), "abort_kind": m.get("abort_kind"), "quality_score": m.get("quality_score"),
                "n_guesses": m.get("n_guesses"), "violation_word": v.get("word")}
