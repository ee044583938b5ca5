"""Reliability diagram / ECE on hand-computed cases, and the interval / test helpers."""

from __future__ import annotations

import math

import pytest

from sparring.stats.calibration import judge_reliability, reliability, top_label
from sparring.stats.stats_tests import bootstrap_ci, paired_test, wilson_interval


def test_ece_hand_computed():
    # bin [0.9, 1.0): confidence 0.9, accuracy 0.5 -> gap 0.4, weight 1/2
    # bin [0.6, 0.7): confidence 0.6, accuracy 1.0 -> gap 0.4, weight 1/2  => ECE 0.4
    r = reliability([0.9, 0.9, 0.6, 0.6], [1, 0, 1, 1], n_bins=10)
    assert r.ece == pytest.approx(0.4)
    assert r.mce == pytest.approx(0.4)
    assert r.brier == pytest.approx((0.01 + 0.81 + 0.16 + 0.16) / 4)
    nine = r.bins[9]
    assert (nine.count, nine.confidence, nine.accuracy) == (2, pytest.approx(0.9), 0.5)
    assert r.bins[0].count == 0 and math.isnan(r.bins[0].accuracy)


def test_probability_one_falls_in_last_bin_and_perfect_calibration():
    r = reliability([1.0, 1.0, 0.0], [1, 1, 0], n_bins=5)
    assert r.bins[-1].count == 2 and r.bins[0].count == 1
    assert r.ece == pytest.approx(0.0)


def test_top_label_and_judge_reliability():
    conf, hit = top_label([0.8, 0.3, 0.5])
    assert conf == [0.8, 0.7, 0.5] and hit == [1.0, 0.0, 0.5]
    r = judge_reliability([0.8, 0.8, 0.3], n_bins=5)  # bins of width 0.1 on [0.5, 1]
    # 0.8, 0.8 (both right) in [0.8, 0.9): gap 0.2; 0.7 (wrong) in [0.7, 0.8): gap 0.7
    assert r.ece == pytest.approx(2 / 3 * 0.2 + 1 / 3 * 0.7)
    assert r.bins[0].lo == pytest.approx(0.5) and r.bins[-1].hi == pytest.approx(1.0)


def test_empty_reliability_is_nan_not_crash():
    r = reliability([], [])
    assert r.n == 0 and math.isnan(r.ece) and math.isnan(r.brier)


def test_wilson_known_values():
    lo, hi = wilson_interval(8, 10)
    assert lo == pytest.approx(0.4902, abs=1e-4) and hi == pytest.approx(0.9433, abs=1e-4)
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-4)
    lo, hi = wilson_interval(50, 100)
    assert lo == pytest.approx(0.4038, abs=1e-4) and hi == pytest.approx(0.5962, abs=1e-4)
    assert all(math.isnan(x) for x in wilson_interval(0, 0))


def test_bootstrap_ci_deterministic():
    xs = [0.1, 0.5, 0.9, 0.4, 0.7, 0.3]
    a = bootstrap_ci(xs, seed=3, n_boot=500)
    assert a == bootstrap_ci(xs, seed=3, n_boot=500)
    assert a[0] <= sum(xs) / len(xs) <= a[1]


def test_paired_test_sign_and_wilcoxon():
    r = paired_test([0.2] * 10)
    assert r["n_positive"] == 10 and r["n_negative"] == 0
    assert r["sign_test_p"] == pytest.approx(2 * 0.5**10)
    assert r["wilcoxon_p"] < 0.01
    r0 = paired_test([0.0, 0.0])
    assert r0["n_zero"] == 2 and math.isnan(r0["sign_test_p"])
    mixed = paired_test([0.3, -0.1, 0.2, -0.2, 0.1, 0.0])
    assert mixed["n"] == 6 and mixed["sign_test_p"] == pytest.approx(1.0)
