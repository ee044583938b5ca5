"""Each step's credit: the advantage of every turn of every trained seat (and PPO's value targets).

PPO (`ppo_credit`): each turn's reward minus kl_coef x its KL to the reference, GAE over the seat's
turns (gamma, lam) with the value head's estimates, optionally whitened. GRPO (`grpo_credit`): with
`credit: turn`, each turn's return-to-go normalised over its group; else every turn carries the
seat's episode reward minus a critic-free baseline (`Baselines`):

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
from dataclasses import dataclass, field
from typing import Any, Literal

from sparring.train.online.ppo.config import PPOSettings
from sparring.train.online.trainer.items import Item, Key

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


@dataclass
class Credit:
    """Per (episode, seat): each turn's advantage (every token the turn sampled carries it) and,
    for PPO, each turn's value target; `stats` go to the step's log line."""

    adv: dict[Key, list[float]] = field(default_factory=dict)
    ret: dict[Key, list[float]] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)


def turn_kl(items: list[Item], rewards: dict[Key, list[float]]) -> dict[Key, list[float]]:
    """Each turn's summed KL estimate (old - reference log-prob of its sampled tokens); 0 without a reference."""
    kl: dict[Key, list[float]] = {k: [0.0] * len(r) for k, r in rewards.items()}
    for it in items:
        if it.ref_logprobs:
            for t, old, ref in zip(it.token_turn, it.old_logprobs, it.ref_logprobs, strict=True):
                kl[it.key][t] += old - ref
    return kl


def _whitened(per_key: dict[Key, list[float]]) -> dict[Key, list[float]]:
    """Whiten all keys' values together (keys in sorted order), keeping each key's run."""
    from sparring.train.online.credit import whiten

    order = sorted(per_key)
    flat, n, out = whiten([x for k in order for x in per_key[k]]), 0, {}
    for k in order:
        out[k], n = flat[n:n + len(per_key[k])], n + len(per_key[k])
    return out


def ppo_credit(items: list[Item], rewards: dict[Key, list[float]], kl: dict[Key, list[float]],
               settings: PPOSettings, gamma: float) -> Credit:
    """GAE over each seat's turns; `settings` are PPO's (kl_coef, lam, whitening)."""
    from sparring.train.online.credit import gae

    values: dict[Key, list[float]] = {k: [0.0] * len(r) for k, r in rewards.items()}
    for it in items:
        for t, v in zip(it.turns, it.old_values, strict=True):
            values[it.key][t] = v
    shaped = {k: [r - settings.kl_coef * x for r, x in zip(rewards[k], kl[k], strict=True)] for k in rewards}
    if settings.whiten_rewards:
        shaped = _whitened(shaped)
    adv: dict[Key, list[float]] = {}
    ret: dict[Key, list[float]] = {}
    for k in shaped:
        adv[k], ret[k] = gae(shaped[k], values[k], gamma, settings.lam)
    if settings.whiten_advantages:
        adv = _whitened(adv)
    return Credit(adv, ret)


def grpo_credit(rewards: dict[Key, list[float]], groups: dict[Key, int], baselines: Baselines, credit: str,
                gamma: float, turn_baseline: str = "group",
                states: dict[Key, list[str]] | None = None) -> Credit:
    """Every turn of a seat's game gets the seat's advantage (or, with `credit: turn`, its
    return-to-go normalised over the group's turns: against all of them, those at its turn number
    (`turn_baseline: turn_index`), those at its score state (`progress`) or those from its game
    state (`state`, keyed by `states`)); stats: groups without any advantage, the mean absolute
    advantage, RAE's running baselines."""
    from sparring.train.online.credit import turn_normalised

    adv: dict[Key, list[float]] = {}
    if credit == "turn":
        by_group: dict[int, list[Key]] = {}
        for k in rewards:
            by_group.setdefault(groups[k], []).append(k)
        for keys in by_group.values():
            normalised = turn_normalised([rewards[k] for k in keys], gamma, turn_baseline,
                                         [states[k] for k in keys] if turn_baseline == "state" and states else None)
            adv.update(zip(keys, normalised, strict=True))
    else:
        episode = {k: sum(r) for k, r in rewards.items()}
        per_seat = baselines.advantages(episode, groups)
        adv = {k: [per_seat[k]] * len(rewards[k]) for k in rewards}
    flat = [a for k in adv for a in adv[k]]
    zero = len({groups[k] for k in rewards}) - len({groups[k] for k in rewards
                                                   if any(abs(a) > 1e-9 for a in adv[k])})
    stats = {"zero_advantage_groups": zero, "advantage_abs": sum(map(abs, flat)) / len(flat) if flat else 0.0,
             **({f"baseline/{r}": b for r, b in baselines.state().items()} if baselines.kind == "rae" else {})}
    return Credit(adv, {}, stats)
