"""A persistent summary index per episode file: `.index/<file>.summary` in the run directory.

Why: summarising 10,000 debate records (parse and check every line's head and tail) costs
0.2-0.5 s of CPU, on every server start and for every run viewed for the first time. The store
writes this sidecar when it closes a run, and the web app after it has summarised a file, so
the next reader loads ~10,000 small rows (one JSON document) instead, and a grown file has only
its new tail summarised. A sidecar is a cache, never a source of truth; it is served only when:

- its header names this format, this sparring version and this record schema (the rule for
  which lines count may change between versions), and the episode file's name;
- a SHA-256 of its rows matches (a torn or edited sidecar is ignored);
- the episode file has the same inode, is at least as long as the part the sidecar covers, is
  not a same-size rewrite (same size, other mtime), and the first and last 64 KiB of that part
  hash as recorded (a file cut and rewritten in place is rebuilt);
- every 16th row's line (and the last) still starts after a newline, ends with one, and holds
  its id.

Anything else (missing, unreadable, stale, corrupt) returns None and the caller scans the file
as if there were no sidecar. Writing is atomic (a temporary file, then `os.replace`) and
best-effort: a read-only or shared directory just keeps the index in memory. Creating `.index`
restores the run directory's mtime, which the runs list shows as the run's last update (a change
made by another process in the microseconds between reading and restoring it shows at its next
change).
"""

from __future__ import annotations

import functools
import hashlib
import json
import mmap
import os
from pathlib import Path
from typing import Any

from sparring import __version__
from sparring.records.entry import IndexEntry
from sparring.records.record import EpisodeRecord

FORMAT = "sparring-episode-index/1"  # bump when what `IndexEntry.fill` keeps, or how, changes
INDEX_DIR = ".index"
_EDGE = 1 << 16  # bytes hashed at each end of the covered part
_STRIDE = 16  # every 16th line is checked against the file (all 10,000: 10 ms)


@functools.cache
def _rules() -> str:
    """What a sidecar's rows depend on besides the file: this code and the record schema."""
    schema = json.dumps(EpisodeRecord.model_json_schema(), sort_keys=True)
    return hashlib.sha256(f"{FORMAT}|{__version__}|{schema}".encode()).hexdigest()[:16]


def sidecar_path(episodes: Path) -> Path:
    return episodes.parent / INDEX_DIR / f"{episodes.name}.summary"


def _edges(f: Any, end: int) -> str:
    """A hash of the first and last 64 KiB of the file's first `end` bytes."""
    h = hashlib.sha256()
    f.seek(0)
    h.update(f.read(min(end, _EDGE)))
    f.seek(max(0, end - _EDGE))
    h.update(f.read(end - max(0, end - _EDGE)))
    return h.hexdigest()


_FIELDS = ("game", "experiment", "instance_id", "matchup", "status", "seats", "winner", "rewards_json",
           "best_reward", "reason", "metrics_json", "judge_probability", "error", "started_at", "duration_s",
           "repeat", "flip", "search")
_NONE = type(None)
_TYPES: dict[str, set[type]] = {  # the types each column may hold (a row's position, then its summary)
    "id": {str}, "offset": {int}, "length": {int}, "line_no": {int}, "summarized": {bool},
    "game": {str}, "experiment": {str}, "instance_id": {str}, "matchup": {str}, "status": {str}, "seats": {int},
    "winner": {str, _NONE}, "rewards_json": {str}, "best_reward": {int, float, _NONE}, "reason": {str, _NONE},
    "metrics_json": {str}, "judge_probability": {int, float, _NONE}, "error": {str, _NONE},
    "started_at": {int, float}, "duration_s": {int, float}, "repeat": {int}, "flip": {bool}, "search": {str}}


def _columns(entries: list[IndexEntry]) -> dict[str, Any]:
    """The rows as columns (one JSON list per field: 10,000 rows load in tens of ms); seats, a
    few distinct mappings repeated on every row, are numbered in a table of their own. A row
    not `summarized` keeps the class defaults (its values are not read back)."""
    # first: a row summarised meanwhile (by a page, in another thread) is saved as not summarised,
    # never as summarised with its fields read before they were set (`summarized` is set last)
    summarized = [e.summarized and e.problem is None for e in entries]
    cols: dict[str, Any] = {k: [getattr(e, k) for e in entries] for k in (
        "id", "offset", "length", "line_no", "game", "experiment", "instance_id", "matchup", "status", "winner",
        "best_reward", "reason", "judge_probability", "error", "started_at", "duration_s", "repeat", "flip", "search")}
    cols["summarized"] = summarized
    seat_table: dict[str, int] = {}
    cols["seats"] = [seat_table.setdefault(json.dumps(dict(e.seats), sort_keys=True), len(seat_table))
                     for e in entries]
    # JSON text (10,000 small dicts are most of a load's time), kept as read when never used
    cols["metrics_json"] = [_text(e.metrics_json, e, "metrics") for e in entries]
    cols["rewards_json"] = [_text(e.rewards_json, e, "rewards") for e in entries]
    cols["seat_table"] = [json.loads(k) for k in seat_table]
    cols["problems"] = {str(i): e.problem for i, e in enumerate(entries) if e.problem is not None}
    return cols


def _text(kept: str | None, e: IndexEntry, field: str) -> str:
    return kept if kept is not None else json.dumps(dict(getattr(e, field)), separators=(",", ":"))


def _entries(cols: Any, name: str) -> list[IndexEntry]:
    """Entries from columns; ValueError for columns of the wrong shape or types (the sidecar is
    then ignored: a sidecar that parses is still never trusted to be well-formed)."""
    if not isinstance(cols, dict):
        raise ValueError("not a mapping")
    n = len(cols["id"])
    for k, allowed in _TYPES.items():
        col = cols[k]
        if not isinstance(col, list) or len(col) != n or not set(map(type, col)) <= allowed:
            raise ValueError(f"column {k}")
    seat_table, problems = cols["seat_table"], cols["problems"]
    if not (isinstance(seat_table, list) and isinstance(problems, dict)
            and all(isinstance(s, dict) and all(isinstance(v, dict) for v in s.values()) for s in seat_table)
            and all(isinstance(p, str) and i.isdigit() and int(i) < n for i, p in problems.items())
            and all(0 <= i < len(seat_table) for i in cols["seats"])):
        raise ValueError("seats or problems")
    if any(x < 0 for x in cols["offset"]) or any(x <= 0 for x in cols["length"]):
        raise ValueError("offset")
    out: list[IndexEntry] = []
    append = out.append
    columns = (cols[k] for k in ("id", "offset", "length", "line_no", "summarized", *_FIELDS))
    for (rid, offset, length, line_no, shown, game, experiment, instance_id, matchup, status, seats, winner,
         rewards_json, best_reward, reason, metrics_json, judge_probability, error, started_at, duration_s, repeat,
         flip, search) in zip(*columns, strict=True):
        e = IndexEntry(rid, name, offset, length, line_no)
        if shown:
            e.game, e.experiment, e.instance_id, e.matchup, e.status = game, experiment, instance_id, matchup, status
            e.seats, e.winner, e.rewards_json, e.best_reward, e.reason = seat_table[seats], winner, rewards_json, \
                best_reward, reason
            e.metrics_json, e.judge_probability, e.error = metrics_json, judge_probability, error
            e.started_at = started_at
            e.duration_s, e.repeat, e.flip, e.search, e.summarized = duration_s, repeat, flip, search, True
        append(e)
    for i, problem in problems.items():
        out[int(i)].flag(problem)
    return out


def save(episodes: Path, key: tuple[int, int, int], end: int, next_line: int,
         entries: list[IndexEntry]) -> bool | None:
    """Write the sidecar of `episodes` (whose scan up to byte `end` gave `entries`): True when
    written, False when the directory cannot be written (the index stays in memory), None when
    the file was replaced or rewritten since the scan."""
    target = sidecar_path(episodes)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        _make_dir(target.parent)
        if not os.access(target.parent, os.W_OK):
            return False
        with open(episodes, "rb") as f:
            st = os.fstat(f.fileno())
            if st.st_ino != key[0] or st.st_size < end or (st.st_size == key[1] and st.st_mtime_ns != key[2]):
                return None  # replaced or rewritten since the scan (a grown file is fine: appended)
            edges = _edges(f, end)
        rows = json.dumps(_columns(entries), separators=(",", ":")).encode()  # ASCII: \u escapes
        header = {"format": FORMAT, "rules": _rules(), "file": episodes.name, "inode": key[0], "size": key[1],
                  "mtime_ns": key[2], "end": end, "next_line": next_line, "edges": edges,
                  "rows_sha256": hashlib.sha256(rows).hexdigest(), "entries": len(entries)}
        with open(tmp, "wb") as out:
            out.write(json.dumps(header).encode() + b"\n" + rows + b"\n")
        os.replace(tmp, target)
    except FileNotFoundError:  # the episode file went away
        return None
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        return False
    return True


def _make_dir(index_dir: Path) -> None:
    """Create `.index` leaving the run directory's mtime as it was (it means 'last updated')."""
    if index_dir.is_dir():
        return
    st = os.stat(index_dir.parent)
    index_dir.mkdir(exist_ok=True)
    try:
        os.utime(index_dir.parent, ns=(st.st_atime_ns, st.st_mtime_ns))
    except OSError:  # not the directory's owner: it shows as updated once
        pass


def load(episodes: Path) -> tuple[tuple[int, int, int], int, int, list[IndexEntry]] | None:
    """(key, end, next line number, entries) from a valid sidecar of `episodes`, else None."""
    try:
        with open(sidecar_path(episodes), "rb") as f:
            header = json.loads(f.readline())
            rows = f.read()
    except (OSError, ValueError):
        return None
    try:
        if not (isinstance(header, dict) and header.get("format") == FORMAT and header.get("rules") == _rules()
                and header.get("file") == episodes.name):
            return None
        if rows.endswith(b"\n"):
            rows = rows[:-1]
        if hashlib.sha256(rows).hexdigest() != header.get("rows_sha256"):
            return None
        key = (int(header["inode"]), int(header["size"]), int(header["mtime_ns"]))
        end, next_line = int(header["end"]), int(header["next_line"])
        entries = _entries(json.loads(rows), episodes.name)
        with open(episodes, "rb") as f:
            st = os.fstat(f.fileno())
            if (st.st_ino != key[0] or st.st_size < end or (st.st_size == key[1] and st.st_mtime_ns != key[2])
                    or _edges(f, end) != header.get("edges")):
                return None
            if entries and not _lines_hold(f, entries, end):
                return None
    except (OSError, ValueError, TypeError, KeyError, IndexError):
        return None
    return key, end, next_line, entries


def _lines_hold(f: Any, entries: list[IndexEntry], end: int) -> bool:
    """Whether sampled entries' lines (every 16th, and the last) still start after a newline,
    end with one, and hold their ids: a file rewritten in place, not appended to, fails this
    (its lines move) even when its first and last 64 KiB are unchanged."""
    with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        find = mm.find
        for e in [*entries[::_STRIDE], entries[-1]]:
            stop = e.offset + e.length
            if stop > end or mm[stop - 1] != 10 or (e.offset and mm[e.offset - 1] != 10):
                return False
            if find(b'"' + e.id.encode("utf-8", "surrogateescape") + b'"', e.offset, min(stop, e.offset + 512)) < 0:
                return False
    return True
