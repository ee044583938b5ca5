"""`sparring` command line. Command groups live in their own modules of this package.

Adding commands is one new module here with a `register(app)` function (e.g.
`app.add_typer(group, name="models")` or `app.command("run")(run)`): every module of the package
that defines `register` is registered, in name order, with no list to edit. Keep module imports
light: heavy libraries (torch, transformers) are imported inside the command functions, so
`sparring --help` stays instant.

User-facing errors (`SparringError`, pydantic `ValidationError`) are printed as one red message
with exit code 2 instead of a traceback; set SPARRING_DEBUG=1 to see the traceback.
"""

from __future__ import annotations

import sys
from typing import Any

import typer
from pydantic import ValidationError
from typer.core import TyperGroup

from sparring.cli.common import EXIT_USER_ERROR, debug_enabled, format_error, print_error
from sparring.errors import SparringError

__all__ = ["EXIT_USER_ERROR", "app", "debug_enabled", "format_error", "main", "print_error"]


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

    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if callable(register):
            register(app)


_register(app)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point (`sparring = sparring.cli:main`)."""
    try:
        app(args=argv, prog_name="sparring")
    except (SparringError, ValidationError) as err:  # raised outside a command (e.g. a callback)
        if debug_enabled():
            raise
        print_error(err)
        sys.exit(EXIT_USER_ERROR)
    except KeyboardInterrupt:
        print_error(SparringError("interrupted"))
        sys.exit(130)


