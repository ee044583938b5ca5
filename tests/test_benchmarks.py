"""The engine benchmark still runs end to end (it is not timed here: figures belong in notes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.commands import run_commands

pytestmark = pytest.mark.slow  # worker processes / subprocess runs: seconds each

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_engine_overhead.py"


def test_engine_overhead_benchmark_runs_with_and_without_workers():
    outs = {}
    for workers, extra in (("1", ["--breakdown", "--repeats", "2"]), ("2", [])):
        out = subprocess.run([sys.executable, str(BENCH), "--episodes", "100", "--workload", "dond",
                              "--workers", workers, *extra], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        assert "episodes/s" in out.stdout and "target >= 2,000" in out.stdout and "peak RSS" in out.stdout
        assert "(0 failed" in out.stdout
        outs[workers] = out.stdout
    assert "2 worker processes" in outs["2"] and "2 worker processes" not in outs["1"]
    assert outs["1"].count("1 engine process") == 1 and "over 2 runs: best" in outs["1"]
    assert "by component" in outs["1"]
    assert "by component" in subprocess.run(
        [sys.executable, str(BENCH), "--episodes", "100", "--workload", "debate", "--breakdown", "--workers", "1"],
        capture_output=True, text=True, timeout=300).stdout


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> str:
    """The benchmarks' `--model tiny` with the bundled tokenizer cut to 1,024 ids (a directory takes
    the same path through them): its full vocabulary was most of each step."""
    from sparring.models.tiny import save_tiny_model

    return str(save_tiny_model(tmp_path_factory.mktemp("bench") / "tiny", vocab=1024))


def test_api_errors_benchmark_sends_nothing_twice():
    bench = Path(__file__).parent.parent / "benchmarks" / "bench_api_errors.py"
    out = subprocess.run([sys.executable, str(bench)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "extra server calls 0" in out.stdout and "1 failed" in out.stdout


def test_web_benchmark_runs_on_a_small_run():
    pytest.importorskip("fastapi")
    bench = Path(__file__).parent.parent / "benchmarks" / "bench_web.py"
    out = subprocess.run([sys.executable, str(bench), "--episodes", "300", "--story-words", "50", "--runs", "200"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = {line[:46].strip(): line for line in out.stdout.splitlines() if " ms wall" in line}
    restart = next(v for k, v in lines.items() if k.startswith("first, never viewed, sidecar"))
    cold = next(v for k, v in lines.items() if k.startswith("first, never viewed, no sidecar"))
    assert " 0 lines parsed" in restart and "303 lines parsed" in cold  # 300 episodes + 3 failures
    assert " 1 lines parsed" in lines["after 1 appended episode"] and "one episode, everything view" in lines


def test_training_benchmarks_run_on_a_tiny_model(tmp_path, tiny_dir):
    """bench_train and bench_step_cost, one after the other in one process (its imports of the
    training libraries paid once)."""
    benches = Path(__file__).parent.parent / "benchmarks"
    out = run_commands([
        [str(benches / "bench_train.py"), "--model", tiny_dir, "--steps", "2", "--words", "40"],
        [str(benches / "bench_step_cost.py"), "--model", tiny_dir, "--steps", "1", "--only", "sft,grpo",
         "--games", "2", "--json", str(tmp_path / "cost.json")]], timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "soft-preference DPO step / plain DPO step =" in out.stdout and "tokens/s" in out.stdout
    assert "grpo: after/before step" in out.stdout and "sft: after/before step" in out.stdout
    import json

    data = json.loads((tmp_path / "cost.json").read_text())
    grpo = data["parts"]["grpo"]["median"]
    assert grpo["after"]["cost/scoring_passes"] == 0 < grpo["before"]["cost/scoring_passes"]  # beta 0.04 -> 0
    assert grpo["ratios"]["tokens_per_trained"] < 1


def test_the_view_warm_start_benchmark_and_the_view_parts_run_on_a_tiny_model(tmp_path, tiny_dir):
    """bench_view_warm_start (a warm start per view, each on held-out games in its view) and
    bench_step_cost's view parts (GRPO in both views from a warm start), in one process."""
    pytest.importorskip("textarena")
    import json

    benches = Path(__file__).parent.parent / "benchmarks"
    out = run_commands([
        [str(benches / "bench_view_warm_start.py"), "--model", tiny_dir, "--demos", "2", "--steps", "1",
         "--heldout", "2", "--json", str(tmp_path / "views.json")],
        [str(benches / "bench_step_cost.py"), "--model", tiny_dir, "--steps", "1", "--only", "kuhn-hand",
         "--games", "2", "--warm-steps", "1", "--json", str(tmp_path / "cost.json")]], timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    views = json.loads((tmp_path / "views.json").read_text())
    assert set(views["views"]) == {"rendered", "conversation"}
    assert views["paired_win_conversation_minus_rendered"]["n"] == 4  # 2 held-out seeds x 2 seats
    # Kuhn Poker on the hand's lines (the same code as the whole observation's `kuhn`, with the cut)
    assert "kuhn-hand: warm start of 1 SFT steps" in out.stdout and "kuhn-hand: after/before step" in out.stdout
    kuhn = json.loads((tmp_path / "cost.json").read_text())["parts"]["kuhn-hand"]["median"]
    assert kuhn["before"]["cost/trained_tokens"] > 0 and kuhn["after"]["cost/trained_tokens"] > 0
