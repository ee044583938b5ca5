"""The two speed ratios the suite prints per experiment, measured in the same run.

- rollout: generated tokens/s through the engine (the play stage's completion tokens ÷ its wall
  time, game and simulator included) ÷ generated tokens/s of a raw batched `generate` of the same
  model on a sample of the same prompts (same `max_new_tokens`, greedy, left-padded batches).
- training: trained-row tokens/s ÷ the machine's ceiling, a square fp32 matmul's FLOP/s ÷
  (6 × parameters) — the dense-training rule of thumb the issue sets; LoRA skips the weight
  gradients, so its true roof is ~1.5x higher (see TRAINING-NOTES).
"""

from __future__ import annotations

import time
from typing import Any


def matmul_flops(size: int = 1024, repeats: int = 5) -> float:
    """Best-of-`repeats` fp32 FLOP/s of one `size`² matmul on this machine (all torch threads)."""
    import torch

    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b  # warm up
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * size**3 / best


def training_ratio(tokens: float, seconds: float, params: int, flops: float) -> dict[str, float]:
    ceiling = flops / (6 * params)
    rate = tokens / seconds if seconds > 0 else 0.0
    return {"train_tokens_per_s": rate, "train_ceiling_tokens_per_s": ceiling,
            "train_ratio": rate / ceiling if ceiling else 0.0}


def count_params(model_name: str) -> int:
    """Parameters of a base model (a registry name or a directory), read from its config only."""
    from transformers import AutoConfig, AutoModelForCausalLM

    from sparring.models.bundled import offline_hf
    from sparring.train.policy import resolve_base

    with offline_hf():
        config = AutoConfig.from_pretrained(resolve_base(model_name), local_files_only=True)
    import torch

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


def raw_generate_rate(model_name: str, prompts: list[list[dict[str, str]]], max_new_tokens: int,
                      batch_size: int = 8) -> dict[str, float]:
    """Generated tokens/s of plain `model.generate` on `prompts` (chat messages), greedy."""
    import torch

    from sparring.train.config import TrainSettings
    from sparring.train.policy import load_policy

    model, tok = load_policy(TrainSettings(model=model_name, lora=None), trainable=False)
    model.eval()
    tok.padding_side = "left"
    texts = [tok.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in prompts]
    generated, start = 0, time.perf_counter()
    with torch.inference_mode():
        for i in range(0, len(texts), batch_size):
            enc = tok(texts[i:i + batch_size], return_tensors="pt", padding=True, add_special_tokens=False)
            out = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False,
                                 pad_token_id=tok.pad_token_id)
            new = out[:, enc["input_ids"].shape[1]:]
            generated += int(((new != tok.pad_token_id) & (new != tok.eos_token_id)).sum()) + len(new)
    seconds = time.perf_counter() - start
    return {"raw_tokens_per_s": generated / seconds if seconds else 0.0, "raw_prompts": len(texts)}


def engine_rate(records: list[Any], seconds: float, player_model: str | None = None) -> dict[str, Any]:
    """Generated tokens/s of a run (its calls' completion tokens ÷ the stage's wall time) and a
    sample of the prompts it generated for."""
    tokens, prompts = 0, []
    for rec in records:
        for call in rec.calls:
            if call.op != "generate":
                continue
            for c in call.completions or []:
                tokens += int(_usage(c.usage, "completion_tokens"))
            prompts.append([{"role": m.role, "content": m.content} for m in call.messages])
    return {"engine_tokens_per_s": tokens / seconds if seconds else 0.0, "engine_generated_tokens": tokens,
            "prompts": prompts}


def _usage(usage: Any, key: str) -> float:
    if usage is None:
        return 0.0
    return float((usage.get(key) if isinstance(usage, dict) else getattr(usage, key, 0)) or 0)


def rollout_ratio(model_name: str, records: list[Any], seconds: float, max_new_tokens: int,
                  sample: int = 16) -> dict[str, Any]:
    eng = engine_rate(records, seconds)
    prompts = eng.pop("prompts")
    if not prompts or not eng["engine_tokens_per_s"]:
        return eng
    step = max(1, len(prompts) // sample)
    raw = raw_generate_rate(model_name, prompts[::step][:sample], max_new_tokens)
    return {**eng, **raw, "rollout_ratio": eng["engine_tokens_per_s"] / raw["raw_tokens_per_s"]}
