"""A local OpenAI-compatible server on 127.0.0.1 for the integration tests, answering as the
scripted player of `held_games.py`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "models"))
from fake_api_server import FakeAPIServer  # noqa: E402
from held_games import reply  # noqa: E402


@pytest.fixture(scope="module")
def server():
    srv = FakeAPIServer().start()
    srv.behaviour.reply = reply
    yield srv
    srv.stop()
