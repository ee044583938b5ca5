"""The root `sparring` Typer app: user errors as one red line (exit 2), every command module of
the package registered (see `sparring/cli/__init__.py`)."""

from __future__ import annotations

from typing import Any

import typer
from pydantic import ValidationError
from typer.core import TyperGroup

from sparring.cli.common import EXIT_USER_ERROR, debug_enabled, print_error
from sparring.errors import SparringError


class _Group(TyperGroup):
    """Root group that turns user errors raised by any sub-command into a clean exit 2.

    Done here (not only in `main`) so that `typer.testing.CliRunner` sees the same behaviour.
    """

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (SparringError, ValidationError) as err:
            if debug_enabled():
                raise
            print_error(err)
            raise typer.Exit(EXIT_USER_ERROR) from None


app = typer.Typer(
    name="sparring",
    cls=_Group,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Language models debate and negotiate, are judged, rated in tournaments and trained on their games.",
)


@app.callback()
def _root() -> None:
    """Language models debate and negotiate, are judged, rated in tournaments and trained on their games."""


def _register(app: typer.Typer) -> None:
    import importlib
    import pkgutil
    from pathlib import Path

    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda m: m.name):
        if info.name.startswith("_") or info.name == "root":
            continue
        module = importlib.import_module(f"sparring.cli.{info.name}")
        register = getattr(module, "register", None)
        if callable(register):
            register(app)


_register(app)
