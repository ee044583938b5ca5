"""Bounded, resumable training through the public `transformers` Trainer API.

`checkpoint_args` turns the settings into TrainingArguments keys (periodic checkpoints into
`OUT/trainer/checkpoint-N`, at most `save_total_limit` kept); `TimeLimit` is a TrainerCallback that
asks the Trainer to save a checkpoint and stop once the time is up; `last_checkpoint` is where a
rerun resumes (model/adapter weights, optimizer, scheduler, RNG and step counter).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback
from transformers.trainer_utils import get_last_checkpoint

from sparring.errors import SparringError


class TrainingStopped(SparringError):
    """Training stopped before its last step (time limit); a rerun resumes from the checkpoint."""


def checkpoint_args(save_steps: int, save_total_limit: int) -> dict[str, Any]:
    """TrainingArguments keys for periodic checkpoints (save_steps 0: only on request)."""
    return {"save_strategy": "steps" if save_steps else "no", "save_steps": save_steps or 500,
            "save_total_limit": save_total_limit}


class TimeLimit(TrainerCallback):
    """Stop cleanly after `minutes` of training: at the end of the step that passes the limit the
    Trainer saves a checkpoint (`should_save`) and ends the loop (`should_training_stop`)."""

    def __init__(self, minutes: float | None, clock: Any = time.monotonic):
        self.seconds = None if minutes is None else minutes * 60.0
        self.clock = clock
        self.started: float | None = None
        self.stopped = False

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.started = self.clock()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if self.seconds is not None and self.started is not None and self.clock() - self.started >= self.seconds:
            if state.max_steps <= 0 or state.global_step < state.max_steps:
                control.should_save = True
                control.should_training_stop = True
                self.stopped = True
        return control


def last_checkpoint(trainer_dir: str | Path) -> str | None:
    """The newest `checkpoint-N` directory under `trainer_dir` (None: start from scratch)."""
    path = Path(trainer_dir)
    return get_last_checkpoint(str(path)) if path.is_dir() else None


def checkpoint_step(checkpoint: str | Path | None) -> int:
    """The step a `checkpoint-N` directory was saved at (0: no checkpoint, a fresh start)."""
    return int(Path(checkpoint).name.rsplit("-", 1)[-1]) if checkpoint else 0
