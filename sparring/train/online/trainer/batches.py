"""The online trainer's micro-batches: PPO's minibatches shuffled; the passes that need no
shuffling (GRPO's accumulated step, every scoring pass) in token order, cut where the compute is
least.

Why not fixed chunks: `forward` runs the prefix every item of a batch shares once and pads each
row's own suffix to the batch's longest. A chunk that straddles two GRPO groups shares only what
both prompts share (a system prompt: the rest of each prompt then runs once per row), and one long
row (a game with re-prompts) pads every other row to its length. The plan prices each contiguous
run of at most `size` items as `forward` would compute it, plus a fixed cost per decoder call, and
keeps the cheapest cut (dynamic programming over the sorted items: O(items x size)).
The loss is the same sum over the same tokens whatever the cut.
"""

from __future__ import annotations

import random

from sparring.train.online.trainer.forward import batch_cost, common_prefix
from sparring.train.online.trainer.items import Item

CALL_COST = 32  # tokens' worth of one more batch (its decoder calls' fixed cost and LoRA's small ops)


def micro_batches(items: list[Item], size: int, generator: random.Random | None = None,
                  share_prefix: bool = True, max_positions: int | None = None) -> list[list[Item]]:
    """PPO's minibatches: shuffled by `generator`, `size` at a time; otherwise in token order, cut
    by cost (`plan_batches`) where the passes share prefixes, in fixed chunks where they pad."""
    if generator is None and share_prefix:
        return plan_batches(items, size, max_positions)
    order = list(range(len(items)))
    if generator is not None:
        generator.shuffle(order)
    else:
        order.sort(key=lambda i: items[i].ids)
    return [[items[i] for i in order[k:k + size]] for k in range(0, len(order), size)]


def plan_batches(items: list[Item], size: int, max_positions: int | None = None) -> list[list[Item]]:
    """The items in token order, cut into runs of at most `size` at the least total cost; with
    `max_positions`, no run computes more positions than that (memory: the activations a
    forward/backward holds grow with them), except an item that alone exceeds it."""
    seqs = sorted(items, key=lambda it: it.ids)
    n = len(seqs)
    if n == 0:
        return []
    adjacent = [common_prefix(seqs[k:k + 2]) for k in range(n - 1)]  # sorted: a run's common prefix is their min
    best = [0] + [-1] * n
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        shared = len(seqs[j - 1].ids)
        lengths: list[int] = []
        for i in range(j - 1, max(0, j - size) - 1, -1):  # the run seqs[i:j], grown leftwards
            lengths.append(len(seqs[i].ids))
            if i < j - 1:
                shared = min(shared, adjacent[i])
            positions = batch_cost(lengths, shared)
            if max_positions is not None and len(lengths) > 1 and positions > max_positions:
                break  # longer runs only compute more
            total = best[i] + positions + CALL_COST
            if best[j] < 0 or total < best[j]:
                best[j], cut[j] = total, i
    out: list[list[Item]] = []
    j = n
    while j > 0:
        out.append(seqs[cut[j]:j])
        j = cut[j]
    return out[::-1]
