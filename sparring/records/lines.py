"""Episode lines of a run's files by byte offset: scanning a file for each line's position and id,
summarising a line without its transcript, reading one whole record (the index's low level).

Why a module of its own: these read bytes and apply the run reader's rule for a bad line
(`reader.check_record`, `reader.torn_line`); `index.RunIndex` decides what to cache and when.
"""

from __future__ import annotations

import json
import mmap
import os
import re
from pathlib import Path
from typing import Any

from sparring.records.entry import IndexEntry
from sparring.records.reader import check_record, torn_line
from sparring.records.record import EpisodeRecord

_HEAD_END = b',"events":'  # records are serialised in field order: the transcript follows the outcome
_TAIL_START = b',"state":'  # ... and the fields after it (error, duration, usage) come last


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
        try:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # emptied since the scan: every line is gone (torn)
            mm = None
        try:
            for e in todo:
                if mm is not None and _fast_fill(mm, e):
                    continue
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
        finally:
            if mm is not None:
                mm.close()
    return bad


def _fast_fill(mm: mmap.mmap, e: IndexEntry) -> bool:
    """The common case in one pass: the line's head and tail joined (transcript cut out, nothing
    copied but them) and validated by pydantic's JSON parser; False for anything else (the line
    then takes the general path above, which gives the reader's warning, so the rule is one)."""
    start, end = e.offset, e.offset + e.length
    head_end = mm.find(_HEAD_END, start, end)
    tail_start = mm.rfind(_TAIL_START, start, end)
    if head_end <= start or tail_start <= head_end:
        return False
    try:
        rec = EpisodeRecord.model_validate_json(mm[start:head_end] + b"," + mm[tail_start + 1:end])
    except ValueError:  # pydantic's ValidationError, also for JSON it cannot parse
        return False
    e.fill_record(rec)
    return True


def read_at(path: Path, offset: int, length: int | None = None) -> EpisodeRecord:
    """The whole record whose line starts at `offset` (one seek, one line). Raises ValueError
    (pydantic's ValidationError) for a line that is not a valid record."""
    with open(path, "rb") as f:
        f.seek(offset)
        line = f.read(length) if length is not None else f.readline()
    return EpisodeRecord.model_validate_json(line)
