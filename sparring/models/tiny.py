"""Tiny randomly initialised Llama models with the bundled tokenizer, for fast tests and demos.

They share the bundled SmolLM2 tokenizer and chat template, so prompts, stop strings and chat
formatting behave exactly as with the real model while a forward pass costs milliseconds.
Weights are a pure function of `seed` (the global torch RNG is forked, not reseeded).
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import torch

from sparring.models.bundled import DEFAULT_BUNDLED, bundled_tokenizer_dir


@functools.lru_cache(maxsize=4)
def _cached_tokenizer(path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)  # a local directory


def tiny_tokenizer(bundled: str = DEFAULT_BUNDLED):
    """A private copy of the bundled tokenizer (loaded once per process, then deep-copied)."""
    return copy.deepcopy(_cached_tokenizer(str(bundled_tokenizer_dir(bundled))))


def tiny_model(seed: int = 0, num_layers: int = 2, hidden_size: int = 64, num_heads: int = 4,
               num_kv_heads: int = 2, intermediate_size: int = 128, max_position_embeddings: int = 2048,
               init_std: float = 0.2, dtype: torch.dtype = torch.float32, tokenizer=None):
    """(model, tokenizer): a Llama-architecture model with random weights, deterministic per seed;
    `tokenizer` replaces the bundled one (the vocabulary sizes the embeddings).

    `init_std` is larger than the usual 0.02 so that next-token distributions are peaked: greedy
    decoding then has clear winners and batched-vs-single comparisons are not decided by noise.
    """
    from transformers import AutoModelForCausalLM, LlamaConfig

    tokenizer = tokenizer if tokenizer is not None else tiny_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=intermediate_size,
        num_hidden_layers=num_layers, num_attention_heads=num_heads, num_key_value_heads=num_kv_heads,
        max_position_embeddings=max_position_embeddings, initializer_range=init_std,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=True)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model.eval(), tokenizer


def save_tiny_model(directory: str | Path, seed: int = 0, **kwargs) -> Path:
    """Save a tiny model and its tokenizer so `HFModel(model=directory)` loads it by path."""
    directory = Path(directory)
    model, tokenizer = tiny_model(seed=seed, **kwargs)
    model.save_pretrained(directory, safe_serialization=True)
    tokenizer.save_pretrained(directory)
    return directory
