"""GRPO rollouts on TRL's vLLM (`vllm:` in a GRPO config): TRL's own GRPOConfig takes the
settings, and in server mode the learner plays whole games through the engine as an `openai`
model on the trainer's OpenAI-compatible vLLM server, over real HTTP (a local stand-in server:
vLLM itself needs a CUDA GPU and is not installed here; colocate mode is GPU-only, untested)."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from sparring.engine.play import Arena
from sparring.models.scripted import ScriptedModel
from sparring.models.tiny import tiny_tokenizer
from sparring.train.chat_templates import apply_generation_markers
from sparring.train.grpo.config import GRPOConfig, VLLMSettings
from sparring.train.grpo.rollout import EpisodeRollout, prompt_rows
from sparring.train.grpo.vllm_rollout import server_url, trl_vllm_args, vllm_learner


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
    """An OpenAI-compatible server like `trl vllm-serve`: lists its model, answers chat completions."""
    server = _fake_server_class()()
    server.app.get("/v1/models")(lambda: {"object": "list", "data": [{"id": "Qwen/policy", "object": "model"}]})
    replies = itertools.cycle(["[message] I want the books", "[propose] (3 books, 0 hats, 0 balls)"])
    server.behaviour.reply = lambda body: next(replies)
    server.start()
    yield server
    server.stop()


def trl_args(tmp_path, settings: VLLMSettings):
    from trl import GRPOConfig as TRLConfig

    return TRLConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to=[], **trl_vllm_args(settings))


def test_trl_takes_the_vllm_settings(tmp_path):
    assert trl_vllm_args(None) == {}
    args = trl_args(tmp_path, VLLMSettings(mode="server", server_base_url="http://10.0.0.5:8000/"))
    assert args.use_vllm and args.vllm_mode == "server" and server_url(args) == "http://10.0.0.5:8000"
    assert args.vllm_importance_sampling_correction is False  # the rollout's log-probs are not vLLM's
    args = trl_args(tmp_path, VLLMSettings(mode="colocate", gpu_memory_utilization=0.5, max_model_length=4096))
    assert args.vllm_mode == "colocate" and args.vllm_gpu_memory_utilization == 0.5
    assert args.vllm_max_model_length == 4096 and server_url(args) == "http://0.0.0.0:8000"
    with pytest.raises(ValueError, match="mode"):
        GRPOConfig(experiment={}, vllm={"mode": "remote"})


def test_without_vllm_the_trainers_own_model_generates(tmp_path):
    from trl import GRPOConfig as TRLConfig

    args = TRLConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to=[])
    assert vllm_learner(SimpleNamespace(args=args), tiny_tokenizer(), "learner") is None


def test_a_served_learner_is_refused_until_it_gives_its_prompt_token_ids(tmp_path, vllm_server):
    """Server mode: the learner is the `openai` backend on the trainer's vLLM server. GRPO trains
    exactly the sampled tokens in the context they were sampled in, which needs the prompt's
    token ids; a served learner cannot give them yet, so the rollout stops with a clear message
    before playing (never trains on re-tokenised text)."""
    from sparring.errors import SparringError
    from sparring.models.openai_backend import OpenAIModel

    from .test_grpo import dond

    tok = tiny_tokenizer()
    apply_generation_markers(tok)
    trainer = SimpleNamespace(args=trl_args(tmp_path, VLLMSettings(mode="server", server_base_url=vllm_server.url)))
    learner = vllm_learner(trainer, tok, "learner")
    assert isinstance(learner, OpenAIModel) and learner.args.model == "Qwen/policy"
    partner = ScriptedModel("partner", mode="cycle", texts=["[message] fine, take the books",
                                                           "[propose] (0 books, 2 hats, 1 balls)"])
    with Arena.from_config(dond(), models={"learner": ScriptedModel("learner"), "partner": partner}) as arena:
        rollout = EpisodeRollout(arena, "learner", tok, num_generations=2)
        prompt = prompt_rows(sorted(arena.instances)[:1], [0])[0]["prompt"]
        with pytest.raises(SparringError, match="prompt's token ids"):
            rollout([prompt] * 2, trainer)
    assert not [r for r in vllm_server.requests if r.path == "/v1/chat/completions"]
