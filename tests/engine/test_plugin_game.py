"""A game from another installed package registers through the `sparring.games` entry point and
runs, stores and reports like a built-in game — with no edit anywhere in sparring."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow  # two fresh interpreters

PLUGIN = Path(__file__).parent.parent / "plugins" / "coinflip"


def test_an_entry_point_game_plays_end_to_end(tmp_path):
    (tmp_path / "models.yaml").write_text(yaml.safe_dump({"models": {"guesser": {
        "backend": "scripted", "args": {"mode": "cycle", "texts": ["hmm", "GUESS: heads"]}}}}))
    config = tmp_path / "coins.yaml"
    config.write_text(yaml.safe_dump({
        "game": "coinflip", "dataset": {"name": "coins", "args": {"n": 4}}, "models_file": "models.yaml",
        "agents": {"g": {"role": "guesser", "model": "guesser"}},
        "tournament": {"type": "self_play", "participants": ["g"]}}))
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
