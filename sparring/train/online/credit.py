"""Credit below the episode, shared by GRPO's turn-level option and PPO.

A learner's episode is a sequence of turns (its trained calls, in order). Each turn's reward is
the step reward the game gave that action (`CallRecord.step_reward`: TextWorld's score increase;
0 for games scored only by their outcome), and the last turn also gets what the outcome gives
beyond the steps (outcome - sum of step rewards), so a game's turn rewards always add up to the
episode's reward. From those:

- `returns_to_go`: G_t = r_t + γ G_{t+1} (the critic-free turn credit: normalised within a
  group of episodes of the same instance, `group_normalised`; against the group's turns at the
  same turn number, `index_normalised`; at the same progress, the reward collected before the
  turn, `progress_normalised`; from the same game state, `state_normalised`, GiGPO's anchor
  states, with `turn_states` keying each turn by the accepted actions before it);
- `gae`: generalised advantage estimation over the turns, A_t = Σ_k (γλ)^k δ_{t+k} with
  δ_t = r_t + γ V_{t+1} − V_t and V after the last turn 0; returns R_t = A_t + V_t (the value
  targets).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any


def learner_reward(record: Any, player: str, format_penalty: float = 0.0) -> float:
    """A player's reward as the online trainers take it: the outcome's (0 without one) less
    `format_penalty` per reply of the player the game rejected."""
    base = float((record.outcome.rewards if record.outcome else {}).get(player, 0.0))
    rejected = sum(1 for c in record.calls if c.player == player and c.rejected)
    return base - format_penalty * rejected


def turn_rewards(record: Any, calls: Sequence[int], outcome_reward: float) -> list[float]:
    """One reward per turn (`calls`: indices into `record.calls`, in order)."""
    rewards = [float(record.calls[i].step_reward or 0.0) for i in calls]
    if rewards:
        rewards[-1] += outcome_reward - sum(rewards)
    return rewards


def returns_to_go(rewards: Sequence[float], gamma: float = 1.0) -> list[float]:
    out = [0.0] * len(rewards)
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = rewards[t] + gamma * running
        out[t] = running
    return out


def gae(rewards: Sequence[float], values: Sequence[float], gamma: float = 1.0,
        lam: float = 0.95) -> tuple[list[float], list[float]]:
    """(advantages, returns) of one episode's turns; the value after the last turn is 0."""
    if len(rewards) != len(values):
        raise ValueError(f"{len(rewards)} rewards but {len(values)} values")
    advantages = [0.0] * len(rewards)
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        next_value = values[t + 1] if t + 1 < len(values) else 0.0
        delta = rewards[t] + gamma * next_value - values[t]
        running = delta + gamma * lam * running
        advantages[t] = running
    return advantages, [a + v for a, v in zip(advantages, values, strict=True)]


def _mean_std(per_episode: Sequence[Sequence[float]]) -> tuple[float, float]:
    flat = [v for ep in per_episode for v in ep]
    mean = sum(flat) / len(flat)
    return mean, math.sqrt(sum((v - mean) ** 2 for v in flat) / len(flat))


def group_normalised(per_episode: Sequence[Sequence[float]], eps: float = 1e-4) -> list[list[float]]:
    """Each value minus the mean over every turn of every episode of the group, divided by their
    standard deviation (+ eps): turns that did better than the group's typical turn get positive
    credit. A group whose values are all equal gets zeros."""
    if not any(per_episode):
        return [[] for _ in per_episode]
    mean, std = _mean_std(per_episode)
    return [[(v - mean) / (std + eps) for v in ep] for ep in per_episode]


def _keyed_normalised(per_episode: Sequence[Sequence[float]], keys: Sequence[Sequence[Any]],
                      eps: float = 1e-4) -> list[list[float]]:
    """Each value minus the mean of the group's values with the same key, divided by the standard
    deviation over every value of the group (+ eps)."""
    if not any(per_episode):
        return [[] for _ in per_episode]
    _, std = _mean_std(per_episode)
    at: dict[Any, list[float]] = {}
    for ep, ks in zip(per_episode, keys, strict=True):
        for v, k in zip(ep, ks, strict=True):
            at.setdefault(k, []).append(v)
    means = {k: sum(vs) / len(vs) for k, vs in at.items()}
    return [[(v - means[k]) / (std + eps) for v, k in zip(ep, ks, strict=True)]
            for ep, ks in zip(per_episode, keys, strict=True)]


def index_normalised(per_episode: Sequence[Sequence[float]], eps: float = 1e-4) -> list[list[float]]:
    """Each turn's value minus the mean of the group's turns at the same turn number (the k-th move
    of every episode that made one), divided by the standard deviation over every turn of the group
    (+ eps). Why: a return-to-go shrinks along a game that scores as it goes (TextWorld), so against
    one mean over all turns an early turn gains and the last, decisive one loses whatever was
    played; the k-th turns of games of one instance are the nearest thing to one state a group has.
    A turn number only one episode reached gets 0. A group whose values are all equal gets zeros."""
    return _keyed_normalised(per_episode, [range(len(ep)) for ep in per_episode], eps)


def progress_normalised(per_episode: Sequence[Sequence[float]], progress: Sequence[Sequence[float]],
                        eps: float = 1e-4) -> list[list[float]]:
    """Each turn's value minus the mean of the group's turns made at the same progress (`progress`:
    the reward a game had collected before that turn, so the same score state of the same
    instance), divided by the standard deviation over every turn of the group (+ eps). Why: the
    k-th turns of a group are in different states once one game wastes a command, and against
    them a slow game's later turns gain because it still has its points to collect; at one score
    state, with γ < 1, a command that scores now beats one that wastes a turn first. A progress
    only one turn reached gets 0. A group whose values are all equal gets zeros."""
    return _keyed_normalised(per_episode, [[round(p, 6) for p in ps] for ps in progress], eps)


def state_normalised(per_episode: Sequence[Sequence[float]], states: Sequence[Sequence[str]],
                     progress: Sequence[Sequence[float]], eps: float = 1e-4) -> list[list[float]]:
    """Each turn's value minus the mean of the group's turns taken from the same game state (GiGPO's
    anchor states: `states` from `turn_states`), divided by the standard deviation over every turn
    of the group (+ eps). Why: at one state the commands played there are compared only with each
    other — a command refused there (which changes nothing, so the next turn is at the same state
    again) against the one that would have worked — where the same-turn or same-score baselines mix
    states (TextWorld's `take knife` with the drawer open and closed). A state only one turn reached
    is measured against the group's turns at its progress (`progress_normalised`'s key) instead."""
    counts: dict[str, int] = {}
    for ks in states:
        for k in ks:
            counts[k] = counts.get(k, 0) + 1
    keys = [[("state", k) if counts[k] > 1 else ("progress", round(p, 6)) for k, p in zip(ks, ps, strict=True)]
            for ks, ps in zip(states, progress, strict=True)]
    return _keyed_normalised(per_episode, keys, eps)


def turn_states(record: Any, calls: Sequence[int]) -> list[str]:
    """Each turn's game state as a key (`calls`: indices into `record.calls`, in order): what every
    player's accepted replies were before it, in order. Two turns of one instance (a group) with
    the same key are in the same state of a game that is deterministic given its instance (its
    seed); a reply the game refused, or took without changing its state (`Feedback.changed`,
    recorded as the call's `meta["unchanged"]`), is left out."""
    keys, seen = [], hashlib.sha256()
    taken = set(calls)
    for i, call in enumerate(record.calls):
        if i in taken:
            keys.append(seen.copy().hexdigest()[:16])
        if call.op == "generate" and not call.rejected and not call.meta.get("unchanged") and call.completions:
            text = call.completions[call.chosen or 0].text or ""
            seen.update(f"{call.player}\x00{' '.join(text.split()).lower()}\x01".encode())
    order = {i: n for n, i in enumerate(sorted(taken))}
    return [keys[order[i]] for i in calls]


def progress_before(rewards: Sequence[float]) -> list[float]:
    """The reward collected before each turn (0 before the first)."""
    out, total = [], 0.0
    for r in rewards:
        out.append(total)
        total += r
    return out


def turn_normalised(rewards: Sequence[Sequence[float]], gamma: float = 1.0,
                    baseline: str = "group", states: Sequence[Sequence[str]] | None = None) -> list[list[float]]:
    """A group's turn rewards as advantages: each turn's return-to-go (discount `gamma`) normalised
    against `baseline` (`OnlineConfig.turn_baseline`): every turn of the group
    (`group_normalised`), its turn number (`index_normalised`), its progress, the reward collected
    before it (`progress_normalised`), or its game state (`state_normalised`, with each turn's key
    in `states`)."""
    returns = [returns_to_go(r, gamma) for r in rewards]
    if baseline == "state":
        if states is None:
            raise ValueError("turn_baseline 'state' needs each turn's state key (turn_states)")
        return state_normalised(returns, states, [progress_before(r) for r in rewards])
    if baseline == "progress":
        return progress_normalised(returns, [progress_before(r) for r in rewards])
    return (index_normalised if baseline == "turn_index" else group_normalised)(returns)


def whiten(values: Sequence[float], eps: float = 1e-8) -> list[float]:
    """Zero mean, unit variance (PPO's optional reward and advantage whitening)."""
    if not values:
        return []
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return [(v - mean) / (std + eps) for v in values]
