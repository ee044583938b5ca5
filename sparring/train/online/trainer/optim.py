"""The trainer's optimisation settings: which of the shared tuning fields it honours, the AdamW
optimizer over the LoRA weights (and PPO's value head at its own rate), and transformers'
learning-rate schedule, re-created at the step a resumed run reached."""

from __future__ import annotations

from typing import Any

from sparring.train.online.config import OnlineConfig

SUPPORTED_OPTIM = ("adamw_torch", "adamw_torch_fused")


def check_tuning(config: OnlineConfig, file: str) -> None:
    """The tuning settings sparring's trainer honours; the rest are TRL's and refused here."""
    from sparring.errors import ConfigError
    from sparring.train.arguments import check_settings

    check_settings(config, "grpo")
    if config.optim not in SUPPORTED_OPTIM:
        raise ConfigError(f"sparring's trainer optimises with AdamW ({', '.join(SUPPORTED_OPTIM)}), not "
                          f"{config.optim!r}; use trainer: trl for other optimizers (GRPO)", file=file, key="optim")
    if config.trainer_args:
        raise ConfigError("trainer_args are fields of TRL's config and sparring's trainer has none; remove them or "
                          "use trainer: trl (GRPO)", file=file, key="trainer_args")


def optimizer(config: OnlineConfig, policy_params: list[Any], head: Any | None) -> Any:
    """AdamW over the trainable LoRA weights; the value head (PPO) at `ppo.value_lr` (default 10x)."""
    import torch

    groups = [{"params": policy_params, "lr": config.learning_rate}]
    if head is not None:
        groups.append({"params": list(head.parameters()), "lr": config.ppo.value_lr or config.learning_rate * 10})
    return torch.optim.AdamW(groups, weight_decay=config.weight_decay,
                             fused=config.optim == "adamw_torch_fused" or None)


def schedule(optimizer: Any, config: OnlineConfig, done: int = 0) -> Any:
    """transformers' learning-rate schedule over the run's training steps (`lr_scheduler_type`,
    `warmup_steps`: steps, or a fraction of the run if < 1), advanced to `done` steps (a resumed
    run: the schedule of this run's `max_steps`, which may have been raised, at the step reached)."""
    import warnings

    from transformers import get_scheduler

    for group in optimizer.param_groups:  # a resumed optimizer holds the old schedule's last rate
        group["lr"] = group.get("initial_lr", group["lr"])
    warmup = config.warmup_steps
    steps = int(warmup * config.max_steps) if 0 < warmup < 1 else int(warmup)
    scheduler = get_scheduler(config.lr_scheduler_type, optimizer, num_warmup_steps=steps,
                              num_training_steps=config.max_steps)
    with warnings.catch_warnings():  # stepping the schedule alone, not the optimizer, is the point here
        warnings.simplefilter("ignore")
        for _ in range(done):
            scheduler.step()
    return scheduler
