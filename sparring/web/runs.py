"""Runs of a runs directory for the browser: the runs list and the episode table's rows.

Everything here reads the manifest, the config and the episode index (`records.index`), never
the transcripts, so a 10,000-episode run lists a page in milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sparring.records.files import CONFIG, EPISODES, FAILURES, MANIFEST
from sparring.records.index import IndexEntry, RunIndex
from sparring.records.reader import read_config_dict, read_manifest

SORTS = ("order", "matchup", "instance", "status", "outcome", "judge_p", "reward", "duration")
PAGE_SIZES = (25, 50, 100, 200)
RUN_SORTS = ("updated", "created", "name", "status", "episodes")


def run_path(runs_dir: Path, name: str) -> Path | None:
    """The run directory `name` directly under `runs_dir` (None for anything else: '..', paths).
    Any directory name is accepted (spaces, non-ASCII: every run on disk can be shown); the
    directory itself may be a symlink (a run on a shared disk), the files served from it may not
    leave it (`inside`)."""
    if name in ("", ".", "..") or any(c in name for c in "/\\\0"):
        return None
    path = runs_dir / name
    try:
        if not path.is_dir() or not any((path / f).exists() for f in (CONFIG, EPISODES, FAILURES, MANIFEST)):
            return None
    except (OSError, ValueError):  # a name the file system cannot hold
        return None
    return path


def inside(run: Path, relative: str, under: str = "") -> Path | None:
    """`run/relative` if it is a file that resolves inside the run's (resolved) directory, and
    inside its folder `under` if given: a symlinked report folder or episodes file pointing
    elsewhere is never served."""
    root = (run.resolve() / under) if under else run.resolve()
    try:
        target = (run / relative).resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte
        return None
    return target if target.is_relative_to(root) and target.is_file() else None


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
    problems: list[str] = field(default_factory=list)  # what was wrong with its manifest / config
    configured: bool = False  # game and models read from the config
    loaded: bool = True  # status, counts and created read from the manifest
    updated: float = 0.0  # when the run directory last changed (its mtime; 0: unknown)

    @property
    def linkable(self) -> bool:
        """Whether the name survives a URL round trip (a non-UTF-8 name on disk does not)."""
        try:
            self.name.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True

    @property
    def shown_name(self) -> str:
        return self.name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _dict(value: Any, where: str, problems: list[str]) -> dict[str, Any]:
    if value is None or isinstance(value, dict):
        return value or {}
    problems.append(f"{where} is {type(value).__name__}, expected a mapping")
    return {}


def _count(value: Any, where: str, problems: list[str]) -> int | None:
    """A count from a manifest: a whole number, or None (with a note naming the key)."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 12:
        return int(value)
    problems.append(f"{where} is {str(value)[:40]!r}, expected a whole number")
    return None


def blank(path: Path, updated: float = 0.0) -> RunSummary:
    """A row that knows only its name (the manifest and config are read when needed)."""
    return RunSummary(name=path.name, game="", status="?", done=0, expected=None, failed=0, created="", models=[],
                      experiment="", loaded=False, updated=updated)


def summarize(path: Path, config: bool = True) -> RunSummary:
    """One row of the runs list; a manifest or config with wrong types gives a row with the
    bad fields blank and named in `problems`, never an error. `config=False` reads only the
    manifest (JSON, fast); `add_config` fills in game and models later."""
    summary = add_manifest(blank(path), path)
    if config:
        add_config(summary, path)
    return summary


def add_manifest(summary: RunSummary, path: Path) -> RunSummary:
    """Status, counts, creation time and experiment from the run's manifest."""
    problems = summary.problems
    manifest = read_manifest(path, problems)
    counts = _dict(manifest.get("counts"), f"{MANIFEST}: counts", problems)
    schedule = _dict(manifest.get("schedule"), f"{MANIFEST}: schedule", problems)
    summary.expected = _count(schedule.get("in_shard", schedule.get("total")), f"{MANIFEST}: schedule.total",
                              problems) or None
    summary.status = str(manifest.get("status", "?"))
    summary.done = _count(counts.get("done"), f"{MANIFEST}: counts.done", problems) or 0
    summary.failed = _count(counts.get("failed"), f"{MANIFEST}: counts.failed", problems) or 0
    summary.created = str(manifest.get("created", ""))
    summary.experiment = str(manifest.get("experiment") or "") or summary.experiment
    summary.loaded = True
    return summary


def _read_config(path: Path, problems: list[str]) -> dict[str, Any]:
    """`read_config_dict`, with libyaml's parser when PyYAML has it (10x faster: 10,000 runs)."""
    loader = getattr(yaml, "CSafeLoader", None)
    if loader is None:
        return read_config_dict(path, problems)
    file = path / CONFIG
    if not file.exists():
        return {}
    try:
        loaded = yaml.load(file.read_text(encoding="utf-8"), Loader=loader)  # noqa: S506 — a safe loader
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        problems.append(f"{CONFIG}: unreadable ({type(e).__name__})")
        return {}
    return loaded if isinstance(loaded, dict) else {}


def add_config(summary: RunSummary, path: Path) -> RunSummary:
    """Game, models and experiment name from the run's config."""
    config = _read_config(path, summary.problems)
    agents = _dict(config.get("agents"), f"{CONFIG}: agents", summary.problems)
    summary.models = sorted({str(a.get("model")) for a in agents.values() if isinstance(a, dict) and a.get("model")})
    summary.game = str(config.get("game", ""))
    summary.experiment = summary.experiment or str(config.get("name") or "")
    summary.configured = True
    return summary


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
    return float("-inf") if e.best_reward is None else e.best_reward


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
    sort = sort if sort in SORTS else "order"
    if any((q, agent, instance, status, matchup)) or sort != "order":
        index.summarize_all()
    rows = index.entries if sort == "order" else index.order(sort, _KEYS[sort])
    statuses = index.statuses() if index.complete else ["aborted", "complete", "failed"]
    if desc:
        rows = rows[::-1]
    if status or matchup or agent or instance or q:
        il, ql = instance.lower(), q.lower()
        rows = [e for e in rows if (not status or e.status == status) and (not matchup or e.matchup == matchup)
                and (not agent or agent in e.agents) and (not il or il in e.instance_id.lower())
                and (not ql or ql in e.search)]
    per = per if per in PAGE_SIZES else 50
    pages = max(1, -(-len(rows) // per))
    page = min(max(1, page), pages)
    filters = {"q": q, "agent": agent, "instance": instance, "status": status, "matchup": matchup}
    return Table(rows=index.summarize(rows[(page - 1) * per: page * per]), total=len(rows), page=page, pages=pages,
                 per=per, sort=sort, desc=desc, filters=filters, statuses=statuses)


def metrics_rows(index: RunIndex) -> tuple[list[str], list[dict[str, Any]]]:
    """One CSV row per episode of the index (its summary: seats, outcome, scalar metrics,
    rewards per player), and the columns in a stable order."""
    index.summarize_all()
    rows: list[dict[str, Any]] = []
    extra: dict[str, None] = {}
    for e in index.entries:
        row: dict[str, Any] = {"id": e.id, "experiment": e.experiment, "game": e.game, "instance_id": e.instance_id,
                               "matchup": e.matchup, "status": e.status, "repeat": e.repeat, "flip": e.flip,
                               "winner": e.winner or "", "reason": e.reason or "",
                               "error": (e.error or "").split("\n")[0], "duration_s": e.duration_s}
        for p, s in e.seats.items():
            row[f"agent.{p}"] = s.get("agent", "")
        for p, r in e.rewards.items():
            row[f"reward.{p}"] = r
        for k, v in e.metrics.items():
            if not isinstance(v, dict):
                row[f"metric.{k}"] = v
        for k in row:
            extra.setdefault(k, None)
        rows.append(row)
    return list(extra), rows


def progress(path: Path, index: RunIndex) -> dict[str, Any]:
    """What a live run page polls: status and counts (the index is refreshed by the caller)."""
    s = summarize(path)
    return {"status": s.status, "done": index.done, "failed": len(index.entries) - index.done, "expected": s.expected}
