"""The trainer's state on disk: the adapter (with PPO's value head) for `adapter/` and `best/`, and
checkpoints that resume a run exactly — the league's frozen adapters, the optimizer, the running
baselines, the best evaluation — written to a temporary folder and renamed, so a crash never leaves
half a checkpoint; only the last `save_total_limit` are kept."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from sparring.train.online.trainer.opponents import SNAPSHOT
from sparring.train.online.trainer.optim import schedule

if TYPE_CHECKING:
    from sparring.train.online.trainer.core import OnlineTrainer


def save(trainer: OnlineTrainer, directory: Path) -> Path:
    """The learner's adapter, its tokenizer and (PPO) its value head."""
    from sparring.train.online.ppo.value import save_head

    directory.mkdir(parents=True, exist_ok=True)
    trainer.model.save_pretrained(str(directory), selected_adapters=["default"])
    trainer.tokenizer.save_pretrained(str(directory))
    if trainer.head is not None:
        save_head(trainer.head, directory)
    return directory


def write(trainer: OnlineTrainer, step: int) -> Path:
    """OUT/trainer/checkpoint-STEP, everything a resumed run needs."""
    import torch

    directory = trainer.out / "trainer" / f"checkpoint-{step}"
    tmp = directory.with_name(directory.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    save(trainer, tmp)
    for slot in trainer.opponents.snapshots:  # the league's adapters
        trainer.model.save_pretrained(str(tmp / "league"), selected_adapters=[SNAPSHOT.format(slot)])
    torch.save(trainer.optimizer.state_dict(), tmp / "optimizer.pt")
    (tmp / "trainer_state.json").write_text(json.dumps({
        "step": step, "best": trainer.best, "baselines": trainer.baselines.state(),
        "league": trainer.opponents.state()}), encoding="utf-8")
    shutil.rmtree(directory, ignore_errors=True)
    tmp.rename(directory)
    for old in checkpoints(trainer.out)[: -trainer.config.save_total_limit]:
        shutil.rmtree(old, ignore_errors=True)
    return directory


def resume(trainer: OnlineTrainer, directory: Path) -> int:
    """Load a checkpoint into `trainer`; the step it was written at."""
    import torch
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    from sparring.train.online.ppo.value import load_head

    set_peft_model_state_dict(trainer.model, load_file(str(directory / "adapter_model.safetensors")),
                              adapter_name="default")
    if trainer.head is not None:
        load_head(trainer.head, directory)
    trainer.optimizer.load_state_dict(torch.load(directory / "optimizer.pt", weights_only=True))
    state = json.loads((directory / "trainer_state.json").read_text(encoding="utf-8"))
    trainer.best = state.get("best")
    trainer.baselines.restore(state.get("baselines") or {})
    trainer.opponents.restore(state.get("league") or {})
    for slot in trainer.opponents.snapshots:
        name = SNAPSHOT.format(slot)
        trainer.model.load_adapter(str(directory / "league" / name), adapter_name=name, is_trainable=False)
    trainer.model.set_adapter("default")
    if trainer.opponents.snapshots:
        trainer.rewrap()
    step = int(state["step"])
    trainer.scheduler = schedule(trainer.optimizer, trainer.config, done=step)  # this run's schedule, at `step`
    return step


def checkpoints(out: Path) -> list[Path]:
    """The run's checkpoints, oldest first."""
    root = out / "trainer"
    found = [p for p in root.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[1].isdigit()] \
        if root.is_dir() else []
    return sorted(found, key=lambda p: int(p.name.split("-")[1]))
