"""Run store: group-committed appends, reopen/resume, torn-line repair, dedupe, locking, merge."""

from __future__ import annotations

import json

import pytest

from sparring.engine.config import ExperimentConfig, open_store
from sparring.engine.shard import merge_runs
from sparring.errors import ConfigError, SparringError
from sparring.records.index import RunIndex
from sparring.records.reader import iter_records, read_manifest
from sparring.records.record import EpisodeRecord, SeatRecord
from sparring.records.store import repair_jsonl


def cfg(seed: int = 0, **run) -> ExperimentConfig:
    return ExperimentConfig.model_validate({"name": "exp", "game": "toy", "dataset": {"name": "toy"},
                                            "agents": {"a": {"role": "debater", "model": "m"}},
                                            "run": {"seed": seed, **run}})


def rec(i: int, status: str = "complete", error: str | None = None) -> EpisodeRecord:
    return EpisodeRecord(id=f"{i:016x}", experiment="exp", game="toy", instance_id=f"q{i}",
                         seats={"A": SeatRecord(agent="a", model="m", role="debater")}, seed=i,
                         status=status, error=error)


def test_commit_and_reopen(tmp_path):
    with open_store(tmp_path / "r", cfg()) as s:
        s.add_done(rec(1))
        s.add_done(rec(2, "aborted"))
        s.add_failed(rec(3, "failed", "boom"))
        assert s.done == {}  # nothing is done before the commit
        written = s.commit()
        assert [r.id for r in written] == [rec(1).id, rec(2).id, rec(3).id]
    s = open_store(tmp_path / "r", cfg(max_live=3))  # volatile settings may differ on resume
    assert set(s.done) == {rec(1).id, rec(2).id} and set(s.failed) == {rec(3).id}
    assert s.counts() == {"done": 2, "complete": 1, "aborted": 1, "failed": 1}
    # a retried failure that now succeeds leaves the failed set
    s.add_done(rec(3))
    s.commit()
    assert rec(3).id in s.done and rec(3).id not in s.failed
    s.close(status="complete")
    m = read_manifest(tmp_path / "r")
    assert m["status"] == "complete" and m["counts"]["done"] == 3 and m["experiment"] == "exp"
    assert (tmp_path / "r" / "config.yaml").read_text().startswith("# resolved configuration")


def test_never_two_lines_for_one_id(tmp_path):
    with open_store(tmp_path / "r", cfg()) as s:
        s.add_done(rec(1))
        s.add_done(rec(1))
        s.commit()
        s.add_done(rec(1))
        s.commit()
    lines = (tmp_path / "r" / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 1


def test_torn_last_line_is_cut_and_complete_lines_kept(tmp_path):
    with open_store(tmp_path / "r", cfg()) as s:
        for i in range(3):
            s.add_done(rec(i))
        s.commit()
    path = tmp_path / "r" / "episodes.jsonl"
    good = path.read_bytes()
    torn = rec(9).model_dump_json().encode()[:57]
    path.write_bytes(good + torn)
    s = open_store(tmp_path / "r", cfg())
    assert path.read_bytes() == good and len(s.done) == 3
    s.add_done(rec(9))
    s.commit()
    s.close()
    assert [r.instance_id for r in iter_records(tmp_path / "r")] == ["q0", "q1", "q2", "q9"]
    # a complete-looking but unparseable last line (e.g. zero-filled block) is cut too
    path.write_bytes(path.read_bytes() + b"\x00\x00\x00\n")
    assert repair_jsonl(path) == 4
    # a file with only a torn line becomes empty
    only = tmp_path / "only.jsonl"
    only.write_bytes(b'{"id": "x", "sta')
    repair_jsonl(only)
    assert only.read_bytes() == b""


def test_reading_dedupes_ids(tmp_path):
    path = tmp_path / "episodes.jsonl"
    a, b = rec(1).model_dump_json(), rec(2).model_dump_json()
    path.write_text("\n".join([a, b, a, "not json", ""]) + "\n")
    assert [r.id for r in iter_records(path)] == [rec(1).id, rec(2).id]


def test_second_writer_and_other_experiment_refused(tmp_path):
    s = open_store(tmp_path / "r", cfg())
    with pytest.raises(SparringError, match="in use"):
        open_store(tmp_path / "r", cfg())
    s.close()
    with pytest.raises(ConfigError, match=r"different experiment.*run\.seed"):
        open_store(tmp_path / "r", cfg(seed=1))


def test_merge_shards(tmp_path):
    for name, ids in (("s0", [1, 2, 3]), ("s1", [3, 4])):
        with open_store(tmp_path / name, cfg()) as s:
            for i in ids:
                s.add_done(rec(i))
            s.add_failed(rec(5, "failed", "x"))
            if name == "s1":
                s.add_failed(rec(6, "failed", "y"))
            s.commit()
            s.write_manifest(schedule={"total": 6, "shard": name[-1] + "/2", "in_shard": 3})
    m = merge_runs([tmp_path / "s0", tmp_path / "s1"], tmp_path / "merged")
    assert m["counts"]["done"] == 4 and m["counts"]["failed"] == 2 and m["status"] == "complete"
    ids = [r.id for r in iter_records(tmp_path / "merged")]
    assert len(ids) == len(set(ids)) == 4
    assert json.loads((tmp_path / "merged" / "manifest.json").read_text())["schedule"]["total"] == 6
    merged = RunIndex(tmp_path / "merged").refresh(background=False).summarize_all(save=False)
    assert merged.parsed == 0 and len(merged.entries) == 6  # its summary sidecar was written by the merge
    with pytest.raises(SparringError, match="not empty"):
        merge_runs([tmp_path / "s0"], tmp_path / "merged")
    with open_store(tmp_path / "other", cfg(seed=5)) as s:
        pass
    with pytest.raises(SparringError, match="different experiments"):
        merge_runs([tmp_path / "s0", tmp_path / "other"], tmp_path / "m2")


def test_failures_reader_keeps_latest_attempt_and_drops_retried_successes(tmp_path):
    with open_store(tmp_path / "r", cfg()) as s:
        s.add_failed(rec(1, "failed", "first"))
        s.add_failed(rec(2, "failed", "x"))
        s.commit()
        s.add_failed(rec(1, "failed", "second"))
        s.add_done(rec(2))
        s.commit()
    failures = list(iter_records(tmp_path / "r", failures=True))
    assert [(f.id, f.error) for f in failures] == [(rec(1).id, "second")]


def test_records_without_transcripts(tmp_path):
    from sparring.gameapi.game import Event
    from sparring.records.record import CallRecord
    from sparring.types import Message

    call = CallRecord(player="A", tag="speech", model="m", op="generate",
                      messages=[Message(role="user", content="a long story " * 50)])
    event = Event(index=0, player="A", tag="speech", content="hi")
    with open_store(tmp_path / "r", cfg()) as s:
        s.add_done(rec(1).model_copy(update={"calls": [call], "events": [event]}))
        s.add_failed(rec(2, "failed", "boom").model_copy(update={"calls": [call]}))
        s.commit()
    full = list(iter_records(tmp_path / "r"))
    light = list(iter_records(tmp_path / "r", transcripts=False))
    assert full[0].calls == [call] and full[0].events == [event]
    assert light[0].calls == [] and light[0].events == []
    assert light[0].model_dump(exclude={"calls", "events"}) == full[0].model_dump(exclude={"calls", "events"})
    (failed,) = iter_records(tmp_path / "r", failures=True, transcripts=False)
    assert failed.error == "boom" and failed.calls == []
