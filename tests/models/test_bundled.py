"""The bundled SmolLM2-135M: cache mechanics (fast) and the real model (marked `bundled`)."""

from __future__ import annotations

import json
import threading
import time

import pytest

from sparring.models import bundled
from sparring.types import GenerateRequest, Message, Sampling, ScoreRequest

SOURCE = {"version": "1"}


def test_cache_dir_is_read_at_call_time(monkeypatch, tmp_path):
    monkeypatch.setenv("SPARRING_CACHE_DIR", str(tmp_path))
    assert bundled.cache_dir() == tmp_path
    monkeypatch.delenv("SPARRING_CACHE_DIR")
    assert bundled.cache_dir().parts[-2:] == (".cache", "sparring")


def test_build_is_atomic_a_crash_leaves_no_cache(tmp_path):
    target = tmp_path / "models" / "m"

    def crash(out):
        (out / "half.bin").write_text("partial")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        bundled._build_cached(target, SOURCE, crash, "building")
    assert not target.exists()
    assert [p.name for p in target.parent.iterdir()] == [".m.lock"]  # no temp dirs left behind

    bundled._build_cached(target, SOURCE, lambda out: (out / "w.bin").write_text("ok"), "building")
    assert (target / "w.bin").read_text() == "ok"
    assert json.loads((target / bundled._MARKER).read_text())["source"] == SOURCE
    # cached: the builder is not called again; a new source version rebuilds in place
    bundled._build_cached(target, SOURCE, lambda out: pytest.fail("rebuilt a valid cache"), "building")
    bundled._build_cached(target, {"version": "2"}, lambda out: (out / "w.bin").write_text("v2"), "building")
    assert (target / "w.bin").read_text() == "v2"


def test_concurrent_builders_build_once(tmp_path):
    target = tmp_path / "models" / "m"
    calls = []

    def slow(out):
        calls.append(1)
        time.sleep(0.3)
        (out / "w.bin").write_text("ok")

    threads = [threading.Thread(target=bundled._build_cached, args=(target, SOURCE, slow, "building"))
               for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and (target / "w.bin").read_text() == "ok"


def test_unknown_bundled_name():
    from sparring.errors import UnknownNameError

    with pytest.raises(UnknownNameError, match="smollm2-135m"):
        bundled.bundled_model_dir("smollm2-1b")


@pytest.mark.bundled
def test_conversion_cache_and_fast_reload(bundled_hf, monkeypatch):
    import torch
    from transformers import AutoModelForCausalLM

    from sparring.models.hf import HFModel

    directory = bundled.bundled_model_dir()  # converted by the fixture (or an earlier run)
    config = json.loads((directory / "config.json").read_text())
    assert "quantization_config" not in config and config["model_type"] == "llama"
    assert (directory / "model.safetensors").is_file() and (directory / "tokenizer.json").is_file()
    assert not [p for p in directory.parent.iterdir() if p.name.startswith(".tmp-")]
    monkeypatch.setattr(bundled, "_convert_model", lambda *a: pytest.fail("converted again instead of reading the cache"))
    reloaded = HFModel(model="bundled:smollm2-135m")  # reads the cache (~3 s); no conversion (~40 s)
    probe = torch.tensor([[1, 4093, 198, 6004, 2, 198]])
    with torch.inference_mode():
        assert torch.equal(reloaded.model(probe).logits, bundled_hf.model(probe).logits)
    plain = AutoModelForCausalLM.from_pretrained(directory)  # a normal HF directory, no gguf needed
    assert plain.config.tie_word_embeddings


@pytest.mark.bundled
def test_bundled_answers_and_batching(bundled_hf):
    questions = ["What is the capital of France?", "What is 2+2?", "Name a color.", "Say hello."]
    requests = [GenerateRequest(messages=[Message(role="user", content=q)], sampling=Sampling(max_new_tokens=16))
                for q in questions]
    batched = [c[0] for c in bundled_hf.generate(requests)]
    assert "Paris" in batched[0].text
    assert all(c.text.strip() for c in batched)
    stopped = [c for c in batched if c.finish_reason == "stop"]
    assert stopped and all(c.token_ids[-1] in bundled_hf.eos_ids for c in stopped)
    single = [bundled_hf.generate([r])[0][0] for r in requests]
    assert [c.token_ids for c in batched] == [c.token_ids for c in single]


@pytest.mark.bundled
def test_bundled_ignore_eos_and_scoring(bundled_hf):
    from sparring.models.hf import HFModel

    request = GenerateRequest(messages=[Message(role="user", content="What is 2+2?")],
                              sampling=Sampling(max_new_tokens=24))
    ignoring = HFModel.from_objects(bundled_hf.model, bundled_hf.tokenizer, ignore_eos=True)
    assert ignoring.generate([request])[0][0].usage.completion_tokens == 24
    scores = bundled_hf.score([
        ScoreRequest(messages=[Message(role="user", content="What is the capital of France?")],
                     options=[" Paris", " London", " Berlin"], assistant_prefix="The capital of France is"),
        ScoreRequest(messages=[Message(role="user", content="What is 2+2?")], options=["4", "5"],
                     assistant_prefix="2+2 = ")])
    assert scores[0][0] > -0.5 and scores[0][0] > max(scores[0][1:]) + 3
    assert scores[1][0] > scores[1][1] and all(s <= 0 for s in scores[1])
