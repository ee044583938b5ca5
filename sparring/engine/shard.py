"""Sharding a tournament over machines, and merging the shard run directories back into one.

A shard is chosen by episode id (a uniform hash), not by position, so `--shard I/N` on N machines
partitions the schedule exactly — disjoint and covering — whatever order jobs are listed in,
and a resumed or merged run agrees with every shard about which episode is which.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sparring.engine.config import config_hash, read_config
from sparring.engine.episode import EpisodeJob
from sparring.errors import ConfigError, SparringError
from sparring.records.files import CONFIG, EPISODES, FAILURES
from sparring.records.reader import iter_jsonl, read_manifest
from sparring.records.store import repair_jsonl, write_json_atomic, write_summaries

Shard = tuple[int, int]


def parse_shard(text: str | None) -> Shard | None:
    """'I/N' with 0 <= I < N (0-based: `--shard 0/2` and `--shard 1/2` split a run in two)."""
    if text is None or text == "":
        return None
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
    if not m:
        raise ConfigError(f"--shard expects I/N such as 0/4, got {text!r}")
    i, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 0 <= i < n:
        raise ConfigError(f"--shard {text}: I is 0-based and must satisfy 0 <= I < N (e.g. 0/{max(n, 2)} .. "
                          f"{max(n, 2) - 1}/{max(n, 2)})")
    return i, n


def in_shard(episode_id: str, shard: Shard | None) -> bool:
    if shard is None:
        return True
    i, n = shard
    return int(episode_id, 16) % n == i


def select(jobs: Iterable[EpisodeJob], shard: Shard | None) -> list[EpisodeJob]:
    if shard is None:
        return list(jobs)
    return [j for j in jobs if in_shard(j.id, shard)]


def shard_label(shard: Shard | None) -> str | None:
    return None if shard is None else f"{shard[0]}/{shard[1]}"


def merge_runs(dirs: list[str | Path], output: str | Path, *, overwrite: bool = False) -> dict[str, Any]:
    """Combine shard run directories of one experiment into `output`, each episode id once.

    Refuses directories of different experiments (config hashes differ). A failure recorded in
    one shard is dropped if another shard stored the episode as done.
    """
    if not dirs:
        raise SparringError("merge: give at least one run directory")
    paths = [Path(d).expanduser() for d in dirs]
    configs = [read_config(p) for p in paths]
    hashes = {config_hash(c) for c in configs}
    if len(hashes) > 1:
        listing = ", ".join(f"{p} ({config_hash(c)})" for p, c in zip(paths, configs, strict=True))
        raise SparringError(f"merge: runs belong to different experiments (config hashes differ): {listing}")
    out = Path(output).expanduser()
    if out.exists() and any(out.iterdir()):
        if not overwrite:
            raise SparringError(f"merge: output directory {out} exists and is not empty")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(paths[0] / CONFIG, out / CONFIG)
    seen: set[str] = set()
    counts = {"done": 0, "complete": 0, "aborted": 0, "failed": 0}
    failures: dict[str, bytes] = {}
    with open(out / EPISODES, "wb") as f:
        for p in paths:
            repair_jsonl(p / EPISODES)
            for obj in iter_jsonl(p / EPISODES):
                rid = obj.get("id")
                if rid is None or rid in seen:
                    continue
                seen.add(rid)
                f.write(_line(obj))
                counts["done"] += 1
                counts["aborted" if obj.get("status") == "aborted" else "complete"] += 1
        for p in paths:
            for obj in iter_jsonl(p / FAILURES):
                rid = obj.get("id")
                if rid is not None and rid not in seen:
                    failures[rid] = _line(obj)
    with open(out / FAILURES, "wb") as f:
        f.writelines(failures.values())
    counts["failed"] = len(failures)
    manifests = [read_manifest(p) for p in paths]
    total = next((m.get("schedule", {}).get("total") for m in manifests if m.get("schedule")), None)
    shards = sorted({str(m.get("schedule", {}).get("shard")) for m in manifests if m.get("schedule")})
    status = "complete" if total is not None and counts["done"] + counts["failed"] >= total else "incomplete"
    manifest = {"experiment": configs[0].name, "config_hash": hashes.pop(), "merged_from": [str(p) for p in paths],
                "shards": shards, "schedule": {"total": total, "shard": None, "in_shard": total},
                "counts": counts, "status": status}
    from sparring import __version__

    manifest["version"] = __version__
    write_json_atomic(out / "manifest.json", manifest)
    write_summaries(out)  # the web app's first sorted page of the merged run then parses no line
    return manifest


def _line(obj: dict[str, Any]) -> bytes:
    import json

    return json.dumps(obj, ensure_ascii=False).encode() + b"\n"
