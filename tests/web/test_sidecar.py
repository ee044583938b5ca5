"""The persistent summary index (`records.sidecar`): reused by a new index (a restarted server)
with the same results as a fresh scan, rebuilt when the file grows or is rewritten, ignored when
corrupt, and optional when the run directory cannot be written."""

from __future__ import annotations

import hashlib
import json
import os
import random
from pathlib import Path

import pytest
from synthetic import record, write_run

from sparring.records import sidecar
from sparring.records.index import RunIndex
from sparring.records.store import write_summaries

FIELDS = ("id", "file", "offset", "length", "line_no", "game", "experiment", "instance_id", "matchup", "status",
          "seats", "winner", "rewards", "best_reward", "reason", "metrics", "judge_probability", "error",
          "started_at", "duration_s", "repeat", "flip", "summarized", "problem", "search")


def fresh(run: Path) -> RunIndex:
    """The index as built without any sidecar (every line parsed)."""
    return RunIndex(run, persist=False).refresh(background=False).summarize_all()


def loaded(run: Path) -> RunIndex:
    """A new index as a restarted server builds it (sidecars read, nothing written)."""
    return RunIndex(run).refresh(background=False).summarize_all(save=False)


def view(index: RunIndex) -> tuple[list[tuple], list[str], int, int]:
    rows = [tuple(dict(v) if isinstance(v := getattr(e, k), dict) else v for k in FIELDS) for e in index.entries]
    return rows, index.problems, index.done, index.duplicates


def run_without_index(path: Path, n: int) -> tuple[Path, Path]:
    """A run of `n` episodes whose `.index` folder (the store writes one at close) is gone."""
    run = write_run(path, n)
    index_dir = run / sidecar.INDEX_DIR
    for p in index_dir.iterdir():
        p.unlink()
    index_dir.rmdir()
    return run, index_dir


def messy_run(tmp_path: Path, n: int = 30) -> Path:
    """A run with failures, a duplicate, a line that is not JSON, an invalid record and a torn tail."""
    run = write_run(tmp_path / "r", n, failed=2)
    lines = (run / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    invalid = json.loads(lines[5])
    invalid["seats"] = "nobody"
    with open(run / "episodes.jsonl", "ab") as f:
        f.write(lines[3])  # a duplicate id: the first line wins
        f.write(b"not json\n")
        f.write(json.dumps({**invalid, "id": "bad-seats"}).encode() + b"\n")
        f.write(lines[4][:50])  # a torn last line
    return run


def test_the_store_writes_the_sidecar_and_a_restarted_index_parses_no_line(tmp_path: Path):
    run = write_run(tmp_path / "r", 40, failed=2)
    assert sidecar.sidecar_path(run / "episodes.jsonl").is_file()
    index = loaded(run)
    assert index.parsed == 0 and index.complete
    assert view(index) == view(fresh(run))


def test_a_messy_run_loads_from_its_sidecar_with_the_same_rows_and_problems(tmp_path: Path):
    run = messy_run(tmp_path)
    first = RunIndex(run).refresh(background=False).summarize_all(save=False)
    assert first.parsed > 0 and first.save()
    again = loaded(run)
    assert again.parsed == 0
    assert view(again) == view(first) == view(fresh(run))
    problems = again.problems
    assert any("skipped unreadable record (seats" in p for p in problems)
    assert any("not JSON (a torn last line?)" in p for p in problems)
    assert again.get("bad-seats") is None and again.bad_entry("bad-seats") is not None
    e = again.entries[0]
    assert e.metrics == fresh(run).entries[0].metrics and e.rewards and e.judge_probability is not None


def test_a_grown_file_summarises_only_its_new_lines(tmp_path: Path):
    run = write_run(tmp_path / "r", 25)
    with open(run / "episodes.jsonl", "ab") as f:
        for i in (100, 101):
            f.write(record(i, random.Random(i), experiment="r").model_dump_json().encode() + b"\n")
    index = loaded(run)
    assert index.parsed == 2 and len(index.entries) == 27
    assert view(index) == view(fresh(run))
    assert index.save()
    assert loaded(run).parsed == 0


def test_a_rewritten_file_is_never_served_from_the_old_sidecar(tmp_path: Path):
    run = write_run(tmp_path / "r", 20)
    episodes = run / "episodes.jsonl"
    lines = episodes.read_bytes().splitlines(keepends=True)
    tmp = run / "new.jsonl"
    tmp.write_bytes(b"".join(lines[:10]))  # replaced (a new inode), shorter
    os.replace(tmp, episodes)
    index = loaded(run)
    assert index.parsed == 10 and view(index) == view(fresh(run))

    write_summaries(run)
    data = episodes.read_bytes()
    altered = data.replace(b'"status":"complete"', b'"status":"aborted" ', 1)  # same size, same inode
    assert len(altered) == len(data) and altered != data
    with open(episodes, "r+b") as f:
        f.write(altered)
    index = loaded(run)
    assert index.parsed == 10 and index.entries[0].status == "aborted"
    assert view(index) == view(fresh(run))


def test_lines_moved_in_place_are_caught_even_with_both_ends_unchanged(tmp_path: Path):
    run = write_run(tmp_path / "r", 120)  # ~4 KB a line: the middle is far from both hashed ends
    episodes = run / "episodes.jsonl"
    lines = episodes.read_bytes().splitlines(keepends=True)
    moved = lines[:30] + lines[30:90][::-1] + lines[90:]
    extra = record(500, random.Random(5), experiment="r").model_dump_json().encode() + b"\n"
    with open(episodes, "r+b") as f:  # same inode, grown: looks like an append from both ends
        f.write(b"".join(moved) + extra)
    index = loaded(run)
    assert index.parsed == 121
    assert view(index) == view(fresh(run))


@pytest.mark.parametrize("damage", ["flipped byte", "truncated", "garbage header", "wrong types", "other file"])
def test_a_corrupt_sidecar_is_ignored_and_rewritten(tmp_path: Path, damage: str):
    run = write_run(tmp_path / "r", 15)
    path = sidecar.sidecar_path(run / "episodes.jsonl")
    header, rows = path.read_bytes().split(b"\n", 1)
    rows = rows.rstrip(b"\n")
    if damage == "flipped byte":
        i = rows.index(b'"ep000003"') + 3
        rows = rows[:i] + b"X" + rows[i + 1:]
    elif damage == "truncated":
        rows = rows[: len(rows) // 2]
    elif damage == "garbage header":
        header = b"\x00\xff not a header"
    elif damage in ("wrong types", "other file"):  # a well-formed sidecar (valid checksum) that does not fit
        cols = json.loads(rows)
        if damage == "wrong types":
            cols["seats"][2] = "everyone"
        else:
            cols["offset"] = [o + 1 for o in cols["offset"]]
        rows = json.dumps(cols).encode()
        meta = json.loads(header)
        meta["rows_sha256"] = hashlib.sha256(rows).hexdigest()
        header = json.dumps(meta).encode()
    path.write_bytes(header + b"\n" + rows + b"\n")
    index = loaded(run)
    assert index.parsed == 15 and view(index) == view(fresh(run))
    assert index.save() and loaded(run).parsed == 0  # rebuilt


def test_an_unwritable_run_directory_keeps_the_index_in_memory(tmp_path: Path):
    run, index_dir = run_without_index(tmp_path / "r", 12)
    index_dir.write_text("a file where the index folder would go")  # mkdir fails, even for root
    index = RunIndex(run).refresh(background=False).summarize_all(save=False)
    assert not index.save() and not index.writable
    assert view(index) == view(fresh(run)) and index.parsed == 12
    assert loaded(run).parsed == 12  # nothing persisted, nothing broken


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes to read-only directories")
def test_a_read_only_run_directory_keeps_the_index_in_memory(tmp_path: Path):
    run, index_dir = run_without_index(tmp_path / "r", 12)
    os.chmod(run, 0o555)
    try:
        index = RunIndex(run).refresh(background=False).summarize_all(save=False)
        assert not index.save() and view(index) == view(fresh(run))
    finally:
        os.chmod(run, 0o755)


def test_creating_the_index_folder_keeps_the_run_directory_mtime(tmp_path: Path):
    """The runs list sorts by the run directory's mtime ('last updated'): viewing is no update."""
    run, index_dir = run_without_index(tmp_path / "r", 5)
    os.utime(run, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    assert RunIndex(run).refresh(background=False).summarize_all(save=False).save()
    assert index_dir.is_dir() and os.stat(run).st_mtime_ns == 1_000_000_000_000_000_000


def test_a_restarted_web_app_serves_the_same_sorted_page_without_parsing(tmp_path: Path):
    from fastapi.testclient import TestClient

    from sparring.web.app import create_app

    runs = tmp_path / "runs"
    run = messy_run(runs)
    url = "/runs/r?sort=judge_p&desc=1&q=plain&per=25"
    pages = []
    for _ in range(2):  # the first app builds and writes the sidecar, the second (a restart) loads it
        app = create_app(runs)
        with TestClient(app, base_url="http://127.0.0.1") as client:
            client.get("/runs")
            r = client.get(url)
            assert r.status_code == 200
            index = app.state.web.indexes.get(run)
            pages.append((r.text.split("<table", 1)[1].split("</table>")[0], index.parsed))
            assert index.save()
    (first, parsed_first), (second, parsed_second) = pages
    assert parsed_first > 0 and parsed_second == 0 and first == second and "ep0000" in first


def test_the_one_pass_summary_equals_the_general_path_line_by_line(tmp_path: Path):
    """`_fast_fill` (joined head and tail, validated by pydantic's JSON parser) and the general
    path (parsed, checked by `check_record`, then `fill`) give every line the same summary."""
    import mmap

    from sparring.records.entry import IndexEntry
    from sparring.records.lines import _fast_fill, _parse_summary, scan

    run = write_run(tmp_path / "r", 6, failed=2)
    odd = json.loads((run / "episodes.jsonl").read_bytes().splitlines()[0])
    odd.update(id="odd", repeat=2, flip=True, started_at=17, duration_s=3)
    odd["outcome"].update(rewards={"Debater_A": 1, "Debater_B": 0}, reason="deal", winner=None)
    odd["outcome"]["metrics"]["nested"] = {"dropped": True}
    with open(run / "episodes.jsonl", "ab") as f:
        f.write(json.dumps(odd, separators=(",", ":")).encode() + b"\n")  # as the store writes
    for name in ("episodes.jsonl", "failures.jsonl"):
        entries, _, _ = scan(run / name)
        data = (run / name).read_bytes()
        with open(run / name, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            for e in entries:
                fast = IndexEntry(e.id, e.file, e.offset, e.length, e.line_no)
                assert _fast_fill(mm, fast)
                general = IndexEntry(e.id, e.file, e.offset, e.length, e.line_no)
                general.fill(_parse_summary(data[e.offset:e.offset + e.length]))
                assert [getattr(fast, k) for k in FIELDS] == [getattr(general, k) for k in FIELDS], e.id
    assert fast.status == "failed" and fast.error == "RuntimeError: boom"


def test_a_store_closes_normally_when_its_sidecar_cannot_be_written(tmp_path: Path):
    from sparring.engine.config import open_store, read_config

    run, index_dir = run_without_index(tmp_path / "r", 3)
    index_dir.write_text("in the way")
    with open_store(run, read_config(run)) as store:
        store.add_done(record(50, random.Random(2), experiment="r"))
    assert len(fresh(run).entries) == 4 and index_dir.is_file()
