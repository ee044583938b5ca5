"""The version is written once, as `sparring.__version__`; the installed metadata reads it from there
(pyproject.toml: `dynamic = ["version"]`, `[tool.setuptools.dynamic]`)."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest

import sparring

ROOT = Path(__file__).resolve().parents[1]


def test_the_installed_version_is_the_package_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+", sparring.__version__)
    assert importlib.metadata.version("sparring") == sparring.__version__


def test_pyproject_takes_the_version_from_the_package():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "sparring.__version__"}


def test_the_changelog_has_a_section_for_this_version():
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## \[{re.escape(sparring.__version__)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M)
