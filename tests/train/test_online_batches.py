"""The online trainer's micro-batch plan: groups of one prompt kept together, long rows not padding
the rest, every item once, runs of at most `size`, and the least cost of every contiguous cut."""

from __future__ import annotations

import itertools
import random

from sparring.train.online.trainer.batches import CALL_COST, batch_cost, plan_batches
from sparring.train.online.trainer.forward import common_prefix
from sparring.train.online.trainer.items import Item


def item(ids: list[int], episode: int = 0) -> Item:
    return Item(episode=episode, ids=ids, positions=[len(ids) - 1], token_turn=[0], starts=[len(ids) - 2], turns=[0])


def cost(batches: list[list[Item]]) -> int:
    return sum(batch_cost([len(it.ids) for it in b], common_prefix(b)) + CALL_COST for b in batches)


def chunks(items: list[Item], size: int) -> list[list[Item]]:
    """The former plan: fixed chunks of the sorted items."""
    seqs = sorted(items, key=lambda it: it.ids)
    return [seqs[k:k + size] for k in range(0, len(seqs), size)]


def test_two_prompts_are_never_mixed_in_one_batch():
    system = list(range(1, 21))  # 20 tokens both prompts share
    prompts = [system + [100 + p] * 300 for p in range(2)]
    items = [item(prompts[p] + [500 + g] * 10, episode=4 * p + g) for p in range(2) for g in range(4)]
    plan = plan_batches(items, 8)
    assert [sorted(it.episode for it in b) for b in plan] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    # fixed chunks put all 8 in one batch: each prompt then runs 4 times
    assert cost(plan) < 0.5 * cost(chunks(items, 8))  # 784 vs 2,532 positions


def test_a_long_row_does_not_pad_the_others():
    prompt = list(range(1, 301))
    items = [item(prompt + [7] * 10 + [g]) for g in range(3)] + [item(prompt + [9] * 400)]
    plan = plan_batches(items, 8)
    assert sorted(len(b) for b in plan) == [1, 3]
    assert cost(plan) < cost(chunks(items, 8))


def test_the_plan_is_the_cheapest_contiguous_cut():
    rng = random.Random(0)
    for _ in range(40):
        n, size = rng.randint(1, 7), rng.randint(1, 4)
        roots = [[rng.randint(1, 3)] * rng.randint(0, 30) for _ in range(2)]
        items = [item(rng.choice(roots) + [rng.randint(1, 5) for _ in range(rng.randint(2, 40))], episode=e)
                 for e in range(n)]
        plan = plan_batches(items, size)
        assert sorted(it.episode for b in plan for it in b) == list(range(n))  # every item once
        assert all(1 <= len(b) <= size for b in plan)
        seqs = [it for b in plan for it in b]
        assert [it.ids for it in seqs] == sorted(it.ids for it in items)
        best = min(cost([seqs[a:b] for a, b in zip((0, *cuts), (*cuts, n), strict=True)])
                   for k in range(n) for cuts in itertools.combinations(range(1, n), k)
                   if all(b - a <= size for a, b in zip((0, *cuts), (*cuts, n), strict=True)))
        assert cost(plan) == best


def test_rows_without_a_shared_prefix_fill_the_batches():
    items = [item([k + 1] * 50) for k in range(10)]
    assert len(plan_batches(items, 4)) == 3  # as few batches as `size` allows
    assert plan_batches([], 4) == []


def test_a_token_budget_bounds_every_batch_but_a_lone_long_row():
    prompt = list(range(1, 101))
    items = [item(prompt + [200 + g] * (10 + 5 * g), episode=g) for g in range(6)] + [item([7] * 900, episode=6)]
    plan = plan_batches(items, 8, max_positions=300)
    assert sorted(it.episode for b in plan for it in b) == list(range(7))
    for b in plan:
        computed = batch_cost([len(it.ids) for it in b], common_prefix(b))
        assert computed <= 300 or len(b) == 1
    assert [it.episode for it in plan[-1]] == [6]  # 900 positions: alone
    assert len(plan_batches(items, 8)) < len(plan)  # without the budget: fewer, larger batches
