"""Progress of a long run when the output is a log file, not a terminal: periodic lines with the
episodes, turns played, tokens/s counting prompt and generated tokens, and an ETA; the summary
says which tokens its rates count."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from sparring.engine.run import RunOptions, run_experiment


def test_a_run_logged_to_a_file_prints_progress_lines(make_config, runs_dir, monkeypatch):
    monkeypatch.setenv("SPARRING_PROGRESS_EVERY", "0")  # a line at every tick
    out = io.StringIO()
    console = Console(file=out, width=200)
    assert not console.is_terminal
    res = run_experiment(RunOptions(configuration=str(make_config()), output_dir=str(runs_dir), run_name="log",
                                    max_live=4), console=console)
    assert res.status == "complete"
    text = out.getvalue()
    progress = [line for line in text.splitlines() if line.startswith("toyexp: ")]
    assert len(progress) >= 5
    assert "turns" in progress[0] and "tokens/s (prompt + generated;" in progress[0] and "ETA" in progress[0]
    assert any("ETA " in line and "ETA unknown" not in line for line in progress)  # a real estimate
    assert progress[-1].startswith("toyexp: 36/36 episodes") and progress[-1].endswith(", done")

    s = res.summary
    assert s["prompt_tokens"] > s["tokens"] > 0 and s["turns"] > 0
    assert s["tokens_per_s"] == pytest.approx((s["tokens"] + s["prompt_tokens"]) / s["wall_s"])
    assert s["generated_tokens_per_s"] == pytest.approx(s["tokens"] / s["wall_s"])
    assert "tokens/s (prompt + generated)" in text and "generated tokens/s" in text


def test_progress_lines_are_throttled(make_config, runs_dir, monkeypatch):
    monkeypatch.setenv("SPARRING_PROGRESS_EVERY", "3600")
    out = io.StringIO()
    run_experiment(RunOptions(configuration=str(make_config()), output_dir=str(runs_dir), run_name="quiet",
                              max_live=4), console=Console(file=out, width=200))
    progress = [line for line in out.getvalue().splitlines() if line.startswith("toyexp: ")]
    assert len(progress) == 1  # only the final line


def test_no_eta_is_extrapolated_when_every_episode_left_is_in_flight():
    from sparring.engine.progress import RunProgress
    from sparring.engine.runner import RunStats

    bar = RunProgress(40, console=Console(file=io.StringIO()), description="tw")
    stats = RunStats(turns=831, live=39)  # 40 games in lockstep, one ended early (a loss)
    line = bar.line(1, 0, stats)
    assert line.endswith("ETA: the last 39 episode(s) are in flight, each ends when its game does")
    stats.live = 8  # more waves to come: the finished episodes' pace is the estimate
    assert "ETA " in bar.line(1, 0, stats) and "in flight" not in bar.line(1, 0, stats)
    assert bar.line(40, 0, stats).endswith(", done")


@pytest.mark.slow  # two worker processes
def test_worker_runs_report_their_episodes_in_flight(make_config, runs_dir, monkeypatch):
    """`--workers N`: each worker reports how many episodes it has in flight with its token
    counters, so the parent's progress line knows when every episode left is already playing
    (then it does not extrapolate an ETA from the early finishers)."""
    from sparring.engine.runner import RunStats

    a, b = RunStats(turns=3, live=4), RunStats(turns=2, live=1)
    total = RunStats()
    for counters in (a.counters(), b.counters()):
        total.add(counters)
    assert (total.turns, total.live) == (5, 5)

    monkeypatch.setenv("SPARRING_PROGRESS_EVERY", "0")
    out = io.StringIO()
    res = run_experiment(RunOptions(configuration=str(make_config()), output_dir=str(runs_dir), run_name="w",
                                    max_live=4, workers=2), console=Console(file=out, width=200))
    assert res.status == "complete" and res.summary["done"] == 36
    progress = [line for line in out.getvalue().splitlines() if line.startswith("toyexp: ")]
    assert any("are in flight" in line for line in progress)  # the tail: every episode left is playing
    assert not any("are in flight" in line for line in progress[:2])  # the start: most are still queued
    assert progress[-1].startswith("toyexp: 36/36 episodes") and progress[-1].endswith(", done")
