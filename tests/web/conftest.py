"""Fixtures of the web tests: small synthetic runs written with RunStore, a scripted DoND run,
and TestClients (each its own browser session)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

sys.path.insert(0, str(Path(__file__).parent))

from synthetic import write_run  # noqa: E402

SCRIPT = "<script>alert('pwned')</script>"


@pytest.fixture
def runs_dir(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    write_run(runs / "big", 120, failed=3, seed=1)
    write_run(runs / "evil", 4, speech=f"I quote {SCRIPT} here", seed=2)
    write_run(runs / "live", 5, seed=3, status="running")
    return runs


@pytest.fixture
def app(runs_dir: Path):
    from sparring.web.app import create_app

    return create_app(runs_dir)


@pytest.fixture
def client(app):
    from fastapi.testclient import TestClient

    with TestClient(app, base_url="http://127.0.0.1") as c:
        yield c


def csrf_of(html: str) -> str:
    m = re.search(r'name="csrf" value="([^"]+)"', html)
    assert m, "no CSRF token in the page"
    return m.group(1)
