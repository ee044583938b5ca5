"""Batched generation on a tiny random model: batching, seeded sampling, stops, logprobs, usage."""

from __future__ import annotations

import torch

from sparring.models.hf import HFModel
from sparring.types import GenerateRequest, Message, Sampling

PROMPTS = ["Hi", "Tell me a long story about a dragon and a knight who fight", "Why?",
           "List three fruits, please, and explain each of them briefly", "Go", "A B C D E F"]


def req(text: str, **sampling) -> GenerateRequest:
    sampling.setdefault("max_new_tokens", 12)
    return GenerateRequest(messages=[Message(role="user", content=text)], sampling=Sampling(**sampling))


def one(model: HFModel, request: GenerateRequest):
    return model.generate([request])[0][0]


def test_batched_greedy_equals_unbatched_for_different_lengths(tiny_hf):
    requests = [req(p) for p in PROMPTS]
    lengths = {len(tiny_hf._tokenize([tiny_hf.prompt_text(r.messages)])[0]) for r in requests}
    assert len(lengths) > 3  # really different prompt lengths, so left padding is exercised
    batched = [c[0] for c in tiny_hf.generate(requests)]
    single = [one(tiny_hf, r) for r in requests]
    assert [c.token_ids for c in batched] == [c.token_ids for c in single]
    assert [c.text for c in batched] == [c.text for c in single]
    for b, s in zip(batched, single, strict=True):
        assert torch.allclose(torch.tensor(b.logprobs), torch.tensor(s.logprobs), atol=1e-4)


def test_chunking_by_max_batch_size_gives_same_results(tiny_objects, tiny_hf):
    small = HFModel.from_objects(*tiny_objects, max_batch_size=2)
    requests = [req(p) for p in PROMPTS]
    assert [c[0].token_ids for c in small.generate(requests)] == \
        [c[0].token_ids for c in tiny_hf.generate(requests)]


def test_seeded_sampling_is_reproducible_and_batch_independent(tiny_objects, tiny_hf):
    target = req("Tell me something", temperature=1.0, top_p=0.9, seed=1234, max_new_tokens=8)
    alone = one(tiny_hf, target)
    again = one(tiny_hf, target)
    assert alone.token_ids == again.token_ids
    others = [req(p, temperature=1.0, top_p=0.9, seed=i, max_new_tokens=8) for i, p in enumerate(PROMPTS)]
    mixed = tiny_hf.generate(others[:3] + [target] + others[3:])
    assert mixed[3][0].token_ids == alone.token_ids
    chunked = HFModel.from_objects(*tiny_objects, max_batch_size=3).generate(others + [target])
    assert chunked[-1][0].token_ids == alone.token_ids
    # the seed matters, and sampling differs from greedy
    other_seed = one(tiny_hf, target.model_copy(update={"sampling": target.sampling.model_copy(update={"seed": 99})}))
    greedy = one(tiny_hf, req("Tell me something", max_new_tokens=8))
    assert other_seed.token_ids != alone.token_ids
    assert greedy.token_ids != alone.token_ids


def test_n_samples_per_request_differ_and_are_reproducible(tiny_hf):
    request = req("Pick a word", temperature=1.0, seed=5, n=3)
    first = tiny_hf.generate([request])[0]
    second = tiny_hf.generate([request])[0]
    assert len(first) == 3
    assert [c.token_ids for c in first] == [c.token_ids for c in second]
    assert len({tuple(c.token_ids) for c in first}) == 3


def test_unseeded_sampling_varies(tiny_hf):
    request = req("Pick a word", temperature=1.0, max_new_tokens=8)
    texts = {tuple(c[0].token_ids) for c in tiny_hf.generate([request] * 4)}
    assert len(texts) > 1


def test_stop_string_truncates_and_stops_early(tiny_hf):
    free = one(tiny_hf, req("Hi", max_new_tokens=20))
    assert free.finish_reason == "length" and len(free.token_ids) == 20
    words = free.text.split()
    stop = words[len(words) // 2]
    stopped = one(tiny_hf, req("Hi", max_new_tokens=20, stop=["<never>", stop]))
    assert stopped.finish_reason == "stop"
    assert stopped.text == free.text[: free.text.find(stop)]
    assert stop not in stopped.text
    assert len(stopped.token_ids) < 20
    assert stopped.token_ids == free.token_ids[: len(stopped.token_ids)]
    # a batch with one stopping and one free row keeps each row's own result
    both = tiny_hf.generate([req("Hi", max_new_tokens=20, stop=[stop]), req("Hi", max_new_tokens=20)])
    assert both[0][0].text == stopped.text
    assert both[1][0].text == free.text  # different group key: run separately, still correct


def test_eos_ends_a_row_and_is_kept_in_token_ids(tiny_objects, tiny_hf):
    free = one(tiny_hf, req("Hi", max_new_tokens=10))
    fake_eos = free.token_ids[3]
    assert fake_eos not in free.token_ids[:3]
    model = HFModel.from_objects(*tiny_objects)
    model.eos_ids = {fake_eos}
    ended = one(model, req("Hi", max_new_tokens=10))
    assert ended.finish_reason == "stop"
    assert ended.token_ids == free.token_ids[:4]
    assert ended.usage.completion_tokens == 4 and len(ended.logprobs) == 4
    ignoring = HFModel.from_objects(*tiny_objects, ignore_eos=True)
    assert ignoring.eos_ids == set()
    assert len(one(ignoring, req("Hi", max_new_tokens=10)).token_ids) == 10


def test_token_ids_logprobs_and_usage(tiny_hf):
    request = req("Count to ten", max_new_tokens=7)
    completion = one(tiny_hf, request)
    prompt_ids = tiny_hf._tokenize([tiny_hf.prompt_text(request.messages)])[0]
    assert completion.usage.prompt_tokens == len(prompt_ids)
    assert completion.usage.completion_tokens == len(completion.token_ids) == len(completion.logprobs) == 7
    assert completion.latency_s > 0
    assert tiny_hf.tokenizer.decode(completion.token_ids, skip_special_tokens=True) == completion.text
    # logprobs are the raw model's log-softmax at the chosen tokens (teacher-forced check)
    ids = torch.tensor([prompt_ids + completion.token_ids])
    with torch.inference_mode():
        logp = torch.log_softmax(tiny_hf.model(ids).logits[0].float(), dim=-1)
    n = len(prompt_ids)
    expected = [logp[n - 1 + t, tok].item() for t, tok in enumerate(completion.token_ids)]
    assert torch.allclose(torch.tensor(completion.logprobs), torch.tensor(expected), atol=1e-4)
    # greedy picks the argmax at every step
    assert all(logp[n - 1 + t].argmax().item() == tok for t, tok in enumerate(completion.token_ids))


def test_sampled_logprobs_are_model_logprobs_not_tempered(tiny_hf):
    request = req("Count to ten", max_new_tokens=5, temperature=2.0, seed=3)
    completion = one(tiny_hf, request)
    prompt_ids = tiny_hf._tokenize([tiny_hf.prompt_text(request.messages)])[0]
    with torch.inference_mode():
        logits = tiny_hf.model(torch.tensor([prompt_ids + completion.token_ids])).logits[0]
    logp = torch.log_softmax(logits.float(), dim=-1)
    n = len(prompt_ids)
    expected = [logp[n - 1 + t, tok].item() for t, tok in enumerate(completion.token_ids)]
    assert torch.allclose(torch.tensor(completion.logprobs), torch.tensor(expected), atol=1e-4)


def test_assistant_prefix_is_continued(tiny_hf):
    plain = one(tiny_hf, req("Answer", max_new_tokens=6))
    prefixed_request = req("Answer", max_new_tokens=6).model_copy(update={"assistant_prefix": "Sure:"})
    prefixed = one(tiny_hf, prefixed_request)
    assert prefixed.usage.prompt_tokens > plain.usage.prompt_tokens
    assert prefixed.token_ids != plain.token_ids
    assert tiny_hf.prompt_text(prefixed_request.messages, "Sure:").endswith("<|im_start|>assistant\nSure:")


def test_training_mode_is_restored(tiny_objects):
    model, tokenizer = tiny_objects
    wrapped = HFModel.from_objects(model, tokenizer)
    model.train()
    try:
        wrapped.generate([req("Hi", max_new_tokens=2)])
        assert model.training
    finally:
        model.eval()


def test_load_by_path(tiny_model_dir, tiny_hf):
    loaded = HFModel(name="tiny-disk", model=str(tiny_model_dir), device="cpu", dtype="float32")
    assert loaded.device.type == "cpu" and next(loaded.model.parameters()).dtype == torch.float32
    assert loaded.max_context == 2048
    requests = [req(p) for p in PROMPTS[:3]]
    assert [c[0].token_ids for c in loaded.generate(requests)] == \
        [c[0].token_ids for c in tiny_hf.generate(requests)]


def test_registered_as_hf_backend():
    from sparring.models.base import BACKENDS

    assert BACKENDS.get("hf") is HFModel


def test_generation_and_scoring_use_the_supported_cache_argument(tiny_objects):
    """transformers 5.x renamed `past_key_values` to `cache`; the old name warns on every call
    (and goes away in a later release). Generation, prefix-cached generation and scoring must not
    use it."""
    import warnings

    from sparring.types import ScoreRequest

    model = HFModel.from_objects(*tiny_objects, prefix_cache_mb=16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.generate([req("Hi"), req("Why?")])
        model.generate([req("Hi")])  # second call reuses the cached prefix
        model.score([ScoreRequest(messages=[Message(role="user", content="Yes or no?")], options=["Yes", "No"])])
    deprecated = [str(w.message) for w in caught if "past_key_values" in str(w.message)]
    assert deprecated == []
