"""Exact per-instance ceilings by enumerating every allocation of the pool.

Why exact enumeration: a pool has at most 4*3*3 = 36 splits (counts 1-4, total <= 7), so there
is no reason to approximate. Everything is on RAW utilities (X, Y), so Pareto optimality means the
same thing under every objective (lm-selfplay's check compared a player's utility with itself and
used one player's values for both, which made it degenerate).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import product

from sparring.games.negotiation.instance import Triple
from sparring.games.negotiation.objectives import points


def allocations(counts: Triple) -> list[Triple]:
    """Every share player A can take (player B gets the rest)."""
    return [tuple(a) for a in product(*(range(c + 1) for c in counts))]  # type: ignore[misc]


@dataclass(frozen=True)
class Ceilings:
    """Best achievable outcomes of one scenario, for the seat order (A, B) it was computed in."""

    max_points: tuple[int, int]          # best X for A, best Y for B (each alone)
    max_welfare: int                     # max X + Y over allocations
    max_nash: int                        # max X * Y (disagreement point (0, 0))
    frontier: tuple[tuple[int, int], ...]  # Pareto-optimal (X, Y) points, sorted by X ascending
    utilities: tuple[tuple[int, int], ...]  # (X, Y) of every allocation, in `allocations` order

    def is_pareto_optimal(self, x: int, y: int) -> bool:
        """(x, y) is achievable and no allocation is at least as good for both and better for one."""
        return (x, y) in self._frontier_set

    @cached_property
    def _frontier_set(self) -> frozenset[tuple[int, int]]:
        return frozenset(self.frontier)

    @cached_property
    def _utility_set(self) -> frozenset[tuple[int, int]]:
        return frozenset(self.utilities)

    def is_welfare_optimal(self, x: int, y: int) -> bool:
        return x + y == self.max_welfare and (x, y) in self._utility_set

    def nash_ratio(self, x: int, y: int) -> float:
        """x*y relative to the best achievable Nash product (0 when none is positive)."""
        return (x * y) / self.max_nash if self.max_nash > 0 else 0.0

    def to_dict(self) -> dict:
        return {"max_points": list(self.max_points), "max_welfare": self.max_welfare,
                "max_nash": self.max_nash, "pareto_frontier": [list(p) for p in self.frontier]}


def pareto_frontier(utilities: list[tuple[int, int]] | tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """Points not weakly dominated by a different point (ties on both coordinates are kept once)."""
    pts = sorted(set(utilities), key=lambda p: (-p[0], -p[1]))
    front: list[tuple[int, int]] = []
    best_y = None
    for x, y in pts:  # descending x; a point survives iff its y beats every y seen at larger x
        if best_y is None or y > best_y:
            front.append((x, y))
            best_y = y
    return tuple(sorted(front))


@lru_cache(maxsize=8192)
def ceilings(counts: Triple, values_a: Triple, values_b: Triple) -> Ceilings:
    """Ceilings of the scenario with A holding `values_a` and B holding `values_b`."""
    (a0, a1, a2), (b0, b1, b2) = values_a, values_b
    pool_b = points(values_b, counts)  # B gets the rest: its points are the pool's minus A's share's
    utils = tuple((x * a0 + y * a1 + z * a2, pool_b - (x * b0 + y * b1 + z * b2)) for x, y, z in allocations(counts))
    return Ceilings(
        max_points=(max(x for x, _ in utils), max(y for _, y in utils)),
        max_welfare=max(x + y for x, y in utils),
        max_nash=max(x * y for x, y in utils),
        frontier=pareto_frontier(utils),
        utilities=utils,
    )
