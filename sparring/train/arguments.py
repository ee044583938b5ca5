"""The keyword arguments of a TRL trainer config, resolved from sparring's `TrainSettings`.

One place turns the strict settings into TRL's config: the settings people tune (optimizer,
weight decay, scheduler and warm-up, gradient clipping, trackers), the device (fp32 on CPU, bf16
on CUDA), checkpoints, and `trainer_args:`, the escape hatch for every other field of the
installed TRL config. An escape-hatch key is checked against that config's fields (unknown: an
error naming it) and may not shadow a sparring setting (an error naming the setting to use), so
there is one way to set each thing. `--dry-run` prints what this module resolves.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from sparring.errors import ConfigError
from sparring.train.checkpoints import checkpoint_args
from sparring.train.config import TrainSettings, TuningSettings

# TRL / transformers field -> the sparring setting that owns it
OWNED = {
    "output_dir": "the output directory (-o)", "per_device_train_batch_size": "batch_size",
    "gradient_accumulation_steps": "gradient_accumulation", "learning_rate": "learning_rate",
    "num_train_epochs": "epochs", "max_steps": "max_steps", "logging_steps": "logging_steps",
    "save_steps": "save_steps", "save_total_limit": "save_total_limit", "save_strategy": "save_steps",
    "seed": "seed", "report_to": "report_to", "run_name": "run_name", "optim": "optim",
    "weight_decay": "weight_decay", "lr_scheduler_type": "lr_scheduler_type", "warmup_steps": "warmup_steps",
    "warmup_ratio": "warmup_steps", "max_grad_norm": "max_grad_norm", "max_length": "max_length",
    "bf16": "(the device: bf16 on CUDA, fp32 on CPU)", "use_cpu": "(the device)",
    "gradient_checkpointing": "gradient_checkpointing", "activation_checkpointing": "gradient_checkpointing",
    "beta": "dpo.beta / kto.beta", "loss_type": "dpo.loss_type", "loss_weights": "dpo.loss_weights",
    "assistant_only_loss": "assistant_only_loss",
    "desirable_weight": "kto.desirable_weight", "undesirable_weight": "kto.undesirable_weight",
    "num_generations": "num_generations", "temperature": "the learner agent's sampling temperature",
    "scale_rewards": "credit (turn credit hands TRL rewards normalised in their group)",
}


def config_class(method: str, soft: bool = False) -> type:
    """The TRL config class a method trains with (transformers' TrainingArguments for soft DPO)."""
    if method == "dpo" and soft:
        from transformers import TrainingArguments

        return TrainingArguments
    import trl

    return {"sft": trl.SFTConfig, "dpo": trl.DPOConfig, "kto": trl.KTOConfig, "grpo": trl.GRPOConfig}[method]


def field_names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def check_trainer_args(extra: dict[str, Any], cls: type, key: str = "trainer_args") -> dict[str, Any]:
    """`extra` if every key is a field of `cls` that sparring does not set itself."""
    names = field_names(cls)
    for k in extra:
        if k in OWNED:
            raise ConfigError(f"{k!r} is set by sparring: use {OWNED[k]} instead", key=f"{key}.{k}")
        if k not in names:
            from sparring.errors import closest

            hints = closest(k, sorted(names))
            raise ConfigError(f"{k!r} is not a field of the installed {cls.__name__}"
                              f"{f' (did you mean {hints[0]!r}?)' if hints else ''}", key=f"{key}.{k}")
    return dict(extra)


def checkpointing_arg(on: bool) -> dict[str, Any]:
    """The training-arguments keyword for activation checkpointing: transformers >= 5.24 names it
    `activation_checkpointing` (`gradient_checkpointing` is its deprecated alias, and TRL's configs
    default the alias to True), older versions only know `gradient_checkpointing`."""
    from transformers import TrainingArguments

    names = field_names(TrainingArguments)
    return {"activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing": on}


def checkpointing(settings: TrainSettings) -> bool:
    """Activation checkpointing unless set: on for preference pairs (DPO, KTO), off for SFT."""
    if settings.gradient_checkpointing is not None:
        return settings.gradient_checkpointing
    return settings.method != "sft"


def warmup_arg(warmup: float) -> dict[str, Any]:
    """Warm-up as the installed transformers takes it: `warmup_steps` (a float below 1 is a ratio
    from transformers 5.x on) or, where it still exists, `warmup_ratio`."""
    from transformers import TrainingArguments

    if warmup < 1 and warmup > 0 and "warmup_ratio" in field_names(TrainingArguments):
        return {"warmup_ratio": warmup}
    return {"warmup_steps": int(warmup) if warmup >= 1 or warmup == 0 else warmup}


def tuning_args(settings: TuningSettings, out: Path, method: str, soft: bool = False) -> dict[str, Any]:
    """The tuned settings, the trackers and the checked escape hatch, as config keywords."""
    from sparring.train.tracking import report_args

    return {"optim": settings.optim, "weight_decay": settings.weight_decay,
            "lr_scheduler_type": settings.lr_scheduler_type, **warmup_arg(settings.warmup_steps),
            "max_grad_norm": settings.max_grad_norm, **report_args(settings.report_to, settings.run_name, out),
            **check_trainer_args(settings.trainer_args, config_class(method, soft))}


def training_args(settings: TrainSettings, out: Path, method: str | None = None, max_length: bool = True,
                  cuda: bool | None = None) -> dict[str, Any]:
    """The config keywords of `train sft|dpo|kto` (`max_length`: the config has that field)."""
    if cuda is None:
        from sparring.train.policy import use_cuda

        cuda = use_cuda()
    method = method or settings.method
    args: dict[str, Any] = {
        **({"max_length": settings.max_length} if max_length else {}),
        "output_dir": str(out / "trainer"), "per_device_train_batch_size": settings.batch_size,
        "gradient_accumulation_steps": settings.gradient_accumulation, "learning_rate": settings.learning_rate,
        "num_train_epochs": settings.epochs, "max_steps": settings.max_steps,
        "logging_steps": settings.logging_steps, **checkpoint_args(settings.save_steps, settings.save_total_limit),
        "seed": settings.seed, "bf16": cuda, "use_cpu": not cuda,
        **checkpointing_arg(checkpointing(settings)), "disable_tqdm": False}
    # the escape hatch last: it may only name fields sparring does not set (checked)
    return {**args, **tuning_args(settings, out, method, soft=method == "dpo" and settings.dpo.soft)}


def check_settings(settings: TuningSettings, method: str | None = None, soft: bool = False) -> None:
    """What can be checked without building the trainer: optimizer and scheduler names, trackers,
    the escape hatch (a clear ConfigError naming the key)."""
    from transformers.trainer_utils import SchedulerType
    from transformers.training_args import OptimizerNames

    optims = [o.value for o in OptimizerNames]
    if settings.optim not in optims:
        raise ConfigError(f"unknown optimizer {settings.optim!r}; transformers knows: {', '.join(optims)}",
                          key="optim")
    schedulers = [s.value for s in SchedulerType]
    if settings.lr_scheduler_type not in schedulers:
        raise ConfigError(f"unknown scheduler {settings.lr_scheduler_type!r}; transformers knows: "
                          f"{', '.join(schedulers)}", key="lr_scheduler_type")
    from sparring.train.tracking import check_report_to

    check_report_to(settings.report_to)
    if isinstance(settings, TrainSettings):
        method, soft = settings.method, settings.method == "dpo" and settings.dpo.soft
    check_trainer_args(settings.trainer_args, config_class(method or "sft", soft))
