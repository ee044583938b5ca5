"""`--dry-run` of the training commands: every shipped training config validates with all its
nested experiments and prints a plan, nothing is loaded or written, and a broken nested spec fails
with the file and key."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sparring.cli import main

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "sparring" / "configs" / "train").glob("*.yaml"))


def cli(*args: str) -> int:
    """`sparring ARGS`; the exit code (typer exits 0 after a command)."""
    try:
        main(list(args))
    except SystemExit as e:
        return int(e.code or 0)
    return 0


@pytest.fixture
def no_weights(monkeypatch, tmp_path):
    """Loading any model weights fails the test; runs go to a scratch directory."""
    import transformers

    def refuse(*args, **kwargs):
        raise AssertionError("a dry run loaded model weights")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", refuse)
    monkeypatch.setenv("SPARRING_RUNS_DIR", str(tmp_path / "runs"))
    return tmp_path / "runs"


@pytest.mark.parametrize("config", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_training_config_dry_runs(config, no_weights, capsys):
    command = "grpo" if "experiment" in yaml.safe_load(config.read_text()) else "loop"
    assert cli("train", command, config.stem, "--dry-run") == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "nothing loaded" in out
    assert "game(s)" in out and "step(s)" in out
    assert not no_weights.exists()  # no run directory, no state.json


def test_loop_dry_run_prints_iterations_games_rows_and_steps(no_weights, capsys):
    assert cli("train", "loop", "dpo-quickstart", "--dry-run") == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "2 iteration(s)" in out
    # the demonstrator warm start: 8 questions x both seat orders x both sides, 24 SFT steps
    assert "warm start: SFT on 32 game(s) of the demonstrator debate-demonstrator on 8 instance(s), 24" in out
    assert "32 game(s)" in out and "(each a tree of k=4 branches at depth 1)" in out  # against the base, both seats
    assert "<= 32 pairs" in out and "<= 8 step(s)" in out  # 32 pairs / batch 4
    assert "32 game(s) on 8 held-out instance(s)" in out


def test_the_greedy_check_is_validated_and_planned(no_weights, capsys):
    """debate-dpo's `check:` plays its first 8 training questions (both seat orders and sides against
    the base: 32 debates), greedily."""
    assert cli("train", "loop", "debate-dpo", "--dry-run") == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "32 greedy game(s) of the new and of the previous policy" in out and "8" in out.split("greedy game(s)")[1]


def test_a_broken_nested_experiment_fails_the_dry_run(tmp_path, no_weights, capsys):
    data = yaml.safe_load((ROOT / "configs" / "train" / "selfplay-sft-quickstart.yaml").read_text())
    data["selfplay"]["agents"]["policy"]["sampling"]["temprature"] = 0.5
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(data))
    assert cli("train", "loop", str(path), "--dry-run") == 2
    assert "temprature" in capsys.readouterr().err


def test_unknown_base_model_fails_the_dry_run(tmp_path, no_weights, capsys):
    data = yaml.safe_load((ROOT / "configs" / "train" / "grpo-quickstart.yaml").read_text())
    data["model"] = "no-such-model"
    path = tmp_path / "grpo.yaml"
    path.write_text(yaml.safe_dump(data))
    assert cli("train", "grpo", str(path), "--dry-run") == 2
    assert "no-such-model" in capsys.readouterr().err


def test_grpo_dry_run_checks_and_names_the_starting_adapter(tmp_path, no_weights, capsys):
    data = yaml.safe_load((ROOT / "configs" / "train" / "grpo-quickstart.yaml").read_text())
    data["experiment"]["models_file"] = str(ROOT / "configs" / "experiments" / "models" / "scripted.yaml")
    data["adapter"] = str(tmp_path / "missing")
    path = tmp_path / "grpo.yaml"
    path.write_text(yaml.safe_dump(data))
    assert cli("train", "grpo", str(path), "--dry-run") == 2
    assert "adapter" in capsys.readouterr().err
    lora = tmp_path / "lora"
    lora.mkdir()
    (lora / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "base_model_name_or_path": None}))
    data["adapter"] = str(lora)
    path.write_text(yaml.safe_dump(data))
    assert cli("train", "online", str(path), "--dry-run") == 0
    assert f"from adapter {lora}" in " ".join(capsys.readouterr().out.split())
    assert cli("train", "grpo", str(path), "--dry-run") == 0  # the command's former name still works
    assert f"from adapter {lora}" in " ".join(capsys.readouterr().out.split())


def test_sft_dry_run_counts_rows_and_steps_and_checks_columns(tmp_path, no_weights, capsys):
    rows = tmp_path / "rows.jsonl"
    row = {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]}
    rows.write_text("\n".join(json.dumps(row) for _ in range(5)))
    assert cli("train", "sft", str(rows), "-o", str(tmp_path / "out"), "--dry-run") == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "5 row(s)" in out and "3 step(s)" in out  # ceil(5 / batch 2)
    assert not (tmp_path / "out").exists()
    assert cli("train", "dpo", str(rows), "-o", str(tmp_path / "out"), "--dry-run") == 2
    assert "row 1 has no prompt, chosen, rejected" in " ".join(capsys.readouterr().err.split())


def test_unreadable_rows_fail_with_the_line_not_a_traceback(tmp_path, no_weights, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"messages": []}\n{messages: oops}\n')
    assert cli("train", "sft", str(rows), "-o", str(tmp_path / "out"), "--dry-run") == 2
    assert f"{rows}:2" in capsys.readouterr().err


def test_selfplay_script_help_names_selfplay_sft_not_iterative_dpo():
    help_text = subprocess.run([sys.executable, str(ROOT / "scripts" / "run_selfplay_sft.py"), "--help"],
                               capture_output=True, text=True, check=True, env=_env()).stdout
    flat = " ".join(help_text.split())
    assert "Self-play SFT" in flat and "Iterative DPO" not in flat
    assert "--dry-run" in flat and "--restart-from" in flat and "--max-minutes" in flat


def _env():
    import os

    return {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
