"""A game read once (issue #59): when a player's prompts extend one another (the conversation view),
its calls train as one sequence with the environment's tokens masked, and that sequence gives the
trainer the same per-token log-probabilities, the same loss and the same gradients as training
each call in its own sequence — the per-call sequences read the shared start again for every call."""

from __future__ import annotations

import random

import pytest
import torch

from sparring.models.tiny import tiny_model
from sparring.train.online.sequence import Sequence
from sparring.train.online.trainer.forward import forward
from sparring.train.online.trainer.items import items_of


def episode(seed: int, vocab: int) -> tuple[list[int], list[list[int]], list[list[int]]]:
    """A prompt, and per call the sampled ids and (after each but the last) the environment's ids."""
    rng = random.Random(seed)
    ids = lambda n: [rng.randrange(3, vocab) for _ in range(n)]  # noqa: E731
    return ids(17), [ids(5), ids(3), ids(6)], [ids(9), ids(4)]


def joined(prompt, sampled, env) -> list[Sequence]:
    completion, mask = [], []
    for i, s in enumerate(sampled):
        completion += s
        mask += [1] * len(s)
        if i < len(env):
            completion += env[i]
            mask += [0] * len(env[i])
    return [Sequence(prompt, completion, mask, [0.0] * len(completion), calls=list(range(len(sampled))))]


def per_call(prompt, sampled, env) -> list[Sequence]:
    out, context = [], list(prompt)
    for i, s in enumerate(sampled):
        out.append(Sequence(list(context), list(s), [1] * len(s), [0.0] * len(s), calls=[i]))
        context += s + (env[i] if i < len(env) else [])
    return out


@pytest.mark.parametrize("share_prefix", [True, False])
def test_one_sequence_and_one_per_call_give_equal_losses_and_gradients(share_prefix):
    model, tok = tiny_model(vocab=1024)
    model.train(False)  # no dropout: the two passes must see the same network
    advantages = [0.7, -0.3, 1.1]  # one per turn (call), as the trainer's credit gives them
    results = []
    for build in (joined, per_call):
        model.zero_grad()
        items = [it for e in range(2) for it in items_of(e, build(*episode(e, 1024)))]
        logprobs, _, _ = forward(model, None, items, temperature=1.0, pad_id=0, share_prefix=share_prefix)
        per_token = torch.cat(logprobs)
        adv = torch.tensor([advantages[t] for it in items for t in it.token_turn])
        loss = -(adv * per_token).sum()
        loss.backward()
        grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
        results.append((len(items), per_token.detach(), loss.detach(), grads))
    (n_one, lp_one, loss_one, g_one), (n_call, lp_call, loss_call, g_call) = results
    assert (n_one, n_call) == (2, 6)  # two episodes: one sequence each, or three
    assert torch.allclose(lp_one, lp_call, atol=1e-5)
    assert torch.allclose(loss_one, loss_call, atol=1e-5)
    assert torch.allclose(g_one, g_call, atol=1e-5)


def test_the_one_sequence_reads_each_token_once():
    prompt, sampled, env = episode(0, 1024)
    one = sum(len(s.prompt_ids) + len(s.completion_ids) for s in joined(prompt, sampled, env))
    calls = sum(len(s.prompt_ids) + len(s.completion_ids) for s in per_call(prompt, sampled, env))
    trained = sum(map(len, sampled))
    assert one == len(prompt) + trained + sum(map(len, env))
    assert calls > one and (one / trained, calls / trained) == pytest.approx((44 / 14, 100 / 14))
