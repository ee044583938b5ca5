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
    """The documentation's "write your own game" example (docs/games/plugins.md), as shipped in tests/plugins/coinflip/."""
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
    """Every file docs/games/plugins.md ("write your own game") shows is the file this test runs."""
    import re

    readme = (Path(__file__).parents[2] / "docs" / "games" / "plugins.md").read_text(encoding="utf-8")
    blocks = re.findall(r"<!-- file: (\S+) -->\n```\w*\n(.*?)```", readme, re.DOTALL)
    assert len(blocks) >= 4
    for path, text in blocks:
        assert (PLUGIN / path).read_text(encoding="utf-8") == text, path


def test_a_plugin_game_is_scored_played_exported_and_reported_with_no_edit_to_sparring(tmp_path):
    """The done-when of issue 26: the plug-in folder's hooks (tests/plugins/coinflip/sparring_coinflip/
    hooks.py) alone make it play in `sparring run`, score in `sparring bench`, play in the web app,
    export SFT rows (from runs and from its human data) and train in a self-play SFT loop whose
    report shows its metrics."""
    import shutil

    for path in PLUGIN.iterdir():
        if path.is_file() and path.suffix in (".yaml", ".jsonl"):
            shutil.copy(path, tmp_path / path.name)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PLUGIN), os.environ.get("PYTHONPATH", "")])}
    script = PLUGIN.parent / "coinflip_everywhere.py"
    proc = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, env=env,
                          timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = json.loads(proc.stdout.split("RESULT ", 1)[1])
    # SFT rows from the run: the scripted guesser's final reply; from human data: the human's guesses
    assert len(out["sft"]) == 4 and all(r["messages"][-1]["content"] == "GUESS: heads" for r in out["sft"])
    assert [r["messages"][-1]["content"] for r in out["human_sft"]] == ["GUESS: heads", "GUESS: tails"]
    assert all(r["meta"]["source"] == "human:coin_guesses" for r in out["human_sft"])
    # bench: the quality hook (100 for a right guess) gives the game score; all 4 episodes played
    heads = {r["meta"]["instance_id"]: r["meta"]["reward"] == 1.0 for r in out["sft"]}  # the guess was heads
    game = out["bench"]["games"]["coinflip"]["models"]["guesser"]
    assert game["played"] == 4 and game["quality"] == pytest.approx(100.0 * sum(heads.values()) / 4)
    assert out["bench"]["clemscore"]["guesser"]["clemscore"] == game["score"] == game["quality"]
    # a real training loop: every stage ran, the plug-in's metric (from its hooks) per model in the
    # evaluation (coin@1 and the base each play alone), with its Wilson interval, in the report
    it = out["loop_state"]["iterations"]["1"]
    assert it["done"] == ["play", "export", "train", "register", "check", "evaluate"]
    assert it["export"]["rows"] > 0 and it["train"]["steps"] == 1 and it["register"]["alias"] == "coin@1"
    games = it["evaluate"]["games"]
    assert set(games) == {"coin@1", "base"} and all(g["episodes"] == 2 for g in games.values())
    for g in games.values():
        correct = g["metrics"]["correct"]
        assert correct["direction"] == "higher" and correct["interval"] == "wilson" and correct["n"] == 2
        assert 0.0 <= correct["value"] <= 1.0 and len(correct["ci"]) == 2
    assert it["evaluate"]["vs"] == {}  # one player: nobody to beat, no win rates
    assert "## Game metrics on held-out instances" in out["loop_report"] and "correct (↑)" in out["loop_report"]
    assert "| 1 | coin@1 | 2 | " in out["loop_report"] and "| 1 | base | 2 | " in out["loop_report"]
    # the web app: the play page offers the text box with the game's hint, the stored episode is the person's
    assert 'id="text-form"' in out["web_turn_page"] and "GUESS: heads or GUESS: tails" in out["web_turn_page"]
    assert "Game over: complete" in out["web_end_page"]
    [rec] = out["web_records"]
    assert rec["game"] == "coinflip" and rec["seats"]["Guesser"]["agent"] == "human"
    assert rec["instance_id"] == "coin-0" and rec["outcome"]["metrics"]["correct"] is (not heads["coin-0"])
