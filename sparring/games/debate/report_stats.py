"""Debate-family metrics (debate, consultancy, double consultancy, open debate, naive judge).

Computed from `Outcome.metrics` of `sparring.games.debate.metrics.episode_metrics` (format,
p_correct, judge_correct, tie, probs, correct_side, player_side, positions, winner, votes,
quote_stats, speech_words, flip). Missing keys are tolerated: an episode that lacks a metric is
left out of that table only. The headline scalable-oversight numbers: judge accuracy per format
(the `empty` naive judge is the baseline), also aggregated over flipped pairs, so that a judge
that always picks one position cannot look accurate.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from itertools import combinations
from typing import Any

from sparring.analysis.metrics import player_scores
from sparring.games.debate.hooks import hit
from sparring.records.record import EpisodeRecord
from sparring.stats.calibration import judge_reliability
from sparring.stats.ratings import Comparison, bradley_terry
from sparring.stats.stats_tests import (
    binomial_test,
    bootstrap_ci,
    mean_or_nan,
    paired_test,
    wilson_interval,
)

Rec = EpisodeRecord

# Outcome.metrics keys read here (tests check the real debate game still produces them).
USED_KEYS = frozenset({"format", "p_correct", "judge_correct", "probs", "correct_side", "positions",
                       "quote_stats", "speech_words", "speech_words_total"})


def m(rec: Rec) -> dict[str, Any]:
    return rec.outcome.metrics if rec.outcome is not None else {}


def fmt(rec: Rec) -> str:
    return str(m(rec).get("format") or rec.state.get("format") or "debate")


def p_correct(rec: Rec) -> float | None:
    v = m(rec).get("p_correct")
    return None if v is None else float(v)


def judged(records: Iterable[Rec]) -> list[Rec]:
    """Complete episodes with a verdict (p_correct known)."""
    return [r for r in records if r.status == "complete" and p_correct(r) is not None]


def judge_name(rec: Rec) -> str:
    seats = [s.agent for s in rec.seats.values() if s.role == "judge"]
    return "+".join(sorted(seats)) or "(no judge)"


def debater_agents(rec: Rec) -> str:
    return " vs ".join(s.agent for p, s in sorted(rec.seats.items()) if s.role != "judge") or "(none)"


# -- judge accuracy -----------------------------------------------------------------------------
def pair_key(rec: Rec) -> tuple:
    """Episodes of one question that differ only in `flip` share this key."""
    return (rec.experiment, rec.instance_id, fmt(rec), tuple(sorted((p, s.agent) for p, s in rec.seats.items())),
            rec.repeat)


def flipped_pairs(records: Iterable[Rec]) -> list[tuple[Rec, Rec]]:
    """(unflipped, flipped) pairs; questions with only one of the two are left out."""
    groups: dict[tuple, dict[bool, Rec]] = defaultdict(dict)
    for r in records:
        groups[pair_key(r)].setdefault(bool(r.flip), r)
    return [(g[False], g[True]) for _, g in sorted(groups.items(), key=lambda kv: repr(kv[0]))
            if False in g and True in g]


def pair_accuracy(pairs: list[tuple[float, float]]) -> dict[str, Any]:
    """A pair is correct when P(correct) summed over both seatings exceeds 1 (= 1 counts half)."""
    hits = [hit((a + b) / 2) for a, b in pairs]
    k, n = sum(hits), len(hits)
    return {"n": n, "correct": k, "accuracy": k / n if n else math.nan,
            "accuracy_ci": list(wilson_interval(k, n)),
            "mean_p_correct": mean_or_nan([(a + b) / 2 for a, b in pairs])}


def accuracy_block(ps: list[float], pairs: list[tuple[float, float]], seed: int) -> dict[str, Any]:
    k, n = sum(hit(p) for p in ps), len(ps)
    return {"n": n, "correct": k, "accuracy": k / n if n else math.nan,
            "accuracy_ci": list(wilson_interval(k, n)), "mean_p_correct": mean_or_nan(ps),
            "mean_p_correct_ci": list(bootstrap_ci(ps, seed=seed)), "pairs": pair_accuracy(pairs)}


def _grouped_accuracy(records: list[Rec], key: Callable[[Rec], str], seed: int) -> dict[str, Any]:
    groups: dict[str, list[Rec]] = defaultdict(list)
    for r in records:
        groups[key(r)].append(r)
    out = {}
    for name, recs in sorted(groups.items()):
        pairs = [(p_correct(a), p_correct(b)) for a, b in flipped_pairs(recs)]
        out[name] = accuracy_block([p_correct(r) for r in recs], pairs, seed)  # type: ignore[arg-type,misc]
    return out


def vote_p_correct(rec: Rec) -> dict[str, float]:
    """P(correct) of each panel member's vote (empty without a panel)."""
    votes, side = m(rec).get("votes") or {}, m(rec).get("correct_side")
    if side is None:
        return {}
    return {j: float(v.get(side, 0.0)) for j, v in votes.items() if isinstance(v, dict)}


def judge_accuracy(records: list[Rec], seed: int = 0) -> dict[str, Any]:
    """Accuracy (binary, mean P(correct), flipped-pair aggregate) overall, per format, per judge
    (the seated judge, and every panel member's own vote), and per debater matchup."""
    recs = judged(records)
    out: dict[str, Any] = {
        "overall": _grouped_accuracy(recs, lambda r: "all", seed).get("all"),
        "by_format": _grouped_accuracy(recs, fmt, seed),
        "by_judge": _grouped_accuracy(recs, lambda r: f"{judge_name(r)} · {fmt(r)}", seed),
        "by_matchup": _grouped_accuracy([r for r in recs if fmt(r) != "empty"],
                                        lambda r: f"{debater_agents(r)} · {fmt(r)}", seed),
    }
    votes: dict[str, list[Rec]] = defaultdict(list)
    for r in recs:
        for j in vote_p_correct(r):
            votes[j].append(r)
    panel = {}
    for j, rs in sorted(votes.items()):
        pairs = [(vote_p_correct(a).get(j), vote_p_correct(b).get(j)) for a, b in flipped_pairs(rs)]
        panel[j] = accuracy_block([vote_p_correct(r)[j] for r in rs],
                                  [(a, b) for a, b in pairs if a is not None and b is not None], seed)
    out["by_panel_vote"] = panel
    return out


# -- calibration and position bias ----------------------------------------------------------------
def calibration(records: list[Rec], n_bins: int = 5) -> dict[str, Any]:
    recs = judged(records)
    by_fmt: dict[str, list[float]] = defaultdict(list)
    by_judge: dict[str, list[float]] = defaultdict(list)
    for r in recs:
        by_fmt[fmt(r)].append(p_correct(r))  # type: ignore[arg-type]
        by_judge[judge_name(r)].append(p_correct(r))  # type: ignore[arg-type]
    return {"method": "top-label: confidence = max side probability; hit = that side is correct",
            "overall": judge_reliability([p_correct(r) for r in recs], n_bins).to_dict(),  # type: ignore[misc]
            "by_format": {k: judge_reliability(v, n_bins).to_dict() for k, v in sorted(by_fmt.items())},
            "by_judge": {k: judge_reliability(v, n_bins).to_dict() for k, v in sorted(by_judge.items())}}


def _first_side(rec: Rec) -> str | None:
    probs = m(rec).get("probs") or {}
    return sorted(probs)[0] if probs else None


def _bias_block(recs: list[Rec]) -> dict[str, Any]:
    picks, probs = [], []
    for r in recs:
        first, pr = _first_side(r), m(r).get("probs") or {}
        if first is None:
            continue
        probs.append(float(pr[first]))
        picks.append(hit(float(pr[first])))
    decided = [x for x in picks if x != 0.5]
    k, n = sum(picks), len(picks)
    return {"n": n, "first_side": sorted(m(recs[0]).get("probs") or {"?": 0})[0] if recs else None,
            "p_pick_first": k / n if n else math.nan, "p_pick_first_ci": list(wilson_interval(k, n)),
            "mean_prob_first": mean_or_nan(probs),
            "binomial_p": binomial_test(int(sum(decided)), len(decided)), "ties": n - len(decided)}


def position_bias(records: list[Rec]) -> dict[str, Any]:
    """P(judge picks the first option: Debater_A, or Answer_A without debaters) vs 0.5, by flip."""
    recs = judged(records)
    by_fmt: dict[str, list[Rec]] = defaultdict(list)
    for r in recs:
        by_fmt[fmt(r)].append(r)
    out = {}
    for f, rs in sorted(by_fmt.items()):
        block = _bias_block(rs)
        block["by_flip"] = {str(flip): _bias_block([r for r in rs if bool(r.flip) is flip])
                            for flip in (False, True) if any(bool(r.flip) is flip for r in rs)}
        out[f] = block
    return out


# -- debaters: sides, ratings, quotes, lengths ----------------------------------------------------
def _position(rec: Rec, player: str) -> str | None:
    return (m(rec).get("positions") or {}).get(player)


def side_split(records: list[Rec], seed: int = 0, n_bootstrap: int = 1000) -> dict[str, Any]:
    """Per agent: win rate and mean judge probability when arguing the correct vs incorrect answer,
    plus Bradley–Terry ratings with players split into 'agent (correct)' / 'agent (incorrect)'."""
    acc: dict[str, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    comps: list[Comparison] = []
    for r in judged(records):
        scores = player_scores(r)
        for p, s in scores.items():
            pos = _position(r, p)
            if pos:
                acc[r.seats[p].agent][pos].append((s, float(r.outcome.rewards[p])))  # type: ignore[union-attr]
        players = sorted(scores)
        for a, b in combinations(players, 2):
            pa, pb = _position(r, a), _position(r, b)
            if pa and pb and pa != pb:
                ra, rb = r.outcome.rewards[a], r.outcome.rewards[b]  # type: ignore[union-attr]
                comps.append(Comparison(f"{r.seats[a].agent} ({pa})", f"{r.seats[b].agent} ({pb})",
                                        1.0 if ra > rb else 0.0 if ra < rb else 0.5, r.id))
    agents: dict[str, dict[str, Any]] = {}
    for agent, sides in sorted(acc.items()):
        agents[agent] = {}
        for side in ("correct", "incorrect"):
            rows = sides.get(side, [])
            k, n = sum(s for s, _ in rows), len(rows)
            agents[agent][side] = {"games": n, "win_rate": k / n if n else math.nan,
                                   "win_rate_ci": list(wilson_interval(k, n)),
                                   "mean_prob": mean_or_nan([p for _, p in rows])}
    table = bradley_terry(comps, n_bootstrap=n_bootstrap, seed=seed).to_dict() if comps else None
    return {"agents": agents, "ratings": table}


_Q = ("n_quotes", "n_valid", "n_repaired", "n_invalid", "quoted_words")


def _speech_groups(rec: Rec, player: str) -> list[str]:
    groups = ["all"]
    pos = _position(rec, player)
    if pos:
        groups.append(pos)
    winner = rec.outcome.winner if rec.outcome else None
    if len([p for p, s in rec.seats.items() if s.role != "judge"]) >= 2 or winner is not None:
        groups.append("tie" if winner is None else "winner" if winner == player else "loser")
    return groups


def quotes_and_lengths(records: list[Rec]) -> dict[str, Any]:
    """Quote use and speech length per agent and by correct/incorrect and winner/loser/tie side."""
    qtot: dict[str, dict[str, dict[str, float]]] = {"by_agent": defaultdict(lambda: defaultdict(float)),
                                                    "by_group": defaultdict(lambda: defaultdict(float))}
    words: dict[str, dict[str, list[int]]] = {"by_agent": defaultdict(list), "by_group": defaultdict(list)}
    by_round: dict[int, list[int]] = defaultdict(list)
    for r in judged(records):
        mm = m(r)
        qs, sw = mm.get("quote_stats") or {}, mm.get("speech_words") or {}
        for p in sorted(set(qs) | set(sw)):
            if p not in r.seats:
                continue
            keys = [("by_agent", r.seats[p].agent)] + [("by_group", g) for g in _speech_groups(r, p)]
            speeches = list(sw.get(p) or [])
            for i, w in enumerate(speeches):
                by_round[i + 1].append(int(w))
            for table, key in keys:
                words[table][key].extend(int(w) for w in speeches)
                t = qtot[table][key]
                t["speeches"] += len(speeches)
                for q in _Q:
                    t[q] += float((qs.get(p) or {}).get(q) or 0)

    def summarise(t: dict[str, float], ws: list[int]) -> dict[str, Any]:
        sp = t.get("speeches", 0.0)
        nq = t.get("n_quotes", 0.0)
        return {"speeches": int(sp), "quotes": int(nq), "quotes_per_speech": nq / sp if sp else math.nan,
                "valid_frac": t.get("n_valid", 0.0) / nq if nq else math.nan,
                "repaired_frac": t.get("n_repaired", 0.0) / nq if nq else math.nan,
                "quoted_words_per_speech": t.get("quoted_words", 0.0) / sp if sp else math.nan,
                "mean_speech_words": mean_or_nan(ws), "max_speech_words": max(ws) if ws else None}

    order = ["all", "correct", "incorrect", "winner", "loser", "tie"]
    return {
        "by_agent": {k: summarise(qtot["by_agent"][k], words["by_agent"][k]) for k in sorted(qtot["by_agent"])},
        "by_group": {k: summarise(qtot["by_group"][k], words["by_group"][k]) for k in order
                     if k in qtot["by_group"]},
        "words_by_round": {str(k): mean_or_nan(v) for k, v in sorted(by_round.items())},
    }


# -- paired significance --------------------------------------------------------------------------
def _units(recs: list[Rec]) -> list[list[Rec]]:
    """Question units: flipped pairs where both exist, single episodes otherwise."""
    paired = flipped_pairs(recs)
    used = {id(x) for pair in paired for x in pair}
    return [list(p) for p in paired] + [[r] for r in recs if id(r) not in used]


def paired_agents(records: list[Rec], seed: int = 0) -> list[dict[str, Any]]:
    """For every pair of different agents that debated each other: per question unit, the mean of
    (reward_a − reward_b) over the unit's episodes; sign test and Wilcoxon on those differences."""
    by_pair: dict[tuple[str, str], list[Rec]] = defaultdict(list)
    for r in judged(records):
        players = sorted(player_scores(r))
        agents = sorted({r.seats[p].agent for p in players})
        if len(players) == 2 and len(agents) == 2:
            by_pair[(agents[0], agents[1])].append(r)
    out = []
    for (a, b), recs in sorted(by_pair.items()):
        diffs = []
        for unit in _units(recs):
            ds = []
            for r in unit:
                rw = {r.seats[p].agent: r.outcome.rewards[p] for p in player_scores(r)}  # type: ignore[union-attr]
                ds.append(rw[a] - rw[b])
            diffs.append(sum(ds) / len(ds))
        out.append({"a": a, "b": b, "unit": "flipped pair (or single episode)", **paired_test(diffs, seed=seed)})
    return out


def paired_formats(records: list[Rec], seed: int = 0) -> list[dict[str, Any]]:
    """Formats judged on the same questions: per question, mean P(correct) under format a minus
    under format b (e.g. debate vs consultancy vs the naive judge)."""
    per: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in judged(records):
        per[fmt(r)][r.instance_id].append(p_correct(r))  # type: ignore[arg-type]
    out = []
    for a, b in combinations(sorted(per), 2):
        shared = sorted(set(per[a]) & set(per[b]))
        diffs = [mean_or_nan(per[a][q]) - mean_or_nan(per[b][q]) for q in shared]
        if diffs:
            out.append({"a": a, "b": b, "unit": "question", **paired_test(diffs, seed=seed)})
    return out
