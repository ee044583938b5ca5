"""benchmarks/bench_step_before_after.py: both sides' configs are valid online configs of this
checkout (the 'after' side is run by it; the 'before' side's keys are ones the older trainer read
too), they differ only in the view and the micro-batch size, and a step's row is read per move."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_step_before_after.py"


def bench():
    spec = importlib.util.spec_from_file_location("bench_step_before_after", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_two_sides_differ_in_the_view_and_the_micro_batch_only(tmp_path):
    from sparring.train.online.config import OnlineConfig

    b = bench()
    before = b.arm("before", "smollm2-135m", "warm", 3, tmp_path / "b", before=True)
    after = b.arm("after", "smollm2-135m", "warm", 3, tmp_path / "a", before=False)
    for config in (before, after):
        OnlineConfig.model_validate(config)
    assert before["micro_batch_size"] == 2 and "micro_batch_size" not in after
    assert "view" not in before["experiment"] and after["experiment"]["view"] == "conversation"
    same = {k for k in before if k not in ("name", "output_dir", "micro_batch_size", "experiment")}
    assert all(before[k] == after[k] for k in same)
    assert {k: v for k, v in after["experiment"].items() if k != "view"} == before["experiment"]


def test_a_step_row_gives_seconds_a_learner_move():
    row = bench().row({"turns": 40, "cost/total_s": 120.0, "cost/rollout_s": 20.0, "cost/training_s": 100.0,
                       "cost/training_tokens": 12000, "cost/model_tokens_per_trained_token": 80.0,
                       "cost/training_roof_ratio": 0.5})
    assert row["s a move"] == pytest.approx(3.0) and row["learner moves"] == 40 and row["roof share"] == 0.5


def test_a_missing_checkout_is_one_clear_message(tmp_path):
    with pytest.raises(SystemExit, match="no scripts/run_grpo.py there"):
        bench().main(["--before-checkout", str(tmp_path)])
