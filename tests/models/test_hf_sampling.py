"""The per-row seeded sampler behind the `hf` backend, on synthetic logits (no model needed)."""

from __future__ import annotations

import torch

from sparring.models.hf_generate import RowSampler, cut_at_stop, mix_seed


def draw(scores: torch.Tensor, seeds: list[int], temperature: float = 1.0, top_p: float = 1.0, step: int = 0,
         top_k_fast: int | None = None) -> list[int]:
    sampler = RowSampler(prompt_len=5, seeds=seeds, temperature=temperature, top_p=top_p)
    if top_k_fast is not None:
        sampler.TOP_K_FAST = top_k_fast
    forced = sampler(torch.zeros((len(seeds), 5 + step), dtype=torch.long), scores)
    assert torch.isfinite(forced).sum(dim=-1).tolist() == [1] * len(seeds)  # exactly one token allowed
    return forced.argmax(dim=-1).tolist()


def test_samples_follow_the_distribution_and_respect_top_p():
    probs = torch.tensor([0.5, 0.25, 0.15, 0.06, 0.04])
    n = 4000
    scores = probs.log().expand(n, -1).clone()
    picks = torch.tensor(draw(scores, list(range(n))))
    freq = torch.bincount(picks, minlength=5).float() / n
    assert torch.allclose(freq, probs, atol=0.03)
    nucleus = torch.tensor(draw(scores, list(range(n)), top_p=0.8))  # 0.5 + 0.25 < 0.8 -> keep 3 tokens
    assert set(nucleus.tolist()) == {0, 1, 2}
    assert torch.allclose(torch.bincount(nucleus, minlength=3).float() / n, probs[:3] / 0.9, atol=0.03)
    cold = torch.tensor(draw(scores, list(range(n)), temperature=0.25))
    assert (cold == 0).float().mean() > 0.9


def test_top_k_fast_path_equals_full_sort():
    scores = torch.randn(6, 3000, generator=torch.Generator().manual_seed(0)) * 3
    seeds = [7, 8, 9, 10, 11, 12]
    assert draw(scores, seeds, top_p=0.9, top_k_fast=3000) == draw(scores, seeds, top_p=0.9, top_k_fast=8)


def test_each_row_depends_only_on_its_seed_step_and_logits():
    scores = torch.randn(5, 1000, generator=torch.Generator().manual_seed(1))
    seeds = [1, 2, 3, 4, 5]
    together = draw(scores, seeds)
    assert together == [draw(scores[i : i + 1], [s])[0] for i, s in enumerate(seeds)]
    assert together[::-1] == draw(scores.flip(0), seeds[::-1])
    # a different step gives fresh randomness; the same step repeats exactly
    flat = torch.zeros(8, 1000)
    assert draw(flat, [3] * 8, step=0) == draw(flat, [3] * 8, step=0)
    assert len({tuple(draw(flat[:1], [3], step=s)) for s in range(8)}) > 1
    assert len({mix_seed(s, t) for s in range(50) for t in range(50)}) == 2500


def test_greedy_records_raw_logprobs():
    scores = torch.tensor([[1.0, 3.0, 2.0], [0.0, 0.0, 5.0]])
    sampler = RowSampler(prompt_len=2, seeds=[0, 0], temperature=0.0, top_p=0.5)
    assert sampler(torch.zeros((2, 2), dtype=torch.long), scores).argmax(dim=-1).tolist() == [1, 2]
    assert torch.allclose(sampler.logprobs[0], torch.log_softmax(scores, dim=-1).max(dim=-1).values)


def test_helpers():
    assert cut_at_stop("abc STOP def END", ["END", "STOP"]) == ("abc ", True)
    assert cut_at_stop("abc", ["x", ""]) == ("abc", False)
