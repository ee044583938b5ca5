"""A byte-offset index of a run's episode files: one small summary per episode, no transcripts.

Why: the web app lists, filters and sorts the episodes of runs with 10,000+ episodes, and a
debate record is ~97% transcript. The index scans the files in large chunks for line offsets and
ids only (~0.1 s for 10,000 episodes / 100 MB); the summary of a line (seats, status, outcome
scalars: the part before the transcript) is parsed when a page shows it, or for every line when
a table is filtered or sorted (also done in the background after each scan). A whole record is
read only when one is opened (`lines.read_at`: one seek). The cache is keyed by each file's inode,
size and mtime; the files are append-only, so a grown file is scanned only from where the last
scan stopped (a live run costs one new line per episode). Semantics match `reader.iter_records`,
whose rule for a bad line (`reader.check_record`, `reader.torn_line`) is applied to each line as
it is summarised: a line that is not JSON, or not a valid record, is dropped from the table and
listed in `problems` with the reader's own warning; first valid line per id wins in
episodes.jsonl; in failures.jsonl the latest attempt per id counts, unless the id was since
stored as done. Until every line is summarised, `entries` may still hold a bad line that no
page has shown yet. Sorted orders are cached per key (`order`) until the index changes.

Persistent summaries (`sidecar`): once every line of a file is summarised, the entries are
written to `.index/<file>.summary` in the run directory (in the background; the store also
writes them when it closes a run). A new index (another server, a restart) starts from a valid
sidecar, so it parses no line the sidecar covers, only a grown file's new tail; a stale,
corrupt or unwritable sidecar just means the file is scanned and summarised as above.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparring.records import sidecar
from sparring.records.entry import IndexEntry
from sparring.records.files import EPISODES, FAILURES
from sparring.records.lines import read_at, scan, summarize, torn_tail
from sparring.records.record import EpisodeRecord

_SUMMARY_DELAY_S = 0.5  # the background summary pass starts after the first page is served
_SAVE_EVERY_S = 30.0  # a live run's sidecar is rewritten at most this often (the store writes it at close)
@dataclass
class _FileScan:
    key: tuple[int, int, int] = (0, 0, 0)  # (inode, size, mtime_ns)
    end: int = 0
    next_line: int = 1
    entries: list[IndexEntry] = field(default_factory=list)
    loaded: bool = False  # whether the persistent summaries (`sidecar`) were looked for
    saved: tuple[Any, ...] = ()  # what the sidecar on disk holds (nothing to write while unchanged)

    def refresh(self, path: Path, persist: bool = False) -> bool:
        """Bring the scan up to date with the file (starting from its sidecar, when `persist`
        and one is valid); True when anything changed."""
        loaded = False
        if persist and not self.loaded:
            self.loaded = True
            got = sidecar.load(path)
            if got is not None:
                self.key, self.end, self.next_line, self.entries = got
                self.saved, loaded = (self.key, self.end, sum(e.summarized for e in self.entries)), True
        try:
            st = os.stat(path)
        except FileNotFoundError:
            changed = bool(self.entries) or self.end != 0
            self.key, self.end, self.next_line, self.entries = (0, 0, 0), 0, 1, []
            return changed
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        if key == self.key:
            return loaded
        if st.st_ino != self.key[0] or st.st_size < self.end:  # replaced or cut (torn tail): rescan
            self.end, self.next_line, self.entries = 0, 1, []
        new, self.end, self.next_line = scan(path, self.end, self.next_line)
        self.entries = self.entries + new  # a new list: readers holding the old one are unaffected
        self.key = key
        return True

    def state(self) -> tuple[Any, ...]:
        return self.key, self.end, self.next_line, self.entries, sum(e.summarized for e in self.entries)

    def save(self, path: Path, state: tuple[Any, ...]) -> bool:
        """Write the sidecar of `state` (taken under the index's lock) if it holds more than the
        one on disk; False if the directory cannot be written."""
        key, end, next_line, entries, summarized = state
        if not entries or (key, end, summarized) == self.saved:
            return True
        written = sidecar.save(path, key, end, next_line, entries)
        if written is not None:  # None: the file changed since the scan (saved on the next pass)
            self.saved = (key, end, summarized)
        return written is not False


class RunIndex:
    """The episodes (done, then failed) of one run directory, refreshed on `refresh()`.

    Positions and ids come from a fast scan; summaries are parsed for the rows a page shows
    (`summarize`), and for every row by `summarize_all` (filters and sorts need them), which a
    background thread also runs after each refresh, so a big run's first page never waits for it.
    """

    def __init__(self, run_dir: str | Path, persist: bool = True):
        self.run_dir = Path(run_dir)
        self.persist = persist  # load and write the persistent summaries (`sidecar`)
        self.writable = True  # False once a sidecar could not be written (read-only directory)
        self.parsed = 0  # lines whose summary was parsed from the file (not loaded from a sidecar)
        self._saved_at = float("-inf")  # when a background save last started
        self._episodes, self._failures = _FileScan(), _FileScan()
        self._lock = threading.Lock()
        self._summary_lock = threading.Lock()
        self._save_lock = threading.Lock()
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
            a = self._episodes.refresh(self.run_dir / EPISODES, self.persist)
            b = self._failures.refresh(self.run_dir / FAILURES, self.persist)
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
                self.parsed += len(mine)
        if bad:
            with self._lock:
                self._rebuild()
        return entries

    def summarize_all(self, save: bool = True) -> RunIndex:
        """Every entry's summary; then (`save`) the sidecars are written in the background (at
        most every `_SAVE_EVERY_S` seconds), so the next server, or this one after a restart,
        loads them instead."""
        if self.complete:
            return self
        with self._summary_lock:
            self.summarize(self.entries)
        now = time.monotonic()
        if save and self.persist and self.writable and now - self._saved_at >= _SAVE_EVERY_S:
            self._saved_at = now
            threading.Thread(target=self.save, daemon=True).start()
        return self

    def save(self) -> bool:
        """Write the sidecars that are behind the index; False if a directory is not writable
        (then the index just stays in memory, and no later save is tried)."""
        if not (self.persist and self.writable):
            return False
        with self._save_lock:
            files = ((EPISODES, self._episodes), (FAILURES, self._failures))
            with self._lock:
                states = [f.state() for _, f in files]
            for (name, f), state in zip(files, states, strict=True):
                if not f.save(self.run_dir / name, state):
                    self.writable = False
        return self.writable

    def get(self, episode_id: str) -> IndexEntry | None:
        return self.by_id.get(episode_id)

    def read(self, episode_id: str) -> EpisodeRecord | None:
        entry = self.get(episode_id)
        return None if entry is None else read_at(self.run_dir / entry.file, entry.offset, entry.length)


class IndexCache:
    """Indexes of many run directories (the web app holds one; its scope is the app).
    `persist=False` never reads or writes sidecars."""

    def __init__(self, persist: bool = True) -> None:
        self.persist = persist
        self._indexes: dict[Path, RunIndex] = {}
        self._lock = threading.Lock()

    def get(self, run_dir: str | Path) -> RunIndex:
        key = Path(run_dir).resolve()
        with self._lock:
            index = self._indexes.get(key)
            if index is None:
                index = self._indexes[key] = RunIndex(key, self.persist)
        return index.refresh()
