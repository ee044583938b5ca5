"""The one reader of run directories: resume, reports, merges, exporters and the web app use it.

A run directory holds `episodes.jsonl` (finished episodes, first line per id wins),
`failures.jsonl` (every failed attempt; the latest per id counts unless a retry stored it as
done), `config.yaml` and `manifest.json`. Readers never fail on a torn or foreign line: it is
skipped with a warning that names the file and line. `transcripts=False` leaves out `calls` and
`events` (~97% of a debate record), so tables over a large run fit in memory.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from sparring.records.files import CONFIG, EPISODES, FAILURES, MANIFEST
from sparring.records.record import EpisodeRecord, without_transcript

log = logging.getLogger(__name__)

RecordFilter = Callable[[EpisodeRecord], bool]


def iter_jsonl(path: Path, warnings: list[str] | None = None) -> Iterator[dict[str, Any]]:
    """Parsed objects of a JSONL file; unparseable lines are skipped with a warning."""
    for _, obj in _lines(path, warnings):
        yield obj


def _lines(path: Path, warnings: list[str] | None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of each JSON-object line of `path`; anything else is warned about."""
    if not path.exists():
        return
    with open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                _warn(warnings, torn_line(path.name, n))
                continue
            if isinstance(obj, dict):
                yield n, obj
            else:
                _warn(warnings, f"{path.name}:{n}: not a JSON object, skipped")


def _warn(warnings: list[str] | None, text: str) -> None:
    if warnings is None:
        log.warning("%s", text)
    else:
        warnings.append(text)


def torn_line(name: str, n: int) -> str:
    """The warning for a line that is not JSON (the same words wherever a run is read)."""
    return f"{name}:{n}: not JSON (a torn last line?), skipped"


def check_record(obj: dict[str, Any], name: str, n: int, transcripts: bool = True,
                 warnings: list[str] | None = None) -> EpisodeRecord | None:
    """The record of one parsed line, or None (warned about) when it is not a valid record: the
    one rule for which lines count, shared by this reader and the web app's index."""
    try:
        return EpisodeRecord.model_validate(obj if transcripts else without_transcript(obj))
    except ValidationError as e:  # an older or foreign schema: skipped, never fatal
        errors = e.errors()
        where = ".".join(str(x) for x in errors[0]["loc"]) if errors else ""
        detail = f" ({where}: {errors[0]['msg']})" if where else ""
        _warn(warnings, f"{name}:{n}: skipped unreadable record{detail}")
        return None


def _validated(objs: Iterable[tuple[int, dict[str, Any]]], name: str, transcripts: bool,
               warnings: list[str] | None) -> Iterator[EpisodeRecord]:
    for n, obj in objs:
        rec = check_record(obj, name, n, transcripts, warnings)
        if rec is not None:
            yield rec


def iter_records(run: str | Path, failures: bool = False, transcripts: bool = True,
                 where: RecordFilter | None = None, warnings: list[str] | None = None) -> Iterator[EpisodeRecord]:
    """Episode records of a run directory (or one JSONL file), each id once.

    Episodes: the first line of each id wins (duplicates are reported in `warnings`). Failures
    (`failures=True`, run directory only): the latest attempt of each id, leaving out ids that a
    retry has since stored as done. `where` keeps only the records it accepts.
    """
    path = Path(run)
    if failures:
        run_dir = path if path.is_dir() else path.parent
        done = {obj.get("id") for obj in iter_jsonl(run_dir / EPISODES, [])}  # warned when read as episodes
        latest: dict[Any, tuple[int, dict[str, Any]]] = {}
        for n, obj in _lines(run_dir / FAILURES, warnings):
            if obj.get("id") not in done:
                latest.pop(obj.get("id"), None)
                latest[obj.get("id")] = (n, obj)
        for rec in _validated(latest.values(), FAILURES, transcripts, warnings):
            if where is None or where(rec):
                yield rec
        return
    if path.is_dir():
        path = path / EPISODES
    seen: set[str] = set()
    for rec in _validated(_lines(path, warnings), path.name, transcripts, warnings):
        if rec.id in seen:
            _warn(warnings, f"{path.name}: duplicate episode id {rec.id} ignored")
            continue
        seen.add(rec.id)
        if where is None or where(rec):
            yield rec


def stored_ids(run_dir: str | Path) -> dict[str, str]:
    """id -> status of every episode stored as done (resume skips these), without validation."""
    out: dict[str, str] = {}
    for obj in iter_jsonl(Path(run_dir) / EPISODES):
        if "id" in obj:
            out.setdefault(obj["id"], obj.get("status", "complete"))
    return out


def read_manifest(run_dir: str | Path, warnings: list[str] | None = None) -> dict[str, Any]:
    path = Path(run_dir) / MANIFEST
    if not path.exists():
        return {}
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        _warn(warnings, f"{MANIFEST}: unreadable ({type(e).__name__})")
        return {}
    return loaded if isinstance(loaded, dict) else {}


def read_config_dict(run_dir: str | Path, warnings: list[str] | None = None) -> dict[str, Any]:
    """The run's resolved configuration as plain data ({} if missing or unreadable)."""
    path = Path(run_dir) / CONFIG
    if not path.exists():
        return {}
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        _warn(warnings, f"{CONFIG}: unreadable ({type(e).__name__})")
        return {}
    return loaded if isinstance(loaded, dict) else {}


@dataclass
class RunData:
    """A run directory read back: finished episodes (complete + aborted) and failures."""

    run_dir: Path
    episodes: list[EpisodeRecord] = field(default_factory=list)
    failures: list[EpisodeRecord] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def complete(self) -> list[EpisodeRecord]:
        return [r for r in self.episodes if r.status == "complete" and r.outcome is not None]

    @property
    def games(self) -> list[str]:
        return sorted({r.game for r in self.episodes + self.failures})


def read_run(run_dir: str | Path, transcripts: bool = True, where: RecordFilter | None = None) -> RunData:
    """Everything of a run directory (all files optional); nothing is ever counted twice."""
    run_dir = Path(run_dir)
    data = RunData(run_dir=run_dir)
    data.episodes = list(iter_records(run_dir, transcripts=transcripts, where=where, warnings=data.warnings))
    data.failures = list(iter_records(run_dir, failures=True, transcripts=transcripts, where=where,
                                      warnings=data.warnings))
    data.config = read_config_dict(run_dir, data.warnings)
    data.manifest = read_manifest(run_dir, data.warnings)
    return data
