"""Taboo instances (a target word and its taboo words) and their sources: the shipped word file
and clembench's `instances.json` layout for taboo."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from sparring.config_io import strict_args
from sparring.errors import ConfigError
from sparring.gameapi.game import DatasetConfig, Instance
from sparring.gameapi.splits import hash_split, select
from sparring.types import Strict

WORDS_FILE = Path(__file__).parent / "data" / "taboo_words.json"
BANDS: tuple[str, ...] = ("high", "medium", "low")
# A small list: larger val / test shares than usual, so an evaluation has ~30 words.
FRACTIONS: dict[str, float] = {"train": 0.6, "val": 0.2, "test": 0.2}


class TabooInstance(Instance):
    target: str = Field(min_length=1)
    taboo: list[str] = Field(default_factory=list)
    band: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("target")
    @classmethod
    def _strip(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError("the target word is empty")
        return v


def word_split(word: str, salt: str = "taboo") -> str:
    """Deterministic split by the target word (the same word is in one split on every machine)."""
    return hash_split(word, FRACTIONS, salt)


class WordsArgs(Strict):
    """`dataset: {name: taboo_words}`: the shipped list (150+ words in three frequency bands)."""

    bands: list[str] | None = Field(None, description="only these bands (high, medium, low)")
    split: str | None = None
    limit: int | None = Field(None, ge=1)
    seed: int | None = None
    shuffle: bool = Field(True, description="seeded shuffle before `limit`")


class ClembenchArgs(Strict):
    """`dataset: {name: clembench, args: {path: instances.json}}`: clembench's taboo instances."""

    path: str
    experiments: list[str] | None = Field(None, description="only these experiment names (e.g. high_en)")
    split: str | None = None
    limit: int | None = Field(None, ge=1)
    seed: int | None = None
    shuffle: bool = False


def _instance(id: str, target: str, taboo: list[str], band: str | None, **meta: Any) -> TabooInstance:
    return TabooInstance(id=id, target=target, taboo=[t.strip() for t in taboo if t.strip()], band=band,
                         metadata={"split": word_split(target), **meta})


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ConfigError(f"cannot read taboo instances {path}: {e}") from None


def shipped_instances() -> list[TabooInstance]:
    data = _read_json(WORDS_FILE)
    return [_instance(f"taboo-{w['word']}", w["word"], w["taboo"], w["band"], zipf=w.get("zipf"))
            for w in data["words"]]


def load_taboo_instances(dataset: DatasetConfig, base_dir: Path) -> list[TabooInstance]:
    merged = {**dataset.args}
    for key in ("split", "limit", "seed"):
        if getattr(dataset, key) is not None:
            merged[key] = getattr(dataset, key)
    if dataset.name in ("taboo_words", "words"):
        a = strict_args(WordsArgs, merged)
        bad = [b for b in a.bands or [] if b not in BANDS]
        if bad:
            raise ConfigError(f"dataset.args.bands: unknown band(s) {bad}; use {', '.join(BANDS)}")
        items = [i for i in shipped_instances() if a.bands is None or i.band in a.bands]
        return select(items, a.split, a.limit, a.seed, a.shuffle)
    if dataset.name == "clembench":
        ca = strict_args(ClembenchArgs, merged)
        path = Path(ca.path).expanduser()
        if not path.is_absolute():
            path = base_dir / path
        return select(clembench_instances(path, ca.experiments), ca.split, ca.limit, ca.seed, ca.shuffle)
    raise ConfigError(f"unknown taboo dataset {dataset.name!r}; use taboo_words or clembench")


def clembench_instances(path: Path, only: list[str] | None = None) -> list[TabooInstance]:
    """clembench layout: {"experiments": [{"name", "game_instances": [{"game_id", "target_word",
    "related_word": [...]}]}]}; the experiment name (e.g. high_en) becomes the band."""
    data = _read_json(path)
    out = []
    for exp in data.get("experiments", []):
        name = str(exp.get("name", ""))
        if only is not None and name not in only:
            continue
        for gi in exp.get("game_instances", []):
            target = str(gi.get("target_word", "")).strip()
            related = gi.get("related_word", [])
            if not target or not isinstance(related, list):
                raise ConfigError(f"{path}: experiment {name!r} game {gi.get('game_id')}: needs target_word "
                                  "and a related_word list")
            out.append(_instance(f"clembench-{name}-{gi.get('game_id')}", target, [str(r) for r in related],
                                 name or None, experiment=name, game_id=gi.get("game_id")))
    if not out:
        raise ConfigError(f"{path}: no taboo game_instances found")
    return out
