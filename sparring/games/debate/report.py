"""The debate-family section of the report (all formats of the `debate` game)."""

from __future__ import annotations

from typing import Any

from sparring.analysis import plots as P
from sparring.analysis.report_sections import ReportContext, ReportSection, register_report_section
from sparring.games.debate import report_stats as D
from sparring.records.reader import RunData
from sparring.records.record import EpisodeRecord
from sparring.stats.stats_tests import wilson_interval


@register_report_section("debate")
class DebateSection(ReportSection):
    name = "debate"
    title = "Debate: judge accuracy, calibration, position bias, quotes"
    template = "report_section.html.jinja"

    def compute(self, records: list[EpisodeRecord], run: RunData, ctx: ReportContext) -> dict[str, Any]:
        judged = D.judged(records)
        formats = sorted({D.fmt(r) for r in records})
        out: dict[str, Any] = {
            "formats": formats, "judged": len(judged),
            "judge_accuracy": D.judge_accuracy(records, ctx.seed),
            "calibration": D.calibration(records, ctx.calibration_bins),
            "position_bias": D.position_bias(records),
            "sides": D.side_split(records, ctx.seed, ctx.n_bootstrap),
            "quotes": D.quotes_and_lengths(records),
            "paired_agents": D.paired_agents(records, ctx.seed),
            "paired_formats": D.paired_formats(records, ctx.seed),
        }
        methods: dict[str, list[float | None]] = {}
        for r in judged:  # how each verdict was obtained: scored options, a parsed probability, ...
            meta = D.m(r).get("verdict_meta") or {}
            mass = meta.get("mass")  # scored verdicts: probability the options held before normalising
            methods.setdefault(str(meta.get("method") or "unknown"), []).append(
                float(mass) if isinstance(mass, int | float) else None)
        out["verdict_methods"] = {k: {"n": len(v), "share": len(v) / len(judged), "mass": _mean(v)}
                                  for k, v in sorted(methods.items())}
        chose = [D.m(r).get("chose_correct") for r in judged if D.fmt(r) == "open_debate"]
        chose = [c for c in chose if c is not None]
        if chose:  # open debate: how often the choosing debater picked the right answer (its own QA)
            k = sum(1 for c in chose if c)
            out["open_debate_choice"] = {"n": len(chose), "chose_correct": k / len(chose),
                                         "ci": list(wilson_interval(k, len(chose)))}
        return out

    def plots(self, s: dict[str, Any]) -> dict[str, bytes]:
        acc = s["judge_accuracy"]["by_format"]
        figs: dict[str, bytes | None] = {
            "judge_accuracy": P.bar_ci(list(acc), [v["accuracy"] for v in acc.values()],
                                       [v["accuracy_ci"] for v in acc.values()], title="Judge accuracy by format",
                                       ylabel="accuracy", ref=0.5, ylim=(0, 1)),
            "calibration": P.reliability_plot({**({"all": s["calibration"]["overall"]}
                                                  if len(s["calibration"]["by_format"]) > 1 else {}),
                                               **s["calibration"]["by_format"]}),
        }
        bias = s["position_bias"]
        labels, vals, cis = [], [], []
        for f, b in bias.items():
            flips = sorted(b.get("by_flip", {}).items()) if len(b.get("by_flip", {})) > 1 else []
            for flip, bb in [("all", b)] + flips:
                labels.append(f"{f}\n{'flip=' + flip if flip != 'all' else 'all'}")
                vals.append(bb["p_pick_first"])
                cis.append(bb["p_pick_first_ci"])
        figs["position_bias"] = P.bar_ci(labels, vals, cis, title="P(judge picks the first position)",
                                         ylabel="P(picks Debater_A / Answer_A)", ref=0.5, ylim=(0, 1))
        groups = s["quotes"]["by_group"]
        if groups:
            figs["quotes"] = P.panel_bars(list(groups), {
                "valid quote fraction": [g["valid_frac"] for g in groups.values()],
                "quoted words per speech": [g["quoted_words_per_speech"] for g in groups.values()],
                "words per speech": [g["mean_speech_words"] for g in groups.values()]},
                title="Quotes and speech length by side")
        ratings = (s["sides"].get("ratings") or {}).get("players")
        if ratings:
            figs["side_ratings"] = P.ratings_plot(ratings, title="Ratings split by side (95% CI)")
        return {k: v for k, v in figs.items() if v}

    def csv_columns(self, rec: EpisodeRecord) -> dict[str, Any]:
        mm = D.m(rec)
        row: dict[str, Any] = {
            "format": mm.get("format"), "judge": D.judge_name(rec), "p_correct": mm.get("p_correct"),
            "judge_correct": mm.get("judge_correct"), "tie": mm.get("tie"),
            "correct_player": mm.get("correct_player"), "correct_side": mm.get("correct_side"),
            "winning_side": mm.get("winning_side"),
        }
        for side, p in sorted((mm.get("probs") or {}).items()):
            row[f"prob_{side}"] = p
        for p, q in sorted((mm.get("quote_stats") or {}).items()):
            row[f"quotes_{p}"] = q.get("n_quotes")
            row[f"valid_quotes_{p}"] = q.get("n_valid")
            row[f"quoted_words_{p}"] = q.get("quoted_words")
        for p, w in sorted((mm.get("speech_words_total") or {}).items()):
            row[f"words_{p}"] = w
        return row


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None
