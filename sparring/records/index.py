"""A byte-offset index of a run's episode files: one small summary per episode, no transcripts.

Why: the web app lists, filters and sorts the episodes of runs with 10,000+ episodes, and a
debate record is ~97% transcript. The index scans the files in large chunks for line offsets and
ids only (~0.1 s for 10,000 episodes / 100 MB); the summary of a line (seats, status, outcome
scalars: the part before the transcript) is parsed when a page shows it, or for every line when
a table is filtered or sorted (also done in the background after each scan). A whole record is
read only when one is opened (`read_at`: one seek). The cache is keyed by each file's inode,
size and mtime; the files are append-only, so a grown file is scanned only from where the last
scan stopped (a live run costs one new line per episode). Semantics match `reader.iter_records`,
whose rule for a bad line (`reader.check_record`, `reader.torn_line`) is applied to each line as
it is summarised: a line that is not JSON, or not a valid record, is dropped from the table and
listed in `problems` with the reader's own warning; first valid line per id wins in
episodes.jsonl; in failures.jsonl the latest attempt per id counts, unless the id was since
stored as done. Until every line is summarised, `entries` may still hold a bad line that no
page has shown yet. Sorted orders are cached per key (`order`) until the index changes.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from sparring.records.files import EPISODES, FAILURES
from sparring.records.reader import check_record, torn_line
from sparring.records.record import EpisodeRecord

_EMPTY: Mapping[str, Any] = MappingProxyType({})
_SUMMARY_DELAY_S = 0.5  # the background summary pass starts after the first page is served
_HEAD_END = b',"events":'  # records are serialised in field order: the transcript follows the outcome
_TAIL_START = b',"state":'  # ... and the fields after it (error, duration, usage) come last


class IndexEntry:
    """Where one episode's line is (`file`, `offset`, `length`) and what a table shows of it.

    The summary fields are class defaults until `fill` sets them: a scan creates 10,000 entries
    and only the position is known then (a plain class: dataclass defaults cost a dict each)."""

    def __init__(self, id: str, file: str, offset: int, length: int, line_no: int):
        self.id, self.file, self.offset, self.length, self.line_no = id, file, offset, length, line_no

    game: str = ""
    experiment: str = ""
    instance_id: str = ""
    matchup: str = ""
    status: str = ""
    # (read-only empty mappings until `fill`: 10,000 entries are created per scan, cheaply)
    seats: Mapping[str, dict[str, str]] = _EMPTY  # player -> {agent, model, role}
    winner: str | None = None
    rewards: Mapping[str, float] = _EMPTY
    reason: str | None = None
    metrics: Mapping[str, Any] = _EMPTY  # scalar outcome metrics (+ judge probs)
    error: str | None = None
    started_at: float = 0.0
    duration_s: float = 0.0
    repeat: int = 0
    flip: bool = False
    summarized: bool = False
    problem: str | None = None  # why the line is not shown (the reader's warning), if it is bad
    search: str = ""  # lower-cased text the table's search box matches

    def fill(self, obj: dict[str, Any]) -> None:
        """Take the table's fields from a record's JSON (transcript left out)."""
        outcome = _dict(obj.get("outcome"))
        self.game, self.experiment = str(obj.get("game", "")), str(obj.get("experiment", ""))
        self.instance_id, self.matchup = str(obj.get("instance_id", "")), str(obj.get("matchup", ""))
        self.status = str(obj.get("status", ""))
        self.seats = {str(p): {k: str(s.get(k, "")) for k in ("agent", "model", "role")}
                      for p, s in _dict(obj.get("seats")).items() if isinstance(s, dict)}
        self.winner, self.reason = outcome.get("winner"), outcome.get("reason")
        self.rewards = {str(k): float(v) for k, v in _dict(outcome.get("rewards")).items()
                        if isinstance(v, (int, float))}
        self.metrics = _summary_metrics(outcome.get("metrics"))
        self.error = obj.get("error")
        self.started_at = float(obj.get("started_at") or 0.0)
        self.duration_s = float(obj.get("duration_s") or 0.0)
        self.repeat, self.flip = int(obj.get("repeat") or 0), bool(obj.get("flip", False))
        outcome_words = f"winner {self.winner}" if self.winner else ("no winner" if self.status == "complete" else "")
        self.search = " ".join((self.id, self.matchup, self.instance_id, *self.agents, outcome_words,
                                str(self.reason or ""), (self.error or "").split("\n")[0][:120])).lower()
        self.summarized = True

    def flag(self, problem: str) -> None:
        """Mark a line the reader would skip: it leaves the table, its warning is listed."""
        self.status, self.problem, self.summarized = "unreadable", problem, True

    @property
    def agents(self) -> list[str]:
        return sorted({s.get("agent", "") for s in self.seats.values()})

    @property
    def judge_probability(self) -> float | None:
        """The probability the judge put on the correct answer (debate), if any."""
        p = self.metrics.get("p_correct")
        return float(p) if isinstance(p, (int, float)) and not isinstance(p, bool) else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _summary_metrics(metrics: Any) -> dict[str, Any]:
    if not isinstance(metrics, dict):
        return {}
    out: dict[str, Any] = {k: v for k, v in metrics.items() if v is None or isinstance(v, (bool, int, float, str))}
    probs = metrics.get("probs")
    if isinstance(probs, dict) and len(probs) <= 8:
        out["probs"] = probs
    return out


def _parse_summary(line: bytes) -> dict[str, Any] | None:
    """The record's fields without its transcript: the head (everything before `events`) and
    the tail (from `state` on) are parsed alone; any surprise falls back to the whole line."""
    head_end = line.find(_HEAD_END)
    if head_end > 0:
        try:
            obj = json.loads(line[:head_end] + b"}")
        except ValueError:
            obj = None
        if isinstance(obj, dict) and "id" in obj:
            tail_start = line.rfind(_TAIL_START)
            if tail_start > head_end:
                try:
                    tail = json.loads(b"{" + line[tail_start + 1:])
                except ValueError:
                    tail = None
                if isinstance(tail, dict):  # head and tail parse: the line is whole (not torn)
                    tail.pop("state", None)
                    obj.update(tail)
                    return obj
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


_ID = re.compile(rb'\{"schema_version":\s*\d+,\s*"id":\s*"([^"\\]{1,200})"')


def _line_id(line: bytes) -> str | None:
    """The record id of a line whose first bytes do not give it (records start with
    schema_version, id): the whole line parsed; None for a line that is no episode."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    rid = obj.get("id") if isinstance(obj, dict) else None
    return rid if isinstance(rid, str) else None


def scan(path: Path, start: int = 0, first_line: int = 1) -> tuple[list[IndexEntry], int, int]:
    """Positions and ids of every complete line of `path` from byte `start` (no summaries: those
    are parsed on demand); returns (entries, the offset after the last complete line, the next
    line number). A torn last line is left for the next scan. The file is memory-mapped, so
    nothing is copied: a 100 MB file of 10,000 episodes is scanned in about 0.1 s."""
    entries: list[IndexEntry] = []
    offset, line_no = start, first_line
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return entries, offset, line_no
    with f:
        if os.fstat(f.fileno()).st_size <= start:
            return entries, offset, line_no
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            name, find, match = path.name, mm.find, _ID.match
            pos = start
            while True:
                nl = find(b"\n", pos)
                if nl < 0:
                    break
                if nl > pos:
                    m = match(mm, pos, min(nl, pos + 256))
                    rid = m.group(1).decode("utf-8", "replace") if m else _line_id(mm[pos:nl + 1])
                    if rid is not None:
                        entries.append(IndexEntry(rid, name, pos, nl + 1 - pos, line_no))
                line_no += 1
                pos = nl + 1
            offset = pos
    return entries, offset, line_no


def torn_tail(path: Path, end: int, line_no: int) -> str | None:
    """The reader's warning for bytes after the last complete line (being written, or torn)."""
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        return None
    return torn_line(path.name, line_no) if size > end else None


def summarize(path: Path, entries: list[IndexEntry]) -> int:
    """Fill in the summaries of `entries` (all lines of `path`) that have none yet, checking
    each line by the reader's rule; returns how many turned out bad (flagged, not filled)."""
    todo = sorted((e for e in entries if not e.summarized), key=lambda e: e.offset)
    bad = 0
    if not todo:
        return bad
    with open(path, "rb") as f:
        for e in todo:
            f.seek(e.offset)
            obj = _parse_summary(f.read(e.length))
            warnings: list[str] = []
            if obj is None:
                e.flag(torn_line(path.name, e.line_no))
            elif check_record(obj, path.name, e.line_no, transcripts=False, warnings=warnings) is None:
                e.flag(warnings[0] if warnings else f"{path.name}:{e.line_no}: skipped unreadable record")
            else:
                e.fill(obj)
                continue
            bad += 1
    return bad


@dataclass
class _FileScan:
    key: tuple[int, int, int] = (0, 0, 0)  # (inode, size, mtime_ns)
    end: int = 0
    next_line: int = 1
    entries: list[IndexEntry] = field(default_factory=list)

    def refresh(self, path: Path) -> bool:
        """Bring the scan up to date with the file; True when anything changed."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            changed = bool(self.entries) or self.end != 0
            self.key, self.end, self.next_line, self.entries = (0, 0, 0), 0, 1, []
            return changed
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        if key == self.key:
            return False
        if st.st_ino != self.key[0] or st.st_size < self.end:  # replaced or cut (torn tail): rescan
            self.end, self.next_line, self.entries = 0, 1, []
        new, self.end, self.next_line = scan(path, self.end, self.next_line)
        self.entries = self.entries + new  # a new list: readers holding the old one are unaffected
        self.key = key
        return True


class RunIndex:
    """The episodes (done, then failed) of one run directory, refreshed on `refresh()`.

    Positions and ids come from a fast scan; summaries are parsed for the rows a page shows
    (`summarize`), and for every row by `summarize_all` (filters and sorts need them), which a
    background thread also runs after each refresh, so a big run's first page never waits for it.
    """

    def __init__(self, run_dir: str | Path):
        self.run_dir = Path(run_dir)
        self._episodes, self._failures = _FileScan(), _FileScan()
        self._lock = threading.Lock()
        self._summary_lock = threading.Lock()
        self.entries: list[IndexEntry] = []
        self.by_id: dict[str, IndexEntry] = {}
        self.done = 0  # distinct episodes stored as done (complete or aborted)
        self.duplicates = 0
        self.version = 0  # bumped whenever `entries` change (sorted orders are cached per version)
        self._orders: dict[str, tuple[int, list[IndexEntry]]] = {}
        self.positions: dict[str, int] = {}  # id -> place in `entries` (previous / next episode)
        self._complete_version = -1
        self._statuses: tuple[int, list[str]] = (-1, [])

    def refresh(self, background: bool = True) -> RunIndex:
        with self._lock:
            a = self._episodes.refresh(self.run_dir / EPISODES)
            b = self._failures.refresh(self.run_dir / FAILURES)
            if a or b:
                self._rebuild()
        if background and (a or b) and not self.complete:
            timer = threading.Timer(_SUMMARY_DELAY_S, self.summarize_all)
            timer.daemon = True
            timer.start()
        return self

    def _rebuild(self) -> None:
        done: dict[str, IndexEntry] = {}
        dup = 0
        for e in self._episodes.entries:
            if e.problem is not None:
                continue
            if e.id in done:
                dup += 1
            else:
                done[e.id] = e
        failed: dict[str, IndexEntry] = {}
        for e in self._failures.entries:
            if e.problem is None and e.id not in done:
                failed.pop(e.id, None)
                failed[e.id] = e
        self.entries = list(done.values()) + list(failed.values())
        self.by_id = {**failed, **done}
        self.positions = {e.id: i for i, e in enumerate(self.entries)}
        self.done, self.duplicates = len(done), dup
        self.version += 1

    @property
    def problems(self) -> list[str]:
        """The reader's warning for every bad line found so far, and for a torn tail."""
        out = [e.problem for f in (self._episodes, self._failures) for e in f.entries if e.problem]
        for name, f in ((EPISODES, self._episodes), (FAILURES, self._failures)):
            tail = torn_tail(self.run_dir / name, f.end, f.next_line)
            if tail:
                out.append(tail)
        return out

    def flag(self, entry: IndexEntry, problem: str) -> None:
        """A line found bad when read whole (its transcript): left out from now on."""
        entry.flag(problem)
        with self._lock:
            self._rebuild()

    def bad_entry(self, episode_id: str) -> IndexEntry | None:
        """A flagged line with this id (its page says why it is not shown)."""
        for f in (self._episodes, self._failures):
            for e in f.entries:
                if e.id == episode_id and e.problem:
                    return e
        return None

    def order(self, key: str, sort_key: Any) -> list[IndexEntry]:
        """`entries` sorted by `sort_key` (ascending), cached until the index changes: a sorted
        page of 10,000 episodes is a slice, not a sort (call after `summarize_all`)."""
        cached = self._orders.get(key)
        if cached is not None and cached[0] == self.version:
            return cached[1]
        version, rows = self.version, sorted(self.entries, key=sort_key)
        self._orders[key] = (version, rows)
        return rows

    @property
    def complete(self) -> bool:
        """Whether every entry has its summary (remembered per version: once true, it stays
        true until new lines arrive)."""
        if self._complete_version == self.version:
            return True
        version, done = self.version, all(e.summarized for e in self.entries)
        if done:
            self._complete_version = version
        return done

    def statuses(self) -> list[str]:
        """The statuses present (all summaries needed; cached per version)."""
        if self._statuses[0] != self.version:
            self._statuses = (self.version, sorted({e.status for e in self.entries}))
        return self._statuses[1]

    def summarize(self, entries: list[IndexEntry]) -> list[IndexEntry]:
        """Summaries of `entries` (bad lines found on the way are flagged and the index rebuilt
        without them, so a later valid line with the same id takes their place)."""
        bad = 0
        for name in (EPISODES, FAILURES):
            mine = [e for e in entries if e.file == name and not e.summarized]
            if mine:
                bad += summarize(self.run_dir / name, mine)
        if bad:
            with self._lock:
                self._rebuild()
        return entries

    def summarize_all(self) -> RunIndex:
        if self.complete:
            return self
        with self._summary_lock:
            self.summarize(self.entries)
        return self

    def get(self, episode_id: str) -> IndexEntry | None:
        return self.by_id.get(episode_id)

    def read(self, episode_id: str) -> EpisodeRecord | None:
        entry = self.get(episode_id)
        return None if entry is None else read_at(self.run_dir / entry.file, entry.offset, entry.length)


def read_at(path: Path, offset: int, length: int | None = None) -> EpisodeRecord:
    """The whole record whose line starts at `offset` (one seek, one line). Raises ValueError
    (pydantic's ValidationError) for a line that is not a valid record."""
    with open(path, "rb") as f:
        f.seek(offset)
        line = f.read(length) if length is not None else f.readline()
    return EpisodeRecord.model_validate_json(line)


class IndexCache:
    """Indexes of many run directories (the web app holds one; its scope is the app)."""

    def __init__(self) -> None:
        self._indexes: dict[Path, RunIndex] = {}
        self._lock = threading.Lock()

    def get(self, run_dir: str | Path) -> RunIndex:
        key = Path(run_dir).resolve()
        with self._lock:
            index = self._indexes.get(key)
            if index is None:
                index = self._indexes[key] = RunIndex(key)
        return index.refresh()
