"""Deal or No Deal scenarios: item counts plus each player's private values, fully validated.

Why one place for the constraints: the generator, the selfplay.txt loader, the dialogue loader and
the game must agree exactly on what a legal scenario is (Lewis et al. 2017 / lm-selfplay).
"""

from __future__ import annotations

import hashlib
from typing import Literal

from pydantic import model_validator

from sparring.gameapi.game import Instance

ITEMS: tuple[str, str, str] = ("book", "hat", "ball")
PLURALS: tuple[str, str, str] = ("books", "hats", "balls")
TOTAL_VALUE = 10
MIN_COUNT, MAX_COUNT = 1, 4
MIN_ITEMS, MAX_ITEMS = 5, 7
MAX_VALUE = 10

Triple = tuple[int, int, int]


def context_problems(counts: Triple, values: tuple[Triple, Triple]) -> list[str]:
    """Every violated constraint, as readable sentences (empty list = a legal scenario).

    Constraints: three item types (book, hat, ball); each count 1-4 and 5-7 items in total; each
    player's values are integers 0-10 whose value of the whole pool is exactly 10; every item type
    is valued > 0 by at least one player; at least one type is valued > 0 by both, which is exactly
    the condition for the two players never both scoring 10 at once.
    """
    problems: list[str] = []
    if len(counts) != 3 or any(not isinstance(c, int) or isinstance(c, bool) for c in counts):
        return [f"counts must be three integers (book, hat, ball), got {counts!r}"]
    if len(values) != 2 or any(len(v) != 3 for v in values):
        return [f"values must be two triples (one per player), got {values!r}"]
    if any(not isinstance(x, int) or isinstance(x, bool) for v in values for x in v):
        return [f"values must be integers, got {values!r}"]
    bad = [f"{ITEMS[i]}={c}" for i, c in enumerate(counts) if not MIN_COUNT <= c <= MAX_COUNT]
    if bad:
        problems.append(f"each item count must be {MIN_COUNT}-{MAX_COUNT} (got {', '.join(bad)})")
    if not MIN_ITEMS <= sum(counts) <= MAX_ITEMS:
        problems.append(f"the pool must hold {MIN_ITEMS}-{MAX_ITEMS} items in total (got {sum(counts)})")
    for p, vals in enumerate(values, 1):
        out = [f"{ITEMS[i]}={v}" for i, v in enumerate(vals) if not 0 <= v <= MAX_VALUE]
        if out:
            problems.append(f"player {p} values must be 0-{MAX_VALUE} (got {', '.join(out)})")
        total = sum(c * v for c, v in zip(counts, vals, strict=False))
        if total != TOTAL_VALUE:
            problems.append(f"player {p} values the whole pool at {total}, must be exactly {TOTAL_VALUE}")
    va, vb = values
    unvalued = [ITEMS[i] for i in range(3) if va[i] <= 0 and vb[i] <= 0]
    if unvalued:
        problems.append(f"item type(s) {', '.join(unvalued)} valued by neither player")
    if not any(va[i] > 0 and vb[i] > 0 for i in range(3)):
        # Equivalent to "both players could score 10 at once": a player scores 10 iff it gets every
        # unit it values, which is possible for both iff no item type is valued by both.
        problems.append("no item type is valued by both players, so both could score 10 at once")
    return problems


class DondInstance(Instance):
    """One scenario. `values[0]` / `values[1]` are the private values of context 0 / context 1.

    The game seats context 0 at Player_1 and context 1 at Player_2 (swapped when `flip`).
    `first_mover` (0, 1 or None) says which context speaks first; None lets the episode RNG
    decide. Transcripts of human dialogues set it so that replays keep the recorded order.
    """

    counts: Triple
    values: tuple[Triple, Triple]
    first_mover: Literal[0, 1] | None = None

    @model_validator(mode="after")
    def _check(self) -> DondInstance:
        problems = context_problems(self.counts, self.values)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def scenario_key(self) -> str:
        """Seat-order-free identity of the scenario (same pair of contexts in either order)."""
        return scenario_key(self.counts, self.values)

    def swapped(self) -> DondInstance:
        """The same scenario with the two contexts exchanged."""
        fm = None if self.first_mover is None else 1 - self.first_mover
        return DondInstance(id=self.id, counts=self.counts, values=(self.values[1], self.values[0]),
                            first_mover=fm)


def remainder(pool: Triple, claim: Triple) -> Triple:
    """What a proposal that keeps `claim` leaves the other player (negative where it over-claims)."""
    return (pool[0] - claim[0], pool[1] - claim[1], pool[2] - claim[2])


def context_string(counts: Triple, values: Triple) -> str:
    """The upstream `c v c v c v` rendering of one player's context."""
    return " ".join(f"{c} {v}" for c, v in zip(counts, values, strict=False))


def scenario_key(counts: Triple, values: tuple[Triple, Triple]) -> str:
    """Sorted pair of contexts: identical for both seat orders of one scenario."""
    a, b = sorted(context_string(counts, v) for v in values)
    return f"{a}|{b}"


SPLITS: tuple[str, ...] = ("train", "val", "test")  # same names as the debate datasets
DEFAULT_FRACTIONS: dict[str, float] = {"train": 0.8, "val": 0.1, "test": 0.1}


def scenario_split(key: str, fractions: dict[str, float] | None = None, salt: str = "dond") -> str:
    """Deterministic split of a scenario by a hash of its unordered key.

    Why a hash: both seat orders of one scenario (and both sides of one dialogue) get the same key,
    so the same pair of contexts can never land in two splits, whatever file it came from.
    """
    fractions = fractions or DEFAULT_FRACTIONS
    h = int.from_bytes(hashlib.sha256(f"{salt}:{key}".encode()).digest()[:8], "big") / 2**64
    total = sum(fractions.values())
    acc = 0.0
    names = list(fractions)
    for name in names:
        acc += fractions[name] / total
        if h < acc:
            return name
    return names[-1]
