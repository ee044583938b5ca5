"""`sparring models list|check` through typer's CliRunner, and the CLI's error handling."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from sparring.cli import app, main
from sparring.models.registry import ENV_VAR


@pytest.fixture
def runner(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.delenv("SPARRING_DEBUG", raising=False)
    monkeypatch.setenv("COLUMNS", "160")
    return CliRunner()


def test_models_list_shows_shipped_models(runner):
    result = runner.invoke(app, ["models", "list"])
    assert result.exit_code == 0, result.output
    for text in ("smollm2-135m", "smol-135m", "135M", "8,192", "apache-2.0", "scripted-echo", "vllm-local"):
        assert text in result.output


def test_models_list_marks_user_entries(runner, tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("models:\n  my-judge: {backend: scripted, metadata: {description: Mine.}}\n")
    result = runner.invoke(app, ["models", "list", "--models-file", str(path)])
    assert result.exit_code == 0, result.output
    assert "my-judge *" in result.output and "mine.yaml" in result.output and "smollm2-135m" in result.output


def test_models_check_scripted_echo(runner):
    result = runner.invoke(app, ["models", "check", "scripted-echo", "--prompt", "hello debate world"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "loaded in" in out and "hello debate world" in out and "3 tokens" in out and "tokens/s" in out
    # scripted-echo scores by preferring options named in the prompt: "yes" and "no" both appear.
    assert "P(yes)=0.500" in out and "P(no)=0.500" in out


def test_models_check_without_scoring(runner, tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("models:\n  mute: {backend: scripted, args: {text: fine, scoring: false}}\n")
    result = runner.invoke(app, ["models", "check", "mute", "-f", str(path)])
    assert result.exit_code == 0, result.output
    assert "cannot score; callers parse generated answers" in result.output


def test_unknown_model_exits_2_with_suggestion(runner):
    result = runner.invoke(app, ["models", "check", "smollm-135m"])
    assert result.exit_code == 2
    assert "unknown model 'smollm-135m'" in result.output and "smollm2-135m" in result.output
    assert "Traceback" not in result.output


def test_bad_user_models_file_is_a_clean_error(runner, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("models:\n  broken: {backend: scripted, args: {max_batch: 3}}\n")
    result = runner.invoke(app, ["models", "list", "--models-file", str(path)])
    assert result.exit_code == 2
    assert str(path) in result.output.replace("\n", "") and "models.broken.args.max_batch" in result.output
    assert "Traceback" not in result.output


def test_backend_failure_during_check_is_a_clean_error(runner, tmp_path):
    path = tmp_path / "flaky.yaml"
    path.write_text("models:\n  flaky: {backend: scripted, args: {fail_every: 1}}\n")
    result = runner.invoke(app, ["models", "check", "flaky", "-f", str(path)])
    assert result.exit_code == 2 and "scripted failure" in result.output


def test_debug_env_shows_the_exception(runner, monkeypatch):
    monkeypatch.setenv("SPARRING_DEBUG", "1")
    result = runner.invoke(app, ["models", "check", "nope"])
    assert result.exit_code == 1 and result.exception is not None


def test_no_args_shows_help(runner):
    result = runner.invoke(app, [])
    assert "models" in result.output and "Usage" in result.output


def test_main_entry_point_exit_code(monkeypatch, capsys):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.delenv("SPARRING_DEBUG", raising=False)
    with pytest.raises(SystemExit) as info:
        main(["models", "check", "no-such-model"])
    assert info.value.code == 2
    assert "unknown model 'no-such-model'" in capsys.readouterr().err


def test_help_shows_the_extras_to_install(runner):
    """Rich reads `[textarena]` as markup: the help strings escape it, so the install command
    the help prints is the one that works (issue #61)."""
    out = runner.invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    assert "pip install 'sparring[textarena]'" in out and "pip install 'sparring[verifiers]'" in out
