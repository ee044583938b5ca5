"""Training parts: SFT / DPO / soft DPO / KTO steps of the tiny model through `sparring.train`,
LoRA and full fine-tuning speed of the mid-size model as model FLOP utilisation, and QLoRA."""

from __future__ import annotations

import time
from typing import Any

from sparring.gpucheck.parts.base import Ctx, device, mid_model, part, peak, sync
from sparring.gpucheck.parts.inference import debate_requests


# -- training ------------------------------------------------------------------------------------
def _train(ctx: Ctx, method: str, tag: str = "", **extra: Any) -> dict[str, Any]:
    import math

    from sparring.train.config import TrainSettings
    from sparring.train.trainers import train

    settings = TrainSettings(method=method, model=str(ctx.tiny), max_steps=3, batch_size=2, max_length=256,
                             learning_rate=1e-3, save_steps=0, **extra)
    t = time.perf_counter()
    result = train(str(ctx.rows(method)), settings, ctx.work / f"train-{tag or method}")
    assert result.steps == 3 and result.loss is not None and math.isfinite(result.loss), f"bad result {result}"
    return {"steps": result.steps, "loss": round(result.loss, 4), "seconds": round(time.perf_counter() - t, 1),
            **peak()}


@part("sft", 120)
def sft(ctx: Ctx) -> dict[str, Any]:
    return _train(ctx, "sft")


@part("dpo", 120)
def dpo(ctx: Ctx) -> dict[str, Any]:
    return _train(ctx, "dpo")


@part("soft_dpo", 120)
def soft_dpo(ctx: Ctx) -> dict[str, Any]:
    return _train(ctx, "dpo", "soft-dpo", dpo={"soft": True})


@part("kto", 120)
def kto(ctx: Ctx) -> dict[str, Any]:
    return _train(ctx, "kto")


# -- speed -----------------------------------------------------------------------------------------
@part("speed", 240)
def speed(ctx: Ctx) -> dict[str, Any]:
    """LoRA and full fine-tuning tokens/s of the mid-size model at sequence 1,024 (256 on CPU), as
    model FLOP utilisation: tokens/s × 6N ÷ the matmul probe's FLOP/s."""
    import torch

    from sparring.train.config import LoraSettings, TrainSettings
    from sparring.train.policy import lora_config

    probe = ctx.figures("matmul").get("tflops")
    seq, batch, steps = (256, 2, 3) if ctx.cpu else (1024, 8, 6)
    out: dict[str, Any] = {"sequence": seq, "batch": batch}
    for mode in ("lora", "full"):
        model, tok = mid_model(ctx, torch.float32 if ctx.cpu else torch.bfloat16)
        params = sum(p.numel() for p in model.parameters())
        if mode == "lora":
            from peft import get_peft_model

            model = get_peft_model(model, lora_config(TrainSettings(lora=LoraSettings())))
        model.train()
        optim = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
        ids = torch.randint(0, len(tok), (batch, seq), device=device())
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
        times = []
        for _ in range(steps):
            sync()
            t = time.perf_counter()
            loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            optim.step()
            optim.zero_grad(set_to_none=True)
            sync()
            times.append(time.perf_counter() - t)
        step_s = sorted(times[1:])[len(times[1:]) // 2]  # median after the first
        rate = batch * seq / step_s
        out[mode] = {"tokens_per_s": round(rate, 1), "params_m": round(params / 1e6, 1), **peak(),
                     "mfu": round(rate * 6 * params / (probe * 1e12), 4) if probe else None}
        del model, optim
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    return out


@part("qlora", 180)
def qlora(ctx: Ctx) -> dict[str, Any]:
    """4-bit loading through the `hf` backend, and QLoRA SFT steps (bitsandbytes, CUDA only)."""
    import importlib.util

    import torch

    if not torch.cuda.is_available():
        return {"skipped": "4-bit loading needs CUDA"}
    if importlib.util.find_spec("bitsandbytes") is None:
        return {"skipped": "bitsandbytes not carried (see the kit's manifest)"}
    from sparring.models.hf import HFModel

    hf = HFModel(name="q4", model=str(ctx.tiny), quantization="4bit")
    outs = hf.generate(debate_requests(4, 8))
    assert all(o and o[0].token_ids for o in outs)
    return {"generate_4bit": True, **_train(ctx, "sft", "qlora", quantization="4bit")}
