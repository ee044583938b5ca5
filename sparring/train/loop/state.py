"""A training loop's `state.json`: which stages finished, and the config each stage ran with.

Every stage (`warm`, `K:play`, `K:export`, `K:train`, `K:register`, `K:check`, `K:evaluate`) records, when it
starts, the keys of the loop config it depends on (`STAGE_KEYS`) and their hash. A rerun compares
them with the current config before doing anything: an edited config never silently continues a
run made with the old one. The user undoes the edit, or restarts from a stage on purpose
(`--restart-from`), which moves that stage's and every later stage's outputs aside (never deletes).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from sparring.errors import SparringError
from sparring.train.fingerprint import ConfigChanged, describe_changes, fingerprint, pick
from sparring.train.loop.config import LoopConfig

STAGES = ("play", "export", "train", "register", "check", "evaluate")
# What each stage's result depends on (dotted keys of the loop config). `iterations`, `name`,
# `description` and `output_dir` are absent on purpose: raising `iterations` continues a run.
STAGE_KEYS: dict[str, tuple[str, ...]] = {
    "warm": ("warm_start", "train", "alias", "models_file"),
    "play": ("selfplay", "policy_agent", "alias", "models_file", "train.model", "warm_start"),
    "export": ("method", "policy_agent", "export"),
    "train": ("method", "train", "export.cumulative"),
    "register": ("alias", "models_file", "train.model"),
    "check": ("check", "selfplay", "policy_agent", "alias", "models_file"),
    "evaluate": ("evaluation", "selfplay", "policy_agent", "alias", "models_file", "method", "warm_start"),
}
RESUMABLE_TRAIN_KEYS = ("max_minutes", "logging_steps", "save_steps", "save_total_limit", "report_to", "run_name")
RESTART_HELP = ("Discard this stage and every later one (outputs are moved to discarded/), then run: "
                "'warm', 'K' (iteration K from its play stage) or 'K:STAGE' (STAGE: play, export, train, "
                "register, check, evaluate).")


def parse_stage(text: str) -> tuple[int, str]:
    """'warm' -> (0, 'warm'); '2' -> (2, 'play'); '2:train' -> (2, 'train')."""
    text = text.strip()
    if text == "warm":
        return 0, "warm"
    k, _, stage = text.partition(":")
    stage = stage or "play"
    if not k.isdigit() or int(k) < 1 or stage not in STAGES:
        raise SparringError(f"--restart-from {text!r}: expected 'warm', 'K' or 'K:STAGE' with K >= 1 and STAGE one "
                            f"of {', '.join(STAGES)}")
    return int(k), stage


def order(stage_id: str) -> tuple[int, int]:
    k, stage = parse_stage(stage_id)
    return (k, -1 if stage == "warm" else STAGES.index(stage))


class LoopState:
    """Load, check, update and save a loop's state.json."""

    def __init__(self, path: Path, config: LoopConfig, file: str):
        self.path, self.config, self.file = path, config, file
        self.state: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {"iterations": {}}
        self.state.setdefault("iterations", {})
        self.state.setdefault("fingerprints", {})
        self._dump = config.model_dump(mode="json")

    def save(self) -> None:
        from sparring.train import distributed

        if not distributed.is_main():  # one process writes state.json; the others hold the same state
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state, indent=2, sort_keys=True))
        os.replace(tmp, self.path)

    def snapshot(self, stage_id: str) -> dict[str, Any]:
        snap = pick(self._dump, STAGE_KEYS[parse_stage(stage_id)[1]])
        if isinstance(snap.get("train"), dict):  # how a run is bounded or logged is not what it trains
            snap["train"] = {k: v for k, v in snap["train"].items() if k not in RESUMABLE_TRAIN_KEYS}
        return snap

    def start(self, stage_id: str) -> None:
        """Record the config a stage runs with (before it runs: a half-done stage is covered too)."""
        snap = self.snapshot(stage_id)
        self.state["fingerprints"][stage_id] = {"fingerprint": fingerprint(snap), "config": snap}
        self.save()

    def iterations(self) -> list[int]:
        return sorted(int(k) for k in self.state["iterations"])

    def started(self) -> list[str]:
        """Stages that started (or finished), in loop order, including ones from before fingerprints."""
        ids = set(self.state["fingerprints"])
        if "warm" in self.state:
            ids.add("warm")
        for k, it in self.state["iterations"].items():
            ids.update(f"{k}:{s}" for s in it.get("done", []))
        return sorted(ids, key=order)

    def check(self, persist: bool = True) -> None:
        """Raise `ConfigChanged` naming the keys that differ from what a started stage ran with.
        Stages finished by an older sparring (no fingerprint) adopt the current config."""
        changed: list[tuple[str, str]] = []
        adopted = False
        for stage_id in self.started():
            stored = self.state["fingerprints"].get(stage_id)
            snap = self.snapshot(stage_id)
            if stored is None:
                self.state["fingerprints"][stage_id] = {"fingerprint": fingerprint(snap), "config": snap}
                adopted = True
            elif stored["fingerprint"] != fingerprint(snap):
                changed.append((stage_id, describe_changes(stored["config"], snap)))
        if adopted and persist:
            self.save()
        if changed:
            first, what = changed[0]
            more = f" (and {len(changed) - 1} later stage(s))" if len(changed) > 1 else ""
            raise ConfigChanged(
                f"{self.file}: the config changed since stage {first}{more} of the run in {self.path.parent} ran "
                f"({what}). Undo the edit to continue that run, use another output_dir for a new run, or "
                f"restart from that stage on purpose: --restart-from {first} (its outputs and every later "
                "stage's are moved to discarded/)")

    def restart(self, stage_id: str, root: Path, outputs: dict[str, list[Path]]) -> list[str]:
        """Forget `stage_id` and every later stage; move their outputs (`outputs[stage]`) aside.
        Returns the moved paths (relative to `root`)."""
        start = order(stage_id)
        dropped = [s for s in self.started() if order(s) >= start]
        dest = root / "discarded" / time.strftime("%Y%m%d-%H%M%S")
        moved: list[str] = []
        for s in dropped:
            for path in (outputs.get(s, []) if s != "warm" else [root / "warm", root / "runs" / "demonstrations"]):
                if path.exists():
                    rel = path.relative_to(root)
                    (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.move(str(path), str(dest / rel))
                    moved.append(str(rel))
            self.state["fingerprints"].pop(s, None)
        if start <= (0, -1):
            self.state.pop("warm", None)
            self.state.pop("registered0", None)
        for k, it in list(self.state["iterations"].items()):
            kept = [s for s in it.get("done", []) if order(f"{k}:{s}") < start]
            for s in STAGES:
                if order(f"{k}:{s}") >= start:
                    it.pop(s, None)
            it["done"] = kept
            if not kept:
                del self.state["iterations"][k]
        self.save()
        return moved
