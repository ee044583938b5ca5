"""The engine with the real games: scripted debaters + judge through DebateGame (incl. re-judging a
stored run), scripted negotiators through DealOrNoDealGame (incl. resume after SIGKILL), and the
shipped configs end to end with the bundled model (marked `bundled`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from sparring.engine.loader import load_config, resolve
from sparring.engine.run import RunOptions, run_experiment
from sparring.records.reader import iter_records
from tests.commands import run_commands

REPO = Path(__file__).resolve().parents[2]
QUIET = Console(quiet=True)


def run(config, runs_dir, **kw):
    return run_experiment(RunOptions(configuration=str(config), output_dir=str(runs_dir), quiet=True,
                                     **kw), console=QUIET)


def comparable(run_dir) -> dict:
    out = {}
    for r in iter_records(run_dir):
        d = r.model_dump(mode="json", exclude={"started_at", "duration_s"})
        for call in d["calls"]:
            for c in call.get("completions") or []:
                c.pop("latency_s", None)
        out[r.id] = d
    return out


def test_shipped_configs_resolve():
    """Every shipped configuration validates (models, prompts, agents, tournament) — no weights."""
    configs = sorted((REPO / "sparring" / "configs" / "experiments").glob("*.yaml"))
    assert len(configs) >= 11
    for path in configs:
        cfg, p = load_config(path)
        exp = resolve(cfg, p)
        assert exp.participants or exp.judges, path.name


def test_scripted_debate_through_the_debate_game(runs_dir):
    one = run("scripted-debate", runs_dir, run_name="d1", num_iters=3, max_live=1)
    many = run("scripted-debate", runs_dir, run_name="d64", num_iters=3, max_live=64)
    a, b = comparable(one.run_dir), comparable(many.run_dir)
    assert len(a) == 3 * 3 * 2 and a == b  # 3 pairs (with self pairs) x 3 questions x flip
    for rec in iter_records(one.run_dir):
        assert rec.status == "complete" and rec.game == "debate"
        assert [c.tag for c in rec.calls] == ["speech", "speech", "verdict"]
        assert sum(rec.outcome.rewards[p] for p in ("Debater_A", "Debater_B")) == pytest.approx(1.0)
        judge_call = rec.calls[-1]
        assert judge_call.op == "score" and judge_call.logprobs is not None
        # the judge never sees the story; debaters do
        story = rec.calls[0].messages[0].content
        assert "Story" in story or "story" in story


def test_replicate_rejudges_a_debate_run(runs_dir, tmp_path):
    src = run("scripted-debate", runs_dir, run_name="src", num_iters=2)
    cfg = {"tournament": {"type": "replicate", "source_run": str(src.run_dir), "judges": ["fair"]},
           "models_file": str(REPO / "sparring" / "configs" / "experiments" / "models" / "scripted.yaml"),
           "agents": {"fair": {"role": "judge", "model": "scripted-judge", "verdict": "generate"}}}
    path = tmp_path / "rejudge.yaml"
    path.write_text(yaml.safe_dump(cfg))
    res = run(path, runs_dir, run_name="rep")
    old = {(r.instance_id, r.flip, r.matchup): r for r in iter_records(src.run_dir)}
    new = list(iter_records(res.run_dir))
    assert len(new) == len(old) == 12 and res.summary["failed"] == 0
    for r in new:
        o = old[(r.instance_id, r.flip, r.matchup)]
        speeches = [e.content for e in r.events if e.tag == "speech"]
        assert speeches and speeches == [e.content for e in o.events if e.tag == "speech"]
        assert r.seats["Judge"].agent == "fair" and r.outcome.metrics["verdict_meta"]["method"] == "generate"
        assert r.outcome.metrics["probs"]["Debater_A"] == pytest.approx(0.6)  # "Debater_A | 60%"


def dond_config(tmp_path: Path) -> Path:
    cfg = {"game": "dond", "game_args": {"objective": "self", "max_turns": 8},
           "dataset": {"name": "dond_generated", "args": {"n": 10, "seed": 1}},
           "models_file": str(Path(__file__).parent / "models.yaml"),
           "agents": {"slow": {"role": "negotiator", "model": "t-negotiator"},
                      "quick": {"role": "negotiator", "model": "t-negotiator2"}},
           "tournament": {"type": "round_robin", "self_pairs": True, "flip": True},
           "run": {"seed": 3}}
    path = tmp_path / "dond.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_scripted_negotiators_through_dond_and_sigkill_resume(tmp_path, runs_dir):
    path = dond_config(tmp_path)
    run_dir = runs_dir / "killed"
    episodes = run_dir / "episodes.jsonl"
    proc = subprocess.Popen([sys.executable, str(REPO / "scripts" / "run_negotiation.py"), "-c", str(path),
                             "-o", str(runs_dir), "--run-name", "killed", "--max-live", "3", "--quiet",
                             "--no-report"], env={**os.environ, "PYTHONUNBUFFERED": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    try:
        while (episodes.read_bytes().count(b"\n") if episodes.exists() else 0) < 8:
            assert proc.poll() is None, proc.stdout.read().decode()
            assert time.time() < deadline
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    stored = episodes.read_bytes().count(b"\n")
    assert 8 <= stored < 60
    res = run_experiment(RunOptions(resume=str(run_dir), quiet=True), console=QUIET)
    assert res.status == "complete" and res.summary["done"] + res.summary["skipped"] == 60
    ids = [json.loads(x)["id"] for x in episodes.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 60
    ref = run(path, runs_dir, run_name="ref", max_live=64)
    assert comparable(run_dir) == comparable(ref.run_dir)
    recs = list(iter_records(run_dir))
    ends = {r.outcome.metrics["end"] for r in recs if r.outcome}
    assert {"deal", "mismatch"} & ends  # complete games were played to an end
    assert all(r.game == "dond" and set(r.seats) == {"Player_1", "Player_2"} for r in recs)
    assert any(c.rejected for r in recs for c in r.calls)  # invalid outputs were corrected and retried


def test_benchmark_negotiators_play_the_shortest_legal_game(tmp_path, runs_dir):
    """`scripted-brief` (the engine benchmark's negotiation workload): message, message, proposal,
    proposal, every game, with no invalid output."""
    cfg = {"game": "dond", "game_args": {"objective": "self", "max_turns": 10},
           "dataset": {"name": "dond_generated", "args": {"n": 6, "seed": 2}},
           "models_file": str(REPO / "sparring" / "configs" / "experiments" / "models" / "scripted.yaml"),
           "agents": {"alice": {"role": "negotiator", "model": "scripted-brief"},
                      "bob": {"role": "negotiator", "model": "scripted-brief"}},
           "tournament": {"type": "custom", "matchups": [["alice", "bob"]], "flip": True}}
    path = tmp_path / "brief.yaml"
    path.write_text(yaml.safe_dump(cfg))
    res = run(path, runs_dir, run_name="brief")
    recs = list(iter_records(res.run_dir))
    assert res.status == "complete" and len(recs) == 12
    for r in recs:
        kinds = [e.meta["kind"] for e in r.events if e.tag == "turn"]
        assert kinds == ["message", "message", "proposal", "proposal"]
        assert not any(c.rejected for c in r.calls) and r.outcome.metrics["end"] in ("deal", "mismatch")
    assert len({tuple(e.content for e in r.events) for r in recs}) > 1  # seeded wordings differ


@pytest.mark.bundled
@pytest.mark.timeout(900)  # about 2.5 min; on first use also the model's fetch and conversion (~1 min)
def test_both_quickstarts_end_to_end_with_bundled_model(tmp_path):
    """The README's first command (the debate quickstart) and the negotiation quickstart, one question
    or scenario each, played in both seat orders; one process for both (its imports paid once)."""
    done = run_commands([
        [str(REPO / "scripts" / "run_debate.py"), "--configuration", "quickstart", "--num-iters", "1",
         "-o", str(tmp_path), "--run-name", "qs"],
        [str(REPO / "scripts" / "run_negotiation.py"), "--configuration", "dond-quickstart", "--num-iters", "1",
         "-o", str(tmp_path), "--run-name", "dq", "--no-report"]], timeout=840)
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    recs = list(iter_records(tmp_path / "qs"))
    assert len(recs) == 2 and all(r.status == "complete" for r in recs)
    assert all(len([c for c in r.calls if c.tag == "speech"]) == 4 for r in recs)
    assert (tmp_path / "qs" / "manifest.json").is_file()
    recs = list(iter_records(tmp_path / "dq"))
    assert len(recs) == 2 and all(r.status in ("complete", "aborted") for r in recs)


def test_empty_split_says_why_and_how_to_take_everything(tmp_path):
    """One QuALITY article lands in a single hash split; asking for another names the cause."""
    from sparring.engine.run import prepare
    from sparring.errors import ConfigError
    from sparring.games.debate.datasets.base import SplitFractions, hash_split

    row = {"article_id": "a1", "set_unique_id": "a1_S", "title": "T", "article": "Text of a1.",
           "questions": [{"question": "Q?", "options": ["x", "y"], "gold_label": 1, "difficult": 1}]}
    (tmp_path / "q.jsonl").write_text(json.dumps(row) + "\n")
    home = hash_split("a1", SplitFractions(), "quality")
    other = next(s for s in ("train", "val", "test") if s != home)
    cfg = {"game": "debate", "dataset": {"name": "quality", "split": other, "args": {"path": "q.jsonl"}},
           "models_file": str(REPO / "sparring/configs/experiments/models/scripted.yaml"),
           "agents": {"d": {"role": "debater", "model": "scripted-debater"},
                      "j": {"role": "judge", "model": "scripted-judge"}},
           "tournament": {"type": "self_play", "participants": ["d"], "judges": ["j"]}}
    path = tmp_path / "one.yaml"
    path.write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConfigError) as e:
        prepare(RunOptions(configuration=str(path), dry_run=True))
    msg = str(e.value)
    assert str(path) in msg and f"in split {other!r}" in msg and "`dataset.split: all`" in msg
    cfg["dataset"]["split"] = "all"
    path.write_text(yaml.safe_dump(cfg))
    assert list(prepare(RunOptions(configuration=str(path), dry_run=True)).instances) == ["a1_S_1"]
