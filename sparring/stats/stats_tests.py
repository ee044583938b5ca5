"""Interval estimates and significance tests used by the report.

Wilson intervals because win rates are often near 0/1 on few games (the normal approximation then
gives intervals outside [0, 1]); paired tests on per-question differences because flipped pairs
share the question, which removes most of the between-question variance.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats as sps


def wilson_interval(successes: float, n: float, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion. `successes` may be fractional (ties = 0.5).

    Returns (nan, nan) for n == 0 so callers can report "no data" instead of a fake interval.
    """
    if n <= 0:
        return (math.nan, math.nan)
    p = min(1.0, max(0.0, successes / n))
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    # At p = 0 (p = 1) the bound is exactly 0 (1); computed, it is off by rounding (1e-17), which
    # makes error bars of plotted rates slightly negative.
    lower = 0.0 if p == 0.0 else max(0.0, centre - half)
    upper = 1.0 if p == 1.0 else min(1.0, centre + half)
    return (lower, upper)


def bootstrap_ci(values: Sequence[float], stat: Callable[[np.ndarray], float] = np.mean,
                 n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of `stat` over `values`, deterministic per `seed`."""
    x = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    if x.size == 0:
        return (math.nan, math.nan)
    if x.size == 1:
        v = float(stat(x))
        return (v, v)
    rng = np.random.default_rng(seed)
    boots = np.empty(n_boot)
    chunk = max(1, min(n_boot, 4_000_000 // x.size))  # bounded memory on large runs
    for start in range(0, n_boot, chunk):
        idx = rng.integers(0, x.size, size=(min(chunk, n_boot - start), x.size), dtype=np.int32)
        boots[start:start + len(idx)] = (x[idx].mean(axis=1) if stat is np.mean
                                         else [stat(x[row]) for row in idx])
    alpha = (1 - level) / 2
    lo, hi = np.quantile(boots, [alpha, 1 - alpha])
    return (float(lo), float(hi))


def binomial_test(successes: int, n: int, p: float = 0.5) -> float:
    """Two-sided exact binomial test p-value (nan without data)."""
    if n <= 0:
        return math.nan
    return float(sps.binomtest(int(successes), int(n), p).pvalue)


def paired_test(diffs: Sequence[float], seed: int = 0, n_boot: int = 1000) -> dict[str, float | int]:
    """Sign test + Wilcoxon signed-rank test on per-unit paired differences (e.g. per question).

    Zeros are dropped by the sign test and handled with Pratt's method by Wilcoxon. Returns the
    mean difference with a bootstrap interval, counts of positive/negative/zero differences and
    both p-values (nan when the test is undefined, e.g. all differences zero).
    """
    d = np.asarray([x for x in diffs if x is not None and not math.isnan(x)], dtype=float)
    pos, neg = int((d > 0).sum()), int((d < 0).sum())
    out: dict[str, float | int] = {
        "n": int(d.size), "n_positive": pos, "n_negative": neg, "n_zero": int(d.size - pos - neg),
        "mean_diff": float(d.mean()) if d.size else math.nan,
        "sign_test_p": binomial_test(pos, pos + neg) if pos + neg else math.nan,
        "wilcoxon_p": math.nan,
    }
    lo, hi = bootstrap_ci(d.tolist(), n_boot=n_boot, seed=seed)
    out["mean_diff_ci_low"], out["mean_diff_ci_high"] = lo, hi
    if pos + neg > 0:
        try:
            out["wilcoxon_p"] = float(sps.wilcoxon(d, zero_method="pratt").pvalue)
        except ValueError:  # scipy refuses degenerate inputs (e.g. too few non-zero values)
            pass
    return out


def mean_or_nan(values: Sequence[float | None]) -> float:
    xs = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    return sum(xs) / len(xs) if xs else math.nan
