"""Prefix caching and the preallocated decoding cache of the hf backend.

The contract: reusing cached prompt states changes speed, never results (beyond float noise), and
a change of weights never serves stale states.
"""

from __future__ import annotations

import torch

from sparring.models.hf import HFModel
from sparring.models.hf_kv import PreallocatedCache
from sparring.models.hf_prefix import MIN_HIT, PrefixCache, donors
from sparring.types import GenerateRequest, Message, Sampling, ScoreRequest

STORY = " ".join(f"Person {i} lives in town {i * 7} and keeps a {['red', 'blue'][i % 2]} bicycle." for i in range(12))


def states(ids, layers=2):
    """Fake per-layer states whose values are the token ids, so pieces can be checked exactly."""
    t = torch.tensor(ids, dtype=torch.float32)[None, :, None]  # [heads=1, tokens, dim=1]
    return [(t.clone(), -t.clone()) for _ in range(layers)]


def joined(pieces, layer=0, values=False):
    """The token ids spelled by the cached keys (or minus the values) of one layer."""
    if not pieces:
        return []
    t = torch.cat([p[layer][1 if values else 0] for p in pieces], dim=1)
    return (-t if values else t).flatten().int().tolist()


def test_radix_lookup_returns_longest_cached_prefix_and_splits_shared_spans():
    cache = PrefixCache(max_bytes=10**9)
    cache.insert("base", [1, 2, 3, 4, 5], states([1, 2, 3, 4, 5]))
    n, pieces = cache.lookup("base", [1, 2, 3, 9, 9], limit=5)
    assert n == 3 and joined(pieces) == [1, 2, 3]
    cache.insert("base", [1, 2, 7, 8], states([1, 2, 7, 8]))  # splits the first span after [1, 2]
    assert joined(cache.lookup("base", [1, 2, 7, 8, 0], limit=5)[1]) == [1, 2, 7, 8]
    assert joined(cache.lookup("base", [1, 2, 3, 4, 5, 6], limit=6)[1]) == [1, 2, 3, 4, 5]
    assert cache.lookup("base", [1, 2, 3, 4, 5], limit=2)[0] == 2  # never more than asked
    assert joined(cache.lookup("base", [1, 2, 7], limit=3)[1], layer=1, values=True) == [1, 2, 7]
    assert cache.lookup("lora-a", [1, 2, 3], limit=3) == (0, [])  # adapters never share states
    # the shared [1, 2] is stored once: 5 + 2 distinct token positions, 2 layers, keys + values
    assert cache.nbytes == (5 + 2) * 2 * 2 * 4


def test_eviction_drops_least_recently_used_leaves_within_budget():
    per_token = 2 * 2 * 4  # two layers, keys + values, one float each
    cache = PrefixCache(max_bytes=10 * per_token)
    cache.insert("base", [1, 2, 3, 4], states([1, 2, 3, 4]))
    cache.insert("base", [5, 6, 7, 8], states([5, 6, 7, 8]))
    cache.lookup("base", [1, 2, 3, 4], limit=4)  # [1..4] is now the most recently used
    cache.insert("base", [9, 10, 11, 12], states([9, 10, 11, 12]))  # 12 tokens > 10: evict one
    assert cache.nbytes <= cache.max_bytes
    assert cache.lookup("base", [5, 6, 7, 8], limit=4)[0] == 0
    assert cache.lookup("base", [1, 2, 3, 4], limit=4)[0] == 4
    assert cache.lookup("base", [9, 10, 11, 12], limit=4)[0] == 4  # the new entry is never evicted
    cache.clear()
    assert cache.nbytes == 0 and cache.lookup("base", [1, 2, 3, 4], limit=4) == (0, [])


def test_donors_are_rows_whose_prefix_a_later_row_shares():
    story = list(range(100, 100 + 3 * MIN_HIT))
    contexts = [story + [1, 2], [7] * 50, story + [3, 4], story + [5]]
    assert donors(contexts, hits=[0, 0, 0, 0]) == [0]
    assert donors(contexts, hits=[0, 0, len(story), len(story)]) == []  # already cached: nothing to gain
    assert donors([[1] * 40, [1] * 40], hits=[0, 0]) == [0]  # identical contexts


def conversation(model: HFModel, temperature: float) -> list:
    """Two turns of three seats that share a story, then a judge's options: every kind of reuse."""
    seats = ["Alice", "Bob", "Carol"]

    def turn(prev=None):
        out = []
        for i, seat in enumerate(seats):
            msgs = [Message(role="system", content=f"Story: {STORY}"), Message(role="user", content=f"You are {seat}.")]
            if prev:
                msgs += [Message(role="assistant", content=prev[i]), Message(role="user", content="Round 2.")]
            out.append(GenerateRequest(messages=msgs, sampling=Sampling(max_new_tokens=10, temperature=temperature,
                                                                        seed=11 + i)))
        return model.generate(out)

    first = turn()
    second = turn([c[0].text for c in first])
    scores = model.score([ScoreRequest(messages=[Message(role="user", content=f"{STORY} Who argued best?")],
                                       options=["Alice", "Bob", "Carol"], assistant_prefix="Winner: ")] * 2)
    return [c[0] for c in first + second], scores


def test_prefix_cache_changes_speed_not_results(tiny_objects):
    plain = HFModel.from_objects(*tiny_objects, prefix_cache_mb=0)
    cached = HFModel.from_objects(*tiny_objects)
    assert plain.prefix_cache is None and cached.prefix_cache is not None
    for temperature in (0.0, 0.8):
        cached.clear_prefix_cache()
        want, want_scores = conversation(plain, temperature)
        got, got_scores = conversation(cached, temperature)
        assert [c.token_ids for c in got] == [c.token_ids for c in want]
        for g, w in zip(got, want, strict=True):
            assert torch.allclose(torch.tensor(g.logprobs), torch.tensor(w.logprobs), atol=1e-4)
            assert g.usage.prompt_tokens == w.usage.prompt_tokens
        assert torch.allclose(torch.tensor(got_scores), torch.tensor(want_scores), atol=1e-4)
    assert cached.prefix_cache.hits > cached.prefix_cache.misses  # the story and turn 1 were reused


def test_changed_weights_never_reuse_stale_states(tiny_objects):
    from sparring.models.tiny import tiny_model

    model, tokenizer = tiny_model(seed=0)
    cached = HFModel.from_objects(model, tokenizer)
    request = GenerateRequest(messages=[Message(role="user", content=STORY)], sampling=Sampling(max_new_tokens=8))
    cached.generate([request])
    opt = torch.optim.SGD(model.parameters(), lr=0.5)  # a training step changes parameters in place
    for p in model.parameters():
        p.grad = torch.ones_like(p)
    opt.step()
    after = cached.generate([request])[0][0]
    fresh = HFModel.from_objects(model, tokenizer, prefix_cache_mb=0).generate([request])[0][0]
    assert after.token_ids == fresh.token_ids
    assert torch.allclose(torch.tensor(after.logprobs), torch.tensor(fresh.logprobs), atol=1e-4)


def test_preallocated_cache_matches_transformers_dynamic_cache(tiny_objects):
    model, tokenizer = tiny_objects
    ids = torch.tensor([tokenizer(STORY, add_special_tokens=False)["input_ids"][:40]])
    with torch.inference_mode():
        want = model.generate(ids, max_new_tokens=12, do_sample=False, pad_token_id=0)
        layers = model.config.num_hidden_layers
        got = model.generate(ids, max_new_tokens=12, do_sample=False, pad_token_id=0,
                             cache=PreallocatedCache(layers, 45))  # too small: must grow
    assert got.tolist() == want.tolist()


def test_sliding_window_models_keep_transformers_own_cache():
    from transformers import MistralConfig, MistralForCausalLM

    from sparring.models.tiny import tiny_tokenizer

    tokenizer = tiny_tokenizer()
    config = MistralConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, sliding_window=8)
    model = HFModel.from_objects(MistralForCausalLM(config).eval(), tokenizer)
    assert model.kv_layers is None and model.prefix_cache is None
    request = GenerateRequest(messages=[Message(role="user", content="Hello there")], sampling=Sampling(max_new_tokens=4))
    assert len(model.generate([request])[0][0].token_ids) == 4


def test_preallocated_cache_supports_beam_search(tiny_objects):
    model, tokenizer = tiny_objects
    ids = torch.tensor([tokenizer(STORY, add_special_tokens=False)["input_ids"][:20]])
    kwargs = {"max_new_tokens": 6, "num_beams": 3, "do_sample": False, "pad_token_id": 0}
    with torch.inference_mode():
        want = model.generate(ids, **kwargs)
        got = model.generate(ids, cache=PreallocatedCache(model.config.num_hidden_layers, 8), **kwargs)
    assert got.tolist() == want.tolist()


def test_loaded_weights_never_reuse_stale_states(tiny_objects):
    from sparring.models.tiny import tiny_model

    model, tokenizer = tiny_model(seed=0)
    cached = HFModel.from_objects(model, tokenizer)
    request = GenerateRequest(messages=[Message(role="user", content=STORY)], sampling=Sampling(max_new_tokens=8))
    cached.generate([request])
    other, _ = tiny_model(seed=1)
    model.load_state_dict(other.state_dict())
    after = cached.generate([request])[0][0]
    fresh = HFModel.from_objects(model, tokenizer, prefix_cache_mb=0).generate([request])[0][0]
    assert after.token_ids == fresh.token_ids


def test_the_prefix_cache_is_checked_at_load_and_falls_back_when_it_would_differ(tiny_objects, monkeypatch, caplog):
    """A model or library version where the cache would change results runs the plain path."""
    from sparring.models import hf_prefix

    model, tokenizer = tiny_objects
    assert HFModel.from_objects(model, tokenizer).prefix_cache is not None  # works on this stack
    real = hf_prefix.PrefixContext

    class Broken(real):  # a cache that hands back wrong states, as an incompatible version would
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            raise RuntimeError("cache layout not understood")

    monkeypatch.setattr(hf_prefix, "PrefixContext", Broken)
    with caplog.at_level("INFO"):
        fallback = HFModel.from_objects(model, tokenizer)
    assert fallback.prefix_cache is None
    assert any("running without it" in r.message for r in caplog.records)


def test_a_budget_smaller_than_one_batch_warns_once(tiny_objects, caplog):
    cached = HFModel.from_objects(*tiny_objects)
    requests = [GenerateRequest(messages=[Message(role="user", content=f"Game {i}. {STORY}")],
                                sampling=Sampling(max_new_tokens=2)) for i in range(4)]
    with caplog.at_level("WARNING", logger="sparring.models.hf_prefix"):
        cached.generate(requests)
        assert cached.prefix_cache.overflows == 0  # the default budget holds them
        cached.clear_prefix_cache()
        cached.prefix_cache.max_bytes = 1  # smaller than any one prompt's states: only the last stored stays
        first = cached.generate(requests)
        cached.generate(requests)
    assert cached.prefix_cache.overflows == 2
    warnings = [r.getMessage() for r in caplog.records if "prefix_cache_mb" in r.getMessage()]
    assert len(warnings) == 1 and "3 of 4 prompts in one batch" in warnings[0]
    plain = HFModel.from_objects(*tiny_objects, prefix_cache_mb=0).generate(requests)
    assert [c[0].token_ids for c in first] == [c[0].token_ids for c in plain]  # still right, only slower
