"""The suite's experiments by name (`@experiment("name")`), in the order the suite runs them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

EXPERIMENTS: dict[str, Callable[[Any], Any]] = {}


def experiment(name: str) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    def deco(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        EXPERIMENTS[name] = fn
        return fn
    return deco
