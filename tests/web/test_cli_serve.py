"""`sparring serve`: builds the app over the runs directory and warns when not bound to localhost."""

from __future__ import annotations

from typer.testing import CliRunner


def _serve(monkeypatch, tmp_path, *args):
    import uvicorn

    from sparring.cli.root import app

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda a, **kw: calls.append((a, kw)))
    result = CliRunner().invoke(app, ["serve", str(tmp_path / "runs"), *args])
    return result, calls


def test_serve_starts_uvicorn_on_localhost_without_warning(monkeypatch, tmp_path):
    result, calls = _serve(monkeypatch, tmp_path, "--port", "8123")
    assert result.exit_code == 0, result.output
    (app, kw), = calls
    assert kw["host"] == "127.0.0.1" and kw["port"] == 8123
    assert app.state.web.runs_dir == tmp_path / "runs"
    assert "warning" not in result.output


def test_serve_warns_on_a_public_interface(monkeypatch, tmp_path):
    result, calls = _serve(monkeypatch, tmp_path, "--host", "0.0.0.0")
    assert result.exit_code == 0 and "no authentication" in result.output and calls


def test_serve_takes_extra_configs_and_refuses_unplayable_ones(monkeypatch, tmp_path):
    good = tmp_path / "mine.yaml"
    good.write_text("name: mine\ngame: dond\ndataset: {name: dond_generated, args: {n: 3}}\n"
                    "agents: {bot: {role: negotiator, model: scripted-negotiator}}\n")
    result, calls = _serve(monkeypatch, tmp_path, "--config", str(good))
    assert result.exit_code == 0, result.output
    assert "mine" in calls[0][0].state.web.choices()
    bad = tmp_path / "bad.yaml"
    bad.write_text("game: chess\n")
    result, calls = _serve(monkeypatch, tmp_path, "--config", str(bad))
    assert result.exit_code == 2 and "not a playable experiment" in result.output and not calls
