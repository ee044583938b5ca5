"""Train / val / test splits of word-keyed instances (taboo targets, wordle answers), shared by
the games that key instances by a word: a hash of the word decides, so the same word lands in
the same split on every machine, and a word never appears in two splits. And the one check that
an evaluation's held-out instances share none with its training instances (`check_disjoint`),
used by the online trainer's held-out evaluation and by every learning experiment."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from sparring.errors import ConfigError, SparringError

SPLITS: tuple[str, ...] = ("train", "val", "test")
T = TypeVar("T")


def hash_split(key: str, fractions: Mapping[str, float], salt: str) -> str:
    """The split of `key` (case-insensitive) under `fractions` (in SPLITS order, summing to 1)."""
    h = int.from_bytes(hashlib.sha256(f"{salt}:{key.strip().lower()}".encode()).digest()[:8], "big") / 2**64
    acc = 0.0
    for name in SPLITS:
        acc += fractions[name]
        if h < acc:
            return name
    return SPLITS[-1]


def select(items: Sequence[T], split: str | None, limit: int | None, seed: int | None,
           shuffle: bool = False, split_of: Any = None) -> list[T]:
    """`items` of one split (None: all), optionally shuffled by `seed`, the first `limit`.
    `split_of(item)` gives an item's split (default: `item.metadata["split"]`)."""
    out = list(items)
    if split is not None:
        if split not in SPLITS:
            raise ConfigError(f"dataset.split must be one of {', '.join(SPLITS)}, got {split!r}")
        of = split_of or (lambda item: item.metadata["split"])
        out = [i for i in out if of(i) == split]
    if shuffle:
        random.Random(seed or 0).shuffle(out)
    return out[:limit] if limit else out


def check_disjoint(experiment: str, training: Iterable[str], heldout: Iterable[str]) -> None:
    """Refuse an evaluation that could measure memorisation: the held-out instances must exist and
    share no id with the training instances."""
    train, held = set(training), set(heldout)
    if not held:
        raise SparringError(f"{experiment}: the held-out instance set is empty")
    overlap = sorted(train & held)
    if overlap:
        raise SparringError(f"{experiment}: {len(overlap)} held-out instance(s) also in the training set, "
                            f"e.g. {overlap[:3]}; the held-out set must be disjoint")
