"""Config fingerprints for resumable training: a stage finished under one config is never silently
continued under another.

Each finished stage stores the part of the config it depends on (`snapshot`) and its hash. On a
rerun the current config's snapshot is compared with the stored one; a difference is reported as
the dotted keys that changed (`train.learning_rate`), so the user can either undo the edit or
restart from that stage on purpose (`--restart-from`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sparring.errors import SparringError

MISSING = "<unset>"


class ConfigChanged(SparringError):
    """The config differs from the one a finished stage ran with (the CLI exits 2)."""


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts as dotted keys; lists and scalars are leaves."""
    if isinstance(data, dict) and data:
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: data}


def pick(data: dict[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    """The values of dotted `keys` of `data` (a key that is absent maps to None)."""
    out: dict[str, Any] = {}
    for key in keys:
        node: Any = data
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        out[key] = node
    return out


def fingerprint(snapshot: Any) -> str:
    """A short stable hash of a JSON-able snapshot (key order does not matter)."""
    text = json.dumps(snapshot, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def changed_keys(old: Any, new: Any) -> list[str]:
    """Dotted keys whose values differ between two snapshots."""
    a, b = flatten(old), flatten(new)
    return sorted(k for k in set(a) | set(b) if a.get(k, MISSING) != b.get(k, MISSING))


def describe_changes(old: Any, new: Any, limit: int = 8) -> str:
    """`key: old -> new` for the first changed keys, for error messages."""
    a, b = flatten(old), flatten(new)
    keys = changed_keys(old, new)
    parts = [f"{k}: {_short(a.get(k, MISSING))} -> {_short(b.get(k, MISSING))}" for k in keys[:limit]]
    if len(keys) > limit:
        parts.append(f"... and {len(keys) - limit} more")
    return "; ".join(parts)


def _short(value: Any, width: int = 40) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return text if len(text) <= width else text[: width - 3] + "..."


class OutputState:
    """The state.json of a one-stage training output (`train sft|dpo|kto -o OUT`, a GRPO run):
    the config it was started with, so a rerun into the same directory with other settings stops
    instead of mixing two runs' checkpoints. `restart()` moves the old outputs aside."""

    def __init__(self, out: Path, snapshot: dict[str, Any], what: str, restart_hint: str):
        self.out, self.snapshot, self.what, self.restart_hint = out, snapshot, what, restart_hint
        self.path = out / "state.json"

    def stored(self) -> dict[str, Any] | None:
        if not self.path.is_file():
            return None
        try:
            return json.loads(self.path.read_text(encoding="utf-8"))
        except ValueError:
            raise SparringError(f"{self.path}: not valid JSON; move it away or restart ({self.restart_hint})") from None

    def check(self) -> None:
        stored = self.stored()
        if stored is None or stored.get("fingerprint") == fingerprint(self.snapshot):
            return
        raise ConfigChanged(
            f"{self.out} holds a {self.what} started with other settings ("
            f"{describe_changes(stored.get('config') or {}, self.snapshot)}). Undo the change to resume it, choose "
            f"another output directory, or start over on purpose with {self.restart_hint} (the old outputs are "
            "moved to discarded/)")

    def start(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"fingerprint": fingerprint(self.snapshot), "config": self.snapshot},
                                  indent=2, sort_keys=True, default=str), encoding="utf-8")
        os.replace(tmp, self.path)

    def restart(self) -> list[str]:
        """Move everything in the output directory (but earlier discards) to discarded/<time>/."""
        if not self.out.is_dir():
            return []
        dest = self.out / "discarded" / time.strftime("%Y%m%d-%H%M%S")
        moved = []
        for path in sorted(self.out.iterdir()):
            if path.name != "discarded":
                dest.mkdir(parents=True, exist_ok=True)
                shutil.move(str(path), str(dest / path.name))
                moved.append(path.name)
        return moved
