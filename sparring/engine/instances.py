"""The `dataset:` block of an experiment becomes a list of Instances.

Each game declares its own sources (`Game.load_instances`: debate datasets, negotiation scenario
sources, ...); this module adds what every game shares: limits, unique ids, and errors that name
the configuration file and key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from sparring.config_io import format_validation_error
from sparring.errors import ConfigError, SparringError, UnknownNameError
from sparring.gameapi.game import DatasetConfig, Instance


def load_instances(exp: Any) -> list[Instance]:
    """Instances of a resolved Experiment, limited by dataset.limit and run.num_iters."""
    cfg = exp.config
    ds: DatasetConfig = cfg.dataset
    try:
        instances = list(exp.game.load_instances(ds, _base_dir(ds, Path(exp.file).parent)))
    except UnknownNameError as e:
        raise exp.error(str(e), "dataset.name") from None
    except ValidationError as e:
        raise exp.error(str(format_validation_error(e, _model_of(e), file=None, prefix="dataset.args")),
                        "dataset.args") from None
    except ConfigError as e:
        from sparring.engine.loader import bare_message

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
