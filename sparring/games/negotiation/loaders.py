"""Loader for upstream `selfplay.txt` scenario files (Lewis et al. 2017; used by lm-selfplay).

Format: one player context per line, `count value count value count value` for book, hat, ball;
lines 2i and 2i+1 (counting from 0) are the two players of game i. Every line is validated and
errors name the file and the line, so a hand-edited file fails clearly instead of silently.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Literal

from pydantic import Field

from sparring.config_io import read_text
from sparring.errors import ConfigError
from sparring.games.negotiation.instance import (
    DEFAULT_FRACTIONS,
    ITEMS,
    MAX_COUNT,
    MAX_ITEMS,
    MAX_VALUE,
    MIN_COUNT,
    MIN_ITEMS,
    TOTAL_VALUE,
    DondInstance,
    Triple,
    context_problems,
    scenario_key,
    scenario_split,
)
from sparring.types import Strict

Split = Literal["train", "val", "test", "all"]  # "all" (or None) = no split


def read_lines(path: str | Path) -> list[str]:
    """The lines of a UTF-8 text file; an empty file is an error that names it."""
    lines = read_text(path).splitlines()
    if not any(line.strip() for line in lines):
        raise ConfigError("the file is empty; expected one scenario or dialogue per line",
                          file=str(Path(path).expanduser()))
    return lines


def parse_context(fields: list[str], where: str, file: str) -> tuple[Triple, Triple]:
    """Six integers `c v c v c v` -> (counts, values), with every single-context constraint checked."""
    if len(fields) != 6:
        raise ConfigError(f"{where}: expected 6 integers 'count value count value count value' "
                          f"(book, hat, ball), got {len(fields)} field(s): {' '.join(fields)!r}", file=file)
    nums = []
    for tok in fields:
        try:
            nums.append(int(tok))
        except ValueError:
            raise ConfigError(f"{where}: {tok!r} is not an integer", file=file) from None
    counts, values = (nums[0], nums[2], nums[4]), (nums[1], nums[3], nums[5])
    problems = []
    bad = [f"{ITEMS[i]}={c}" for i, c in enumerate(counts) if not MIN_COUNT <= c <= MAX_COUNT]
    if bad:
        problems.append(f"item counts must be {MIN_COUNT}-{MAX_COUNT} (got {', '.join(bad)})")
    if not MIN_ITEMS <= sum(counts) <= MAX_ITEMS:
        problems.append(f"the pool must hold {MIN_ITEMS}-{MAX_ITEMS} items (got {sum(counts)})")
    out = [f"{ITEMS[i]}={v}" for i, v in enumerate(values) if not 0 <= v <= MAX_VALUE]
    if out:
        problems.append(f"values must be 0-{MAX_VALUE} (got {', '.join(out)})")
    total = sum(c * v for c, v in zip(counts, values, strict=False))
    if total != TOTAL_VALUE:
        problems.append(f"the whole pool is worth {total} to this player, must be exactly {TOTAL_VALUE}")
    if problems:
        raise ConfigError(f"{where}: " + "; ".join(problems), file=file)
    return counts, values  # type: ignore[return-value]


def check_pair(counts_a: Triple, counts_b: Triple, values: tuple[Triple, Triple], where: str, file: str) -> None:
    """Constraints that involve both players' contexts."""
    if counts_a != counts_b:
        raise ConfigError(f"{where}: the two players' item counts differ ({counts_a} vs {counts_b})", file=file)
    problems = context_problems(counts_a, values)
    if problems:
        raise ConfigError(f"{where}: " + "; ".join(problems), file=file)


def select(instances: list[DondInstance], split: Split | None = None, limit: int | None = None,
           shuffle: bool = False, seed: int = 0, fractions: dict[str, float] | None = None) -> list[DondInstance]:
    """Keep one scenario-level split, optionally shuffle (seeded), then keep the first `limit`."""
    if split not in (None, "all"):
        instances = [x for x in instances if scenario_split(x.scenario_key(), fractions) == split]
    if shuffle:
        instances = list(instances)
        random.Random(f"dond-shuffle:{seed}").shuffle(instances)
    return instances[:limit] if limit is not None else instances


def load_selfplay_contexts(path: str | Path, *, split: Split | None = None, limit: int | None = None,
                           shuffle: bool = False, seed: int = 0, dedupe: bool = False,
                           fractions: dict[str, float] | None = None,
                           id_prefix: str = "selfplay") -> list[DondInstance]:
    """Scenarios of a selfplay.txt file, game i = lines 2i, 2i+1; ids `{id_prefix}-{i:05d}`.

    `dedupe` keeps the first of the games that are the same scenario in the other seat order
    (the engine plays both seat orders through `flip` anyway). Splits are by unordered scenario.
    """
    file = str(Path(path).expanduser())
    lines = read_lines(path)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise ConfigError("no contexts: expected lines 'count value count value count value'", file=file)
    contexts: list[tuple[Triple, Triple]] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            raise ConfigError(f"line {n}: empty line (the two contexts of a game are on consecutive lines)",
                              file=file)
        contexts.append(parse_context(line.split(), f"line {n}", file))
    if len(contexts) % 2:
        raise ConfigError(f"line {len(contexts)}: odd number of contexts; each game needs two lines "
                          f"(lines 2i and 2i+1), the last game has only one", file=file)
    out: list[DondInstance] = []
    seen: set[str] = set()
    for i in range(len(contexts) // 2):
        (ca, va), (cb, vb) = contexts[2 * i], contexts[2 * i + 1]
        check_pair(ca, cb, (va, vb), f"lines {2 * i + 1}-{2 * i + 2} (game {i})", file)
        if dedupe:
            key = scenario_key(ca, (va, vb))
            if key in seen:
                continue
            seen.add(key)
        out.append(DondInstance(id=f"{id_prefix}-{i:05d}", counts=ca, values=(va, vb)))
    return select(out, split, limit, shuffle, seed, fractions)


def _default_fractions() -> dict[Literal["train", "val", "test"], float]:
    return {"train": DEFAULT_FRACTIONS["train"], "val": DEFAULT_FRACTIONS["val"], "test": DEFAULT_FRACTIONS["test"]}


class SourceArgs(Strict):
    """Arguments every negotiation instance source accepts (same names as the debate datasets)."""

    split: Split | None = Field(None, description="train | val | test (by unordered scenario); None/all = all")
    limit: int | None = Field(None, ge=1)
    seed: int = 0
    shuffle: bool = Field(False, description="shuffle with `seed` before `limit` (default: file order)")
    fractions: dict[Literal["train", "val", "test"], float] = Field(default_factory=_default_fractions)


class SelfplayArgs(SourceArgs):
    """Arguments of the `dond_selfplay` instance source."""

    path: str | None = Field(None, description="an upstream selfplay.txt file (default: $SPARRING_DATA_DIR or "
                                               "`sparring data fetch dond-contexts`)")
    dedupe: bool = Field(False, description="one game per unordered scenario")
    id_prefix: str = "selfplay"
