"""Bradley–Terry ratings against hand-computed cases, and the bootstrap's determinism."""

from __future__ import annotations

import math

import pytest

from sparring.stats.ratings import Comparison, bradley_terry, mean_reward_comparisons


def games(a: str, b: str, wins: int, losses: int, ties: int = 0, tag: str = "") -> list[Comparison]:
    out = [Comparison(a, b, 1.0, f"{tag}{a}{b}w{i}") for i in range(wins)]
    out += [Comparison(a, b, 0.0, f"{tag}{a}{b}l{i}") for i in range(losses)]
    out += [Comparison(a, b, 0.5, f"{tag}{a}{b}t{i}") for i in range(ties)]
    return out


def test_two_players_rating_difference_is_log_odds():
    # MLE of P(A beats B) is w / (w + l), so R_A - R_B = 400 log10(w / l), centred on 1000.
    t = bradley_terry(games("A", "B", 30, 10), l2=0.0, n_bootstrap=0)
    diff = 400 * math.log10(3)
    assert t.ratings["A"] - t.ratings["B"] == pytest.approx(diff, abs=1e-6)
    assert t.ratings["A"] == pytest.approx(1000 + diff / 2, abs=1e-6)
    assert 1 / (1 + 10 ** ((t.ratings["B"] - t.ratings["A"]) / 400)) == pytest.approx(0.75, abs=1e-9)


def test_ties_count_half():
    # 1 win + 2 ties out of 3 = score 2/3 -> odds 2 -> 400 log10(2)
    t = bradley_terry(games("A", "B", 1, 0, ties=2), l2=0.0, n_bootstrap=0)
    assert t.ratings["A"] - t.ratings["B"] == pytest.approx(400 * math.log10(2), abs=1e-6)


def test_three_players_transitive_case():
    # Frequencies consistent with BT (odds 2, 2 and 2*2 = 4), so the MLE reproduces them exactly.
    comps = games("A", "B", 20, 10) + games("B", "C", 20, 10) + games("A", "C", 40, 10)
    t = bradley_terry(comps, l2=0.0, n_bootstrap=0)
    step = 400 * math.log10(2)
    assert t.ratings["B"] == pytest.approx(1000.0, abs=1e-6)
    assert t.ratings["A"] == pytest.approx(1000.0 + step, abs=1e-6)
    assert t.ratings["C"] == pytest.approx(1000.0 - step, abs=1e-6)
    assert t.ordered() == ["A", "B", "C"]
    assert t.games == {"A": 80, "B": 60, "C": 80}
    assert t.connected


def test_anchor_player_sits_at_anchor():
    comps = games("A", "B", 20, 10) + games("B", "C", 20, 10)
    t = bradley_terry(comps, anchor=1500, anchor_player="C", l2=0.0, n_bootstrap=0)
    assert t.ratings["C"] == pytest.approx(1500.0, abs=1e-9)
    assert t.ratings["B"] - t.ratings["C"] == pytest.approx(400 * math.log10(2), abs=1e-6)


def test_perfect_record_stays_finite_with_default_prior():
    t = bradley_terry(games("A", "B", 5, 0), n_bootstrap=0)
    assert math.isfinite(t.ratings["A"]) and t.ratings["A"] > t.ratings["B"]
    weaker = bradley_terry(games("A", "B", 5, 0), l2=1.0, n_bootstrap=0)
    assert weaker.ratings["A"] - weaker.ratings["B"] < t.ratings["A"] - t.ratings["B"]


def test_bootstrap_ci_contains_estimate_and_is_deterministic_per_seed():
    comps = games("A", "B", 14, 6) + games("B", "C", 9, 11) + games("A", "C", 12, 8)
    t1 = bradley_terry(comps, n_bootstrap=300, seed=7)
    t2 = bradley_terry(comps, n_bootstrap=300, seed=7)
    t3 = bradley_terry(comps, n_bootstrap=300, seed=8)
    for p in "ABC":
        lo, hi = t1.ci[p]
        assert lo <= t1.ratings[p] <= hi
        assert lo < hi
    assert t1.ci == t2.ci
    assert t1.ci != t3.ci
    assert t1.to_dict()["n_bootstrap"] == 300


def test_self_comparisons_ignored_and_unrated_players_listed():
    comps = games("A", "A", 3, 1) + games("A", "B", 2, 2)
    t = bradley_terry(comps, players=["A", "B", "Z"], n_bootstrap=0, l2=0.0)
    assert t.ratings["A"] == pytest.approx(t.ratings["B"])
    assert math.isnan(t.ratings["Z"]) and t.games["Z"] == 0
    assert t.games["A"] == 4


def test_no_comparisons_and_disconnected_groups():
    empty = bradley_terry([], players=["A"], n_bootstrap=10)
    assert math.isnan(empty.ratings["A"])
    split = bradley_terry(games("A", "B", 3, 1) + games("C", "D", 1, 3), n_bootstrap=20)
    assert not split.connected


def test_mean_reward_comparisons():
    comps = mean_reward_comparisons({"P1": 6.0, "P2": 4.0}, {"P1": "x", "P2": "y"}, "e1")
    assert comps == [Comparison("x", "y", 1.0, "e1")]
    tie = mean_reward_comparisons({"P1": 0.0, "P2": 0.0}, {"P1": "x", "P2": "y"}, "e2")
    assert tie[0].score == 0.5


def test_wilson_bounds_are_exact_at_zero_and_all_successes():
    """0/n and n/n must give bounds of exactly 0 and 1: plotted error bars may not go negative."""
    from sparring.stats.stats_tests import wilson_interval

    for n in range(1, 501):
        lo, hi = wilson_interval(0, n)
        assert lo == 0.0 and 0.0 < hi <= 1.0
        lo, hi = wilson_interval(n, n)
        assert hi == 1.0 and 0.0 <= lo < 1.0
