"""What one step plays and keeps: the step's prompts (seeded permutations of the dataset, one per
pass over it) and the games' training data (`Collected`)."""

from __future__ import annotations

import hashlib
import random
from typing import Any

from sparring.train.online.trainer.items import Item, Key


def seed_of(*parts: Any) -> int:
    """A stable seed from any parts (the same on every machine and Python version)."""
    return int(hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:15], 16)


STEP_STRIDE = 10_000  # a training game's `repeat`: step * STEP_STRIDE + prompt * num_generations + copy


def game_group(repeat: int, num_generations: int) -> tuple[int, int]:
    """The (step, prompt) group a training game was played in, from its record's `repeat`: how GRPO
    grouped the kept training games (`keep_rollouts`), whatever order they were stored in."""
    return repeat // STEP_STRIDE, (repeat % STEP_STRIDE) // num_generations


def prompts_for_step(rows: list[dict[str, Any]], per_step: int, step: int, seed: int) -> list[Any]:
    """The prompts of step `step` (0-based): consecutive slices of seeded permutations of the
    dataset, one permutation per pass (epoch) over it."""
    out: list[Any] = []
    start = step * per_step
    for k in range(start, start + per_step):
        epoch, index = divmod(k, len(rows))
        order = list(range(len(rows)))
        random.Random(seed_of(seed, "epoch", epoch)).shuffle(order)
        out.append(rows[order[index]]["prompt"])
    return out


class Collected:
    """One step's games: records, training items, each trained seat's turn rewards and group."""

    def __init__(self) -> None:
        self.records: list[Any] = []
        self.items: list[Item] = []
        self.rewards: dict[Key, list[float]] = {}  # (episode, seat) -> turn rewards (sum = episode reward)
        self.groups: dict[Key, int] = {}
        self.states: dict[Key, list[str]] = {}  # (episode, seat) -> each turn's game state (turn_baseline: state)
        self.kept: dict[int, Any] = {}

    def seat_rewards(self) -> dict[str, float]:
        """Mean reward per trained role (self-play: both seats' curves)."""
        by: dict[str, list[float]] = {}
        for (_, seat), r in self.rewards.items():
            by.setdefault(seat, []).append(sum(r))
        return {f"reward/{seat}": sum(v) / len(v) for seat, v in sorted(by.items())} if len(by) > 1 else {}

    def game_metrics(self) -> dict[str, float]:
        """The kept games' numeric outcome metrics (score, success, ...), averaged."""
        sums: dict[str, list[float]] = {}
        for r in self.kept.values():
            for k, v in (r.outcome.metrics if r.outcome else {}).items():
                if isinstance(v, bool | int | float) and not isinstance(v, str):
                    sums.setdefault(f"game/{k}", []).append(float(v))
        return {k: sum(v) / len(v) for k, v in sums.items()}
