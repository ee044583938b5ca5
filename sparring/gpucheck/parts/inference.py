"""Parts on one machine's basics and inference: the rows and tiny model later parts use, versions, the
matmul ceiling, and the `hf` backend (batched generate, score, prefix cache) on the tiny and the
mid-size model, with engine and backend tokens/s against a raw `model.generate`."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

from sparring.gpucheck.parts.base import CHECKOUT, Ctx, device, mid_model, part, sync

# -- setup ---------------------------------------------------------------------------------------
ROWS_PROMPT = [{"role": "system", "content": "You negotiate over books, hats and balls."},
               {"role": "user", "content": "Partner: I want the hats. Your turn."}]


@part("setup", 120)
def setup(ctx: Ctx) -> dict[str, Any]:
    """The tiny model directory and small SFT / DPO / KTO row files the later parts train on."""
    from sparring.models.tiny import save_tiny_model

    save_tiny_model(ctx.tiny, seed=0, vocab=ctx.vocab)
    rows: dict[str, list[dict[str, Any]]] = {
        "sft": [{"messages": ROWS_PROMPT + [{"role": "assistant", "content": f"[message] I keep {i} books."}]}
                for i in range(8)],
        "dpo": [{"prompt": ROWS_PROMPT, "chosen": [{"role": "assistant", "content": f"[propose] ({i} books)"}],
                 "rejected": [{"role": "assistant", "content": "no"}], "preference": 0.8} for i in range(8)],
        "kto": [{"prompt": ROWS_PROMPT, "completion": [{"role": "assistant", "content": f"reply {i}"}],
                 "label": i % 2 == 0} for i in range(8)],
    }
    for method, rs in rows.items():
        path = ctx.rows(method)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in rs), encoding="utf-8")
    return {"tiny_model": str(ctx.tiny), "rows": {k: len(v) for k, v in rows.items()}}


# -- environment and the ceiling -----------------------------------------------------------------
@part("versions", 60)
def versions(ctx: Ctx) -> dict[str, Any]:
    import importlib.metadata as md
    import platform

    import torch

    out: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__,
                           "cuda": torch.version.cuda, "device": device()}
    for name in ("transformers", "trl", "peft", "accelerate", "datasets", "pydantic", "bitsandbytes"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = None
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        out.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1),
                   multiprocessors=props.multi_processor_count, bf16=torch.cuda.is_bf16_supported())
    commit = subprocess.run(["git", "-C", str(CHECKOUT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    out["sparring_commit"] = commit.stdout.strip() or None
    return out


@part("matmul", 60)
def matmul(ctx: Ctx) -> dict[str, Any]:
    """The ceiling the training speeds are read against: a square matmul in the training dtype."""
    import torch

    n, dtype = (512, torch.float32) if ctx.cpu else (8192, torch.bfloat16)
    a = torch.randn(n, n, device=device(), dtype=dtype)
    b = torch.randn(n, n, device=device(), dtype=dtype)
    for _ in range(3):
        a @ b
    sync()
    best = float("inf")
    for _ in range(10):
        t = time.perf_counter()
        a @ b
        sync()
        best = min(best, time.perf_counter() - t)
    flops = 2 * n**3 / best
    return {"size": n, "dtype": str(dtype).replace("torch.", ""), "tflops": round(flops / 1e12, 3)}


# -- inference through the hf backend ------------------------------------------------------------
def debate_requests(n: int, max_new: int) -> list[Any]:
    from sparring.types import GenerateRequest, Message, Sampling

    return [GenerateRequest(messages=[Message(role="system", content="You are a debater."),
                                      Message(role="user", content=f"Question {i}: argue for answer A, briefly.")],
                            sampling=Sampling(max_new_tokens=max_new, temperature=0.7, seed=i)) for i in range(n)]


def _backend_checks(hf: Any) -> dict[str, Any]:
    """Batched generate, score, the prefix cache (a prompt extending a cached one) and the
    key/value buffer, on one loaded `hf` model."""
    from sparring.types import Message, ScoreRequest

    outs = hf.generate(debate_requests(8, 16))
    assert len(outs) == 8 and all(o and o[0].token_ids for o in outs), "batched generate returned nothing"
    messages = [Message(role="user", content="Which is right, A or B?")]
    scores = hf.score([ScoreRequest(messages=messages, options=[" A", " B"], assistant_prefix="Answer:")] * 4)
    assert len(scores) == 4 and all(len(s) == 2 for s in scores), "score returned the wrong shape"
    hits_before = hf.prefix_cache.hits if hf.prefix_cache is not None else 0
    longer = [*debate_requests(1, 8)[0].messages, Message(role="assistant", content="A is right."),
              Message(role="user", content="Why?")]
    from sparring.types import GenerateRequest, Sampling

    hf.generate([GenerateRequest(messages=longer[:2], sampling=Sampling(max_new_tokens=4))])
    hf.generate([GenerateRequest(messages=longer, sampling=Sampling(max_new_tokens=4))])
    return {"prefix_cache": hf.prefix_cache is not None,
            "prefix_cache_hits": (hf.prefix_cache.hits - hits_before) if hf.prefix_cache is not None else None,
            "kv_buffer": bool(hf.kv_layers), "dtype": str(next(hf.model.parameters()).dtype).replace("torch.", ""),
            "device": str(hf.device), "score_example": [round(x, 3) for x in scores[0]]}


@part("hf_tiny", 120)
def hf_tiny(ctx: Ctx) -> dict[str, Any]:
    from sparring.models.hf import HFModel

    return _backend_checks(HFModel(name="tiny", model=str(ctx.tiny), max_batch_size=8))


@part("hf_mid", 180)
def hf_mid(ctx: Ctx) -> dict[str, Any]:
    """The ~0.5B model: the backend checks, then generated tokens/s through the engine (debates
    played by the runner) and through the backend, each ÷ a raw batched `model.generate` of the
    same prompts and lengths."""
    import torch

    from sparring.engine.play import Arena
    from sparring.models.hf import HFModel
    from sparring.models.hf_attention import generation_attention

    model, tok = mid_model(ctx)
    params = sum(p.numel() for p in model.parameters())
    batch, new = (8, 16) if ctx.cpu else (32, 64)
    hf = HFModel.from_objects(model, tok, name="mid", max_batch_size=batch, ignore_eos=True)
    out: dict[str, Any] = {"params_m": round(params / 1e6, 1), **_backend_checks(hf)}
    requests = debate_requests(batch, new)
    prompts = [hf.prompt_text(r.messages) for r in requests]
    enc = tok(prompts, return_tensors="pt", padding=True, padding_side="left", add_special_tokens=False).to(hf.device)
    # the raw baseline runs under the backend's attention kernels, warmed up over the same lengths
    with torch.inference_mode(), generation_attention(hf.device, hf.args.cudnn_attention):
        model.generate(**enc, max_new_tokens=new, do_sample=False, pad_token_id=tok.pad_token_id)  # warm up
        sync()
        t = time.perf_counter()
        gen = model.generate(**enc, max_new_tokens=new, min_new_tokens=new, do_sample=True, temperature=0.7,
                             pad_token_id=tok.pad_token_id)
        sync()
        raw_s = time.perf_counter() - t
    raw_rate = (gen.shape[1] - enc["input_ids"].shape[1]) * batch / raw_s
    t = time.perf_counter()
    outs = hf.generate(requests)
    backend_rate = sum(len(o[0].token_ids or []) for o in outs) / (time.perf_counter() - t)
    debate = {"game": "debate", "game_args": {"format": "debate", "rounds": 1},
              "dataset": {"name": "generated", "split": "test", "limit": batch // 2,
                          "args": {"people": 2, "filler_sentences": 0}},
              "agents": {"a": {"role": "debater", "model": "mid", "sampling": {"max_new_tokens": new}},
                         "judge": {"role": "judge", "model": "scripted-random"}},
              "tournament": {"type": "self_play", "participants": ["a"], "judges": ["judge"], "flip": True},
              "run": {"seed": 0, "max_live": batch}}
    with Arena.from_config(debate, models={"mid": hf}) as arena:
        t = time.perf_counter()
        records = arena.play(arena.jobs())
        engine_s = time.perf_counter() - t
    tokens = sum(c.completions[0].usage.completion_tokens for r in records for c in r.calls
                 if c.model == "mid" and c.op == "generate" and c.completions)
    engine_rate = tokens / engine_s
    out.update(raw_tokens_per_s=round(raw_rate, 1), backend_tokens_per_s=round(backend_rate, 1),
               engine_tokens_per_s=round(engine_rate, 1), backend_over_raw=round(backend_rate / raw_rate, 3),
               engine_over_raw=round(engine_rate / raw_rate, 3),
               engine_over_backend=round(engine_rate / backend_rate, 3), engine_episodes=len(records),
               batch=batch, new_tokens=new, cudnn_attention=hf.args.cudnn_attention)
    return out
