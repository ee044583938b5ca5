"""Per-step JSON-lines logs of the online trainers, numbered by a key (`step`, `rollout`). A step
logged twice (a run stopped after its log line but before its checkpoint, then resumed) keeps its
last entry: the one whose weights the run went on from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_step_log(path: Path, key: str = "step") -> list[dict[str, Any]]:
    """One entry per step, in step order; none when the log does not exist yet."""
    if not path.is_file():
        return []
    entries = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            entry = json.loads(line)
            entries[entry[key]] = entry
    return [entries[k] for k in sorted(entries)]


def trim_step_log(path: Path, step: int, key: str = "step") -> None:
    """Resuming from the checkpoint of `step`: drop the entries of later steps. Their weights were
    lost with the stopped run; the resumed run plays and logs those steps again."""
    if path.is_file():
        kept = [e for e in read_step_log(path, key) if e[key] <= step]
        path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in kept), encoding="utf-8")
