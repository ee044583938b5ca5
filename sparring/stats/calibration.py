"""Judge calibration: reliability-diagram data, expected calibration error, Brier score.

A judge that says 80% should be right 80% of the time; scalable-oversight results are only
trustworthy if its probabilities mean something. We use the top-label view (confidence = the
probability of the side the judge leans to, hit = that side is correct), as in Guo et al. 2017.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass


@dataclass
class Bin:
    lo: float
    hi: float
    count: int
    confidence: float  # mean predicted probability in the bin (nan if empty)
    accuracy: float  # observed frequency in the bin (nan if empty)


@dataclass
class Reliability:
    bins: list[Bin]
    ece: float
    mce: float
    brier: float
    n: int

    def to_dict(self) -> dict:
        return {"ece": self.ece, "mce": self.mce, "brier": self.brier, "n": self.n,
                "bins": [asdict(b) for b in self.bins]}


def reliability(probs: Sequence[float], outcomes: Sequence[float], n_bins: int = 10,
                lo: float = 0.0, hi: float = 1.0) -> Reliability:
    """Equal-width bins on [lo, hi]; ECE = sum_b (n_b / N) |accuracy_b - confidence_b|.

    `outcomes` are 0/1 (0.5 allowed for exact ties). A value equal to `hi` falls in the last bin.
    """
    pairs = [(float(p), float(y)) for p, y in zip(probs, outcomes, strict=False)
             if p is not None and y is not None and not math.isnan(float(p))]
    width = (hi - lo) / n_bins
    members: list[list[tuple[float, float]]] = [[] for _ in range(n_bins)]
    for p, y in pairs:
        k = min(n_bins - 1, max(0, int((p - lo) / width)))
        members[k].append((p, y))
    bins, ece, mce = [], 0.0, 0.0
    n = len(pairs)
    for k, mem in enumerate(members):
        if mem:
            conf = sum(p for p, _ in mem) / len(mem)
            acc = sum(y for _, y in mem) / len(mem)
            gap = abs(acc - conf)
            ece += len(mem) / n * gap
            mce = max(mce, gap)
        else:
            conf = acc = math.nan
        bins.append(Bin(lo + k * width, lo + (k + 1) * width, len(mem), conf, acc))
    brier = sum((p - y) ** 2 for p, y in pairs) / n if n else math.nan
    return Reliability(bins, ece if n else math.nan, mce if n else math.nan, brier, n)


def top_label(p_correct: Sequence[float]) -> tuple[list[float], list[float]]:
    """From P(correct answer) per verdict to (confidence, hit) for a two-option judge.

    Exact 0.5 verdicts have confidence 0.5 and count as half a hit (no side chosen)."""
    conf, hit = [], []
    for p in p_correct:
        if p is None or math.isnan(p):
            continue
        conf.append(max(p, 1.0 - p))
        hit.append(1.0 if p > 0.5 else 0.0 if p < 0.5 else 0.5)
    return conf, hit


def judge_reliability(p_correct: Sequence[float], n_bins: int = 5) -> Reliability:
    """Top-label reliability of two-option verdicts; bins cover confidences in [0.5, 1]."""
    conf, hit = top_label(p_correct)
    return reliability(conf, hit, n_bins=n_bins, lo=0.5, hi=1.0)
