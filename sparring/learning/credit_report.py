"""What per-step credit gave each kind of action in an arm's training games.

When an RL arm makes held-out play worse, the first question is what it was trained on: which
actions the credit pushed up and which down. sparring's trainer keeps every training game
(`keep_rollouts`); this reads them back and gives, per action label (e.g. a TextWorld command's
verb and object, accepted or refused), how often it was played and the mean advantage each credit
design gives it — the design the arm trained with and any other, on the very same games.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sparring.train.online.credit import learner_reward, turn_normalised, turn_rewards, turn_states


def learner_turns(record: Any, player: str, format_penalty: float = 0.0) -> tuple[list[int], float]:
    """The learner's generate calls (indices into `record.calls`) and its reward as the trainer
    computed it (`learner_reward`: the outcome's, less `format_penalty` per rejected reply)."""
    calls = [i for i, c in enumerate(record.calls) if c.player == player and c.op == "generate"]
    return calls, learner_reward(record, player, format_penalty)


def credit_by_action(records: Sequence[Any], num_generations: int, player: str,
                     labels: Callable[[Any], list[str]],
                     designs: dict[str, tuple[str, float]], top: int = 12,
                     format_penalty: float = 0.0) -> dict[str, dict[str, dict[str, Any]]]:
    """Per design (name -> (turn_baseline, gamma)): the `top` most played action labels with their
    count, mean advantage and how many of them had an advantage above 0. `records` are the kept
    training games, grouped as GRPO grouped them (`num_generations` games of one prompt, from each
    record's `repeat`). `labels(record)` names each learner turn's action, in order; pass the arm's
    `format_penalty` so the rewards are the ones it trained on."""
    from sparring.train.online.trainer.collect import game_group

    groups: dict[tuple[int, int], list[Any]] = {}
    for rec in records:
        groups.setdefault(game_group(rec.repeat, num_generations), []).append(rec)
    # per group: each game's turn rewards, labels, states
    turns: list[tuple[list[list[float]], list[list[str]], list[list[str]]]] = []
    for group in groups.values():
        rewards, names, states = [], [], []
        for rec in group:
            calls, reward = learner_turns(rec, player, format_penalty)
            rewards.append(turn_rewards(rec, calls, reward))
            names.append(labels(rec)[:len(calls)])
            states.append(turn_states(rec, calls) if any(b == "state" for b, _ in designs.values()) else [])
        turns.append((rewards, names, states))
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for name, (baseline, gamma) in designs.items():
        seen: dict[str, list[float]] = {}
        for rewards, names, states in turns:
            for advantages, played in zip(turn_normalised(rewards, gamma, baseline, states), names, strict=True):
                for advantage, label in zip(advantages, played, strict=False):
                    seen.setdefault(label, []).append(advantage)
        ranked = sorted(seen.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:top]
        out[name] = {label: {"n": len(v), "mean": round(sum(v) / len(v), 4), "above_zero": sum(a > 1e-9 for a in v)}
                     for label, v in ranked}
    return out
