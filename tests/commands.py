"""Several commands in one fresh process, each through the entry point its command line uses: a
process that loads the model libraries pays ~12 s of imports on 2 cores, so end-to-end tests that
need a fresh process (a clean environment, a hub endpoint read at import) but not one per command
run their commands one after the other in one."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

DRIVER = textwrap.dedent("""
    import json, runpy, sys
    from sparring.cli import main
    for argv in json.loads(sys.argv[1]):
        print("== command:", *argv, flush=True)
        try:
            if argv[0].endswith(".py"):  # a script, as `python SCRIPT ARGS` runs it
                sys.argv = argv
                runpy.run_path(argv[0], run_name="__main__")
            else:  # `sparring ARGS`
                main(argv)
        except SystemExit as e:
            if e.code not in (0, None):
                raise
""")


def run_commands(commands: list[list[str]], cwd: Path | None = None, env: dict[str, str] | None = None,
                 timeout: int = 600) -> subprocess.CompletedProcess:
    """The commands one after the other in one process (`sparring ARGS`, or `SCRIPT.py ARGS`); the
    first that fails ends the process with its status."""
    return subprocess.run([sys.executable, "-c", DRIVER, json.dumps(commands)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
