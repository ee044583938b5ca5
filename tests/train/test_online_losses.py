"""The online trainer's credit and loss as functions, against hand computations: what every token
is trained towards, before any model is involved."""

from __future__ import annotations

import math

import pytest
import torch

from sparring.train.online.ppo.config import PPOSettings
from sparring.train.online.trainer.advantages import Baselines, Credit, grpo_credit, ppo_credit, turn_kl
from sparring.train.online.trainer.items import Item
from sparring.train.online.trainer.losses import token_losses


def item(episode: int, seat: str, turns: list[int], token_turn: list[int], old: list[float]) -> Item:
    n = len(token_turn)
    return Item(episode=episode, ids=list(range(n + 2)), positions=list(range(2, n + 2)), token_turn=token_turn,
                starts=[1] * len(turns), turns=turns, seat=seat, old_logprobs=old, old_values=[0.0] * len(turns))


def test_grpo_credit_gives_every_turn_its_seats_advantage_and_counts_groups_without_one():
    rewards = {(0, "A"): [0.0, 1.0], (1, "A"): [0.0, 0.0], (2, "A"): [0.5], (3, "A"): [0.5]}
    groups = {(0, "A"): 0, (1, "A"): 0, (2, "A"): 1, (3, "A"): 1}
    credit = grpo_credit(rewards, groups, Baselines("group", "none"), "episode", 1.0)
    assert credit.adv == {(0, "A"): [0.5, 0.5], (1, "A"): [-0.5, -0.5], (2, "A"): [0.0], (3, "A"): [0.0]}
    assert credit.ret == {} and credit.stats["zero_advantage_groups"] == 1
    assert credit.stats["advantage_abs"] == pytest.approx(2 / 6)


def test_ppo_credit_is_gae_over_each_seats_turns_with_the_kl_taken_from_the_rewards():
    a = item(0, "A", [0, 1], [0, 0, 1], [-1.0, -1.0, -2.0])
    a.ref_logprobs = [-1.5, -1.0, -2.0]  # turn 0: KL estimate 0.5
    a.old_values = [0.2, 0.4]
    rewards = {(0, "A"): [0.0, 1.0]}
    kl = turn_kl([a], rewards)
    assert kl == {(0, "A"): [0.5, 0.0]}
    settings = PPOSettings(kl_coef=0.1, lam=1.0, whiten_advantages=False)
    credit = ppo_credit([a], rewards, kl, settings, gamma=1.0)
    # shaped rewards -0.05, 1.0; gamma = lam = 1: A_t = G_t - V_t, returns = A + V
    assert credit.adv[(0, "A")] == pytest.approx([0.95 - 0.2, 1.0 - 0.4])
    assert credit.ret[(0, "A")] == pytest.approx([0.95, 1.0])


def test_on_policy_the_loss_is_minus_the_advantage_of_each_sampled_token():
    it = item(0, "A", [0, 1], [0, 0, 1], [-1.0, -2.0, -0.5])
    lp = torch.tensor([-1.0, -2.0, -0.5], requires_grad=True)
    credit = Credit(adv={(0, "A"): [2.0, -1.0]})
    loss, parts = token_losses([it], [lp], [torch.zeros(0)], [torch.zeros(3)], credit, PPOSettings())
    assert float(loss.detach()) == pytest.approx(-(2.0 + 2.0 - 1.0))
    loss.backward()
    assert lp.grad is not None and lp.grad.tolist() == pytest.approx([-2.0, -2.0, 1.0])  # d(-A * ratio)/d lp
    assert parts["tokens"] == 3 and float(parts["clipped"]) == 0 and "vf" not in parts and "kl_loss" not in parts


def test_the_ratio_is_clipped_the_value_loss_clipped_and_grpos_kl_is_k3():
    it = item(0, "A", [0], [0], [0.0])
    it.old_values, it.ref_logprobs = [0.0], [0.0]
    lp = torch.tensor([math.log(2.0)])  # ratio 2: clipped at 1.2 for a positive advantage
    settings = PPOSettings(cliprange=0.2, cliprange_value=0.2, vf_coef=0.5)
    value = torch.tensor([1.0])  # target 1.0, old 0: the clipped value 0.2 is further from it
    credit = Credit(adv={(0, "A"): [1.0]}, ret={(0, "A"): [1.0]})
    loss, parts = token_losses([it], [lp], [value], [torch.zeros(1)], credit, settings, kl_coef=0.1, with_kl=True)
    pg = -1.2
    vf = 0.5 * (0.2 - 1.0) ** 2
    k3 = math.exp(-math.log(2.0)) + math.log(2.0) - 1
    assert float(parts["clipped"]) == 1 and float(parts["vf"]) == pytest.approx(vf)
    assert float(parts["kl_loss"]) == pytest.approx(k3)
    assert float(loss) == pytest.approx(pg + 0.5 * vf + 0.1 * k3)
