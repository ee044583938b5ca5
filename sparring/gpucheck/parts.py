"""The parts of the GPU self-check. Each part is one function that returns its figures and raises
on failure; the runner runs each in its own process under its own time cap, so one failing or
hanging part does not stop the others. On a GPU every model runs on CUDA in bf16 (the `hf`
backend's and the trainers' defaults); `--cpu` runs the same code at toy size (CI).

The models are built from configs with random weights (no weights travel): the tiny 2-layer Llama
of the tests, and a ~0.5B model shaped like Qwen2.5-0.5B (hidden 896, 24 layers, GQA 14/2 heads),
both with the bundled tokenizer.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PARTS: dict[str, tuple[Callable[[Any], dict[str, Any]], int]] = {}  # name -> (function, time cap in s)


def part(name: str, cap_s: int) -> Callable:
    def deco(fn: Callable[[Any], dict[str, Any]]) -> Callable[[Any], dict[str, Any]]:
        PARTS[name] = (fn, cap_s)
        return fn
    return deco


@dataclass
class Ctx:
    work: Path
    cpu: bool

    @property
    def tiny(self) -> Path:
        return self.work / "tiny-model"

    def rows(self, method: str) -> Path:
        return self.work / "rows" / f"{method}.jsonl"

    def figures(self, name: str) -> dict[str, Any]:
        path = self.work / "parts" / f"{name}.json"
        return json.loads(path.read_text()).get("figures", {}) if path.is_file() else {}


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _mid_config(ctx: Ctx, vocab: int) -> Any:
    """~0.5B parameters on a GPU (Qwen2.5-0.5B's shape), a toy on CPU."""
    from transformers import Qwen2Config

    if ctx.cpu:
        return Qwen2Config(vocab_size=vocab, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                           tie_word_embeddings=True)
    return Qwen2Config(vocab_size=vocab, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                       num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=4096,
                       tie_word_embeddings=True)


def _mid_model(ctx: Ctx, dtype: Any = None) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM

    from sparring.models.tiny import tiny_tokenizer

    tok = tiny_tokenizer()
    dtype = dtype or (torch.float32 if ctx.cpu else torch.bfloat16)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(_mid_config(ctx, len(tok)), dtype=dtype)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    return model.to(_device()).eval(), tok


# -- setup ---------------------------------------------------------------------------------------
ROWS_PROMPT = [{"role": "system", "content": "You negotiate over books, hats and balls."},
               {"role": "user", "content": "Partner: I want the hats. Your turn."}]


@part("setup", 120)
def setup(ctx: Ctx) -> dict[str, Any]:
    """The tiny model directory and small SFT / DPO / KTO row files the later parts train on."""
    from sparring.models.tiny import save_tiny_model

    save_tiny_model(ctx.tiny, seed=0)
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
                           "cuda": torch.version.cuda, "device": _device()}
    for name in ("transformers", "trl", "peft", "accelerate", "datasets", "pydantic", "bitsandbytes"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = None
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        out.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1),
                   multiprocessors=props.multi_processor_count, bf16=torch.cuda.is_bf16_supported())
    root = Path(__file__).resolve().parents[2]
    commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    out["sparring_commit"] = commit.stdout.strip() or None
    return out


@part("matmul", 60)
def matmul(ctx: Ctx) -> dict[str, Any]:
    """The ceiling the training speeds are read against: a square matmul in the training dtype."""
    import torch

    n, dtype = (512, torch.float32) if ctx.cpu else (8192, torch.bfloat16)
    a = torch.randn(n, n, device=_device(), dtype=dtype)
    b = torch.randn(n, n, device=_device(), dtype=dtype)
    for _ in range(3):
        a @ b
    _sync()
    best = float("inf")
    for _ in range(10):
        t = time.perf_counter()
        a @ b
        _sync()
        best = min(best, time.perf_counter() - t)
    flops = 2 * n**3 / best
    return {"size": n, "dtype": str(dtype).replace("torch.", ""), "tflops": round(flops / 1e12, 3)}


# -- inference through the hf backend ------------------------------------------------------------
def _requests(n: int, max_new: int) -> list[Any]:
    from sparring.types import GenerateRequest, Message, Sampling

    return [GenerateRequest(messages=[Message(role="system", content="You are a debater."),
                                      Message(role="user", content=f"Question {i}: argue for answer A, briefly.")],
                            sampling=Sampling(max_new_tokens=max_new, temperature=0.7, seed=i)) for i in range(n)]


def _backend_checks(hf: Any) -> dict[str, Any]:
    """Batched generate, score, the prefix cache (a prompt extending a cached one) and the
    key/value buffer, on one loaded `hf` model."""
    from sparring.types import Message, ScoreRequest

    outs = hf.generate(_requests(8, 16))
    assert len(outs) == 8 and all(o and o[0].token_ids for o in outs), "batched generate returned nothing"
    messages = [Message(role="user", content="Which is right, A or B?")]
    scores = hf.score([ScoreRequest(messages=messages, options=[" A", " B"], assistant_prefix="Answer:")] * 4)
    assert len(scores) == 4 and all(len(s) == 2 for s in scores), "score returned the wrong shape"
    hits_before = hf.prefix_cache.hits if hf.prefix_cache is not None else 0
    longer = [*_requests(1, 8)[0].messages, Message(role="assistant", content="A is right."),
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

    model, tok = _mid_model(ctx)
    params = sum(p.numel() for p in model.parameters())
    batch, new = (8, 16) if ctx.cpu else (32, 64)
    hf = HFModel.from_objects(model, tok, name="mid", max_batch_size=batch, ignore_eos=True)
    out: dict[str, Any] = {"params_m": round(params / 1e6, 1), **_backend_checks(hf)}
    requests = _requests(batch, new)
    prompts = [hf.prompt_text(r.messages) for r in requests]
    enc = tok(prompts, return_tensors="pt", padding=True, padding_side="left", add_special_tokens=False).to(hf.device)
    # the raw baseline runs under the backend's attention kernels, warmed up over the same lengths
    with torch.inference_mode(), generation_attention(hf.device, hf.args.cudnn_attention):
        model.generate(**enc, max_new_tokens=new, do_sample=False, pad_token_id=tok.pad_token_id)  # warm up
        _sync()
        t = time.perf_counter()
        gen = model.generate(**enc, max_new_tokens=new, min_new_tokens=new, do_sample=True, temperature=0.7,
                             pad_token_id=tok.pad_token_id)
        _sync()
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
            **_peak()}


def _peak() -> dict[str, Any]:
    import torch

    if not torch.cuda.is_available():
        return {}
    return {"peak_gpu_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2)}


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


def _command(args: list[str], ctx: Ctx, name: str, timeout: int) -> dict[str, Any]:
    """A real command of sparring's (a script), as a user runs it; its output tail on failure."""
    import os

    log = ctx.work / f"{name}.log"
    env = {**os.environ, "SPARRING_RUNS_DIR": str(ctx.work / "runs"), "PYTHONUNBUFFERED": "1"}
    t = time.perf_counter()
    with open(log, "w") as f:
        done = subprocess.run(args, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=ctx.work, timeout=timeout)
    seconds = round(time.perf_counter() - t, 1)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[1:3])} exited {done.returncode}:\n{log.read_text()[-3000:]}")
    return {"seconds": seconds, "command": " ".join(Path(a).name if a.endswith(".py") else a for a in args[1:])}


def _script(name: str) -> str:
    return str(Path(__file__).resolve().parents[2] / "scripts" / name)


def _scripted_models() -> str:
    from importlib import resources

    return str(resources.files("sparring") / "configs" / "experiments" / "models" / "scripted.yaml")


def _write(ctx: Ctx, name: str, data: dict[str, Any]) -> Path:
    import yaml

    path = ctx.work / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


DOND = {"objective": "self", "max_turns": 4, "untagged_as_message": True, "prefill_proposals": True,
        "propose_after": 2}


@part("grpo", 240)
def grpo(ctx: Ctx) -> dict[str, Any]:
    """`scripts/run_grpo.py`: two GRPO steps of the tiny learner against a scripted partner."""
    config = {"model": str(ctx.tiny), "learner_agent": "learner", "num_generations": 2, "prompts_per_step": 1,
              "max_steps": 2, "learning_rate": 1e-4, "sequences_per_episode": 2, "save_steps": 0,
              "output_dir": str(ctx.work / "grpo"),
              "experiment": {"game": "dond", "game_args": DOND,
                             "dataset": {"name": "dond_generated", "split": "train", "args": {"n": 8, "seed": 0},
                                         "limit": 2},
                             "models_file": _scripted_models(),
                             "agents": {"learner": {"role": "negotiator", "model": "learner",
                                                    "sampling": {"temperature": 1.0, "max_new_tokens": 16}},
                                        "partner": {"role": "negotiator", "model": "fair-negotiator"}},
                             "tournament": {"type": "custom", "matchups": [["learner", "partner"]]},
                             "run": {"seed": 0, "max_live": 4}}}
    out = _command([sys.executable, _script("run_grpo.py"), "--configuration", str(_write(ctx, "grpo", config))],
                   ctx, "grpo", 230)
    steps = (ctx.work / "grpo" / "rewards.jsonl").read_text().splitlines()
    assert len(steps) == 2, f"{len(steps)} GRPO steps logged"
    return {**out, "steps": len(steps)}


def _loop(ctx: Ctx, method: str) -> dict[str, Any]:
    tiny = str(ctx.tiny)
    if method == "dpo":
        selfplay = {"game": "debate", "game_args": {"format": "debate", "rounds": 1},
                    "dataset": {"name": "generated", "split": "train", "limit": 2,
                                "args": {"people": 2, "filler_sentences": 0}},
                    "agents": {"policy": {"role": "debater", "model": "tiny",
                                          "sampling": {"temperature": 0.9, "max_new_tokens": 16}},
                               "judge": {"role": "judge", "model": "tiny"}},
                    "tournament": {"type": "self_play", "participants": ["policy"], "judges": ["judge"], "flip": True},
                    "branch": {"target": "policy", "k": 2, "mode": "half", "depth": 1}, "run": {"seed": 0}}
        export: dict[str, Any] = {"target": "prob", "gamma": 4.0, "max_pairs": 4}
        evaluation = {"name": "generated", "split": "test", "limit": 2, "args": {"people": 2, "filler_sentences": 0}}
        script = "run_iterative_dpo.py"
    else:
        selfplay = {"game": "dond", "game_args": DOND,
                    "dataset": {"name": "dond_generated", "split": "train", "args": {"n": 20, "seed": 0}, "limit": 4},
                    "agents": {"policy": {"role": "negotiator", "model": "tiny",
                                          "sampling": {"temperature": 0.8, "max_new_tokens": 16}}},
                    "tournament": {"type": "self_play", "participants": ["policy"]}, "run": {"seed": 0}}
        export = {"keep": "all", "include_aborted": True}  # a random model's games end aborted
        evaluation = {"name": "dond_generated", "split": "test", "args": {"n": 20, "seed": 0}, "limit": 2}
        script = "run_selfplay_sft.py"
    models = _write(ctx, f"models-{method}", {"models": {"tiny": {"backend": "hf", "args": {"model": tiny}}}})
    config = {"name": f"gpu-check-{method}", "method": method, "alias": f"check-{method}", "iterations": 1,
              "policy_agent": "policy", "models_file": str(models), "selfplay": selfplay, "export": export,
              "train": {"method": method, "model": "tiny", "max_steps": 2, "batch_size": 2, "max_length": 768,
                        "save_steps": 0},
              "evaluation": {"dataset": evaluation, "flip": method == "dpo"},
              "output_dir": str(ctx.work / f"loop-{method}")}
    out = _command([sys.executable, _script(script), "--configuration", str(_write(ctx, f"loop-{method}", config))],
                   ctx, f"loop-{method}", 300)
    state = json.loads((ctx.work / f"loop-{method}" / "state.json").read_text())
    done = state["iterations"]["1"]["done"]
    assert done[-1] == "evaluate", f"the iteration stopped after {done}"
    return {**out, "stages": done}


@part("loop_dpo", 300)
def loop_dpo(ctx: Ctx) -> dict[str, Any]:
    """`scripts/run_iterative_dpo.py`: one iteration (branched debates, DPO, held-out cross-play)."""
    return _loop(ctx, "dpo")


@part("loop_selfplay_sft", 300)
def loop_selfplay_sft(ctx: Ctx) -> dict[str, Any]:
    """`scripts/run_selfplay_sft.py`: one iteration (self-play, SFT, held-out evaluation)."""
    return _loop(ctx, "sft")


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
        model, tok = _mid_model(ctx, torch.float32 if ctx.cpu else torch.bfloat16)
        params = sum(p.numel() for p in model.parameters())
        if mode == "lora":
            from peft import get_peft_model

            model = get_peft_model(model, lora_config(TrainSettings(lora=LoraSettings())))
        model.train()
        optim = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
        ids = torch.randint(0, len(tok), (batch, seq), device=_device())
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
        times = []
        for _ in range(steps):
            _sync()
            t = time.perf_counter()
            loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            optim.step()
            optim.zero_grad(set_to_none=True)
            _sync()
            times.append(time.perf_counter() - t)
        step_s = sorted(times[1:])[len(times[1:]) // 2]  # median after the first
        rate = batch * seq / step_s
        out[mode] = {"tokens_per_s": round(rate, 1), "params_m": round(params / 1e6, 1), **_peak(),
                     "mfu": round(rate * 6 * params / (probe * 1e12), 4) if probe else None}
        del model, optim
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    return out


@part("accelerate", 240)
def accelerate(ctx: Ctx) -> dict[str, Any]:
    """`accelerate launch` with one process of `scripts/run_sft.py` (the GPU, or the CPU)."""
    args = [sys.executable, "-m", "accelerate.commands.accelerate_cli", "launch", "--num_processes", "1",
            "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
    if ctx.cpu:
        args.append("--cpu")
    args += [_script("run_sft.py"), str(ctx.rows("sft")), "-o", str(ctx.work / "accelerate-sft"), "--model",
             str(ctx.tiny), "--max-steps", "2"]
    out = _command(args, ctx, "accelerate", 230)
    assert (ctx.work / "accelerate-sft" / "adapter_config.json").is_file(), "no adapter was saved"
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
    outs = hf.generate(_requests(4, 8))
    assert all(o and o[0].token_ids for o in outs)
    return {"generate_4bit": True, **_train(ctx, "sft", "qlora", quantization="4bit")}
