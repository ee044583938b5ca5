"""Crash safety: SIGKILL a running tournament, resume it, and get every episode exactly once;
Ctrl-C stops admitting, keeps what is stored, and the same command resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from sparring.engine.run import RunOptions, run_experiment
from sparring.records.reader import iter_records, read_manifest

pytestmark = pytest.mark.slow  # worker processes / subprocess runs: seconds each

HERE = Path(__file__).parent
SLOW = {"agents": {"alice": {"model": "t-slow"}, "judge": {"model": "t-slow"}},
        "dataset": {"args": {"n": 8}}}


def outcomes(run_dir) -> dict[str, tuple]:
    return {r.id: (r.status, r.outcome.winner if r.outcome else None,
                   tuple(e.content for e in r.events)) for r in iter_records(run_dir)}


def lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_sigkill_mid_run_then_resume_gives_every_episode_once(make_config, runs_dir):
    path = make_config(SLOW)
    run_dir = runs_dir / "killed"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, str(HERE / "run_toy.py"), "run", str(path), "--output-dir",
                             str(runs_dir), "--run-name", "killed", "--max-live", "2", "--quiet", "--no-report"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    episodes = run_dir / "episodes.jsonl"
    deadline = time.time() + 60
    try:
        while lines(episodes) < 10:
            assert proc.poll() is None, proc.stdout.read().decode()
            assert time.time() < deadline, "the subprocess stored nothing in time"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    stored = lines(episodes)
    assert 10 <= stored < 48, "kill came too late to test anything"
    manifest = read_manifest(run_dir)
    assert manifest["status"] == "running"  # killed: nobody marked it finished

    opts = RunOptions(resume=str(run_dir), quiet=True)
    res = run_experiment(opts, console=Console(quiet=True))
    assert res.status == "complete"
    assert res.summary["skipped"] >= 10 and res.summary["done"] + res.summary["skipped"] == 48
    ids = [json.loads(x)["id"] for x in episodes.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 48

    reference = run_experiment(RunOptions(configuration=str(path), output_dir=str(runs_dir), run_name="ref",
                                          quiet=True), console=Console(quiet=True))
    assert outcomes(run_dir) == outcomes(reference.run_dir)


def ctrl_c_once(monkeypatch, when):
    """Press Ctrl-C (SIGINT to the main thread) once, after the first commit at which
    `when(ticks, session)` holds; returns a function that removes the hook again."""
    import sparring.engine.run as run_mod

    original = run_mod._committer
    state = {"ticks": 0, "sent": False}

    def committer(store, session, runner, bar):
        commit = original(store, session, runner, bar)

        def on_tick():
            commit()
            state["ticks"] += 1
            if not state["sent"] and when(state["ticks"], session):
                state["sent"] = True
                signal.raise_signal(signal.SIGINT)

        return on_tick

    monkeypatch.setattr(run_mod, "_committer", committer)
    return lambda: monkeypatch.setattr(run_mod, "_committer", original)


def test_ctrl_c_keeps_finished_episodes_drops_live_ones_and_resumes(make_config, runs_dir, monkeypatch):
    restore = ctrl_c_once(monkeypatch, lambda ticks, session: session.done > 0)
    path = make_config()
    opts = RunOptions(configuration=str(path), output_dir=str(runs_dir), run_name="int", max_live=4,
                      quiet=True)
    res = run_experiment(opts, console=Console(quiet=True))
    assert res.status == "interrupted"
    assert 0 < res.summary["done"] < 36
    stored = list(iter_records(res.run_dir))
    assert len(stored) == res.summary["done"] and all(r.outcome is not None for r in stored)  # none was cut
    assert read_manifest(res.run_dir)["status"] == "interrupted"
    restore()
    again = run_experiment(opts, console=Console(quiet=True))
    assert again.status == "complete" and again.summary["skipped"] == res.summary["done"]
    assert len(list(iter_records(res.run_dir))) == 36


def test_one_ctrl_c_stops_a_subprocess_run_promptly_keeping_what_finished(make_config, runs_dir):
    """A real SIGINT to `sparring run`: it exits 130 within about one model call, not after the
    live episodes finish (here one episode lasts seconds), with the finished episodes stored."""
    path = make_config({"game_args": {"rounds": 8}, "dataset": {"args": {"n": 3}},
                        "agents": {"alice": {"model": "t-crawl"}, "bob": {"model": "t-crawl"},
                                   "carol": {"model": "t-crawl"}, "judge": {"model": "t-crawl"}}})
    run_dir = runs_dir / "sigint"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, str(HERE / "run_toy.py"), "run", str(path), "--output-dir",
                             str(runs_dir), "--run-name", "sigint", "--max-live", "1", "--no-report"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    episodes = run_dir / "episodes.jsonl"
    deadline = time.time() + 120
    try:
        while lines(episodes) < 1:
            assert proc.poll() is None, proc.stdout.read().decode()
            assert time.time() < deadline, "the subprocess stored nothing in time"
            time.sleep(0.02)
        time.sleep(0.5)  # well inside the next episode (each lasts several seconds)
        sent = time.time()
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(30)
        took = time.time() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    output = proc.stdout.read().decode()
    assert rc == 130, output
    assert took < 2.5, f"Ctrl-C took {took:.1f} s to stop the run"
    assert lines(episodes) == 1  # the finished episode is kept; the live one is replayed on resume
    assert read_manifest(run_dir)["status"] == "interrupted"
    assert "--resume" in output


def test_ctrl_c_with_workers_finishes_live_episodes_and_resumes(make_config, runs_dir, monkeypatch):
    """The parent stops dealing and the workers stop admitting; nothing dealt but unplayed is lost,
    it is simply played by the resume."""
    restore = ctrl_c_once(monkeypatch, lambda ticks, session: session.done > 0)
    path = make_config(SLOW)
    opts = RunOptions(configuration=str(path), output_dir=str(runs_dir), run_name="intw", max_live=2,
                      workers=2, quiet=True)
    res = run_experiment(opts, console=Console(quiet=True))
    total = 8 * 3 * 2  # 8 questions, 3 pairs (round robin), both seat orders
    assert res.status == "interrupted" and 0 < res.summary["done"] < total
    assert read_manifest(res.run_dir)["status"] == "interrupted"
    restore()
    again = run_experiment(opts, console=Console(quiet=True))
    assert again.status == "complete" and again.summary["skipped"] == res.summary["done"]
    ids = [json.loads(x)["id"] for x in (res.run_dir / "episodes.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == total
