"""A game from another installed package registers through the `sparring.games` entry point and
runs, stores and reports like a built-in game — with no edit anywhere in sparring."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # two fresh interpreters

PLUGIN = Path(__file__).parent.parent / "plugins" / "coinflip"


def test_an_entry_point_game_plays_end_to_end(tmp_path):
    """The README's "write your own game" example, as shipped in tests/plugins/coinflip/."""
    import shutil

    for name in ("coins.yaml", "models.yaml"):
        shutil.copy(PLUGIN / name, tmp_path / name)
    config = tmp_path / "coins.yaml"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PLUGIN), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-m", "sparring.cli", "run", str(config), "-o", str(tmp_path / "runs"),
                          "--run-name", "c", "--quiet"], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = (tmp_path / "runs" / "c" / "episodes.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == 4 and all(r["game"] == "coinflip" for r in records)
    assert all(any(c["rejected"] for c in r["calls"]) for r in records)  # "hmm" was corrected
    stats = json.loads((tmp_path / "runs" / "c" / "report" / "stats.json").read_text())
    assert stats["counts"]["episodes"] == 4 and stats["ratings"]["n_comparisons"] == 0  # nobody to beat


def test_the_readme_example_is_the_tested_plugin():
    """Every file the README's "write your own game" section shows is the file this test runs."""
    import re

    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"<!-- file: (\S+) -->\n```\w*\n(.*?)```", readme, re.DOTALL)
    assert len(blocks) >= 4
    for path, text in blocks:
        assert (PLUGIN / path).read_text(encoding="utf-8") == text, path
