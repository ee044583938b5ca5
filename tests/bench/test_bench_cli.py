"""`sparring bench` end to end with scripted models: tables, bench.json / bench.md, per-run
directories and reports, --instances trimming and resuming, --partner, a game this installation
does not have, and user errors (exit 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from sparring.cli.root import app
from sparring.evaluation.clemscore import episode_quality
from sparring.games.negotiation.hooks import quality as dond_quality
from sparring.records.reader import iter_records

CONFIGS = Path(__file__).resolve().parents[2] / "sparring" / "configs" / "experiments" / "models"

SUITE = {
    "version": "test-1",
    "name": "tiny-bench",
    "run": {"seed": 0, "max_live": 8},
    "games": {
        "dond": {
            "game": "dond", "instances": 3,
            "game_args": {"objective": "self", "max_turns": 6},
            "dataset": {"name": "dond_generated", "args": {"n": 20, "seed": 0}},
            "agents": {"negotiator": {"role": "negotiator", "model": "$model"}},
            "tournament": {"type": "self_play", "participants": ["negotiator"], "flip": True},
            "with_partner": {
                "agents": {"partner": {"role": "negotiator", "model": "$partner"}},
                "tournament": {"type": "custom", "matchups": [["negotiator", "partner"]], "flip": True},
            },
        },
        "debate": {
            "game": "debate", "instances": 2,
            "game_args": {"format": "debate", "rounds": 1},
            "dataset": {"name": "generated", "split": "test", "args": {"people": 2, "filler_sentences": 0}},
            "agents": {"debater": {"role": "debater", "model": "$model"},
                       "judge": {"role": "judge", "model": "$partner"}},
            "tournament": {"type": "self_play", "participants": ["debater"], "judges": ["judge"], "flip": True},
        },
        "textworld_cooking": {
            "game": "textworld_cooking", "instances": 1,
            "game_args": {"max_steps": 30, "show_valid_actions": True, "history": 2},
            "dataset": {"name": "cookingworld", "split": "train",
                        "args": {"params": {"numLocations": 1, "numIngredients": 2, "numDistractorItems": 0,
                                            "includeDoors": 0, "limitInventorySize": 0}}},
            "agents": {"player": {"role": "player", "model": "$model"}},
        },
        "broken": {
            "game": "dond", "instances": 1, "dataset": {"name": "no_such_dataset"},
            "agents": {"negotiator": {"role": "negotiator", "model": "$model"}},
        },
        "ghost": {
            "game": "no_such_game", "instances": 2, "dataset": {"name": "none"},
            "agents": {"p": {"role": "player", "model": "$model"}},
        },
    },
}


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    suite = tmp_path / "tiny-bench.yaml"
    suite.write_text(yaml.safe_dump(SUITE, sort_keys=False))
    models: dict = {}
    for name in ("scripted.yaml", "textworld.yaml"):
        models.update(yaml.safe_load((CONFIGS / name).read_text())["models"])
    models_file = tmp_path / "models.yaml"
    models_file.write_text(yaml.safe_dump({"models": models}))
    return suite, models_file


def bench(suite: Path, models_file: Path, out: Path, *args: str):
    return CliRunner().invoke(app, ["bench", *args, "--suite", str(suite), "--models-file", str(models_file),
                                    "-o", str(out), "--quiet", "--no-report"])


def test_bench_two_models_on_dond_with_a_missing_game(files, tmp_path: Path):
    suite, models_file = files
    out = tmp_path / "out"
    res = bench(suite, models_file, out, "scripted-negotiator", "scripted-haggler", "--games", "dond,ghost")
    assert res.exit_code == 0, res.output
    assert res.output.count("ghost: game 'no_such_game' is not registered in this installation; skipped") >= 1
    assert "clemscore" in res.output and "scripted-haggler" in res.output and "Traceback" not in res.output
    data = json.loads((out / "bench.json").read_text())
    assert data["suite"] == {"name": "tiny-bench", "version": "test-1", "file": str(suite)}
    assert data["status"] == "complete" and data["games"]["ghost"]["status"] == "skipped"
    for model in ("scripted-negotiator", "scripted-haggler"):
        row = data["games"]["dond"]["models"][model]
        run_dir = out / "runs" / model / "dond"
        assert Path(row["run_dir"]) == run_dir and (run_dir / "episodes.jsonl").is_file()
        assert (out / "configs" / model / "dond.yaml").is_file()
        records = list(iter_records(run_dir, transcripts=False))
        assert row["episodes"] == len(records) == 6  # 3 instances x both seat orders
        qs = [episode_quality(r) for r in records]
        played = [q for q in qs if q is not None]
        assert row["played"] == len(played) and row["pct_played"] == pytest.approx(100 * len(played) / 6)
        assert row["score"] == pytest.approx(sum(played) / 6)
        for r, q in zip(records, qs, strict=True):
            if q is not None:
                assert q == pytest.approx(dond_quality(r.outcome.metrics))
        clem = data["clemscore"][model]
        assert clem["games"] == ["dond"] and clem["missing"] == ["ghost"]
        assert clem["clemscore"] == pytest.approx(row["score"])  # one game: clemscore = its score
        assert clem["ci"][0] <= clem["clemscore"] <= clem["ci"][1]
    md = (out / "bench.md").read_text()
    assert "# Benchmark: tiny-bench vtest-1" in md and "| scripted-negotiator |" in md and "no_such_game" in md


def test_instances_trims_and_a_full_rerun_resumes(files, tmp_path: Path):
    suite, models_file = files
    out = tmp_path / "out"
    res = bench(suite, models_file, out, "scripted-negotiator", "--games", "dond", "--instances", "1")
    assert res.exit_code == 0, res.output
    data = json.loads((out / "bench.json").read_text())
    assert data["instances"] == 1 and data["games"]["dond"]["models"]["scripted-negotiator"]["episodes"] == 2
    first = {r.id for r in iter_records(out / "runs" / "scripted-negotiator" / "dond", transcripts=False)}
    res = bench(suite, models_file, out, "scripted-negotiator", "--games", "dond")
    assert res.exit_code == 0, res.output
    data = json.loads((out / "bench.json").read_text())
    assert data["games"]["dond"]["models"]["scripted-negotiator"]["episodes"] == 6
    again = {r.id for r in iter_records(out / "runs" / "scripted-negotiator" / "dond", transcripts=False)}
    assert first < again and len(again) == 6  # the same run directory, resumed
    res = bench(suite, models_file, out, "scripted-negotiator", "--games", "dond", "--instances", "1")
    data = json.loads((out / "bench.json").read_text())
    assert data["games"]["dond"]["models"]["scripted-negotiator"]["episodes"] == 2  # only what is scheduled


def test_debate_judged_by_the_partner_and_partner_matchups(files, tmp_path: Path):
    suite, models_file = files
    out = tmp_path / "out"
    res = bench(suite, models_file, out, "scripted-debater", "--partner", "scripted-judge", "--games", "debate")
    assert res.exit_code == 0, res.output
    data = json.loads((out / "bench.json").read_text())
    assert data["partner"] == "scripted-judge"
    cfg = yaml.safe_load((out / "configs" / "scripted-debater" / "debate.yaml").read_text())
    assert cfg["agents"]["judge"]["model"] == "scripted-judge"
    records = list(iter_records(out / "runs" / "scripted-debater" / "debate", transcripts=False))
    row = data["games"]["debate"]["models"]["scripted-debater"]
    assert row["episodes"] == len(records) == 4
    done = [100 * r.outcome.metrics["p_correct"] for r in records if episode_quality(r) is not None]
    assert done and row["quality"] == pytest.approx(sum(done) / len(done))

    res = bench(suite, models_file, tmp_path / "pair", "scripted-negotiator", "--partner", "scripted-haggler",
                "--games", "dond", "--instances", "1")
    assert res.exit_code == 0, res.output
    records = list(iter_records(tmp_path / "pair" / "runs" / "scripted-negotiator" / "dond", transcripts=False))
    assert len(records) == 2 and all({s.model for s in r.seats.values()} == {"scripted-negotiator", "scripted-haggler"}
                                     for r in records)


def test_textworld_gold_policy_scores_100(files, tmp_path: Path):
    pytest.importorskip("textworld_express")
    if shutil.which("java") is None:
        pytest.skip("TextWorld cooking needs Java")
    suite, models_file = files
    res = bench(suite, models_file, tmp_path / "out", "textworld-gold", "--games", "textworld_cooking")
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "out" / "bench.json").read_text())
    row = data["games"]["textworld_cooking"]["models"]["textworld-gold"]
    assert (row["episodes"], row["pct_played"], row["quality"]) == (1, 100.0, 100.0)
    assert data["clemscore"]["textworld-gold"]["clemscore"] == pytest.approx(100.0)


def test_dry_run_writes_configs_and_plays_nothing(files, tmp_path: Path):
    suite, models_file = files
    out = tmp_path / "out"
    res = bench(suite, models_file, out, "scripted-negotiator", "--games", "dond,debate", "--instances", "2",
                "--dry-run")
    assert res.exit_code == 0, res.output
    assert "dry run" in res.output and "scripted-negotiator" in res.output
    assert (out / "configs" / "scripted-negotiator" / "dond.yaml").is_file()
    assert not (out / "runs").exists() and not (out / "bench.json").exists()


def test_a_broken_entry_is_reported_and_the_others_still_play(files, tmp_path: Path):
    suite, models_file = files
    out = tmp_path / "out"
    res = bench(suite, models_file, out, "scripted-negotiator", "--games", "broken,dond", "--instances", "1")
    assert res.exit_code == 3, res.output  # incomplete, like `sparring run`
    assert "scripted-negotiator · broken: " in res.output and "no_such_dataset" in res.output
    data = json.loads((out / "bench.json").read_text())
    assert data["status"] == "incomplete"
    assert data["games"]["broken"]["models"]["scripted-negotiator"]["status"] == "error"
    assert data["games"]["dond"]["models"]["scripted-negotiator"]["episodes"] == 2
    assert data["clemscore"]["scripted-negotiator"]["missing"] == ["broken"]


@pytest.mark.parametrize(("args", "message"), [
    (["no-such-model"], "unknown model 'no-such-model'"),
    (["scripted-negotiator", "--partner", "nobody"], "unknown model 'nobody'"),
    (["scripted-negotiator", "--games", "dnd"], "unknown game of suite 'tiny-bench' 'dnd'"),
])
def test_user_errors_exit_2_with_one_line(files, tmp_path: Path, args, message):
    suite, models_file = files
    res = bench(suite, models_file, tmp_path / "out", *args)
    assert res.exit_code == 2, res.output
    assert message in res.output and "Traceback" not in res.output
    assert not (tmp_path / "out" / "runs").exists()


def test_unknown_suite_exits_2(tmp_path: Path):
    res = CliRunner().invoke(app, ["bench", "scripted-negotiator", "--suite", "nope", "-o", str(tmp_path)])
    assert res.exit_code == 2 and "unknown benchmark suite 'nope'" in res.output
