"""Critic-free advantages for sparring's GRPO: a seat's episode reward minus a baseline.

- `group` (GRPO): the mean reward of the group — the `num_generations` games of one prompt — over
  every trained seat, divided by the group's standard deviation (`scale_rewards: group`, as TRL:
  the unbiased std + 1e-4). In self-play of a zero-sum game the two seats' rewards cancel in that
  mean, so the baseline carries no information about either role.
- `role`: the same within each role (the learner's player id: first mover, second mover, ...).
- `rae`: role-conditioned advantage estimation (SPIRAL): a running baseline per role, an
  exponential moving average of that role's rewards (decay `rae_decay`), read before it is
  updated with each reward; no group needed, and zero-sum seats keep separate baselines.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from sparring.train.online.trainer.items import Key

Baseline = Literal["group", "role", "rae"]
Scale = Literal["group", "batch", "none"]
EPS = 1e-4


def _std(values: Sequence[float]) -> float:
    """The unbiased standard deviation (TRL's `torch.std`); 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    m = sum(values) / len(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


class Baselines:
    """Advantages of one step's (episode, seat) rewards; holds RAE's running baselines."""

    def __init__(self, kind: Baseline = "group", scale: Scale = "group", decay: float = 0.95):
        self.kind, self.scale, self.decay = kind, scale, decay
        self.running: dict[str, float] = {}  # rae: role -> baseline

    def advantages(self, rewards: dict[Key, float], groups: dict[Key, int]) -> dict[Key, float]:
        """`rewards`: (episode, seat) -> reward; `groups`: (episode, seat) -> its group number."""
        keys = list(rewards)
        buckets: dict[tuple, list[Key]] = {}
        for k in keys:
            bucket = (groups[k], k[1]) if self.kind == "role" else (groups[k],)
            buckets.setdefault(bucket, []).append(k)
        adv: dict[Key, float] = {}
        if self.kind == "rae":
            for k in keys:  # in episode order
                b = self.running.get(k[1], 0.0)
                adv[k] = rewards[k] - b
                self.running[k[1]] = self.decay * b + (1 - self.decay) * rewards[k]
        else:
            for members in buckets.values():
                m = sum(rewards[k] for k in members) / len(members)
                for k in members:
                    adv[k] = rewards[k] - m
        return self._scaled(adv, rewards, buckets)

    def _scaled(self, adv: dict[Key, float], rewards: dict[Key, float],
                buckets: dict[tuple, list[Key]]) -> dict[Key, float]:
        if self.scale == "none":
            return adv
        if self.scale == "batch":
            std = _std([rewards[k] for k in rewards])
            return {k: a / (std + EPS) for k, a in adv.items()}
        out = {}
        for members in buckets.values():
            std = _std([rewards[k] for k in members])
            for k in members:
                out[k] = adv[k] / (std + EPS)
        return out

    def state(self) -> dict[str, float]:
        return dict(self.running)

    def restore(self, state: dict[str, float]) -> None:
        self.running = {str(k): float(v) for k, v in (state or {}).items()}
