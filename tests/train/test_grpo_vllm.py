"""GRPO rollouts on TRL's vLLM (`vllm:` in a GRPO config): TRL's own GRPOConfig takes the
settings, and in server mode the learner plays whole games through the engine on the trainer's
vLLM server via TRL's own `VLLMClient`, over real HTTP (a local stand-in server: vLLM itself
needs a CUDA GPU and is not installed here; colocate mode is GPU-only, untested)."""

from __future__ import annotations

import importlib.util
import itertools
import math
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from fastapi import Request

from sparring.engine.play import Arena
from sparring.models.scripted import ScriptedModel
from sparring.models.tiny import tiny_tokenizer
from sparring.train.online.config import OnlineConfig, VLLMSettings
from sparring.train.online.rollout import EpisodeRollout, prompt_rows
from sparring.train.online.trl.vllm import ServedVLLM, trl_vllm_args, vllm_learner


def _fake_server_class():
    path = Path(__file__).resolve().parents[1] / "models" / "fake_api_server.py"
    spec = importlib.util.spec_from_file_location("fake_api_server_for_vllm", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module.FakeAPIServer


@pytest.fixture
def vllm_server():
    """A stand-in for `trl vllm-serve` on 127.0.0.1: both protocols TRL's `VLLMClient` speaks
    (TRL >= 1: vLLM's OpenAI `/v1/completions` with `return_token_ids`; older TRL: `/generate/`).
    It "samples" fixed replies, tokenised with the tiny tokenizer and ended by EOS, with made-up
    log-probs, and keeps every prompt (token ids) and every sampled id list it returned."""
    tok = tiny_tokenizer()
    server = _fake_server_class()()
    replies = itertools.cycle(["I want the books", "3 books, 0 hats, 0 balls)", "[message] fine by me"])
    server.seen = []  # (prompt ids, sampled ids)

    def sample(prompt: list[int]) -> tuple[list[int], list[float]]:
        ids = tok(next(replies), add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        server.seen.append((list(prompt), ids))
        return ids, [-0.25 - 0.01 * i for i in range(len(ids))]

    app = server.app
    app.get("/health")(lambda: {"status": "ok"})
    app.get("/health/")(lambda: {"status": "ok"})
    app.get("/v1/models")(lambda: {"object": "list", "data": [{"id": "Qwen/policy", "object": "model"}]})

    @app.post("/v1/completions")
    async def completions(request: Request) -> dict:
        body = await request.json()
        assert body["return_token_ids"] and body["logprobs"] == 0
        prompts = body["prompt"] if isinstance(body["prompt"][0], list) else [body["prompt"]]
        choices = []
        for prompt in prompts:
            ids, lps = sample(prompt)
            choices.append({"index": len(choices), "text": tok.decode(ids), "finish_reason": "stop",
                            "token_ids": ids, "prompt_token_ids": prompt,
                            "logprobs": {"tokens": [f"token_id:{t}" for t in ids], "token_logprobs": lps,
                                         "top_logprobs": [{f"token_id:{t}": lp} for t, lp in zip(ids, lps, strict=True)]}})
        return {"choices": choices}

    @app.post("/generate/")
    async def generate(request: Request) -> dict:
        body = await request.json()
        out: dict = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "logprob_token_ids": []}
        for prompt in body["prompts"]:
            ids, lps = sample(prompt)
            out["prompt_ids"].append(prompt)
            out["completion_ids"].append(ids)
            out["logprobs"].append([[lp] for lp in lps])
            out["logprob_token_ids"].append([[t] for t in ids])
        return out

    server.start()
    yield server
    server.stop()


def trl_args(tmp_path, settings: VLLMSettings):
    from trl import GRPOConfig as TRLConfig

    return TRLConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to=[], **trl_vllm_args(settings))


def test_trl_takes_the_vllm_settings(tmp_path):
    assert trl_vllm_args(None) == {}
    args = trl_args(tmp_path, VLLMSettings(mode="server", server_base_url="http://10.0.0.5:8000/"))
    assert args.use_vllm and args.vllm_mode == "server" and args.vllm_server_base_url == "http://10.0.0.5:8000/"
    assert args.vllm_importance_sampling_correction is False  # the rollout's log-probs are not vLLM's
    args = trl_args(tmp_path, VLLMSettings(mode="colocate", gpu_memory_utilization=0.5, max_model_length=4096))
    assert args.vllm_mode == "colocate" and args.vllm_gpu_memory_utilization == 0.5
    assert args.vllm_max_model_length == 4096 and args.vllm_server_base_url is None
    with pytest.raises(ValueError, match="mode"):
        OnlineConfig(experiment={}, vllm={"mode": "remote"})


def test_without_vllm_the_trainers_own_model_generates(tmp_path):
    from trl import GRPOConfig as TRLConfig

    args = TRLConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to=[])
    assert vllm_learner(SimpleNamespace(args=args), tiny_tokenizer(), "learner") is None


def test_server_mode_trains_exactly_what_the_vllm_server_sampled(tmp_path, vllm_server, monkeypatch):
    """Server mode: the learner sends each prompt as token ids through TRL's own `VLLMClient`
    (real HTTP to a stand-in server) and gets the sampled ids back; the rollout's trained tokens
    are exactly those ids, each after exactly the prompt ids the server was fed."""
    import trl.generation.vllm_client as trl_client

    from .test_grpo import dond

    monkeypatch.setattr(trl_client, "is_vllm_available", lambda *a, **k: True)  # vLLM needs CUDA; the client does not
    client = trl_client.VLLMClient(base_url=vllm_server.url)
    tok = tiny_tokenizer()
    trainer = SimpleNamespace(args=trl_args(tmp_path, VLLMSettings(mode="server", server_base_url=vllm_server.url)),
                              vllm_generation=SimpleNamespace(vllm_client=client))
    learner = vllm_learner(trainer, tok, "learner")
    assert isinstance(learner, ServedVLLM)
    partner = ScriptedModel("partner", mode="cycle", texts=["[message] fine, take the books",
                                                           "[propose] (0 books, 2 hats, 1 balls)"])
    with Arena.from_config(dond(max_new_tokens=16), models={"learner": ScriptedModel("learner"),
                                                           "partner": partner}) as arena:
        rollout = EpisodeRollout(arena, "learner", tok, num_generations=2, sequences_per_episode=4)
        prompt = prompt_rows(sorted(arena.instances)[:1], [0])[0]["prompt"]
        out = rollout([prompt] * rollout.slots, trainer)
    recs = rollout.last_records
    assert vllm_server.seen, [(r.status, r.error, [(c.model, c.error) for c in r.calls][:3]) for r in recs]
    sent = {tuple(p): ids for p, ids in vllm_server.seen}
    trained_calls = 0
    for prompt_ids, completion_ids, mask, lps in zip(out["prompt_ids"], out["completion_ids"], out["env_mask"],
                                                     out["logprobs"], strict=True):
        if not any(mask):
            continue  # a placeholder slot
        context = list(prompt_ids)
        run: list[int] = []
        for t, m, lp in zip(completion_ids, mask, lps, strict=True):
            if m:
                if not run:
                    assert tuple(context) in sent, "a trained reply's context is not a prompt the server was fed"
                run.append(t)
                assert not math.isnan(lp)
            elif run:
                assert run == sent[tuple(context[: len(context) - len(run)])]
                trained_calls, run = trained_calls + 1, []
            context.append(t)
        if run:
            assert run == sent[tuple(context[: len(context) - len(run)])]
            trained_calls += 1
    assert trained_calls >= 2  # both episodes trained at least one served reply
    assert not [r for r in vllm_server.requests if r.path == "/v1/chat/completions"]
