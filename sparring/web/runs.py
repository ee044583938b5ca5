"""Runs of a runs directory for the browser: the runs list and the episode table's rows.

Everything here reads the manifest, the config and the episode index (`records.index`), never
the transcripts, so a 10,000-episode run lists a page in milliseconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparring.records.files import CONFIG, EPISODES, FAILURES, MANIFEST
from sparring.records.index import IndexEntry, RunIndex
from sparring.records.reader import read_config_dict, read_manifest

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+=@-]{0,200}$")
SORTS = ("order", "matchup", "instance", "status", "outcome", "judge_p", "reward", "duration")
PAGE_SIZES = (25, 50, 100, 200)


def run_path(runs_dir: Path, name: str) -> Path | None:
    """The run directory `name` directly under `runs_dir` (None for anything else: '..', paths)."""
    if not _NAME.match(name) or name in (".", ".."):
        return None
    path = runs_dir / name
    if not path.is_dir() or not any((path / f).exists() for f in (CONFIG, EPISODES, FAILURES, MANIFEST)):
        return None
    return path


@dataclass
class RunSummary:
    name: str
    game: str
    status: str
    done: int
    expected: int | None
    failed: int
    created: str
    models: list[str]
    experiment: str


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def summarize(path: Path) -> RunSummary:
    manifest = read_manifest(path, [])
    config = read_config_dict(path, [])
    counts, schedule, agents = _dict(manifest.get("counts")), _dict(manifest.get("schedule")), _dict(config.get("agents"))
    models = sorted({str(a.get("model")) for a in agents.values() if isinstance(a, dict) and a.get("model")})
    expected = schedule.get("in_shard", schedule.get("total"))
    return RunSummary(name=path.name, game=str(config.get("game", "")), status=str(manifest.get("status", "?")),
                      done=int(counts.get("done", 0) or 0), expected=int(expected) if expected else None,
                      failed=int(counts.get("failed", 0) or 0), created=str(manifest.get("created", "")),
                      models=models, experiment=str(manifest.get("experiment") or config.get("name") or ""))


def list_runs(runs_dir: Path) -> list[RunSummary]:
    if not runs_dir.is_dir():
        return []
    out = [summarize(p) for p in runs_dir.iterdir() if run_path(runs_dir, p.name) is not None]
    return sorted(out, key=lambda r: (r.created, r.name), reverse=True)


def outcome_text(e: IndexEntry) -> str:
    if e.status == "failed":
        return (e.error or "failed").split("\n")[0][:120]
    parts = []
    if e.winner:
        parts.append(f"winner {e.winner}")
    elif e.status == "complete":
        parts.append("no winner")
    if e.reason and e.reason not in ("deal",):
        parts.append(str(e.reason))
    elif e.reason:
        parts.append("deal")
    return "; ".join(parts)


def _reward(e: IndexEntry) -> float:
    return max(e.rewards.values()) if e.rewards else float("-inf")


_KEYS: dict[str, Any] = {
    "matchup": lambda e: e.matchup, "instance": lambda e: e.instance_id, "status": lambda e: e.status,
    "outcome": outcome_text, "duration": lambda e: e.duration_s, "reward": _reward,
    "judge_p": lambda e: -1.0 if e.judge_probability is None else e.judge_probability,
}


@dataclass
class Table:
    rows: list[IndexEntry]
    total: int  # rows matching the filters
    page: int
    pages: int
    per: int
    sort: str
    desc: bool
    filters: dict[str, str]
    statuses: list[str]


def episode_table(index: RunIndex, *, q: str = "", agent: str = "", instance: str = "", status: str = "",
                  matchup: str = "", sort: str = "order", desc: bool = False, page: int = 1,
                  per: int = 50) -> Table:
    """Filter, sort and cut one page of the run's episodes (done first, then failed). Only a
    filtered or sorted table needs every row's summary; the plain table parses its page's rows."""
    rows = index.entries
    if any((q, agent, instance, status, matchup)) or sort not in ("", "order"):
        index.summarize_all()
    statuses = sorted({e.status for e in rows}) if index.complete else ["aborted", "complete", "failed"]
    if status:
        rows = [e for e in rows if e.status == status]
    if matchup:
        rows = [e for e in rows if e.matchup == matchup]
    if agent:
        rows = [e for e in rows if agent in e.agents]
    if instance:
        rows = [e for e in rows if instance.lower() in e.instance_id.lower()]
    if q:
        ql = q.lower()
        rows = [e for e in rows if ql in e.matchup.lower() or ql in e.instance_id.lower() or ql in e.id
                or any(ql in a.lower() for a in e.agents) or ql in outcome_text(e).lower()]
    sort = sort if sort in SORTS else "order"
    if sort != "order":
        rows = sorted(rows, key=_KEYS[sort], reverse=desc)
    elif desc:
        rows = rows[::-1]
    per = per if per in PAGE_SIZES else 50
    pages = max(1, -(-len(rows) // per))
    page = min(max(1, page), pages)
    filters = {"q": q, "agent": agent, "instance": instance, "status": status, "matchup": matchup}
    return Table(rows=index.summarize(rows[(page - 1) * per: page * per]), total=len(rows), page=page, pages=pages,
                 per=per, sort=sort, desc=desc, filters=filters, statuses=statuses)


def progress(path: Path, index: RunIndex) -> dict[str, Any]:
    """What a live run page polls: status and counts (the index is refreshed by the caller)."""
    s = summarize(path)
    return {"status": s.status, "done": index.done, "failed": len(index.entries) - index.done, "expected": s.expected}
