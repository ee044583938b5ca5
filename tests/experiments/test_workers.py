"""`run.workers`: several engine processes for one run, the parent as the only store writer."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_run import records, run
from typer.testing import CliRunner

from sparring.engine.workers import UNSAFE_TO_FORK, chunk_size, resolve_workers, start_method
from sparring.errors import ConfigError, SparringError
from sparring.records.reader import iter_records, read_manifest

pytestmark = pytest.mark.slow  # worker processes / subprocess runs: seconds each


@pytest.mark.parametrize("start", ["spawn", "fork"])
def test_workers_store_exactly_what_one_process_stores(make_config, runs_dir, start):
    """The toy game is registered in this (test) process only: spawned workers import it
    themselves, forked ones inherit it."""
    path = make_config({"run": {"worker_start": start}})
    one = run(path, runs_dir, run_name="one")
    two = run(path, runs_dir, run_name="two", workers=2)
    assert one.status == two.status == "complete"
    a, b = records(one.run_dir), records(two.run_dir)
    assert len(a) == 3 * 6 * 2 and a == b
    assert two.summary["done"] == len(a) and two.summary["tokens"] == one.summary["tokens"] > 0
    lines = (two.run_dir / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == len({json.loads(x)["id"] for x in lines})  # each episode once
    assert read_manifest(two.run_dir)["status"] == "complete"


def test_workers_play_swiss_rounds_like_one_process(make_config, runs_dir):
    """Several rounds on the same workers: each round is dealt and closed on its own."""
    path = make_config({"agents": {"dave": {"role": "debater", "model": "t-random2"}},
                        "tournament": {"type": "swiss", "rounds": 3, "flip": True}})
    one = run(path, runs_dir, run_name="one", num_iters=2)
    two = run(path, runs_dir, run_name="two", num_iters=2, workers=2)
    assert two.status == "complete" and two.summary["done"] == 24
    assert records(one.run_dir) == records(two.run_dir)


def test_workers_resume_and_record_failures(make_config, runs_dir):
    path = make_config({"agents": {"bob": {"model": "t-fail"}}})
    first = run(path, runs_dir, run_name="r", workers=2, num_iters=2)
    assert first.status == "incomplete" and first.summary["failed"] > 0  # failed episodes: incomplete
    failed = list(iter_records(first.run_dir, failures=True))
    assert failed and all("FAILME" in r.error for r in failed)
    again = run(path, runs_dir, run_name="r", workers=2)  # the rest of the instances only
    assert again.summary["skipped"] == first.summary["done"] + first.summary["failed"]
    assert again.summary["done"] + again.summary["failed"] == 3 * 6 * 2 - again.summary["skipped"]


def test_a_slow_worker_takes_fewer_episodes(make_config, runs_dir, tmp_path):
    """Episodes are dealt on demand: a worker slowed down (here: 150 ms per call, by its name; at
    30 ms a busy machine starting the other worker late could let the slow one take a third) plays
    fewer of them, instead of holding up the run with an equal share dealt up front."""
    import toy_game

    models = tmp_path / "who.yaml"
    models.write_text(open(toy_game.MODELS_FILE).read() + "  t-who:\n    backend: scripted\n"
                      "    args: {mode: callable, function: 'toy_game:which_worker', score_mode: random}\n")
    path = make_config({"models_file": str(models), "dataset": {"args": {"n": 12}},
                        "agents": {"alice": {"model": "t-who"}, "bob": {"model": "t-who"}},
                        "tournament": {"=type": "custom", "matchups": [["alice", "bob"]]}})
    res = run(path, runs_dir, run_name="who", workers=2, max_live=2)
    assert res.status == "complete" and res.summary["done"] == 24
    by = {}
    for rec in iter_records(res.run_dir):
        (name,) = {c.completions[0].text for c in rec.calls if c.op == "generate"}
        by[name] = by.get(name, 0) + 1
    slow, fast = by.get("played by sparring-worker-0", 0), by.get("played by sparring-worker-1", 0)
    assert slow + fast == 24 and fast >= 2 * slow, by


def test_chunks_are_small_enough_to_balance_and_never_wider_than_a_worker_plays():
    assert chunk_size(10_000, 2, 256) == 157  # about 32 chunks per worker
    assert chunk_size(100_000, 2, 256) == 256  # capped at max_live
    assert chunk_size(36, 2, 64) == chunk_size(0, 2, 64) == 1


def dying_worker_config(make_config, tmp_path, function: str, start: str = "auto") -> Path:
    """24 episodes (12 questions, both seat orders) in which alice's replies come from `function`
    of toy_game.py: worker 0 dies at its third call, always within the two chunks dealt to it
    up front (alice speaks twice in each episode)."""
    import toy_game

    models = tmp_path / "dies.yaml"
    models.write_text(open(toy_game.MODELS_FILE).read() + "  t-dies:\n    backend: scripted\n"
                      f"    args: {{mode: callable, function: 'toy_game:{function}', score_mode: random}}\n")
    return make_config({"models_file": str(models), "dataset": {"args": {"n": 12}},
                        "agents": {"alice": {"model": "t-dies"}}, "run": {"worker_start": start},
                        "tournament": {"=type": "custom", "matchups": [["alice", "bob"]]}})


def check_lost_and_resumed(first, path, runs_dir) -> None:
    """Missing after the death: at most worker 0's live episodes (max_live 2) and the two chunks
    queued for it (1 job each). The resume plays exactly those: every episode stored once."""
    assert 24 - 4 <= first.summary["done"] < 24 and first.summary["failed"] == 0
    again = run(path, runs_dir, run_name=first.run_dir.name)
    assert again.status == "complete" and again.summary["skipped"] == first.summary["done"]
    ids = [json.loads(x)["id"] for x in (first.run_dir / "episodes.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 24


@pytest.mark.timeout(120)  # it once hung (issue #49): fail fast, with the stacks, if it does again
def test_a_worker_that_dies_loses_only_its_live_episodes(make_config, runs_dir, tmp_path):
    """The other worker takes every chunk not yet dealt; resume plays the lost ones, once each."""
    path = dying_worker_config(make_config, tmp_path, "dies_in_worker_0")
    first = run(path, runs_dir, run_name="d", workers=2, max_live=2)
    assert first.status == "incomplete" and "worker 0 exited with code 3" in first.summary["worker_errors"][0]
    check_lost_and_resumed(first, path, runs_dir)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_a_worker_killed_in_the_middle_of_a_message_costs_only_its_episodes(make_config, runs_dir, tmp_path,
                                                                             start):
    """Worker 0 is SIGKILLed halfway through sending a message of over 1 MB (toy_game.dies_sending_in_worker_0
    cuts it off on purpose). With one queue shared by the workers this could leave its lock held
    and hang the run (issue #49); with a pipe per worker the parent reads the half message to its
    end of file, counts worker 0 lost, and worker 1 plays on."""
    from toy_game import BIG_REPLY

    path = dying_worker_config(make_config, tmp_path, "dies_sending_in_worker_0", start)
    began = time.monotonic()
    first = run(path, runs_dir, run_name="cut", workers=2, max_live=2)
    took = time.monotonic() - began
    assert first.status == "incomplete"
    (error,) = first.summary["worker_errors"]
    assert error.startswith("worker 0 was killed by SIGKILL in the middle of sending a message"), error
    assert took < 30, f"the run took {took:.1f} s to end after its worker died"
    replies = [c.completions[0].text for r in iter_records(first.run_dir) for c in r.calls if c.op == "generate"]
    assert replies and max(map(len, replies)) < BIG_REPLY  # the cut-off message stored nothing
    check_lost_and_resumed(first, path, runs_dir)


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_a_circuit_breaker_in_one_worker_stops_the_run(make_config, runs_dir, tmp_path, start):
    """Worker 0's server is gone (at its first call, always within the chunks dealt to it up
    front): it tells the parent, which stops dealing and raises the stop flag every worker reads;
    the run ends incomplete, saying which worker stopped it, and a retry completes it."""
    import io

    from rich.console import Console

    from sparring.engine.run import RunOptions, run_experiment

    path = dying_worker_config(make_config, tmp_path, "gone_in_worker_0", start)
    out = io.StringIO()
    first = run_experiment(RunOptions(configuration=str(path), output_dir=str(runs_dir), run_name="gone",
                                      workers=2, max_live=2, quiet=True), console=Console(file=out, width=300))
    assert first.status == "incomplete" and first.summary["failed"] >= 1 and "worker_errors" not in first.summary
    assert "stopped early: worker 0: toy server is unreachable" in out.getvalue()
    again = run(path, runs_dir, run_name="gone", retry_failed=True)  # one process: the server is back
    assert again.status == "complete"
    ids = [json.loads(x)["id"] for x in (first.run_dir / "episodes.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 24


def test_a_model_that_cannot_load_fails_the_command_clearly(make_config, runs_dir, tmp_path):
    import toy_game

    models = tmp_path / "broken.yaml"
    models.write_text(open(toy_game.MODELS_FILE).read() + "  t-broken:\n    backend: scripted\n"
                      "    args: {mode: callable, function: 'no_such_module:reply'}\n")
    path = make_config({"models_file": str(models), "agents": {"bob": {"model": "t-broken"}}})
    with pytest.raises(SparringError, match="every worker failed.*no_such_module"):
        run(path, runs_dir, run_name="broken", workers=2)


def test_start_method_forks_only_where_safe(monkeypatch):
    assert start_method("spawn") == "spawn" and start_method("fork") == "fork"
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setitem(sys.modules, "torch", sys.modules.get("torch") or object())
    assert start_method() == "spawn"  # a native thread pool may be running
    monkeypatch.delitem(sys.modules, "torch")
    for name in UNSAFE_TO_FORK:
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setattr(threading, "active_count", lambda: 1)  # the test runner may hold threads
    assert start_method() == "fork"
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert start_method() == "spawn"  # another thread may hold a lock the child would inherit
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.setattr(sys, "platform", "darwin")
    assert start_method() == "spawn"
    monkeypatch.setattr("multiprocessing.get_all_start_methods", lambda: ["spawn"])  # Windows
    with pytest.raises(ConfigError, match="worker_start: 'fork' is not available"):
        start_method("fork")


def test_worker_count_validation(make_config, runs_dir):
    assert resolve_workers(None) == resolve_workers(1) == 1
    assert resolve_workers("auto") >= 1 and resolve_workers(3) == 3
    with pytest.raises(ConfigError, match="workers"):
        run(make_config({"run": {"workers": 0}}), runs_dir, run_name="zero")
    from sparring.cli import app

    out = CliRunner().invoke(app, ["run", str(make_config()), "--workers", "many", "--dry-run"])
    assert out.exit_code == 2 and "--workers expects a number" in out.output and "Traceback" not in out.output


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigkill_of_the_parent_takes_the_workers_down_and_resume_completes(make_config, runs_dir):
    from test_crash import HERE, SLOW, lines

    path = make_config(SLOW)
    run_dir = runs_dir / "killed"
    proc = subprocess.Popen([sys.executable, str(HERE / "run_toy.py"), "run", str(path), "--output-dir",
                             str(runs_dir), "--run-name", "killed", "--max-live", "2", "--workers", "2",
                             "--quiet", "--no-report"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    episodes = run_dir / "episodes.jsonl"
    deadline = time.time() + 90
    try:
        while lines(episodes) < 10:
            assert proc.poll() is None, proc.stdout.read().decode()
            assert time.time() < deadline, "the subprocess stored nothing in time"
            time.sleep(0.01)
        workers = [p for p in _children(proc.pid) if Path(f"/proc/{p}/comm").read_text().startswith("sparring-w")]
        assert len(workers) == 2
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    stop = time.time() + 10
    while any(Path(f"/proc/{p}").exists() and "Z" not in Path(f"/proc/{p}/stat").read_text().split()[2]
              for p in workers) and time.time() < stop:
        time.sleep(0.05)
    assert not any(Path(f"/proc/{p}").exists() and "Z" not in Path(f"/proc/{p}/stat").read_text().split()[2]
                   for p in workers), "workers outlived their killed parent"
    assert 10 <= lines(episodes) < 48
    from rich.console import Console

    from sparring.engine.run import RunOptions, run_experiment

    again = run_experiment(RunOptions(resume=str(run_dir), quiet=True, workers=2),
                           console=Console(quiet=True))
    assert again.status == "complete"
    ids = [json.loads(x)["id"] for x in episodes.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 48
