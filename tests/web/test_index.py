"""The byte-offset episode index agrees with the run reader and stays current as a run grows."""

from __future__ import annotations

import json
import random
from pathlib import Path

from synthetic import record, write_run

from sparring.records.index import IndexCache, RunIndex
from sparring.records.lines import read_at
from sparring.records.reader import iter_records


def test_index_matches_the_reader_with_duplicates_failures_and_a_torn_tail(tmp_path: Path):
    run = write_run(tmp_path / "r", 30, failed=2)
    episodes = run / "episodes.jsonl"
    lines = episodes.read_bytes().splitlines(keepends=True)
    with open(episodes, "ab") as f:
        f.write(lines[3])  # a duplicate id: the first line wins
        f.write(b"not json\n")
        f.write(lines[4][:50])  # a torn last line: not indexed yet
    index = RunIndex(run).refresh(background=False).summarize_all()
    done = [r.id for r in iter_records(run, warnings=[])]
    failed = [r.id for r in iter_records(run, failures=True, warnings=[])]
    assert [e.id for e in index.entries] == done + failed
    assert index.done == 30 and index.duplicates == 1
    for e in index.entries[:5] + index.entries[-2:]:
        rec = read_at(run / e.file, e.offset, e.length)
        assert rec.id == e.id and rec.status == e.status and rec.matchup == e.matchup
        if rec.outcome:
            assert e.rewards == rec.outcome.rewards
            assert e.judge_probability == rec.outcome.metrics["p_correct"]
    assert {e.status for e in index.entries} == {"complete", "failed"}
    assert index.get(failed[0]).error == "RuntimeError: boom"


def test_a_grown_file_is_scanned_from_where_the_last_scan_stopped(tmp_path: Path):
    run = write_run(tmp_path / "r", 10)
    cache = IndexCache()
    first = cache.get(run)
    old = list(first.entries)
    rec = record(99, random.Random(0), experiment="r")
    with open(run / "episodes.jsonl", "ab") as f:
        f.write(rec.model_dump_json().encode() + b"\n")
    again = cache.get(run)
    assert again is first and len(again.entries) == 11
    assert all(a is b for a, b in zip(old, again.entries, strict=False))  # not re-parsed
    assert again.read(rec.id).id == rec.id


def test_summaries_of_records_in_another_key_order_fall_back_to_a_full_parse(tmp_path: Path):
    run = write_run(tmp_path / "r", 2)
    rec = json.loads(record(7, random.Random(3), experiment="r").model_dump_json())
    reordered = {"calls": rec.pop("calls"), **rec}  # transcript first: no head/tail shortcut
    with open(run / "episodes.jsonl", "ab") as f:
        f.write(json.dumps(reordered).encode() + b"\n")
    index = RunIndex(run).refresh(background=False).summarize_all()
    e = index.get(rec["id"])
    assert e is not None and e.matchup == rec["matchup"] and e.status == "complete"
    assert e.judge_probability == rec["outcome"]["metrics"]["p_correct"]
