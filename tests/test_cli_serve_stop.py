"""`sparring models serve` runs `transformers serve` as a child: a SIGTERM to sparring stops the
server too (before, the server was left running, holding its port, after the command was stopped)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

PARENT = """
import sys
from sparring.cli.models import run_server
child = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(120)"
sys.exit(run_server([sys.executable, "-c", child, sys.argv[1]], "."))
"""


def test_sigterm_to_sparring_stops_the_server_it_started(tmp_path: Path):
    pid_file = tmp_path / "server.pid"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(pid_file)], cwd=tmp_path)
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text()):
        assert time.monotonic() < deadline and parent.poll() is None, "the stand-in server never started"
        time.sleep(0.05)
    server = int(pid_file.read_text())
    parent.send_signal(signal.SIGTERM)
    assert parent.wait(timeout=30) == 128 + signal.SIGTERM  # the server's end, as a shell reports it
    with pytest.raises(ProcessLookupError):
        os.kill(server, 0)  # stopped and reaped: no server left behind
