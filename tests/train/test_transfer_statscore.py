"""The transfer experiment's statscore: each stage's statscore from bench.json and, per static task,
the paired per-document change of each adapter against the base (the learning suite's `paired`,
a bootstrap interval of the mean difference)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparring.learning.experiments.transfer import _statscore
from sparring.learning.results import Estimate, Experiment, Stage


def _row(tmp_path: Path, name: str, values: list[float]) -> dict:
    items = {"facts": {str(i): v for i, v in enumerate(values)}}
    path = tmp_path / f"{name}.items.json"
    path.write_text(json.dumps(items))
    score = sum(values) / len(values)
    return {"status": "ok", "statscore": score, "ci": [score - 10, score + 10], "items_file": str(path),
            "tasks": {"facts": {"status": "ok", "score": score, "n": len(values)}}}


def test_statscore_before_and_after_with_a_paired_interval(tmp_path: Path):
    base = [100.0] * 8 + [0.0] * 2        # 80
    hurt = [100.0] * 4 + [0.0] * 6        # 40: four documents lost, none gained
    static = {"status": "ok", "models": {"m": _row(tmp_path, "m", base), "m@dond-selfplay-2": _row(tmp_path, "a", hurt)}}
    exp = Experiment(name="transfer", description="", model="m", primary="other_games_score",
                     training_ids=[], heldout_ids=["bench:taboo"])
    exp.stages += [Stage("base", 0, {"other_games_score": Estimate(0.0, 1, (0.0, 0.0))}),
                   Stage("dond-selfplay-2", 1, {"other_games_score": Estimate(0.0, 1, (0.0, 0.0))})]
    _statscore(exp, static, "m", ["m@dond-selfplay-2"])
    before, after = (s.metrics["statscore"] for s in exp.stages)
    assert (before.value, before.n, after.value) == (80.0, 10, 40.0)
    change = exp.paired["statscore facts dond-selfplay-2 - base"]
    assert change["n"] == 10 and change["mean_diff"] == pytest.approx(-40.0)
    assert (change["n_negative"], change["n_positive"]) == (4, 0)
    assert change["mean_diff_ci_low"] <= -40.0 <= change["mean_diff_ci_high"] < 0.0  # the damage shows
    assert exp.to_json()["stages"][1]["metrics"]["statscore"]["value"] == 40.0


def test_without_lm_eval_the_statscore_is_a_note_not_a_row():
    exp = Experiment(name="transfer", description="", model="m", primary="p", training_ids=[], heldout_ids=["x"])
    exp.stages.append(Stage("base", 0, {"p": Estimate(0.0, 1, (0.0, 0.0))}))
    _statscore(exp, {"status": "skipped", "note": "statscore skipped: lm-eval is not installed"}, "m", [])
    assert "statscore" not in exp.stages[0].metrics and not exp.paired
    assert any("lm-eval is not installed" in n for n in exp.notes)
