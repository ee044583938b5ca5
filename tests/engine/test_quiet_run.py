"""`sparring run -q` prints no progress bar at all: not the run's, and not the model libraries'
("Loading weights" from transformers, downloads from huggingface_hub); the libraries' switches are
as they were afterwards. Without -q the bar is there (so the check can fail)."""

from __future__ import annotations

import os

import yaml
from typer.testing import CliRunner

from sparring.cli.root import app
from sparring.models.progress_bars import ENV, no_progress_bars


def _experiment(tmp_path, model_dir):
    (tmp_path / "models.yaml").write_text(yaml.safe_dump({"models": {"tiny-disk": {
        "backend": "hf", "args": {"model": str(model_dir), "device": "cpu", "dtype": "float32"},
        "sampling": {"max_new_tokens": 4}}}}))
    config = {"description": "tiny model, one Wordle answer", "game": "wordle",
              "game_args": {"max_guesses": 1, "max_errors": 1, "prefill": True},
              "dataset": {"name": "list", "args": {"targets": ["crane"]}}, "models_file": "models.yaml",
              "agents": {"guesser": {"role": "guesser", "model": "tiny-disk"}},
              "tournament": {"type": "self_play", "participants": ["guesser"]}, "run": {"seed": 0}}
    path = tmp_path / "tiny-wordle.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_quiet_silences_the_model_libraries_bars_and_restores_them(tmp_path, tiny_model_dir, monkeypatch):
    from huggingface_hub.utils import are_progress_bars_disabled
    from transformers.utils import logging as tf_logging

    monkeypatch.delenv(ENV, raising=False)
    config = _experiment(tmp_path, tiny_model_dir)
    runner = CliRunner()
    quiet = runner.invoke(app, ["run", str(config), "-o", str(tmp_path / "runs"), "--run-name", "q", "-q",
                                "--no-report"])
    assert quiet.exit_code == 0, quiet.output
    assert "Loading weights" not in quiet.output and "%|" not in quiet.output, quiet.output
    assert tf_logging.is_progress_bar_enabled() and not are_progress_bars_disabled()  # as before the run
    assert ENV not in os.environ
    loud = runner.invoke(app, ["run", str(config), "-o", str(tmp_path / "runs"), "--run-name", "loud", "--no-report"])
    assert loud.exit_code == 0, loud.output
    assert "Loading weights" in loud.output  # the bar -q silences exists


def test_no_progress_bars_leaves_a_users_own_settings_alone(monkeypatch):
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars
    from transformers.utils import logging as tf_logging

    monkeypatch.setenv(ENV, "0")
    tf_logging.disable_progress_bar()  # a user who had turned transformers' bars off (and the hub's with them)
    try:
        with no_progress_bars():
            assert not tf_logging.is_progress_bar_enabled() and os.environ[ENV] == "1"
        assert not tf_logging.is_progress_bar_enabled() and are_progress_bars_disabled()
        assert os.environ[ENV] == "0"
        with no_progress_bars(quiet=False):
            assert os.environ[ENV] == "0"  # nothing happens unless asked
    finally:
        tf_logging.enable_progress_bar()
    enable_progress_bars()
    with no_progress_bars():
        assert are_progress_bars_disabled()
    assert not are_progress_bars_disabled()
    disable_progress_bars()
    enable_progress_bars()
