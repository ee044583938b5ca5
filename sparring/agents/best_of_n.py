"""Best-of-N as an agent-side strategy: score candidate actions on forks of the game.

The engine only offers the forks (`Lookahead`); how candidates are tried, answered by sampled
opponents and aggregated is the agent's choice, so other strategies (max-min, branched search)
plug in beside this one without touching the episode driver.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparring.agents.base import gather
from sparring.agents.lookahead import BestOfN, Lookahead


def score_candidates(cfg: BestOfN, look: Lookahead, texts: list[str]) -> Any:
    """Generator: one score per candidate text (-inf for candidates the game rejects)."""
    agg: Callable[[list[float]], float] = min if cfg.aggregate == "min" else (lambda xs: sum(xs) / len(xs))
    tried = [look.try_action(t) for t in texts]
    valid = [i for i, (_, fb) in enumerate(tried) if fb.accepted and not fb.abort]
    branches: list[list[Any]] = [[tried[i][0]] for i in valid]
    if cfg.opponents > 0 and valid:
        branches = yield from gather([look.opponent_replies(b[0], cfg.opponents) for b in branches])
    flat = [(k, st) for k, b in enumerate(branches) for st in b]
    values = (yield from look.evaluate([st for _, st in flat])) if flat else []
    per: dict[int, list[float]] = {}
    for (k, _), v in zip(flat, values, strict=True):
        if v is not None:
            per.setdefault(valid[k], []).append(float(v))
    return [agg(per[i]) if i in per else (0.0 if i in valid else float("-inf")) for i in range(len(texts))]
