"""What every part shares: the registry the runner reads (`PARTS`, filled by the `part` decorator in
run order), the working folder (`Ctx`), the device, and the mid-size model built from a config."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The checkout the check runs from (the kit carries it whole): its scripts/ and its git commit.
CHECKOUT = Path(__file__).resolve().parents[3]

PARTS: dict[str, tuple[Callable[[Any], dict[str, Any]], int]] = {}  # name -> (function, time cap in s)

# At toy size on a CPU the models use the bundled tokenizer cut to its first 1,024 ids
# (`sparring.models.tiny`): a full 49,152-id output layer is most of a toy model's work, and the
# CPU run checks the code paths, not speed. On a GPU the whole vocabulary.
CPU_VOCAB = 1024


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

    @property
    def vocab(self) -> int | None:
        """The tokenizer's cut (None: the whole bundled vocabulary)."""
        return CPU_VOCAB if self.cpu else None

    def rows(self, method: str) -> Path:
        return self.work / "rows" / f"{method}.jsonl"

    def figures(self, name: str) -> dict[str, Any]:
        path = self.work / "parts" / f"{name}.json"
        return json.loads(path.read_text()).get("figures", {}) if path.is_file() else {}


def device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def mid_config(ctx: Ctx, vocab: int) -> Any:
    """~0.5B parameters on a GPU (Qwen2.5-0.5B's shape), a toy on CPU."""
    from transformers import Qwen2Config

    if ctx.cpu:
        return Qwen2Config(vocab_size=vocab, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                           tie_word_embeddings=True)
    return Qwen2Config(vocab_size=vocab, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                       num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=4096,
                       tie_word_embeddings=True)


def mid_model(ctx: Ctx, dtype: Any = None) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM

    from sparring.models.tiny import tiny_tokenizer

    tok = tiny_tokenizer(vocab=ctx.vocab)
    dtype = dtype or (torch.float32 if ctx.cpu else torch.bfloat16)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(mid_config(ctx, len(tok)), dtype=dtype)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    return model.to(device()).eval(), tok


def peak() -> dict[str, Any]:
    import torch

    if not torch.cuda.is_available():
        return {}
    return {"peak_gpu_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2)}
