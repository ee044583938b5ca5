"""`sparring` command line. Command groups live in their own modules of this package.

Adding commands is one new module here with a `register(app)` function (e.g.
`app.add_typer(group, name="models")` or `app.command("run")(run)`): every module of the package
that defines `register` is registered, in name order, with no list to edit. Keep module imports
light: heavy libraries (torch, transformers) are imported inside the command functions, so
`sparring --help` stays instant.

The scripts in scripts/ call a `NAME_main` function of this package (or `main([...])`, the root app
with fixed leading arguments); each `NAME_main` has a `NAME_app` beside it that builds the same
Typer app without running it, taking the arguments of `NAME_main` that shape the app.
tests/test_doc_commands.py relies on that pairing to parse every documented command line in-process.

User-facing errors (`SparringError`, pydantic `ValidationError`) are printed as one red message
with exit code 2 instead of a traceback; set SPARRING_DEBUG=1 to see the traceback.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["app", "main"]


def __getattr__(name: str) -> Any:
    """`sparring.cli.app` (the Typer app, in `root.py`) is built on first use: `main` imports it inside its
    Ctrl-C guard, so an interrupt while libraries load never prints a traceback."""
    if name == "app":
        from sparring.cli.root import app

        return app
    raise AttributeError(name)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point (`sparring = sparring.cli:main`)."""
    try:  # importing the app loads libraries: an interrupt here must not print a traceback either
        from sparring.cli.common import run_guarded
        from sparring.cli.root import app
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        sys.exit(130)
    run_guarded(lambda: app(args=argv, prog_name="sparring"))
