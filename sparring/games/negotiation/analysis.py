"""Negotiation metrics: pure functions over finished episodes' `outcome.metrics` dicts.

Every function takes an iterable of metrics dicts (as `DealOrNoDealGame.outcome` writes them) and
ignores entries without `points` (episodes that failed before an outcome). Optimality is always
judged on RAW utilities (X, Y) against the exact per-instance ceilings, so the numbers mean the
same thing under self, coop, comp and any lambda. The report module calls `summarize`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from statistics import fmean
from typing import Any

from sparring.games.negotiation.pareto import Ceilings, ceilings
from sparring.games.negotiation.protocol import mentions

Metrics = dict[str, Any]


def _valid(ms: Iterable[Metrics]) -> list[Metrics]:
    return [m for m in ms if isinstance(m, dict) and isinstance(m.get("points"), dict)]


def _mean(xs: list[float]) -> float | None:
    return fmean(xs) if xs else None


def _players(m: Metrics) -> list[str]:
    return list(m["points"])


def _ceil(m: Metrics) -> Ceilings:
    a, b = _players(m)
    return ceilings(tuple(m["counts"]), tuple(m["values"][a]), tuple(m["values"][b]))


def _xy(m: Metrics) -> tuple[int, int]:
    a, b = _players(m)
    return m["points"][a], m["points"][b]


def mean_reward_by(ms: Iterable[Metrics], key: Callable[[Metrics, str], str], field: str = "rewards") -> dict[str, float]:
    """Mean of `field` (rewards or points) per group; `key(metrics, player)` names the group."""
    groups: dict[str, list[float]] = {}
    for m in _valid(ms):
        for p, r in m[field].items():
            groups.setdefault(key(m, p), []).append(float(r))
    return {k: fmean(v) for k, v in sorted(groups.items())}


def mean_reward_by_player(ms: Iterable[Metrics], field: str = "rewards") -> dict[str, float]:
    return mean_reward_by(ms, lambda m, p: p, field)


def mean_reward_by_seat(ms: Iterable[Metrics], field: str = "rewards") -> dict[str, float]:
    """First mover vs second mover."""
    return mean_reward_by(ms, lambda m, p: "first_mover" if p == m.get("first_mover") else "second_mover", field)


def agreement_rate(ms: Iterable[Metrics]) -> float | None:
    return _mean([float(bool(m.get("deal"))) for m in _valid(ms)])


def abort_rate(ms: Iterable[Metrics]) -> float | None:
    return _mean([float(bool(m.get("aborted"))) for m in _valid(ms)])


def error_rates(ms: Iterable[Metrics]) -> dict[str, float | None]:
    """corrections_per_turn: invalid outputs per accepted turn; invalid_output_rate: share of all
    outputs that were rejected."""
    ms = _valid(ms)
    bad = sum(int(m.get("n_invalid_total", 0)) for m in ms)
    turns = sum(int(m.get("turns", 0)) for m in ms)
    return {"corrections_per_turn": bad / turns if turns else None,
            "invalid_output_rate": bad / (bad + turns) if bad + turns else None}


def _rate(ms: Iterable[Metrics], test: Callable[[Metrics], bool], among: str) -> float | None:
    ms = _valid(ms)
    if among == "deals":
        ms = [m for m in ms if m.get("deal")]
    return _mean([float(bool(m.get("deal")) and test(m)) for m in ms])


def pareto_rate(ms: Iterable[Metrics], among: str = "all") -> float | None:
    """Share of episodes (or of deals, `among="deals"`) ending on the Pareto frontier of (X, Y)."""
    return _rate(ms, lambda m: _ceil(m).is_pareto_optimal(*_xy(m)), among)


def welfare_optimal_rate(ms: Iterable[Metrics], among: str = "all") -> float | None:
    """Share of episodes (or deals) reaching the maximal joint welfare X + Y."""
    return _rate(ms, lambda m: _ceil(m).is_welfare_optimal(*_xy(m)), among)


def nash_ratio(ms: Iterable[Metrics]) -> float | None:
    """Mean X*Y relative to the instance's best Nash product (no deal = 0)."""
    return _mean([_ceil(m).nash_ratio(*_xy(m)) if m.get("deal") else 0.0 for m in _valid(ms)])


def ceiling_gaps(ms: Iterable[Metrics]) -> dict[str, float | None]:
    """Mean distance to the ceilings: own points vs max possible X, X+Y vs max welfare."""
    own, welfare, ratio = [], [], []
    for m in _valid(ms):
        c = _ceil(m)
        x, y = _xy(m)
        own += [c.max_points[0] - x, c.max_points[1] - y]
        welfare.append(c.max_welfare - (x + y))
        ratio.append((x + y) / c.max_welfare)
    return {"points_gap": _mean([float(v) for v in own]), "welfare_gap": _mean([float(v) for v in welfare]),
            "welfare_ratio": _mean(ratio)}


def scored_both(m: Metrics) -> bool:
    """A deal in which each side gets points: a negotiation, not a capitulation (a deal worth 0 to a
    side gives it exactly what walking away gives)."""
    return bool(m.get("deal")) and all(int(v) > 0 for v in m["points"].values())


def mutual_deal_rate(ms: Iterable[Metrics], among: str = "all") -> float | None:
    """Share of episodes (or of deals, `among="deals"`) where both sides score."""
    return _rate(ms, scored_both, among)


def deal_splits(ms: Iterable[Metrics]) -> list[tuple[int, int]]:
    """Every deal's raw points as (lower side, higher side), in episode order."""
    out = []
    for m in _valid(ms):
        if m.get("deal"):
            x, y = _xy(m)
            out.append((min(x, y), max(x, y)))
    return out


def split_histogram(ms: Iterable[Metrics]) -> dict[str, int]:
    """How many deals split the points (low, high), keyed "low-high", most frequent first."""
    counts: dict[str, int] = {}
    for low, high in deal_splits(ms):
        key = f"{low}-{high}"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def points_in_deals(ms: Iterable[Metrics]) -> dict[str, float | None]:
    """Each side's points in deals: the lower and the higher side, the first and the second mover."""
    splits = deal_splits(ms)
    seat: dict[str, list[float]] = {"first_mover": [], "second_mover": []}
    for m in _valid(ms):
        if m.get("deal"):
            for p, v in m["points"].items():
                seat["first_mover" if p == m.get("first_mover") else "second_mover"].append(float(v))
    return {"deal_points_low": _mean([float(lo) for lo, _ in splits]),
            "deal_points_high": _mean([float(hi) for _, hi in splits]),
            "deal_points_first_mover": _mean(seat["first_mover"]),
            "deal_points_second_mover": _mean(seat["second_mover"])}


def _texts(m: Metrics) -> list[str]:
    return [str(x.get("text", "")) for x in m.get("messages", [])]


def dialogue_length(ms: Iterable[Metrics]) -> dict[str, float | None]:
    """Mean accepted turns, messages and whitespace tokens of messages per episode."""
    ms = _valid(ms)
    return {"turns": _mean([float(m.get("turns", 0)) for m in ms]),
            "messages": _mean([float(m.get("n_messages", len(_texts(m)))) for m in ms]),
            "tokens": _mean([float(sum(len(t.split()) for t in _texts(m))) for m in ms])}


def lexical_diversity(ms: Iterable[Metrics]) -> dict[str, float | int | None]:
    """Vocabulary size and corpus-level distinct-1/2 (distinct n-grams / all n-grams, Li et al. 2016)
    over lower-cased whitespace tokens of every message; n-grams never cross messages."""
    vocab: set[str] = set()
    grams: dict[int, set[tuple[str, ...]]] = {1: set(), 2: set()}
    totals = {1: 0, 2: 0}
    for m in _valid(ms):
        for t in _texts(m):
            toks = t.lower().split()
            vocab.update(toks)
            for n in (1, 2):
                ng = [tuple(toks[i:i + n]) for i in range(len(toks) - n + 1)]
                grams[n].update(ng)
                totals[n] += len(ng)
    return {"vocab_size": len(vocab),
            "distinct_1": len(grams[1]) / totals[1] if totals[1] else None,
            "distinct_2": len(grams[2]) / totals[2] if totals[2] else None}


def proposal_consistent(m: Metrics, player: str) -> bool | None:
    """Does `player`'s proposal match the last message that names item counts? (report-only)

    Heuristic: take the last message (either player's) mentioning "N item(s)"; for each item type
    named there, the proposal's own count or the partner's share must be one of the numbers named.
    None when the player made no proposal or no message names any count.
    """
    prop = (m.get("proposals") or {}).get(player)
    if prop is None:
        return None
    said: list[tuple[int, int]] = []
    for t in reversed(_texts(m)):
        said = mentions(t)
        if said:
            break
    if not said:
        return None
    counts = m["counts"]
    for item in {i for i, _ in said}:
        named = {n for i, n in said if i == item}
        if prop[item] not in named and counts[item] - prop[item] not in named:
            return False
    return True


def proposal_consistency(ms: Iterable[Metrics]) -> dict[str, float | int | None]:
    checks = [c for m in _valid(ms) for p in _players(m) if (c := proposal_consistent(m, p)) is not None]
    return {"rate": _mean([float(c) for c in checks]), "evaluated": len(checks)}


def summarize(ms: Iterable[Metrics]) -> dict[str, Any]:
    """Every negotiation metric of a set of episodes (one group of the report)."""
    ms = _valid(ms)
    return {
        "episodes": len(ms),
        "reward_by_player": mean_reward_by_player(ms), "reward_by_seat": mean_reward_by_seat(ms),
        "points_by_player": mean_reward_by_player(ms, "points"), "points_by_seat": mean_reward_by_seat(ms, "points"),
        "agreement_rate": agreement_rate(ms), "abort_rate": abort_rate(ms), **error_rates(ms),
        "mutual_deal_rate": mutual_deal_rate(ms), "mutual_deal_rate_deals": mutual_deal_rate(ms, "deals"),
        **points_in_deals(ms), "split_histogram": split_histogram(ms),
        "pareto_rate": pareto_rate(ms), "pareto_rate_deals": pareto_rate(ms, "deals"),
        "welfare_optimal_rate": welfare_optimal_rate(ms),
        "welfare_optimal_rate_deals": welfare_optimal_rate(ms, "deals"),
        "nash_ratio": nash_ratio(ms), **ceiling_gaps(ms),
        **{f"dialogue_{k}": v for k, v in dialogue_length(ms).items()},
        **lexical_diversity(ms),
        "proposal_consistency": proposal_consistency(ms)["rate"],
    }
