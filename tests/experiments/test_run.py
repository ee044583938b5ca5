"""The engine end to end with scripted models and the toy game: determinism across batch sizes,
failures, resume, swiss rounds, replicate, dry-run, and the CLI."""

from __future__ import annotations

import json

import pytest
from rich.console import Console
from typer.testing import CliRunner

from sparring.engine.run import RunOptions, run_experiment
from sparring.records.reader import iter_records, read_manifest

QUIET = Console(quiet=True)


def run(path, runs_dir, **kw):
    opts = RunOptions(configuration=str(path), output_dir=str(runs_dir), quiet=True, **kw)
    return run_experiment(opts, console=QUIET)


def comparable(rec) -> dict:
    """A record without wall-clock fields."""
    d = rec.model_dump(mode="json", exclude={"started_at", "duration_s"})
    for call in d["calls"]:
        for c in call.get("completions") or []:
            c.pop("latency_s", None)
    return d


def records(run_dir) -> dict[str, dict]:
    return {r.id: comparable(r) for r in iter_records(run_dir)}


FANCY = {"agents": {"alice": {"best_of_n": {"n": 3}, "scratchpad": {"public": False}},
                    "bob": {"best_of_n": {"n": 2, "opponents": 2, "aggregate": "min"}},
                    "j2": {"role": "judge", "model": "t-random2"}},
         "tournament": {"judges": ["judge", "j2"]}}


def test_results_do_not_depend_on_batch_size(make_config, runs_dir):
    path = make_config(FANCY)
    one = run(path, runs_dir, max_live=1, run_name="one")
    many = run(path, runs_dir, max_live=64, run_name="many")
    assert one.status == many.status == "complete"
    a, b = records(one.run_dir), records(many.run_dir)
    assert len(a) == 3 * 6 * 2 and a == b
    # best-of-N candidates, the scratchpad and the panel's votes are all in the record
    rec = next(r for r in iter_records(one.run_dir) if r.seats["A"].agent == "alice")
    assert any(c.chosen is not None and len(c.candidate_scores) == 3 for c in rec.calls)
    assert any(c.tag == "scratchpad" for c in rec.calls)
    assert rec.outcome.winner in ("A", "B")


def test_failing_backend_records_failures_and_the_run_ends_incomplete(make_config, runs_dir):
    path = make_config({"agents": {"bob": {"model": "t-fail"}}})
    res = run(path, runs_dir, run_name="f")
    assert res.status == "incomplete"  # every episode was played, but some are stored as failed
    failed = list(iter_records(res.run_dir, failures=True))
    done = list(iter_records(res.run_dir))
    assert failed and done and len(failed) + len(done) == 36
    assert all("FAILME" in f.error and f.status == "failed" for f in failed)
    assert all(f.calls for f in failed)  # the partial transcript is kept
    assert res.summary["failed"] == len(failed) and read_manifest(res.run_dir)["counts"]["failed"] == len(failed)
    again = run(path, runs_dir, run_name="f")  # failures are not retried by default
    assert again.summary["skipped"] == 36 and again.summary["failed"] == 0
    retry = run(path, runs_dir, run_name="f", retry_failed=True)
    assert retry.summary["failed"] == len(failed)  # deterministic failures fail again, still recorded
    assert len(list(iter_records(res.run_dir))) == len(done)


def test_game_aborts_are_stored_as_aborted_episodes(make_config, runs_dir):
    path = make_config({"game_args": {"reject_word": "I am right."}})  # carol always says it
    res = run(path, runs_dir, run_name="ab")
    recs = list(iter_records(res.run_dir))
    aborted = [r for r in recs if r.status == "aborted"]
    assert aborted and all("carol" in r.matchup for r in aborted)
    assert all(any(c.rejected and c.meta["correction"] for c in r.calls) for r in aborted) or all(
        r.outcome.reason for r in aborted)
    assert res.summary["aborted"] == len(aborted) and res.summary["failed"] == 0


def test_judge_without_scoring_parses_generated_verdict(make_config, runs_dir):
    res = run(make_config({"agents": {"judge": {"model": "t-noscore"}}}), runs_dir, run_name="ns", num_iters=1)
    recs = list(iter_records(res.run_dir))
    assert recs and all(r.outcome.rewards["A"] == pytest.approx(0.8) for r in recs)


def test_resume_with_fixed_run_name_skips_stored(make_config, runs_dir):
    path = make_config()
    first = run(path, runs_dir, run_name="same", num_iters=2)
    assert first.summary["done"] == 3 * 2 * 2
    assert run(path, runs_dir, run_name="same", dry_run=True).plan["already_done"] == 12
    second = run(path, runs_dir, run_name="same")
    assert second.summary["skipped"] == 12 and second.summary["done"] == 24
    lines = (second.run_dir / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == len({json.loads(x)["id"] for x in lines}) == 36
    fresh = run(path, runs_dir, run_name="fresh")
    assert records(fresh.run_dir) == records(second.run_dir)


def test_dry_run_loads_no_model(make_config, runs_dir, monkeypatch):
    import sparring.models.pool as pool
    import sparring.models.registry as registry

    def boom(*a, **k):
        raise AssertionError("a model was loaded during --dry-run")

    monkeypatch.setattr(registry, "create_model", boom)
    monkeypatch.setattr(pool.ModelPool, "get", boom)
    res = run(make_config(), runs_dir, dry_run=True, shard="1/2")
    assert res.status == "dry-run" and res.plan["schedule"]["episodes"] == 36
    assert 0 < res.plan["in_shard"] < 36 and not list(runs_dir.iterdir())


def test_shards_then_merge_equal_unsharded(make_config, runs_dir, tmp_path):
    from sparring.engine.shard import merge_runs

    path = make_config()
    shards = [run(path, runs_dir, shard=f"{i}/3", run_name=f"s{i}").run_dir for i in range(3)]
    whole = run(path, runs_dir, run_name="whole").run_dir
    merged = tmp_path / "merged"
    manifest = merge_runs(shards, merged)
    assert manifest["status"] == "complete" and records(merged) == records(whole)


def test_swiss_runs_round_by_round(make_config, runs_dir):
    path = make_config({"agents": {"dave": {"role": "debater", "model": "t-random2"}},
                        "tournament": {"type": "swiss", "rounds": 3, "flip": True}})
    res = run(path, runs_dir, run_name="sw", num_iters=2)
    recs = list(iter_records(res.run_dir))
    assert len(recs) == 3 * 2 * 2 * 2  # rounds x pairs x questions x flips
    assert res.summary["done"] == 24
    again = run(path, runs_dir, run_name="sw", num_iters=2)  # resuming recomputes the same pairings
    assert again.summary["skipped"] == 24 and again.summary["done"] == 0


def test_replicate_rejudges_stored_transcripts(make_config, runs_dir, tmp_path):
    src = run(make_config(), runs_dir, run_name="src")
    patch = {"=agents": {"newjudge": {"role": "judge", "model": "t-fixed"}},
             "=tournament": {"type": "replicate", "source_run": str(src.run_dir)}}
    path = make_config(patch, name="rejudge", drop=("game", "game_args", "dataset"))
    res = run(path, runs_dir, run_name="rep")
    old = {(r.instance_id, r.flip, r.matchup): r for r in iter_records(src.run_dir)}
    new = list(iter_records(res.run_dir))
    assert len(new) == len(old) == 36
    for r in new:
        o = old[(r.instance_id, r.flip, r.matchup)]
        assert r.seed == o.seed and r.seats["judge"].agent == "newjudge"
        assert [e.content for e in r.events if e.tag == "speech"] == [e.content for e in o.events if e.tag == "speech"]
        assert r.seats["A"].agent == o.seats["A"].agent


def test_cli_run_and_errors(make_config, runs_dir, tmp_path):
    from sparring.cli import app

    cli = CliRunner()
    out = cli.invoke(app, ["run", str(make_config()), "--output-dir", str(runs_dir), "--run-name", "cli",
                           "--quiet", "--no-report", "--num-iters", "1"])
    assert out.exit_code == 0, out.output
    assert len(list(iter_records(runs_dir / "cli"))) == 6
    bad = cli.invoke(app, ["run", str(make_config({"tournament": {"flipp": True}}))])
    assert bad.exit_code == 2 and "flipp" in bad.output and "Traceback" not in bad.output
    missing = cli.invoke(app, ["run", "no-such-config"])
    assert missing.exit_code == 2 and "unknown configuration" in missing.output
    out = cli.invoke(app, ["merge", str(runs_dir / "cli"), "--output", str(tmp_path / "m"), "--no-report"])
    assert out.exit_code == 0 and "6 episodes" in out.output


def test_episode_that_cannot_start_is_recorded_as_failed(make_config, runs_dir):
    """A job whose seats do not fit the game (EpisodeAbort in the driver) becomes a failure record."""
    from sparring.engine.config import open_store
    from sparring.engine.episode import EpisodeJob
    from sparring.engine.loader import build_agents
    from sparring.engine.plan import episodes, prepare

    plan = prepare(RunOptions(configuration=str(make_config()), output_dir=str(runs_dir)))
    agents = build_agents(plan.exp)
    bad = EpisodeJob(experiment="toyexp", instance_id="q0", seats={"A": "alice"}, seed=1)
    with open_store(runs_dir / "bad", plan.exp.config) as store:
        assert list(episodes(plan.exp, plan.instances, [bad], agents, store)) == []
        (written,) = store.commit()
    assert written.status == "failed"
    (failure,) = iter_records(runs_dir / "bad", failures=True)
    assert failure.status == "failed" and "no agent seated" in failure.error
    assert failure.seats["A"].agent == "alice"
