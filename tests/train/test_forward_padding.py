"""The trainer's forward pads rows on the right and passes no attention mask (so SDPA can take its
fused causal kernel): a batch of rows of different lengths must give every item exactly the
log-probabilities and gradients it gets alone, with and without the shared prefix."""

from __future__ import annotations

import random

import pytest
import torch

from sparring.models.tiny import tiny_model
from sparring.train.online.sequence import Sequence
from sparring.train.online.trainer.forward import forward
from sparring.train.online.trainer.items import items_of


def items(vocab: int = 1024) -> list:
    rng = random.Random(3)
    ids = lambda n: [rng.randrange(3, vocab) for _ in range(n)]  # noqa: E731
    prompt = ids(12)  # a prefix every row shares (the shared-prefix path runs it once)
    out = []
    for e, (extra, sampled) in enumerate([(3, 4), (9, 2), (1, 7), (15, 5)]):  # rows of 19 to 32 tokens
        completion = ids(sampled)
        seq = Sequence(prompt + ids(extra), completion, [1] * sampled, [0.0] * sampled, calls=[0])
        out += items_of(e, [seq])
    return out


@pytest.mark.parametrize("share_prefix", [True, False])
def test_a_right_padded_batch_without_a_mask_equals_each_row_alone(share_prefix):
    model, _ = tiny_model(vocab=1024)
    model.train(False)
    batch = items()
    assert len({len(it.ids) for it in batch}) == len(batch)  # every row padded but the longest

    def run(groups: list[list]) -> tuple[torch.Tensor, torch.Tensor]:
        model.zero_grad()
        logprobs = [lp for group in groups
                    for lp in forward(model, None, group, temperature=1.0, pad_id=0, share_prefix=share_prefix)[0]]
        per_token = torch.cat(logprobs)
        per_token.sum().backward()
        grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
        return per_token.detach(), grads

    together, g_together = run([batch])
    alone, g_alone = run([[it] for it in batch])
    assert torch.allclose(together, alone, atol=1e-5)
    assert torch.allclose(g_together, g_alone, atol=1e-5)
