"""Registry of Deal or No Deal instance sources: name -> (strict args schema, loader).

Experiment YAML names a source and its args, e.g.
    dataset: {name: dond_selfplay, split: test, limit: 200, args: {path: data/selfplay.txt}}
(`path` left out: `selfplay.txt` from $SPARRING_DATA_DIR or `sparring data fetch dond-contexts`.)
Adding a source is one function plus `@register_source("name", args=ArgsModel)`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparring.config_io import validate
from sparring.datafiles import resolve
from sparring.games.negotiation.dialogues import DialogueArgs, load_dond_dialogues
from sparring.games.negotiation.generator import GeneratorArgs, generate_instances
from sparring.games.negotiation.instance import DondInstance
from sparring.games.negotiation.loaders import SelfplayArgs, load_selfplay_contexts
from sparring.registry import Registry
from sparring.types import Strict


@dataclass(frozen=True)
class Source:
    name: str
    Args: type[Strict]
    load: Callable[[Any], list[DondInstance]]
    description: str = ""


NEGOTIATION_SOURCES: Registry[Source] = Registry(
    "negotiation instance source", scan=["sparring.games.negotiation"], marker="@register_source(",
    entry_points="sparring.datasets")


def register_source(name: str, *, args: type[Strict]):
    """Function decorator: the function takes a validated `args` model and returns instances."""
    def deco(fn: Callable[[Any], list[DondInstance]]) -> Callable[[Any], list[DondInstance]]:
        NEGOTIATION_SOURCES.register(name)(Source(name, args, fn, (fn.__doc__ or "").strip().split("\n")[0]))
        return fn
    return deco


def load_instances(source: str, args: dict[str, Any] | None = None, *, split: str | None = None,
                   limit: int | None = None, seed: int | None = None, base_dir: str | Path | None = None,
                   file: str | None = None) -> list[DondInstance]:
    """Validate `args` strictly against the source's schema and load (errors name `dataset.args.KEY`).

    Keyword values override `args` (the experiment's `dataset.split/limit/seed`), as for the
    debate datasets; a relative `path` is resolved against `base_dir` (the config's folder).
    """
    src = NEGOTIATION_SOURCES.get(source)
    merged = dict(args or {})
    for key, val in (("split", split), ("limit", limit), ("seed", seed)):
        if val is not None:
            merged[key] = val
    parsed = validate(src.Args, merged, file=file, prefix="dataset.args")
    path = getattr(parsed, "path", None)
    if isinstance(path, str) and base_dir is not None and not Path(path).expanduser().is_absolute():
        parsed = parsed.model_copy(update={"path": str(Path(base_dir) / path)})
    return src.load(parsed)


@register_source("dond_generated", args=GeneratorArgs)
def _generated(a: GeneratorArgs) -> list[DondInstance]:
    """Seeded synthetic scenarios with the upstream distribution (no files needed)."""
    n = min(a.n, a.limit) if a.limit else a.n
    return generate_instances(n, a.seed, a.counts_dist, a.id_prefix, a.split)


@register_source("dond_selfplay", args=SelfplayArgs)
def _selfplay(a: SelfplayArgs) -> list[DondInstance]:
    """Scenarios of an upstream selfplay.txt file (lines 2i, 2i+1 = game i)."""
    path = resolve("dond-contexts", a.path, "dataset.args.path")
    return load_selfplay_contexts(path, split=a.split, limit=a.limit, shuffle=a.shuffle, seed=a.seed,
                                  dedupe=a.dedupe, fractions={str(k): v for k, v in a.fractions.items()}, id_prefix=a.id_prefix)


@register_source("dond_dialogues", args=DialogueArgs)
def _dialogues(a: DialogueArgs) -> list[DondInstance]:
    """Scenarios of human dialogues (data.txt / val / test), first speaker = Player_1."""
    path = resolve("dond-dialogues", a.path, "dataset.args.path")
    return [t.instance for t in load_dond_dialogues(path, split=a.split, limit=a.limit, shuffle=a.shuffle,
                                                    seed=a.seed, only_complete=a.only_complete,
                                                    fractions={str(k): v for k, v in a.fractions.items()},
                                                    id_prefix=a.id_prefix)]
