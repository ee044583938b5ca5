"""Defects found by testing from outside (issue: reliability), each through the CLI where a user
meets it: bad model output never stops a run, bad files never give a traceback, incomplete runs
exit non-zero with the command that finishes them, credentials never reach the run directory."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from sparring.cli import app
from sparring.records.reader import iter_records, read_manifest

sys.path.insert(0, str(Path(__file__).parent.parent / "models"))
sys.path.insert(0, str(Path(__file__).parent))  # reply_helpers, for `mode: callable` models
from fake_api_server import FakeAPIServer  # noqa: E402

SCRIPTED_MODELS = {"models": {
    "surrogate": {"backend": "scripted", "args": {"mode": "callable", "function": "reply_helpers:surrogate_reply"}},
    "dealer": {"backend": "scripted", "args": {"mode": "fixed", "text": "[propose] 1 books, 1 hats, 1 balls"}},
    "babbler": {"backend": "scripted", "args": {"mode": "cycle", "texts": ["hello?", "[propose] 9 books",
                                                                            "[message] ok"]}},
    "judge": {"backend": "scripted", "args": {"mode": "fixed", "text": "Debater_A | 60%", "score_mode": "random"}},
    "debater": {"backend": "scripted", "args": {"mode": "fixed", "text": "My answer is right."}},
}}


def write(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def dond(tmp_path: Path, a: str, b: str, **game_args) -> Path:
    write(tmp_path / "models.yaml", SCRIPTED_MODELS)
    return write(tmp_path / "exp.yaml", {
        "game": "dond", "game_args": {"max_turns": 6, **game_args},
        "dataset": {"name": "dond_generated", "args": {"n": 4, "seed": 0}}, "models_file": "models.yaml",
        "agents": {"a": {"role": "negotiator", "model": a}, "b": {"role": "negotiator", "model": b}},
        "tournament": {"type": "custom", "matchups": [["a", "b"]]}})


def debate_on(tmp_path: Path, dataset_file: Path) -> Path:
    write(tmp_path / "models.yaml", SCRIPTED_MODELS)
    return write(tmp_path / "exp.yaml", {
        "game": "debate", "game_args": {"format": "debate", "rounds": 1},
        "dataset": {"name": "custom", "split": "all", "args": {"path": str(dataset_file)}},
        "models_file": "models.yaml",
        "agents": {"d": {"role": "debater", "model": "debater"}, "j": {"role": "judge", "model": "judge"}},
        "tournament": {"type": "self_play", "participants": ["d"], "judges": ["j"]}})


def cli(*args: str):
    return CliRunner().invoke(app, list(args))


def test_a_lone_surrogate_in_a_reply_is_normalised_and_the_run_completes(tmp_path):
    res = cli("run", str(dond(tmp_path, "surrogate", "dealer")), "-o", str(tmp_path / "runs"),
              "--run-name", "s", "--quiet", "--no-report")
    assert res.exit_code == 0, res.output
    records = list(iter_records(tmp_path / "runs" / "s"))
    assert len(records) == 4
    texts = [c for r in records for call in r.calls for c in call.completions or [] if c.sanitized]
    assert texts and all("\ufffd" in c.text and "\udcff" not in c.text for c in texts)


def test_a_record_that_cannot_be_stored_becomes_a_failed_episode_and_the_run_goes_on(tmp_path):
    """A backend that bypasses `Model.generate`'s clean-up (a plug-in overriding `generate`) can
    still hand the store text no JSON encoder accepts: that episode is stored as failed, with the
    reason, and every other episode is stored as usual."""
    from sparring.engine.config import open_store
    from sparring.engine.play import Arena
    from sparring.models.scripted import ScriptedModel
    from sparring.types import Completion

    class Raw(ScriptedModel):
        def generate(self, requests):  # the first row of every call carries a lone surrogate
            return [[Completion(text="[message] raw \udcff" if i == 0 else "[message] fine")]
                    for i in range(len(requests))]

    config = {"game": "dond", "game_args": {"max_turns": 2},
              "dataset": {"name": "dond_generated", "args": {"n": 3, "seed": 0}},
              "agents": {"a": {"role": "negotiator", "model": "raw"}, "b": {"role": "negotiator", "model": "raw"}},
              "tournament": {"type": "custom", "matchups": [["a", "b"]]}, "run": {"max_live": 3}}
    with Arena.from_config(config, models={"raw": Raw("raw")}) as arena:
        with open_store(tmp_path / "run", arena.exp.config) as store:
            arena.play(arena.jobs(), store=store)
    failed = list(iter_records(tmp_path / "run", failures=True))
    done = list(iter_records(tmp_path / "run"))
    assert failed and all("could not be stored" in f.error for f in failed)
    assert len(failed) + len(done) == 3


def test_every_rejected_reply_is_marked_rejected_even_the_one_that_aborts(tmp_path):
    res = cli("run", str(dond(tmp_path, "babbler", "babbler", max_errors=2)), "-o", str(tmp_path / "runs"),
              "--run-name", "x", "--quiet", "--no-report")
    assert res.exit_code == 0, res.output
    records = list(iter_records(tmp_path / "runs" / "x"))
    assert any(r.status == "aborted" for r in records)
    for r in records:
        invalid = [e for e in r.events if e.tag == "invalid"]
        rejected = [c for c in r.calls if c.rejected]
        assert len(invalid) == len(rejected), r.id
        assert all(c.turn is not None for c in r.calls)


def test_files_that_are_not_utf8_name_the_file_and_line(tmp_path):
    config = dond(tmp_path, "dealer", "dealer")
    utf16 = tmp_path / "utf16.yaml"
    utf16.write_bytes(config.read_text().encode("utf-16"))
    res = cli("run", str(utf16), "-o", str(tmp_path / "runs"))
    assert res.exit_code == 2 and str(utf16) in res.output and "UTF-16" in res.output
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"question": "q", "answers": ["a", "b"], "correct": 0}\n'
                      b'{"question": "caf\xe9", "answers": ["a", "b"], "correct": 0}\n')
    res = cli("run", str(debate_on(tmp_path, latin)), "-o", str(tmp_path / "runs"))
    assert res.exit_code == 2 and str(latin) in res.output and "line 2" in res.output and "UTF-8" in res.output
    assert "Traceback" not in res.output
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_an_empty_dataset_file_is_named(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    res = cli("run", str(debate_on(tmp_path, empty)), "-o", str(tmp_path / "runs"))
    assert res.exit_code == 2 and str(empty) in res.output and "empty" in res.output


def test_an_output_directory_that_cannot_be_created_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    res = cli("run", str(dond(tmp_path, "dealer", "dealer")), "-o", str(blocker / "runs"), "--quiet")
    assert res.exit_code == 2 and "cannot create the run directory" in res.output
    assert "Traceback" not in res.output


def test_a_server_that_echoes_the_key_never_gets_it_into_the_store(tmp_path, monkeypatch):
    key = "sk-test-secret-value-123456789"
    monkeypatch.setenv("SPARRING_TEST_ECHO_KEY", key)
    server = FakeAPIServer().start()
    try:
        server.behaviour.reply = lambda body: f"[message] your key is {key}"
        write(tmp_path / "models.yaml", {"models": {"echo": {"backend": "openai", "args": {
            "model": "fake", "base_url": server.openai_base_url, "api_key_env": "SPARRING_TEST_ECHO_KEY",
            "max_retries": 0}}, **SCRIPTED_MODELS["models"]}})
        config = write(tmp_path / "exp.yaml", {
            "game": "dond", "game_args": {"max_turns": 2},
            "dataset": {"name": "dond_generated", "args": {"n": 2, "seed": 0}}, "models_file": "models.yaml",
            "agents": {"a": {"role": "negotiator", "model": "echo"}, "b": {"role": "negotiator", "model": "dealer"}},
            "tournament": {"type": "custom", "matchups": [["a", "b"]]}})
        res = cli("run", str(config), "-o", str(tmp_path / "runs"), "--run-name", "k", "--quiet")
    finally:
        server.stop()
    assert res.exit_code == 0, res.output
    stored = "".join(p.read_text() for p in (tmp_path / "runs" / "k").rglob("*") if p.is_file()
                     and p.suffix in (".jsonl", ".json", ".yaml", ".csv", ".html"))
    assert "your key is ***" in stored and key not in stored


def test_failed_episodes_make_the_run_exit_non_zero_with_the_retry_command(tmp_path):
    write(tmp_path / "models.yaml", {"models": {**SCRIPTED_MODELS["models"], "broken": {
        "backend": "scripted", "args": {"mode": "fixed", "text": "x", "fail_every": 1}}}})
    config = write(tmp_path / "exp.yaml", {
        "game": "dond", "dataset": {"name": "dond_generated", "args": {"n": 2, "seed": 0}},
        "models_file": "models.yaml",
        "agents": {"a": {"role": "negotiator", "model": "broken"}, "b": {"role": "negotiator", "model": "dealer"}},
        "tournament": {"type": "custom", "matchups": [["a", "b"]]}})
    res = cli("run", str(config), "-o", str(tmp_path / "runs"), "--run-name", "f", "--no-report")
    assert res.exit_code == 3, res.output
    assert "--retry-failed" in res.output
    assert read_manifest(tmp_path / "runs" / "f")["status"] == "incomplete"


def test_report_files_are_written_to_a_temporary_file_then_renamed(tmp_path, monkeypatch):
    import os

    renamed: list[str] = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (renamed.append(Path(b).name), real(a, b))[1])
    res = cli("run", str(dond(tmp_path, "dealer", "dealer")), "-o", str(tmp_path / "runs"), "--run-name", "w",
              "--quiet")
    assert res.exit_code == 0, res.output
    assert {"report.html", "stats.json", "episodes.csv"} <= set(renamed)
    report = tmp_path / "runs" / "w" / "report"
    assert (report / "report.html").stat().st_size > 0 and not list(report.glob(".*.tmp"))


@pytest.mark.slow
def test_ctrl_c_during_start_up_prints_no_traceback(tmp_path):
    import signal
    import subprocess
    import time

    # The child says when it enters `main` (what `sparring` and `python -m sparring.cli` call): a fixed
    # sleep alone raced the interpreter's own start-up on a loaded machine (killed by the signal, rc -2).
    child = "import sys; from sparring.cli import main; print('entering main', flush=True); main(sys.argv[1:])"
    proc = subprocess.Popen([sys.executable, "-c", child, "run", str(dond(tmp_path, "dealer", "dealer")),
                             "-o", str(tmp_path / "runs")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "entering main"
    time.sleep(0.2)  # still importing the libraries and resolving the configuration
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode in (0, 130), (proc.returncode, err)
    assert "Traceback" not in err + out


def test_ctrl_c_while_run_guarded_imports_torch_is_exit_130_without_a_traceback(monkeypatch, capsys):
    """The interrupt of the test above, made deterministic: it lands in the first thing `run_guarded`
    does, importing the distributed module (torch). It was outside the guard (seen once in CI: rc -2,
    a traceback ending in `from sparring.train import distributed`)."""
    import sparring.train
    from sparring.cli.common import run_guarded

    class Interrupting:
        def find_spec(self, name, path=None, target=None):
            if name == "sparring.train.distributed":
                raise KeyboardInterrupt
            return None

    monkeypatch.delitem(sys.modules, "sparring.train.distributed", raising=False)
    monkeypatch.delattr(sparring.train, "distributed", raising=False)
    monkeypatch.setattr(sys, "meta_path", [Interrupting(), *sys.meta_path])
    called = []
    with pytest.raises(SystemExit) as exit_:
        run_guarded(lambda: called.append(1))
    assert exit_.value.code == 130 and not called
    assert "error: interrupted" in capsys.readouterr().err


def test_a_server_that_is_gone_stops_the_run_early_and_exits_non_zero(tmp_path):
    server = FakeAPIServer().start()
    url = server.openai_base_url
    server.stop()  # gone: every request fails to connect
    write(tmp_path / "models.yaml", {"models": {**SCRIPTED_MODELS["models"], "gone": {"backend": "openai", "args": {
        "model": "fake", "base_url": url, "max_retries": 0, "timeout_s": 2, "api_key_env": "SPARRING_UNSET"}}}})
    config = write(tmp_path / "exp.yaml", {
        "game": "dond", "dataset": {"name": "dond_generated", "args": {"n": 8, "seed": 0}},
        "models_file": "models.yaml",
        "agents": {"a": {"role": "negotiator", "model": "gone"}, "b": {"role": "negotiator", "model": "dealer"}},
        "tournament": {"type": "custom", "matchups": [["a", "b"]], "flip": True}, "run": {"max_live": 4}})
    res = cli("run", str(config), "-o", str(tmp_path / "runs"), "--run-name", "g", "--no-report")
    assert res.exit_code == 3, res.output
    assert "stopped early" in res.output and "unreachable" in res.output
    failed = list(iter_records(tmp_path / "runs" / "g", failures=True))
    assert 0 < len(failed) <= 4  # the live episodes; the other 12 were never started
    again = cli("run", "--resume", str(tmp_path / "runs" / "g"), "--no-report")
    assert "failed in an earlier attempt" in again.output and "--retry-failed" in again.output
