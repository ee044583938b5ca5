"""Value types of the learning suite: an estimate with its 95% interval, a stage (baseline or a
trained policy) measured on the held-out set, an experiment's whole record.

Kept apart from the experiments so the report writer, the tests and every experiment share one
shape, which is exactly what `learning.json` holds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from sparring.gameapi.splits import check_disjoint
from sparring.stable_json import json_safe
from sparring.stats.stats_tests import bootstrap_ci, paired_test, wilson_interval


@dataclass
class Estimate:
    """A held-out metric: point value, number of units (games, debates) and its 95% interval."""

    value: float
    n: int
    ci: tuple[float, float]
    kind: str = "rate"  # rate: Wilson interval; mean: bootstrap interval of the mean

    def fmt(self) -> str:
        if math.isnan(self.value):
            return "n/a"
        return f"{self.value:.3f} [{self.ci[0]:.3f}, {self.ci[1]:.3f}] (n={self.n})"


def rate(flags: Sequence[bool | float]) -> Estimate:
    """A proportion with its Wilson interval (fractional flags count as partial successes)."""
    n = len(flags)
    s = float(sum(float(f) for f in flags))
    return Estimate(s / n if n else math.nan, n, wilson_interval(s, n), "rate")


def mean(values: Sequence[float], seed: int = 0) -> Estimate:
    """A mean with its percentile-bootstrap interval."""
    xs = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    return Estimate(sum(xs) / len(xs) if xs else math.nan, len(xs), bootstrap_ci(xs, seed=seed), "mean")


def paired(before: dict[str, float], after: dict[str, float], seed: int = 0) -> dict[str, Any]:
    """After − before on the instances both played: mean difference with a bootstrap interval,
    counts up / down / equal and the sign-test and Wilcoxon p-values."""
    common = sorted(set(before) & set(after))
    out = paired_test([after[k] - before[k] for k in common], seed=seed)
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in out.items()}


@dataclass
class Stage:
    """One policy measured on the held-out set: `step` is the x of the learning curve (training
    steps or iterations so far; 0 = the baseline)."""

    name: str
    step: int
    metrics: dict[str, Estimate]
    wall_s: dict[str, float] = field(default_factory=dict)  # play / train / evaluate / load seconds
    seed: int = 0
    info: dict[str, Any] = field(default_factory=dict)      # rows, loss, steps, adapter, ...


@dataclass
class Experiment:
    name: str
    description: str
    model: str
    primary: str                                 # the metric on the learning curve
    training_ids: list[str]
    heldout_ids: list[str]
    stages: list[Stage] = field(default_factory=list)
    paired: dict[str, Any] = field(default_factory=dict)   # comparison name -> paired_test result
    speed: dict[str, Any] = field(default_factory=dict)
    target: str = ""
    notes: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    def __post_init__(self) -> None:
        check_disjoint(self.name, self.training_ids, self.heldout_ids)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["disjoint"] = True  # checked at construction
        return json_safe(data)
