"""The suite's experiments by name (`@experiment("name")`), found by a scan of
`sparring.learning.experiments`: adding an experiment is one new module there, named as the
experiment (`textarena-kuhn` is `experiments/textarena_kuhn.py`), with no list to edit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

EXPERIMENTS: dict[str, Callable[[Any], Any]] = {}


def experiment(name: str) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    def deco(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        EXPERIMENTS[name] = fn
        return fn
    return deco


def load_experiments() -> dict[str, Callable[[Any], Any]]:
    """Import every module of `sparring.learning.experiments` (each registers itself)."""
    import importlib
    import pkgutil

    from sparring.learning import experiments

    for info in pkgutil.iter_modules(experiments.__path__):
        importlib.import_module(f"{experiments.__name__}.{info.name}")
    return EXPERIMENTS
