"""The learner's generation through TRL's vLLM integration (`vllm:` in a GRPO config), for GPUs.

With TRL's `use_vllm`, `GRPOTrainer` pushes the current weights (LoRA merged into the base) to
vLLM before every rollout, so the learner generating there generates with the policy being
trained, at vLLM's speed:

- `mode: server` (`trl vllm-serve --model BASE` on GPUs of its own): the learner sends each
  prompt, as token ids built with the trainer's tokenizer, through the trainer's own
  `VLLMClient` (the client TRL syncs the weights with), and gets back the sampled token ids and
  their log-probs. Every process sends the requests of its own episodes.
- `mode: colocate`: the vLLM engine TRL starts inside each training process
  (`trainer.vllm_generation.llm`) generates from the same token ids.

Either way GRPO trains exactly the token ids vLLM sampled, after exactly the prompt ids it was fed.
What ran where: the server-mode learner is tested on CPU through TRL's real `VLLMClient` over
HTTP against a local stand-in for the server (playing games through the engine, its sequences
checked token for token); the trainer's side (vLLM itself, weight sync) needs vLLM and a CUDA GPU
and was never run here. Colocate mode is GPU-only and untested.
"""

from __future__ import annotations

from typing import Any

from sparring.errors import SparringError
from sparring.models.base import Model
from sparring.train.online.config import VLLMSettings
from sparring.types import Completion, GenerateRequest, Usage


def trl_vllm_args(settings: VLLMSettings | None) -> dict[str, Any]:
    """The `trl.GRPOConfig` keyword arguments for `settings` (none: generation with the trainer's model)."""
    if settings is None:
        return {}
    out: dict[str, Any] = {"use_vllm": True, "vllm_mode": settings.mode,
                           "vllm_gpu_memory_utilization": settings.gpu_memory_utilization,
                           "vllm_tensor_parallel_size": settings.tensor_parallel_size,
                           "vllm_enable_sleep_mode": settings.enable_sleep_mode,
                           # Off: never run on a GPU here, and environment tokens of a sequence carry
                           # NaN sampling log-probs (only the learner's own tokens have them).
                           "vllm_importance_sampling_correction": False}
    if settings.server_base_url:
        out["vllm_server_base_url"] = settings.server_base_url
    if settings.max_model_length:
        out["vllm_max_model_length"] = settings.max_model_length
    return out


def chat_prompt_ids(tokenizer: Any, messages: Any, assistant_prefix: str = "") -> list[int]:
    """The token ids vLLM is fed for a request: the chat template with its generation prompt, then
    the assistant prefix (GRPO trains the sampled tokens after exactly these)."""
    text = tokenizer.apply_chat_template([m.model_dump() for m in messages], tokenize=False,
                                         add_generation_prompt=True) + assistant_prefix
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


class ServedVLLM(Model):
    """The learner on TRL's vLLM server (`trl vllm-serve`), which holds the current weights,
    through the trainer's own `VLLMClient` (so the protocol is the one of the installed TRL). The
    prompt is sent as token ids built here with the trainer's tokenizer and the client returns the
    sampled token ids with their log-probs, so what is trained is exactly what was sampled, in
    exactly that context. One request per prompt (each has its own seed), run concurrently."""

    can_score = False
    concurrent = True

    def __init__(self, client: Any, tokenizer: Any, name: str = "learner", concurrency: int = 64):
        super().__init__(name=name)
        self.client, self.tokenizer, self.concurrency = client, tokenizer, concurrency

    def prompt_ids(self, messages: Any, assistant_prefix: str = "", max_new_tokens: int = 1) -> list[int]:
        return chat_prompt_ids(self.tokenizer, messages, assistant_prefix)

    def _one(self, req: GenerateRequest) -> Completion:
        from sparring.models.hf_generate import cut_at_stop

        ids = self.prompt_ids(req.messages, req.assistant_prefix)
        s = req.sampling
        extra: dict[str, Any] = {"stop": s.stop} if s.stop else {}
        if s.seed is not None:
            extra["seed"] = s.seed
        try:
            out = self.client.generate(prompts=[ids], n=1, temperature=s.temperature, top_p=s.top_p,
                                       max_tokens=s.max_new_tokens, logprobs=0, generation_kwargs=extra)
            token_ids = [int(t) for t in out["completion_ids"][0]]
        except Exception as err:  # the client raises a bare Exception on an HTTP error
            raise SparringError(f"the vLLM server failed a completion: {err}") from None
        steps = (out.get("logprobs") or [None])[0]
        logprobs = [float(step[0]) for step in steps] if steps and len(steps) == len(token_ids) else None
        eos = {self.tokenizer.eos_token_id} - {None}
        text, hit = cut_at_stop(self.tokenizer.decode(token_ids, skip_special_tokens=True), s.stop)
        ended = hit or bool(token_ids and token_ids[-1] in eos) or len(token_ids) < s.max_new_tokens
        return Completion(text=text, token_ids=token_ids, logprobs=logprobs, finish_reason="stop" if ended else "length",
                          usage=Usage(prompt_tokens=len(ids), completion_tokens=len(token_ids)))

    def _generate(self, requests: list[GenerateRequest]) -> list[Completion]:
        from concurrent.futures import ThreadPoolExecutor

        if not requests:
            return []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
            return list(pool.map(self._one, requests))


def server_learner(trainer: Any, tokenizer: Any, name: str) -> Model:
    """The learner on TRL's vLLM server, through the client the trainer syncs the weights with."""
    generation = getattr(trainer, "vllm_generation", None)
    client = getattr(generation, "vllm_client", None) or getattr(trainer, "vllm_client", None)
    if client is None:
        raise SparringError("GRPO with vllm.mode: server: the trainer has no vLLM client "
                            "(is `trl vllm-serve --model BASE` running and vLLM installed?)")
    return ServedVLLM(client, tokenizer, name)


class ColocatedVLLM(Model):
    """GPU-only, never run here: generation by the vLLM engine inside this training process."""

    can_score = False

    def __init__(self, llm: Any, tokenizer: Any, name: str = "learner"):
        super().__init__(name=name)
        self.llm, self.tokenizer = llm, tokenizer

    def prompt_ids(self, messages: Any, assistant_prefix: str = "", max_new_tokens: int = 1) -> list[int]:
        return chat_prompt_ids(self.tokenizer, messages, assistant_prefix)

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
        return server_learner(trainer, tokenizer, name)
    return ColocatedVLLM(trainer.vllm_generation.llm, tokenizer, name)
