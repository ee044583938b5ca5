"""Seeded generator of Deal or No Deal scenarios, so experiments need no downloaded data.

Method: enumerate every legal (counts, values_a, values_b) once (5,295 ordered scenarios over 28
count triples), then sample. With `counts_dist: dond` (default) the count triple is drawn with the
frequencies observed in the upstream `selfplay.txt` (4,086 games, Lewis et al. 2017), and the two
value vectors uniformly among the legal pairs for that triple — which is how the upstream contexts
are spread (each triple's scenarios appear roughly uniformly there). `uniform` draws uniformly
over all legal ordered scenarios. `sparring.games.negotiation.distribution` measures the fit.
"""

from __future__ import annotations

import random
from functools import lru_cache
from itertools import product
from typing import Literal

from pydantic import Field

from sparring.games.negotiation.instance import (
    MAX_COUNT,
    MAX_ITEMS,
    MIN_COUNT,
    MIN_ITEMS,
    TOTAL_VALUE,
    DondInstance,
    Triple,
    scenario_key,
    scenario_split,
)
from sparring.types import Strict

Scenario = tuple[Triple, Triple, Triple]  # counts, values of context 0, values of context 1

# Number of games per count triple (book, hat, ball) in upstream selfplay.txt (sum 4,086). Triples
# that never occur there — (2,2,3), (2,3,2), (2,4,1), (3,1,3), (3,2,2), (3,3,1), (4,1,2),
# (4,2,1) — get weight 0 under `dond`; they are legal and drawn under `uniform`.
DOND_COUNT_WEIGHTS: dict[Triple, int] = {
    (1, 1, 3): 455, (1, 3, 1): 448, (3, 1, 1): 445, (1, 2, 2): 267, (2, 2, 2): 267,
    (2, 1, 2): 265, (1, 1, 4): 262, (4, 1, 1): 260, (1, 4, 1): 258, (2, 2, 1): 254,
    (2, 1, 3): 115, (1, 3, 2): 114, (2, 3, 1): 113, (3, 1, 2): 112, (3, 2, 1): 111,
    (1, 2, 3): 106, (1, 2, 4): 73, (1, 4, 2): 69, (1, 3, 3): 59, (2, 1, 4): 33,
}

CountsDist = Literal["dond", "uniform"]
Split = Literal["train", "val", "test", "all"]


def legal_counts() -> list[Triple]:
    """Every count triple: each 1-4, total 5-7."""
    return [c for c in product(range(MIN_COUNT, MAX_COUNT + 1), repeat=3)  # type: ignore[misc]
            if MIN_ITEMS <= sum(c) <= MAX_ITEMS]


def value_vectors(counts: Triple) -> list[Triple]:
    """Every private value vector (ints >= 0) worth exactly 10 for the whole pool."""
    return [v for v in product(*(range(TOTAL_VALUE // c + 1) for c in counts))  # type: ignore[misc]
            if sum(x * c for x, c in zip(v, counts, strict=False)) == TOTAL_VALUE]


def _legal_pair(va: Triple, vb: Triple) -> bool:
    """Every type valued by someone, and some type valued by both (hence never 10 + 10)."""
    return all(a > 0 or b > 0 for a, b in zip(va, vb, strict=False)) and any(a > 0 and b > 0 for a, b in zip(va, vb, strict=False))


@lru_cache(maxsize=1)
def scenarios_by_counts() -> dict[Triple, tuple[tuple[Triple, Triple], ...]]:
    """All legal ordered value pairs per count triple (computed once, ~10 ms)."""
    out = {}
    for c in legal_counts():
        vecs = value_vectors(c)
        out[c] = tuple((a, b) for a in vecs for b in vecs if _legal_pair(a, b))
    return out


@lru_cache(maxsize=4)
def _counts_table(dist: CountsDist) -> tuple[list[Triple], list[float]]:
    table = scenarios_by_counts()
    triples = sorted(table)
    if dist == "dond":
        weights = [float(DOND_COUNT_WEIGHTS.get(c, 0)) for c in triples]
    else:  # uniform over scenarios = triple weighted by how many scenarios it has
        weights = [float(len(table[c])) for c in triples]
    acc, cum = 0.0, []
    for w in weights:
        acc += w
        cum.append(acc)
    return triples, cum


def sample_scenario(rng: random.Random, counts_dist: CountsDist = "dond") -> Scenario:
    triples, cum = _counts_table(counts_dist)
    counts = rng.choices(triples, cum_weights=cum)[0]
    va, vb = rng.choice(scenarios_by_counts()[counts])
    return counts, va, vb


class GeneratorArgs(Strict):
    """Arguments of the `dond_generated` instance source."""

    n: int = Field(1000, ge=1, description="number of scenarios")
    seed: int = Field(0, description="same seed -> same scenarios (prefix-stable in n)")
    counts_dist: CountsDist = "dond"
    id_prefix: str = "dond-gen"
    split: Split | None = Field(None, description="keep only scenarios of this scenario-level split")
    limit: int | None = Field(None, ge=1, description="cap on the number of scenarios (min with n)")
    shuffle: bool = Field(False, description="accepted for a uniform interface; draws are already random")


def generate_instances(n: int = 1000, seed: int = 0, counts_dist: CountsDist = "dond",
                       id_prefix: str = "dond-gen", split: Split | None = None) -> list[DondInstance]:
    """`n` scenarios from one RNG seeded with `seed`; the first k are the same for every n >= k.

    With `split`, draws whose scenario falls in another scenario-level split are skipped (ids keep
    the draw index, so a scenario has the same id whatever split was asked for).
    """
    rng = random.Random(f"dond-generator:{seed}")
    out: list[DondInstance] = []
    i = 0
    while len(out) < n:
        counts, va, vb = sample_scenario(rng, counts_dist)
        if split in (None, "all") or scenario_split(scenario_key(counts, (va, vb))) == split:
            out.append(DondInstance(id=f"{id_prefix}-{seed}-{i:05d}", counts=counts, values=(va, vb)))
        i += 1
    return out
