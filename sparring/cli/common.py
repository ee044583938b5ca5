"""What every command shares: user errors as one red line with exit code 2, no traceback."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from pydantic import ValidationError

EXIT_USER_ERROR = 2


def debug_enabled() -> bool:
    return os.environ.get("SPARRING_DEBUG", "").strip().lower() not in ("", "0", "false", "no")


def format_error(err: BaseException) -> str:
    """One readable message for a user error (no traceback, no locals: secrets stay hidden)."""
    if isinstance(err, ValidationError):
        lines = [f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in err.errors()]
        return f"invalid {err.title}: " + "; ".join(lines)
    return str(err) or type(err).__name__


def print_error(err: BaseException) -> None:
    from rich.console import Console
    from rich.text import Text

    Console(stderr=True, soft_wrap=True).print(Text(f"error: {format_error(err)}", style="bold red"))


def run_guarded(call: Callable[[], object]) -> None:
    """Run a command line app: a user error (`SparringError`, a config's `ValidationError`) raised
    outside a command's own handling is one red message and exit 2; Ctrl-C is exit 130, no traceback,
    wherever it lands (the imports below load torch: an interrupt during them is caught too).
    Under `accelerate launch` the process group is destroyed on the way out, whatever the outcome."""
    try:
        _run_reporting_user_errors(call)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        sys.exit(130)


def _run_reporting_user_errors(call: Callable[[], object]) -> None:
    from sparring.errors import SparringError
    from sparring.train import distributed

    try:
        try:
            call()
        finally:
            distributed.finish()
    except (SparringError, ValidationError) as err:
        if debug_enabled():
            raise
        print_error(err)
        sys.exit(EXIT_USER_ERROR)
