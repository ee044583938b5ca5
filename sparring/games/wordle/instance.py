"""Wordle instances (one answer each) and their sources: the shipped answer list, an inline list,
and clembench's `instances.json` layout for wordle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from sparring.config_io import strict_args
from sparring.errors import ConfigError
from sparring.gameapi.game import DatasetConfig, Instance
from sparring.gameapi.splits import select
from sparring.games.wordle.words import TARGETS_FILE, is_word_shape, read_words, word_split
from sparring.types import Strict


class WordleInstance(Instance):
    target: str
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("target")
    @classmethod
    def _shape(cls, v: str) -> str:
        v = v.strip().lower()
        if not is_word_shape(v):
            raise ValueError(f"a Wordle answer has five letters a-z, got {v!r}")
        return v


class WordsArgs(Strict):
    """`dataset: {name: words}`: the shipped answers (the most frequent five-letter words)."""

    split: str | None = None
    limit: int | None = Field(None, ge=1)
    seed: int | None = None
    shuffle: bool = Field(True, description="seeded shuffle before `limit` (else most frequent first)")


class ListArgs(Strict):
    """`dataset: {name: list, args: {targets: [...]}}`: answers named in the config."""

    targets: list[str] = Field(min_length=1)
    split: str | None = None
    limit: int | None = Field(None, ge=1)
    seed: int | None = None


class ClembenchArgs(Strict):
    """`dataset: {name: clembench, args: {path: instances.json}}` (clembench's wordle layout)."""

    path: str
    experiments: list[str] | None = Field(None, description="only these experiment names")
    split: str | None = None
    limit: int | None = Field(None, ge=1)
    seed: int | None = None


def _instance(word: str, id: str | None = None, **meta: Any) -> WordleInstance:
    w = word.strip().lower()
    return WordleInstance(id=id or f"wordle-{w}", target=w, metadata={"split": word_split(w), **meta})


def load_wordle_instances(dataset: DatasetConfig, base_dir: Path) -> list[WordleInstance]:
    merged = {**dataset.args}
    for key in ("split", "limit", "seed"):
        if getattr(dataset, key) is not None:
            merged[key] = getattr(dataset, key)
    if dataset.name == "words":
        a = strict_args(WordsArgs, merged)
        return select([_instance(w) for w in read_words(TARGETS_FILE)], a.split, a.limit, a.seed, a.shuffle)
    if dataset.name == "list":
        la = strict_args(ListArgs, merged)
        bad = [w for w in la.targets if not is_word_shape(w.strip())]
        if bad:
            raise ConfigError(f"dataset.args.targets: not five-letter words: {bad}")
        return select([_instance(w) for w in la.targets], la.split, la.limit, la.seed, False)
    if dataset.name == "clembench":
        ca = strict_args(ClembenchArgs, merged)
        path = Path(ca.path).expanduser()
        if not path.is_absolute():
            path = base_dir / path
        return select(_clembench(path, ca.experiments), ca.split, ca.limit, ca.seed, False)
    raise ConfigError(f"unknown wordle dataset {dataset.name!r}; use words, list or clembench")


def _clembench(path: Path, only: list[str] | None) -> list[WordleInstance]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ConfigError(f"cannot read clembench instances {path}: {e}") from None
    out = []
    for exp in data.get("experiments", []):
        name = str(exp.get("name", ""))
        if only is not None and name not in only:
            continue
        for gi in exp.get("game_instances", []):
            word = str(gi.get("target_word", "")).strip().lower()
            if not is_word_shape(word):
                raise ConfigError(f"{path}: experiment {name!r} game {gi.get('game_id')}: "
                                  f"target_word {word!r} is not a five-letter word")
            out.append(_instance(word, id=f"clembench-{name}-{gi.get('game_id')}", experiment=name,
                                 game_id=gi.get("game_id")))
    if not out:
        raise ConfigError(f"{path}: no wordle game_instances found")
    return out
