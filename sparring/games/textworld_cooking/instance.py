"""CookingWorld instances: a simulator seed in a game fold, with the generator's parameters.

The simulator itself is the instance source: TextWorldExpress splits its seeds into folds
(train 0-999, dev 10000-..., test 20000-...) with held-out ingredients and preparations, so
`dataset.split` picks the fold and `dataset.limit` how many of its seeds are played.
"""

from __future__ import annotations

import hashlib
import random
from typing import Literal

from pydantic import Field

from sparring.errors import ConfigError
from sparring.gameapi.game import Instance
from sparring.types import Strict

Fold = Literal["train", "dev", "test"]
SPLIT_ALIASES: dict[str, Fold] = {"train": "train", "dev": "dev", "val": "dev", "validation": "dev", "test": "test"}


class CookingParams(Strict):
    """CookingWorld generator parameters (TextWorldExpress `gameParams`); defaults: one room,
    two ingredients, no distractors or doors — solvable in about a dozen steps."""

    numLocations: int = Field(1, ge=1, le=11, description="rooms in the house")
    numIngredients: int = Field(2, ge=1, le=5, description="ingredients in the recipe")
    numDistractorItems: int = Field(0, ge=0, le=10, description="food items the recipe does not need")
    includeDoors: Literal[0, 1] = Field(0, description="1: rooms have doors to open")
    limitInventorySize: Literal[0, 1] = Field(0, description="1: the inventory holds few items")

    def game_params(self) -> str:
        """The comma-separated string the simulator's `load` expects."""
        return ",".join(f"{k}={v}" for k, v in self.model_dump().items())


class CookingSourceArgs(Strict):
    """`dataset.args` of `name: cookingworld`: generator parameters, and which seeds to play."""

    params: CookingParams = Field(default_factory=CookingParams)
    seeds: list[int] | None = Field(None, description="play exactly these seeds (must belong to the fold)")
    offset: int = Field(0, ge=0, description="skip this many seeds of the fold first")


class CookingInstance(Instance):
    """One game: `seed` in `fold`, generated with `params` (a `gameParams` string)."""

    seed: int
    fold: Fold
    params: str


def fold_of(split: str | None) -> Fold:
    if split is None:
        return "test"
    fold = SPLIT_ALIASES.get(split)
    if fold is None:
        raise ConfigError(f"unknown split {split!r} for cookingworld; use train, dev (or val) or test",
                          key="dataset.split")
    return fold


def pick_seeds(valid: list[int], args: CookingSourceArgs, fold: Fold, limit: int | None,
               shuffle_seed: int | None) -> list[int]:
    """The fold's seeds to play: `args.seeds` (checked), else the fold's list from `offset`,
    shuffled by the dataset seed when one is given, cut to `limit`."""
    if args.seeds is not None:
        known = set(valid)
        bad = [s for s in args.seeds if s not in known]
        if bad:
            raise ConfigError(f"seeds {bad[:5]} are not {fold} seeds of cookingworld "
                              f"({fold} seeds run {min(valid)}-{max(valid)})", key="dataset.args.seeds")
        chosen = list(args.seeds)
    else:
        chosen = list(valid)
        if shuffle_seed is not None:
            random.Random(shuffle_seed).shuffle(chosen)
        chosen = chosen[args.offset:]
    return chosen[:limit] if limit is not None else chosen


def make_instances(seeds: list[int], fold: Fold, params: CookingParams) -> list[CookingInstance]:
    p = params.game_params()
    suffix = "" if params == CookingParams() else f"-{_short(p)}"
    return [CookingInstance(id=f"cookingworld-{fold}-{s}{suffix}", seed=s, fold=fold, params=p) for s in seeds]


def _short(params: str) -> str:
    """Short hash of non-default parameters, so ids stay unique across parameter sets."""
    return hashlib.sha256(params.encode()).hexdigest()[:8]
