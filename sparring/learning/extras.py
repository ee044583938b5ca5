"""An experiment that needs an optional extra says so before it starts, in one sentence that names
the install command, instead of failing later inside a game with an ImportError."""

from __future__ import annotations

import importlib.util

from sparring.errors import SparringError


def require_extra(experiment: str, module: str, extra: str, what: str) -> None:
    """Raise a clear error when `module` (installed by `sparring[extra]`) is not importable."""
    if importlib.util.find_spec(module) is None:
        raise SparringError(f"{experiment} needs {what}: pip install 'sparring[{extra}]'")
