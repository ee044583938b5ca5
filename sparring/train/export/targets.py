"""Soft preference targets and the DPO row shape, shared by best-of-N and branched pairs."""

from __future__ import annotations

import math
from typing import Any, Literal

Target = Literal["prob", "log_prob", "logit", "binary"]
_EPS = 1e-6


def soft_target(v_chosen: float, v_rejected: float, target: Target = "prob", gamma: float = 1.0) -> float:
    """Probability that the chosen reply is preferred, from the two values."""
    if target == "binary":
        return 1.0
    if target == "prob":
        d = v_chosen - v_rejected
    elif target == "log_prob":
        d = math.log(max(v_chosen, _EPS)) - math.log(max(v_rejected, _EPS))
    else:
        d = _logit(v_chosen) - _logit(v_rejected)
    return 1.0 / (1.0 + math.exp(-gamma * d))


def _logit(v: float) -> float:
    v = min(max(v, _EPS), 1 - _EPS)
    return math.log(v / (1 - v))


def pair_row(prompt: list[dict[str, str]], chosen: str, rejected: str, v_c: float, v_r: float, target: Target,
             gamma: float, info: dict[str, Any]) -> dict[str, Any]:
    return {"prompt": prompt, "chosen": [{"role": "assistant", "content": chosen}],
            "rejected": [{"role": "assistant", "content": rejected}],
            "preference": soft_target(v_c, v_r, target, gamma), "margin": v_c - v_r, "meta": info}
