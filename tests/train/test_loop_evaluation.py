"""A loop's evaluation reads typed results from the run's records (`sparring.analysis.results`),
not the report: the same numbers as the run's stats.json, and no report needed at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from sparring.analysis.report import write_report
from sparring.engine.run import RunOptions, run_experiment
from sparring.train.loop.evaluation import evaluation_summary

CONFIGS = Path(__file__).parents[2] / "sparring" / "configs" / "experiments"


def from_stats(stats: dict, new: str) -> dict:
    """What the loop read from stats.json before it had typed results (the reference)."""
    out: dict = {"vs": {}}
    for row in stats["matchups"]:
        a, b = row["agent_a"], row["agent_b"]
        if new in (a, b):
            other = b if a == new else a
            rate = row["a_win_rate"] if a == new else 1 - row["a_win_rate"]
            lo, hi = row["a_win_rate_ci"] if a == new else [1 - row["a_win_rate_ci"][1], 1 - row["a_win_rate_ci"][0]]
            out["vs"][other] = {"win_rate": rate, "ci": [lo, hi], "games": row["games"]}
    out["ratings"] = {p: {"rating": r["rating"], "ci": [r["ci_low"], r["ci_high"]]}
                      for p, r in stats["ratings"]["players"].items()}
    judge = (stats["sections"].get("debate") or {}).get("judge_accuracy", {}).get("overall")
    if judge:
        out["judge_accuracy"] = {"accuracy": judge["accuracy"], "ci": judge["accuracy_ci"], "n": judge["n"]}
    return out


def scripted_run(config: str, out: Path) -> Path:
    """A shipped scripted-model experiment (round robin with self-pairs, both seatings: seconds)."""
    result = run_experiment(RunOptions(configuration=str(CONFIGS / config), output_dir=str(out), run_name="r",
                                       quiet=True), console=Console(quiet=True))
    assert result.status == "complete"
    return Path(result.run_dir or "")


def test_the_loops_evaluation_equals_the_runs_stats_json_and_needs_no_report(tmp_path):
    debate_run = scripted_run("scripted-debate.yaml", tmp_path)
    assert not (debate_run / "report").exists()  # the engine writes no report; the loop needs none
    summary = evaluation_summary(debate_run, "quoting", "debate")
    assert not (debate_run / "report").exists()
    write_report(debate_run, plots=False)
    stats = json.loads((debate_run / "report" / "stats.json").read_text())
    expected = from_stats(stats, "quoting")
    assert set(summary) == {"run_dir", "vs", "ratings", "judge_accuracy", "games"}  # state.json's keys
    assert summary["vs"] == expected["vs"] and set(summary["vs"]) == {"plain", "quoting"}
    assert summary["ratings"] == expected["ratings"]
    assert summary["judge_accuracy"] == expected["judge_accuracy"] and summary["judge_accuracy"]["n"] > 0
    # the game's metrics per matchup, judge accuracy among them, measured the same way
    games = summary["games"]
    assert set(games) == {"judge vs plain vs plain", "judge vs plain vs quoting", "judge vs quoting vs quoting"}
    total = sum(g["metrics"]["judge_accuracy"]["n"] for g in games.values())
    assert total == expected["judge_accuracy"]["n"]
    json.dumps(summary, allow_nan=False)  # state.json stays plain JSON


def test_a_game_without_verdicts_has_no_judge_accuracy(tmp_path):
    """Deal or No Deal declares no judge accuracy: the summary leaves the key out, as before, and
    the rest still equals stats.json."""
    run = scripted_run("scripted-dond.yaml", tmp_path)
    summary = evaluation_summary(run, "haggler", "dond")
    write_report(run, plots=False)
    expected = from_stats(json.loads((run / "report" / "stats.json").read_text()), "haggler")
    assert "judge_accuracy" not in summary and "judge_accuracy" not in expected
    assert summary["vs"] == expected["vs"] and summary["ratings"] == expected["ratings"]
    assert "agreement_rate" in summary["games"]["haggler vs polite"]["metrics"]


@pytest.mark.parametrize(("config", "policy", "expected"), [
    ("scripted-wordle.yaml", "solver", {1: [["p@1"], ["base"]], 2: [["p@2"], ["base"], ["p@1"]]}),
    ("scripted-dond.yaml", "haggler", {1: [["p@1", "base"], ["p@1", "p@1"]],
                                       2: [["p@2", "base"], ["p@2", "p@1"], ["p@2", "p@2"]]}),
])
def test_the_evaluation_matchups_fit_the_games_seats(tmp_path, config, policy, expected):
    """A one-player game (Wordle, the coin-flip plug-in) evaluates each model alone; a two-player
    game plays the new policy against the base, the previous policy and itself."""
    import yaml

    from sparring.train.loop.config import LoopConfig
    from sparring.train.loop.driver import Loop

    selfplay = yaml.safe_load((CONFIGS / config).read_text())
    cfg = LoopConfig.model_validate({"method": "sft", "alias": "p", "output_dir": str(tmp_path), "policy_agent": policy,
                                     "selfplay": selfplay, "evaluation": {"dataset": selfplay["dataset"]}})
    loop = Loop(cfg, "loop.yaml", console=Console(quiet=True))
    for k, matchups in expected.items():
        assert loop.eval_experiment(k)["tournament"]["matchups"] == matchups


def test_the_loops_evaluate_stage_reads_no_report(tmp_path, monkeypatch):
    """Loop.evaluate plays the held-out games and summarises them with no report written at all
    (the report a loop asks for after each run is switched off here)."""
    import yaml

    import sparring.analysis.report as report
    from sparring.train.loop.config import LoopConfig
    from sparring.train.loop.driver import Loop

    selfplay = yaml.safe_load((CONFIGS / "scripted-dond.yaml").read_text())
    scripted = yaml.safe_load((CONFIGS / "models" / "scripted.yaml").read_text())["models"]
    cfg = LoopConfig.model_validate({"method": "sft", "alias": "p", "output_dir": str(tmp_path), "policy_agent": "polite",
                                     "selfplay": selfplay,
                                     "evaluation": {"dataset": {**selfplay["dataset"], "limit": 3}, "flip": False}})
    loop = Loop(cfg, "loop.yaml", console=Console(quiet=True))
    loop._write_models({"models": {"p@1": scripted["scripted-haggler"], "p@base": scripted["scripted-negotiator"]}})
    monkeypatch.setattr(report, "report_run", lambda run_dir, console: None)
    summary = loop.evaluate(1)
    assert not (Path(summary["run_dir"]) / "report").exists()
    assert set(summary["vs"]) == {"base", "p@1"} and summary["vs"]["base"]["games"] == 3
    assert set(summary["ratings"]) == {"base", "p@1"} and "agreement_rate" in summary["games"]["base vs p@1"]["metrics"]
