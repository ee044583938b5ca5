"""A byte-offset index of a run's episode files: one small summary per episode, no transcripts.

Why: the web app lists, filters and sorts the episodes of runs with 10,000+ episodes, and a
debate record is ~97% transcript. The index scans each JSONL line once, keeps its offset and a
summary (seats, status, outcome scalars), and reads a whole record only when one is opened
(`read_at`). The cache is keyed by each file's size and mtime; the files are append-only, so a
grown file is scanned only from where the last scan stopped (a live run costs one new line per
episode). Semantics match `reader.iter_records`: first line per id wins in episodes.jsonl; in
failures.jsonl the latest attempt per id counts, unless the id was since stored as done.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparring.records.files import EPISODES, FAILURES
from sparring.records.record import EpisodeRecord

_HEAD_END = b',"events":'  # records are serialised in field order: the transcript follows the outcome
_TAIL_START = b',"state":'  # ... and the fields after it (error, duration, usage) come last


@dataclass(slots=True)
class IndexEntry:
    """Where one episode's line is (`file`, `offset`, `length`) and what a table shows of it."""

    id: str
    file: str
    offset: int
    length: int
    line_no: int
    game: str = ""
    experiment: str = ""
    instance_id: str = ""
    matchup: str = ""
    status: str = ""
    seats: dict[str, dict[str, str]] = field(default_factory=dict)  # player -> {agent, model, role}
    winner: str | None = None
    rewards: dict[str, float] = field(default_factory=dict)
    reason: str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)  # scalar outcome metrics (+ judge probs)
    error: str | None = None
    started_at: float = 0.0
    duration_s: float = 0.0
    repeat: int = 0
    flip: bool = False

    @property
    def agents(self) -> list[str]:
        return sorted({s.get("agent", "") for s in self.seats.values()})

    @property
    def judge_probability(self) -> float | None:
        """The probability the judge put on the correct answer (debate), if any."""
        p = self.metrics.get("p_correct")
        return float(p) if isinstance(p, (int, float)) and not isinstance(p, bool) else None


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
                if isinstance(tail, dict):
                    tail.pop("state", None)
                    obj.update(tail)
            return obj
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _entry(obj: dict[str, Any], file: str, offset: int, length: int, line_no: int) -> IndexEntry | None:
    rid = obj.get("id")
    if not isinstance(rid, str):
        return None
    outcome: dict[str, Any] = _dict(obj.get("outcome"))
    seats_raw = _dict(obj.get("seats"))
    seats = {str(p): {k: str(s.get(k, "")) for k in ("agent", "model", "role")}
             for p, s in seats_raw.items() if isinstance(s, dict)}
    rewards = _dict(outcome.get("rewards"))
    return IndexEntry(
        id=rid, file=file, offset=offset, length=length, line_no=line_no, game=str(obj.get("game", "")),
        experiment=str(obj.get("experiment", "")), instance_id=str(obj.get("instance_id", "")),
        matchup=str(obj.get("matchup", "")), status=str(obj.get("status", "")), seats=seats,
        winner=outcome.get("winner"), rewards={str(k): float(v) for k, v in rewards.items()
                                               if isinstance(v, (int, float))},
        reason=outcome.get("reason"), metrics=_summary_metrics(outcome.get("metrics")),
        error=obj.get("error"), started_at=float(obj.get("started_at") or 0.0),
        duration_s=float(obj.get("duration_s") or 0.0), repeat=int(obj.get("repeat") or 0),
        flip=bool(obj.get("flip", False)))


def scan(path: Path, start: int = 0, first_line: int = 1) -> tuple[list[IndexEntry], int, int]:
    """Entries of every complete line of `path` from byte `start`; returns (entries, the offset
    after the last complete line, the next line number). A torn last line is left for later."""
    entries: list[IndexEntry] = []
    offset, line_no = start, first_line
    if not path.exists():
        return entries, offset, line_no
    name = path.name
    with open(path, "rb") as f:
        f.seek(start)
        for line in f:
            if not line.endswith(b"\n"):
                break  # a line still being written (or torn): not consumed
            length = len(line)
            if line.strip():
                obj = _parse_summary(line)
                entry = _entry(obj, name, offset, length, line_no) if obj is not None else None
                if entry is not None:
                    entries.append(entry)
            offset += length
            line_no += 1
    return entries, offset, line_no


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
        self.entries.extend(new)
        self.key = key
        return True


class RunIndex:
    """The episodes (done, then failed) of one run directory, refreshed on `refresh()`."""

    def __init__(self, run_dir: str | Path):
        self.run_dir = Path(run_dir)
        self._episodes, self._failures = _FileScan(), _FileScan()
        self._lock = threading.Lock()
        self.entries: list[IndexEntry] = []
        self.by_id: dict[str, IndexEntry] = {}
        self.duplicates = 0

    def refresh(self) -> RunIndex:
        with self._lock:
            a = self._episodes.refresh(self.run_dir / EPISODES)
            b = self._failures.refresh(self.run_dir / FAILURES)
            if a or b:
                self._rebuild()
        return self

    def _rebuild(self) -> None:
        done: dict[str, IndexEntry] = {}
        dup = 0
        for e in self._episodes.entries:
            if e.id in done:
                dup += 1
            else:
                done[e.id] = e
        failed: dict[str, IndexEntry] = {}
        for e in self._failures.entries:
            if e.id not in done:
                failed.pop(e.id, None)
                failed[e.id] = e
        self.entries = list(done.values()) + list(failed.values())
        self.by_id = {**failed, **done}
        self.duplicates = dup

    def get(self, episode_id: str) -> IndexEntry | None:
        return self.by_id.get(episode_id)

    def read(self, episode_id: str) -> EpisodeRecord | None:
        entry = self.get(episode_id)
        return None if entry is None else read_at(self.run_dir / entry.file, entry.offset, entry.length)


def read_at(path: Path, offset: int, length: int | None = None) -> EpisodeRecord:
    """The whole record whose line starts at `offset` (one seek, one line)."""
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
