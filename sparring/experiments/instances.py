"""Instance sources per game: the `dataset:` block of an experiment becomes a list of Instances.

Each game family keeps its own loaders (debate datasets, negotiation scenario sources); this
module adapts the config block to them through a registry keyed by game name, so a new game
registers its source with `@register_instances("mygame")` and the engine stays game-agnostic.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from sparring.config_io import format_validation_error
from sparring.errors import ConfigError, SparringError, UnknownNameError
from sparring.experiments.config import DatasetConfig
from sparring.games.base import Game, Instance
from sparring.registry import Registry

# fn(dataset block, game, base_dir: folder relative `args.path` values are resolved against)
InstanceLoader = Callable[[DatasetConfig, Game, Path], list[Instance]]

INSTANCE_SOURCES: Registry[InstanceLoader] = Registry("instance source for game")


def register_instances(*game_names: str) -> Callable[[InstanceLoader], InstanceLoader]:
    """Function decorator: `@register_instances("dond")` -> fn(dataset_config, game) -> instances."""
    return INSTANCE_SOURCES.register(*game_names)


def load_instances(exp: Any) -> list[Instance]:
    """Instances of a resolved Experiment, limited by dataset.limit and run.num_iters."""
    cfg = exp.config
    ds: DatasetConfig = cfg.dataset
    names = [cfg.game, getattr(type(exp.game), "name", cfg.game)]
    loader = next((INSTANCE_SOURCES.get(n) for n in names if n in INSTANCE_SOURCES), None)
    if loader is None:
        raise exp.error(f"no instance source registered for game {cfg.game!r} "
                        "(register one with @register_instances)", "dataset")
    try:
        instances = list(loader(ds, exp.game, _base_dir(ds, Path(exp.file).parent)))
    except UnknownNameError as e:
        raise exp.error(str(e), "dataset.name") from None
    except ValidationError as e:
        raise exp.error(str(format_validation_error(e, _model_of(e), file=None, prefix="dataset.args")),
                        "dataset.args") from None
    except ConfigError as e:
        from sparring.experiments.loader import bare_message

        raise ConfigError(f"configuration {cfg.name!r}, dataset {ds.name!r}: {bare_message(e)}",
                          file=e.file or exp.file, key=e.key or "dataset") from None
    except SparringError as e:
        raise exp.error(f"dataset {ds.name!r}: {e}", "dataset") from None
    if ds.limit is not None:
        instances = instances[: ds.limit]
    if cfg.run.num_iters is not None:
        instances = instances[: cfg.run.num_iters]
    seen: set[str] = set()
    for inst in instances:
        if inst.id in seen:
            raise exp.error(f"dataset {ds.name!r} yields instance id {inst.id!r} twice; ids must be unique",
                            "dataset")
        seen.add(inst.id)
    if not instances:
        raise exp.error(f"dataset {ds.name!r} yields no instances{_empty_hint(ds)}", "dataset")
    return instances


def _empty_hint(ds: DatasetConfig) -> str:
    """Why a source can come back empty: most often its items were hash-split elsewhere."""
    if ds.split == "all":
        return " (its filters, e.g. hard questions only, kept nothing)"
    which = f"in split {ds.split!r}" if ds.split else "in the source's default split (test, for sources that split)"
    return (f" {which}: items are split into train/val/test by a hash of their group (article, "
            "scenario), so a small file can land entirely in another split; `dataset.split: all` "
            "takes every item")


def _base_dir(ds: DatasetConfig, config_dir: Path) -> Path:
    """A relative `args.path` is taken from the working directory, else next to the config file."""
    path = ds.args.get("path")
    if isinstance(path, str) and not Path(path).expanduser().is_absolute():
        if not Path(path).exists() and (config_dir / path).exists():
            return config_dir
    return Path.cwd()


def _model_of(err: ValidationError) -> type[BaseModel]:
    class _Any(BaseModel):
        pass

    _Any.__name__ = err.title
    return _Any


def strict_args(model: type[BaseModel], args: dict[str, Any]) -> Any:
    """Validate source arguments (`dataset.args`) against a pydantic model, naming the key."""
    try:
        return model.model_validate(args)
    except ValidationError as e:
        raise format_validation_error(e, model, file=None, prefix="dataset.args") from None


@register_instances("debate")
def debate_instances(ds: DatasetConfig, game: Game, base_dir: Path) -> list[Instance]:
    """Debate questions from `sparring.games.debate.datasets` (quality, nyu_human_debates, custom,
    generated, ...): `dataset.split/limit/seed` override the same keys of `args`."""
    from sparring.games.debate.datasets import load_dataset

    return list(load_dataset(ds.name, ds.args, split=ds.split, limit=ds.limit, seed=ds.seed, base_dir=base_dir))


@register_instances("dond", "deal_or_no_deal")
def negotiation_instances(ds: DatasetConfig, game: Game, base_dir: Path) -> list[Instance]:
    """Deal or No Deal scenarios from `sparring.games.negotiation.sources` (dond_generated,
    dond_selfplay, dond_dialogues); `generated`/`selfplay`/`dialogues` are accepted too."""
    from sparring.games.negotiation.sources import NEGOTIATION_SOURCES, load_instances

    name = ds.name if ds.name in NEGOTIATION_SOURCES or f"dond_{ds.name}" not in NEGOTIATION_SOURCES \
        else f"dond_{ds.name}"
    return list(load_instances(name, ds.args, split=ds.split, limit=ds.limit, seed=ds.seed, base_dir=base_dir))
