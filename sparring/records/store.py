"""Run directories: resolved config, append-only episode JSONL, failures JSONL, manifest.

Why this shape: a JSONL line is the unit of durability. Finished episodes are buffered during a
runner tick and written together with ONE flush + fsync (group commit), and only then reported
done — so after `kill -9` at any moment every reported episode is on disk, at most the last line
is torn, and resume (skip stored ids) plays every episode exactly once. A torn tail is cut on
open; ids are also deduplicated on read, so no reader ever sees an episode twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from filelock import FileLock, Timeout
from pydantic import BaseModel

from sparring import __version__
from sparring.errors import ConfigError, SparringError
from sparring.records.files import CONFIG, EPISODES, FAILURES, MANIFEST
from sparring.records.index import RunIndex
from sparring.records.reader import iter_jsonl, read_manifest
from sparring.records.record import EpisodeRecord

log = logging.getLogger(__name__)

RUNS_ENV = "SPARRING_RUNS_DIR"
MANIFEST_EVERY_S = 5.0


def runs_root(output_dir: str | Path | None = None) -> Path:
    """Parent of run directories: --output-dir / run.output_dir, else $SPARRING_RUNS_DIR, else runs/."""
    if output_dir:
        return Path(output_dir).expanduser()
    return Path(os.environ.get(RUNS_ENV) or "runs").expanduser()


def new_run_name(experiment: str) -> str:
    return f"{experiment}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"


# -- JSONL ---------------------------------------------------------------------------------------
def repair_jsonl(path: Path) -> int:
    """Cut a torn tail (bytes after the last newline, or a last line that is not JSON).

    Never removes a complete, parseable line. Returns the number of bytes removed.
    """
    if not path.exists():
        return 0
    removed = 0
    with open(path, "r+b") as f:
        size = f.seek(0, os.SEEK_END)
        while size > 0:
            keep = _last_line_start(f, size)
            f.seek(keep)
            line = f.read(size - keep)
            complete = line.endswith(b"\n")
            if complete and (not line.strip() or _parses(line)):
                break
            log.warning("%s: removing a torn last line (%d bytes)", path, size - keep)
            removed += size - keep
            size = keep
            f.truncate(size)
        if removed:
            f.flush()
            os.fsync(f.fileno())
    return removed


def _last_line_start(f: Any, size: int) -> int:
    """Offset where the last line (ending at `size`) starts."""
    end = size - 1 if size else 0  # ignore the final newline itself
    pos, block = end, 1 << 16
    while pos > 0:
        start = max(0, pos - block)
        f.seek(start)
        chunk = f.read(pos - start)
        nl = chunk.rfind(b"\n")
        if nl >= 0:
            return start + nl + 1
        pos = start
    return 0


def _parses(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=True, default=str)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


# -- the store -----------------------------------------------------------------------------------
class Stored(NamedTuple):
    """One finished episode, serialised (a JSONL line) and ready to append."""

    id: str
    status: str  # complete | aborted | failed
    line: bytes  # JSON + newline
    completion_tokens: int = 0
    error: str | None = None
    tree: str | None = None  # branched rollouts: the tree (job) id this leaf belongs to
    # How each verdict of the episode was obtained (`verdict_methods` the engine marks on calls).
    verdict_methods: tuple[str, ...] = ()

    @classmethod
    def of(cls, record: EpisodeRecord, redact: Redactor | None = None) -> Stored:
        """Serialise `record`; `redact` removes credential values from the line. A record that
        cannot be serialised (text no JSON encoder accepts) is stored as a failed episode with the
        reason instead, so that no single record can stop a run, or every rerun of it."""
        tokens = sum(u.completion_tokens for u in record.usage.values())
        try:
            line = record.model_dump_json()
        except ValueError as e:  # pydantic's serialisation errors are ValueErrors
            record = _unstorable(record, e)
            line = record.model_dump_json()
        if redact is not None:
            line = redact(line)
        tree = record.tree.get("id") if record.tree else None
        methods = tuple(str(m) for c in record.calls for m in (c.meta.get("verdict_methods") or ()))
        return cls(record.id, record.status, line.encode() + b"\n", tokens, record.error, tree, methods)


Redactor = Callable[[str], str]


def _unstorable(record: EpisodeRecord, error: Exception) -> EpisodeRecord:
    """A failed record in place of one that cannot be written: who played what, and why."""
    reason = str(error).encode("ascii", "backslashreplace").decode("ascii")
    return EpisodeRecord(id=record.id, experiment=record.experiment, game=record.game,
                         instance_id=record.instance_id, seats=record.seats, seed=record.seed,
                         repeat=record.repeat, flip=record.flip, matchup=record.matchup, status="failed",
                         error=f"the episode record could not be stored ({type(error).__name__}: {reason[:300]}); "
                               "its transcript was dropped",
                         started_at=record.started_at, duration_s=record.duration_s, usage=record.usage)


Identity = Callable[[Any], dict[str, Any]]


def config_hash(config: BaseModel, identity: Identity) -> str:
    """Equal hashes => the same experiment: runs can be resumed into each other and merged."""
    blob = json.dumps(identity(config), sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


class RunStore:
    """One run directory opened for appending (exclusive: a second writer is refused).

    `config` is the run's resolved configuration (written to config.yaml); `identity` picks the
    part of it that decides what is played, so that a resume with other volatile settings (batch
    width, workers) is accepted and one of another experiment is refused. The store itself knows
    no config schema: it re-reads config.yaml with the type of `config`.
    """

    def __init__(self, path: str | Path, config: BaseModel, identity: Identity, *, create: bool = True,
                 redact: Redactor | None = None):
        self.path = Path(path)
        self.redact = redact  # applied to every line this store writes (credential values)
        self.config, self.identity = config, identity
        self.hash = config_hash(config, identity)
        exists = (self.path / CONFIG).is_file()
        if not exists and not create:
            raise ConfigError("not a run directory (no config.yaml)", file=str(self.path / CONFIG))
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise SparringError(f"cannot create the run directory {self.path}: {e.strerror or e}") from None
        self._lock = FileLock(str(self.path / ".lock"))
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            raise SparringError(f"run directory {self.path} is in use by another process") from None
        if exists:
            self._check_same_experiment()
        self.manifest: dict[str, Any] = read_manifest(self.path) if exists else {}
        self.manifest.setdefault("created", _now())
        self._write_config()
        for name in (EPISODES, FAILURES):
            repair_jsonl(self.path / name)
        self.done: dict[str, str] = {}  # id -> status (complete / aborted)
        self.failed: dict[str, str] = {}  # id -> error
        self.trees: set[str] = set()  # branched rollouts: trees (jobs) whose leaves are stored
        for obj in iter_jsonl(self.path / EPISODES):
            if "id" in obj:
                self.done.setdefault(obj["id"], obj.get("status", "complete"))
                if isinstance(obj.get("tree"), dict) and obj["tree"].get("id"):
                    self.trees.add(obj["tree"]["id"])
        for obj in iter_jsonl(self.path / FAILURES):
            if "id" in obj and obj["id"] not in self.done:
                self.failed[obj["id"]] = obj.get("error") or ""
        self._episodes = open(self.path / EPISODES, "ab")
        self._failures = open(self.path / FAILURES, "ab")
        self._pending_done: list[Stored] = []
        self._pending_failed: list[Stored] = []
        self._last_manifest = 0.0
        self.completion_tokens = 0

    def _check_same_experiment(self) -> None:
        from sparring.config_io import load_yaml_model

        stored = load_yaml_model(type(self.config), self.path / CONFIG)
        if config_hash(stored, self.identity) != self.hash:
            diff = _diff(self.identity(stored), self.identity(self.config))
            raise ConfigError(f"run directory {self.path} holds a different experiment (differs at "
                              f"{', '.join(diff[:5]) or 'unknown keys'}); use another run name/directory",
                              file=str(self.path / CONFIG))

    def _write_config(self) -> None:
        data = self.config.model_dump(mode="json", exclude_none=True)
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
        tmp = self.path / f".{CONFIG}.tmp"
        tmp.write_text(f"# resolved configuration of this run (sparring {__version__})\n{text}", encoding="utf-8")
        os.replace(tmp, self.path / CONFIG)

    def stored(self, job_id: str) -> bool:
        """Whether a scheduled job is stored as done (an episode, or a branched tree's leaves)."""
        return job_id in self.done or job_id in self.trees

    # -- appends ---------------------------------------------------------------------------------
    def add_done(self, record: EpisodeRecord) -> None:
        self.add_serialized(Stored.of(record, self.redact))

    def add_failed(self, record: EpisodeRecord) -> None:
        self._pending_failed.append(Stored.of(record, self.redact))

    def add_serialized(self, item: Stored) -> None:
        """An episode serialised elsewhere (a worker process); `item.status` says which file."""
        (self._pending_failed if item.status == "failed" else self._pending_done).append(item)

    def commit(self) -> list[Stored]:
        """Write everything buffered with one flush + fsync per file; returns what was written."""
        written: list[Stored] = []
        if self._pending_done:
            lines = []
            for item in self._pending_done:
                if item.id in self.done:  # never two lines for one id
                    continue
                self.done[item.id] = item.status
                self.failed.pop(item.id, None)
                if item.tree:  # a tree's leaves are stored together: the tree (job) is done
                    self.trees.add(item.tree)
                lines.append(item.line)
                written.append(item)
                self.completion_tokens += item.completion_tokens
            _append(self._episodes, b"".join(lines))
            self._pending_done = []
        if self._pending_failed:
            lines = []
            for item in self._pending_failed:
                self.failed[item.id] = item.error or ""
                lines.append(item.line)
                written.append(item)
            _append(self._failures, b"".join(lines))
            self._pending_failed = []
        if written and time.monotonic() - self._last_manifest > MANIFEST_EVERY_S:
            self.write_manifest()
        return written

    # -- manifest --------------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        aborted = sum(1 for s in self.done.values() if s == "aborted")
        return {"done": len(self.done), "complete": len(self.done) - aborted, "aborted": aborted,
                "failed": len(self.failed)}

    def write_manifest(self, **fields: Any) -> None:
        self.manifest.update(fields)
        self.manifest.update(experiment=getattr(self.config, "name", ""), config_hash=self.hash, version=__version__,
                             updated=_now(), counts=self.counts())
        write_json_atomic(self.path / MANIFEST, self.manifest)
        self._last_manifest = time.monotonic()

    def close(self, **fields: Any) -> None:
        if self._episodes.closed:
            return
        self.commit()
        self.write_manifest(**fields)
        self._episodes.close()
        self._failures.close()
        write_summaries(self.path)
        self._lock.release()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_summaries(run_dir: Path) -> None:
    """The persistent summary index of a closed run's files (`records.sidecar`), so that the
    web app's first filtered or sorted page of it reads no record; best-effort (a cache)."""
    try:
        RunIndex(run_dir).refresh(background=False).summarize_all(save=False).save()
    except OSError as e:  # never fails a run: the web app summarises the files itself
        log.warning("%s: the summary index was not written (%s)", run_dir, e)


def _append(f: Any, data: bytes) -> None:
    if data:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _diff(a: Any, b: Any, prefix: str = "") -> list[str]:
    """Dotted keys where two JSON-like values differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for k in sorted(set(a) | set(b), key=str):
            out += _diff(a.get(k), b.get(k), f"{prefix}.{k}" if prefix else str(k))
        return out
    return [] if a == b else [prefix or "(root)"]
