"""Dataset registry and the helpers every loader shares: strict args, JSONL reading with errors
that name the file and line, and leak-free hash splits."""

from __future__ import annotations

import hashlib
import json
import random
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError, model_validator

from sparring.config_io import read_text, validate
from sparring.errors import ConfigError
from sparring.games.debate.instance import DebateInstance
from sparring.registry import Registry
from sparring.types import Strict

DATASETS: Registry[type[DatasetSource]] = Registry(
    "dataset", scan=["sparring.games.debate.datasets"], marker="@register_dataset(",
    entry_points="sparring.datasets")

Split = Literal["train", "val", "test", "all"]
M = TypeVar("M", bound=BaseModel)


def register_dataset(*names: str):
    """Class decorator: `@register_dataset("quality")`."""
    return DATASETS.register(*names)


class SplitFractions(Strict):
    train: float = Field(0.8, ge=0.0)
    val: float = Field(0.1, ge=0.0)
    test: float = Field(0.1, ge=0.0)

    @model_validator(mode="after")
    def _sum(self) -> SplitFractions:
        if abs(self.train + self.val + self.test - 1.0) > 1e-6:
            raise ValueError(f"split fractions must sum to 1 (got {self.train + self.val + self.test:g})")
        return self


class DatasetArgs(Strict):
    """Arguments every source accepts. `shuffle` reorders with `seed` before `limit` applies."""

    split: Split | None = None
    limit: int | None = Field(None, ge=1)
    seed: int = 0
    shuffle: bool = False


class DatasetSource(ABC):
    """A registered loader. `Args` is its strict schema (extends DatasetArgs)."""

    Args: ClassVar[type[DatasetArgs]] = DatasetArgs
    default_split: ClassVar[Split] = "test"

    def __init__(self, args: DatasetArgs, base_dir: str | Path | None = None):
        self.args = args
        self.base_dir = Path(base_dir) if base_dir is not None else None

    @property
    def split(self) -> Split:
        return self.args.split or self.default_split

    def resolve(self, path: str) -> Path:
        p = Path(path).expanduser()
        if not p.is_absolute() and self.base_dir is not None:
            p = self.base_dir / p
        if not p.is_file():
            raise ConfigError(f"dataset file not found: {p}", key="dataset.args.path")
        return p

    @abstractmethod
    def load_all(self) -> list[DebateInstance]:
        """Instances of the configured split, in a deterministic order."""

    def load(self) -> list[DebateInstance]:
        items = self.load_all()
        if self.args.shuffle:
            random.Random(self.args.seed).shuffle(items)
        return items[: self.args.limit] if self.args.limit is not None else items


def load_dataset(name: str, args: dict[str, Any] | None = None, *, split: str | None = None,
                 limit: int | None = None, seed: int | None = None,
                 base_dir: str | Path | None = None) -> list[DebateInstance]:
    """Validate `args` against the source's schema and load. Keyword values override `args`."""
    cls = DATASETS.get(name)
    merged = dict(args or {})
    for key, val in (("split", split), ("limit", limit), ("seed", seed)):
        if val is not None:
            merged[key] = val
    parsed = validate(cls.Args, merged, prefix="dataset.args")
    return cls(parsed, base_dir=base_dir).load()


# -- helpers --------------------------------------------------------------------------------
def read_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed object) for every non-blank line. Bad JSON, text that is not UTF-8 and
    an empty file are errors that name the file (and the line)."""
    text = read_text(path)
    empty = True
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        empty = False
        try:
            yield n, json.loads(line)
        except json.JSONDecodeError as e:
            raise ConfigError(f"line {n}: invalid JSON ({e.msg} at column {e.colno})", file=str(path)) from None
    if empty:
        raise ConfigError("the dataset file is empty; expected one JSON object per line", file=str(path))


def parse_row(model: type[M], obj: Any, path: Path, line: int) -> M:
    """Validate one JSONL record; errors name the file, the line and the field path."""
    try:
        return model.model_validate(obj)
    except ValidationError as e:
        parts = []
        for err in e.errors()[:3]:
            loc = ".".join(str(p) for p in err["loc"]) or "(record)"
            msg = "required field is missing" if err["type"] == "missing" else err["msg"]
            parts.append(f"field {loc!r}: {msg}")
        more = f" (+{len(e.errors()) - 3} more)" if len(e.errors()) > 3 else ""
        raise ConfigError(f"line {line}: " + "; ".join(parts) + more, file=str(path)) from None


def hash_split(key: str, fractions: SplitFractions, salt: str = "") -> Split:
    """Deterministic split of a grouping key (an article, a story): one key, one split."""
    u = int.from_bytes(hashlib.sha256(f"{salt}\x00{key}".encode()).digest()[:8], "big") / 2**64
    if u < fractions.train:
        return "train"
    if u < fractions.train + fractions.val:
        return "val"
    return "test"


def seeded_order(key: str, seed: int) -> bool:
    """True when the two answers of item `key` should be swapped (seeded, per item)."""
    return hashlib.sha256(f"{seed}\x00{key}".encode()).digest()[0] & 1 == 1


def make_instance(*, id: str, question: str, answers: list[str], correct: int, path: Path, line: int,
                  **extra: Any) -> DebateInstance:
    try:
        return DebateInstance(id=id, question=question, answers=answers, correct=correct, **extra)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(record)"
        raise ConfigError(f"line {line}: invalid question {id!r}: {loc}: {err['msg']}", file=str(path)) from None
