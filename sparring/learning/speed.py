"""The two speed ratios the suite prints per experiment, measured in the same run.

- rollout: generated tokens/s through the engine (the trained model's completion tokens in a
  held-out play stage ÷ that stage's play time, game and simulator included, model loading not)
  ÷ generated tokens/s of a raw batched `model.generate` of the same base model on a sample of the
  same calls: the same prompt text (chat template + the call's assistant prefix), the same
  sampling (max_new_tokens, temperature, top_p, stop strings) and the engine's batch size (the
  backend's `max_batch_size`, at most the run's `max_live` games in flight).
- training: tokens through the forward/backward pass per second ÷ the machine's ceiling, a square
  fp32 matmul's FLOP/s ÷ (6 × parameters) — the dense-training rule of thumb the issue sets; LoRA
  skips the weight gradients, so its true roof is ~1.5x higher (see TRAINING-NOTES). Tokens: an
  SFT row's whole chat text, both sequences of a DPO pair (the reference's extra forward passes
  are not counted), a GRPO slot's prompt + completion.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from typing import Any


def training_ratio(tokens: float, seconds: float, params: int, flops: float) -> dict[str, Any]:
    """Training tokens/s ÷ the machine's ceiling; not measured when nothing was trained now."""
    if tokens <= 0 or seconds <= 0:
        return {"train_unmeasured": "nothing was trained in this session (e.g. a resumed run that had finished)"}
    ceiling = flops / (6 * params)
    rate = tokens / seconds
    return {"train_tokens_per_s": rate, "train_ceiling_tokens_per_s": ceiling,
            "train_ratio": rate / ceiling if ceiling else 0.0}


def count_params(model_name: str) -> int:
    """Parameters of a base model (a registry name or a directory), read from its config only."""
    from transformers import AutoConfig, AutoModelForCausalLM

    from sparring.train.policy import resolve

    base = resolve(model_name)
    config = AutoConfig.from_pretrained(base.source, **base.kwargs)
    import torch

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


@functools.lru_cache(maxsize=4)
def _tokenizer(model_name: str) -> Any:
    from sparring.train.policy import load_tokenizer

    return load_tokenizer(model_name)


def row_tokens(model_name: str, row: dict[str, Any]) -> int:
    """Tokens one training row puts through the model: a `messages` row's chat text; a
    prompt/completion row's; both sequences of a prompt/chosen/rejected pair."""
    tok = _tokenizer(model_name)

    def n(messages: list[dict[str, Any]]) -> int:
        return len(tok(tok.apply_chat_template(messages, tokenize=False), add_special_tokens=False)["input_ids"])

    if "messages" in row:
        return n(row["messages"])
    if "chosen" in row:
        return n(row["prompt"] + row["chosen"]) + n(row["prompt"] + row["rejected"])
    return n(row["prompt"] + row["completion"])


def run_tokens(model_name: str, rows: Sequence[dict[str, Any]], steps: int, batch_rows: int,
               epochs: float = 1.0) -> float:
    """Tokens one training run processed: the rows' mean size × the rows its `steps` optimizer
    steps of `batch_rows` rows saw (at most every row `epochs` times)."""
    if not rows or steps <= 0:
        return 0.0
    mean_tokens = sum(row_tokens(model_name, r) for r in rows) / len(rows)
    return mean_tokens * min(steps * batch_rows, len(rows) * epochs)


def raw_generate_rate(model_name: str, calls: list[tuple[list[dict[str, str]], str, Any]],
                      batch_size: int) -> dict[str, float]:
    """Generated tokens/s of plain batched `model.generate` (left-padded) on `calls`: (chat
    messages, assistant prefix, Sampling) each, batched by equal sampling settings in their order."""
    import torch

    from sparring.train.config import TrainSettings
    from sparring.train.policy import load_policy

    model, tok = load_policy(TrainSettings(model=model_name, lora=None), trainable=False)
    model.eval()
    tok.padding_side = "left"
    groups: dict[tuple, list[str]] = {}
    for messages, prefix, sampling in calls:
        text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) + prefix
        groups.setdefault(sampling.group_key(), []).append(text)
    ends = {tok.eos_token_id, tok.pad_token_id} - {None}
    generated, start = 0, time.perf_counter()
    with torch.inference_mode():
        for (max_new, temperature, top_p, stop), texts in groups.items():
            sample = {"do_sample": True, "temperature": temperature, "top_p": top_p} if temperature else \
                {"do_sample": False}
            for i in range(0, len(texts), batch_size):
                enc = tok(texts[i:i + batch_size], return_tensors="pt", padding=True, add_special_tokens=False)
                out = model.generate(**enc, max_new_tokens=max_new, pad_token_id=tok.pad_token_id, **sample,
                                     **({"stop_strings": list(stop), "tokenizer": tok} if stop else {}))
                for row in out[:, enc["input_ids"].shape[1]:].tolist():  # up to its end token, counted
                    generated += next((j + 1 for j, t in enumerate(row) if t in ends), len(row))
    seconds = time.perf_counter() - start
    return {"raw_tokens_per_s": generated / seconds if seconds else 0.0, "raw_prompts": len(calls),
            "raw_generated_tokens": generated, "raw_batch": batch_size, "raw_s": seconds}


def engine_rate(records: list[Any], seconds: float, model: str) -> dict[str, Any]:
    """Generated tokens/s of the calls to `model` (an alias of the run's models file) in a run:
    their completion tokens ÷ `seconds`, and those calls (messages, prefix, sampling), in order."""
    from sparring.types import Sampling

    tokens, calls = 0, []
    for rec in records:
        for call in rec.calls:
            if call.op != "generate" or call.model != model:
                continue
            for c in call.completions or []:
                tokens += int(_usage(c.usage, "completion_tokens"))
            calls.append(([{"role": m.role, "content": m.content} for m in call.messages], call.assistant_prefix,
                          call.sampling or Sampling()))
    return {"engine_tokens_per_s": tokens / seconds if seconds else 0.0, "engine_generated_tokens": tokens,
            "engine_play_s": seconds, "calls": calls}


def _usage(usage: Any, key: str) -> float:
    if usage is None:
        return 0.0
    return float((usage.get(key) if isinstance(usage, dict) else getattr(usage, key, 0)) or 0)


def rollout_ratio(model_name: str, played: Any, model: str, batch_size: int, sample: int = 16) -> dict[str, Any]:
    """Engine ÷ raw generate on `played` (a `Played` held-out stage of the base model `model_name`,
    named `model` in the run): `sample` of its calls, evenly spread over the run, at `batch_size`.
    Not measured when an earlier session played some of those games (this one's time leaves them out)."""
    if played.stored:
        return {"rollout_unmeasured": f"{played.stored} of the base model's {len(played.records)} held-out games "
                                      "were played by an earlier session (a resumed run): this session's play "
                                      "time does not cover them"}
    eng = engine_rate(played.records, played.play_s, model)
    calls = eng.pop("calls")
    if not calls or not eng["engine_tokens_per_s"]:
        return eng
    sample = max(sample, batch_size)  # at least one batch as full as the engine's could be
    step = max(1, len(calls) // sample)
    raw = raw_generate_rate(model_name, calls[::step][:sample], batch_size)
    return {**eng, **raw, "rollout_ratio": eng["engine_tokens_per_s"] / raw["raw_tokens_per_s"]}
