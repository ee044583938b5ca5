"""The runs list of a runs directory, searched, sorted and cut into pages, cached.

Why: a runs directory can hold 10,000 runs; reading every manifest and config on each visit would
take seconds. A listing costs one `stat` per run; the default order is the run
directory's last change (its mtime: the store replaces the manifest atomically, so each update
changes it), so the first page reads only its own rows' manifests (small JSON) and configs
(YAML: game and models). Sorting by created, status or episodes reads every manifest once, a
search every manifest and config once; both are read ahead in the background after each
listing, and read again only for a run whose directory changed. The directory is listed again when the listing is older than
`LIST_TTL_S` seconds, in the background (the page is served from the last listing meanwhile;
only the very first listing is waited for), so a page is a slice of a cached sorted order.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparring.records.files import CONFIG, EPISODES, FAILURES, MANIFEST
from sparring.web.runs import PAGE_SIZES, RUN_SORTS, RunSummary, add_config, add_manifest, blank

LIST_TTL_S = 2.0
_Key = tuple[int, int, int]

_SORT_KEYS: dict[str, Any] = {
    "updated": lambda r: (r.updated, r.name), "created": lambda r: (r.created, r.name), "name": lambda r: r.name.lower(),
    "status": lambda r: (r.status, r.name), "episodes": lambda r: (r.done, r.name),
}


def in_background(fn: Any, *args: Any) -> None:
    threading.Thread(target=fn, args=args, name="runs-catalog", daemon=True).start()


@dataclass
class RunsPage:
    rows: list[RunSummary]
    total: int  # runs matching the search
    all: int  # runs in the directory
    page: int
    pages: int
    per: int
    sort: str
    desc: bool
    q: str


class RunCatalog:
    """Cached rows of every run directory directly under `runs_dir`."""

    def __init__(self, runs_dir: Path):
        self.runs_dir = runs_dir
        self._rows: dict[str, tuple[_Key, RunSummary]] = {}
        self._listed = float("-inf")
        self._version = 0
        self._orders: dict[str, tuple[int, list[RunSummary]]] = {}
        self._lock = threading.Lock()
        self._refresh_lock = threading.Lock()
        self._load_lock = threading.Lock()  # a request and the read-ahead may reach the same row together
        self._refreshing = False

    def _refresh(self) -> None:
        with self._refresh_lock:
            rows, changed = self._list(self._rows)
            with self._lock:
                if changed or rows.keys() != self._rows.keys():
                    self._version += 1
                self._rows = rows
                self._listed = time.monotonic()
                self._refreshing = False
        if any(not r.configured for _, r in rows.values()):  # manifests and configs, read ahead
            in_background(self._load, [r for _, r in rows.values()])

    def _load(self, rows: list[RunSummary], config: bool = True) -> None:
        """Read what `rows` still miss: manifests (and configs). Rows are filled in place,
        so a sort order that held them unread is stale: the version is bumped. Each row is checked
        and read under one lock, so it is read once however many threads want it."""
        fresh = False
        for r in rows:
            path = self.runs_dir / r.name
            with self._load_lock:
                if not r.loaded:
                    add_manifest(r, path)
                    fresh = True
                if config and not r.configured:
                    add_config(r, path)
        if fresh:
            with self._lock:
                self._version += 1

    def _list(self, old: dict[str, tuple[_Key, RunSummary]]) -> tuple[dict[str, tuple[_Key, RunSummary]], bool]:
        rows: dict[str, tuple[_Key, RunSummary]] = {}
        changed = False
        try:
            entries = list(os.scandir(self.runs_dir))
        except OSError:
            entries = []
        for entry in entries:
            name = entry.name
            try:
                if name.startswith(".") or not entry.is_dir():  # is_dir follows a symlinked run directory
                    continue
                st = entry.stat()
            except OSError:
                continue
            key = (st.st_ino, st.st_mtime_ns, st.st_size)
            cached = old.get(name)
            if cached is not None and cached[0] == key:
                rows[name] = cached
                continue
            path = Path(entry.path)
            if not any((path / f).exists() for f in (MANIFEST, CONFIG, EPISODES, FAILURES)):
                continue  # not a run directory
            rows[name] = (key, blank(path, st.st_mtime))
            changed = True
        return rows, changed

    def ordered(self, sort: str, desc: bool) -> list[RunSummary]:
        """Every run in `sort` order (cached until the listing or a row changes)."""
        if self._listed == float("-inf"):
            self._refresh()  # the first listing: nothing to show before it
        if sort not in ("updated", "name"):  # these sorts need every manifest
            self._load([r for _, r in list(self._rows.values()) if not r.loaded], config=False)
        with self._lock:
            if time.monotonic() - self._listed > LIST_TTL_S and not self._refreshing:
                self._refreshing = True
                in_background(self._refresh)
            cached = self._orders.get(sort)
            if cached is None or cached[0] != self._version:
                rows = sorted((r for _, r in self._rows.values()), key=_SORT_KEYS[sort])
                cached = self._orders[sort] = (self._version, rows)
            return cached[1][::-1] if desc else cached[1]

    def page(self, *, q: str = "", sort: str = "updated", desc: bool | None = None, page: int = 1,
             per: int = 50) -> RunsPage:
        """One page of the runs whose name, experiment, game, status or models contain `q`."""
        sort = sort if sort in RUN_SORTS else "updated"
        desc = (sort in ("updated", "created", "episodes")) if desc is None else desc
        rows = self.ordered(sort, desc)
        total_all = len(rows)
        if q:  # a search covers experiment, status, game and models: every manifest and config, read once
            self._load([r for r in rows if not (r.loaded and r.configured)])
            ql = q.lower()
            rows = [r for r in rows if ql in r.name.lower() or ql in r.experiment.lower() or ql in r.game.lower()
                    or ql in r.status.lower() or any(ql in m.lower() for m in r.models)]
        per = per if per in PAGE_SIZES else 50
        pages = max(1, -(-len(rows) // per))
        page = min(max(1, page), pages)
        shown = rows[(page - 1) * per: page * per]
        self._load([r for r in shown if not (r.loaded and r.configured)])
        return RunsPage(rows=shown, total=len(rows), all=total_all, page=page,
                        pages=pages, per=per, sort=sort, desc=desc, q=q)
