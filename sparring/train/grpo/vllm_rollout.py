"""The learner's generation through TRL's vLLM integration (`vllm:` in a GRPO config), for GPUs.

With TRL's `use_vllm`, `GRPOTrainer` pushes the current weights (LoRA merged into the base) to
vLLM before every rollout, so the learner generating there generates with the policy being
trained, at vLLM's speed:

- `mode: server` (`trl vllm-serve --model BASE` on GPUs of its own; an OpenAI-compatible vLLM
  server): the learner is sparring's `openai` backend pointed at that server, the served model
  name read from its `/v1/models`. Every process sends the requests of its own episodes.
- `mode: colocate`: the vLLM engine TRL starts inside each training process
  (`trainer.vllm_generation.llm`) generates from the chat-templated prompt.

What ran where: the server path's client (URL, served name, the `openai` backend playing games
through the engine) is tested on CPU against a local OpenAI-compatible server; the trainer's side
(vLLM itself, weight sync) needs vLLM and a CUDA GPU and was never run here. Colocate mode is
GPU-only and untested.
"""

from __future__ import annotations

from typing import Any

from sparring.errors import SparringError
from sparring.models.base import Model
from sparring.train.grpo.config import VLLMSettings
from sparring.types import Completion, GenerateRequest


def trl_vllm_args(settings: VLLMSettings | None) -> dict[str, Any]:
    """The `trl.GRPOConfig` keyword arguments for `settings` (none: generation with the trainer's model)."""
    if settings is None:
        return {}
    out: dict[str, Any] = {"use_vllm": True, "vllm_mode": settings.mode,
                           "vllm_gpu_memory_utilization": settings.gpu_memory_utilization,
                           "vllm_tensor_parallel_size": settings.tensor_parallel_size,
                           "vllm_enable_sleep_mode": settings.enable_sleep_mode,
                           # The trained sequence is rebuilt from the game record, not vLLM's sampled
                           # tokens, so there are no sampling log-probs to correct with.
                           "vllm_importance_sampling_correction": False}
    if settings.server_base_url:
        out["vllm_server_base_url"] = settings.server_base_url
    if settings.max_model_length:
        out["vllm_max_model_length"] = settings.max_model_length
    return out


def server_url(args: Any) -> str:
    """The vLLM server TRL talks to (as `trl.GRPOConfig` resolves it)."""
    return (args.vllm_server_base_url or f"http://{args.vllm_server_host}:{args.vllm_server_port}").rstrip("/")


def served_model(base_url: str, timeout_s: float = 30.0) -> str:
    """The name the server serves its model under (its OpenAI `/v1/models`)."""
    import httpx

    try:
        data = httpx.get(f"{base_url}/v1/models", timeout=timeout_s).json()["data"]
        return str(data[0]["id"])
    except (httpx.HTTPError, KeyError, IndexError, ValueError) as err:
        raise SparringError(f"the vLLM server at {base_url} did not list its model on /v1/models "
                            f"(start it with `trl vllm-serve --model BASE`): {err}") from None


def server_learner(args: Any, name: str) -> Model:
    """The learner as an `openai` model on TRL's vLLM server (which holds the current weights)."""
    from sparring.models.openai_backend import OpenAIModel

    url = server_url(args)
    return OpenAIModel(name=name, model=served_model(url), base_url=f"{url}/v1", supports_prefill=True,
                       concurrency=64, timeout_s=600.0)


class ColocatedVLLM(Model):
    """GPU-only, never run here: generation by the vLLM engine inside this training process."""

    can_score = False

    def __init__(self, llm: Any, tokenizer: Any, name: str = "learner"):
        super().__init__(name=name)
        self.llm, self.tokenizer = llm, tokenizer

    def prompt_ids(self, messages: Any, assistant_prefix: str = "", max_new_tokens: int = 1) -> list[int]:
        """The token ids vLLM is fed for this request (GRPO trains the sampled tokens after them)."""
        text = self.tokenizer.apply_chat_template([m.model_dump() for m in messages], tokenize=False,
                                                  add_generation_prompt=True) + assistant_prefix
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _generate(self, requests: list[GenerateRequest]) -> list[Completion]:
        from vllm import SamplingParams  # only installed on GPU machines

        prompts = [{"prompt_token_ids": self.prompt_ids(r.messages, r.assistant_prefix)} for r in requests]
        params = [SamplingParams(n=1, temperature=r.sampling.temperature, top_p=r.sampling.top_p,
                                 max_tokens=r.sampling.max_new_tokens, stop=r.sampling.stop or None,
                                 seed=r.sampling.seed, logprobs=0) for r in requests]
        outs = self.llm.generate(prompts, sampling_params=params, use_tqdm=False)
        completions = []
        for out in outs:
            o = out.outputs[0]
            ids = list(o.token_ids)
            lps = [step[t].logprob for step, t in zip(o.logprobs or [], ids, strict=False)] or None
            completions.append(Completion(text=o.text, token_ids=ids, logprobs=lps,
                                          finish_reason="length" if o.finish_reason == "length" else "stop"))
        return completions


def vllm_learner(trainer: Any, tokenizer: Any, name: str) -> Model | None:
    """The learner's model on the trainer's vLLM, or None when the trainer does not use vLLM."""
    args: Any = getattr(trainer, "args", None)
    if not getattr(args, "use_vllm", False):
        return None
    if args.vllm_mode == "server":
        return server_learner(args, name)
    return ColocatedVLLM(trainer.vllm_generation.llm, tokenizer, name)
