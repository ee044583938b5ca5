"""Tiny randomly initialised Llama models with the bundled tokenizer, for fast tests and demos.

They share the bundled SmolLM2 tokenizer and chat template, so prompts, stop strings and chat
formatting behave exactly as with the real model while a forward pass costs milliseconds.
Weights are a pure function of `seed` (the global torch RNG is forked, not reseeded).

With `vocab=N` the tokenizer is the bundled one cut to its first N ids (its special tokens, its
bytes, the first merges): the same chat template and special tokens, any text still encodes
and decodes back, only into more tokens. On a tiny model nearly all of a training step is the
vocabulary (the output layer and the loss's log-softmax over 49,152 tokens), so a cut one is
what makes a training test take seconds instead of a minute.
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


@functools.lru_cache(maxsize=4)
def _cached_cut(path: str, vocab: int):
    import json
    import tempfile

    from tokenizers import pre_tokenizers
    from transformers import AutoTokenizer

    full = _cached_tokenizer(path)
    if not MIN_VOCAB <= vocab <= len(full):
        raise ValueError(f"vocab={vocab}: a cut tokenizer keeps between {MIN_VOCAB} ids (the special tokens "
                         f"and its bytes) and the full {len(full)}")
    with tempfile.TemporaryDirectory() as tmp:
        full.save_pretrained(tmp)
        file = Path(tmp) / "tokenizer.json"
        spec = json.loads(file.read_text(encoding="utf-8"))
        bpe = spec["model"]
        if bpe.get("type") != "BPE":
            raise ValueError(f"vocab={vocab}: {path} is not a BPE tokenizer; only a byte-level BPE can be cut")
        every_byte = set(pre_tokenizers.ByteLevel.alphabet()) & set(bpe["vocab"])  # (bytes invalid in UTF-8 may lack one)
        bpe["vocab"] = {token: i for token, i in bpe["vocab"].items() if i < vocab}
        # a merge survives when both parts and what it makes are kept (merges are "a b" or ["a", "b"])
        pairs = [m.split(" ", 1) if isinstance(m, str) else m for m in bpe["merges"]]
        bpe["merges"] = [[a, b] for a, b in pairs if a in bpe["vocab"] and b in bpe["vocab"] and a + b in bpe["vocab"]]
        spec["added_tokens"] = [t for t in spec["added_tokens"] if t["id"] < vocab]
        missing = every_byte - set(bpe["vocab"])
        if missing:  # a tokenizer laid out otherwise could not encode every text
            raise ValueError(f"vocab={vocab}: the first {vocab} ids of {path} are not its special tokens and "
                             f"bytes ({len(missing)} bytes missing); a cut needs a byte-level BPE laid out so")
        file.write_text(json.dumps(spec), encoding="utf-8")
        return AutoTokenizer.from_pretrained(tmp)


# the bundled tokenizer's 17 special tokens and its bytes come first: a cut keeps at least those
MIN_VOCAB = 17 + 256


def tiny_tokenizer(bundled: str = DEFAULT_BUNDLED, vocab: int | None = None):
    """A private copy of the bundled tokenizer (loaded once per process, then deep-copied);
    `vocab`: cut to its first `vocab` ids (see the module's docstring)."""
    path = str(bundled_tokenizer_dir(bundled))
    return copy.deepcopy(_cached_tokenizer(path) if vocab is None else _cached_cut(path, vocab))


def tiny_model(seed: int = 0, num_layers: int = 2, hidden_size: int = 64, num_heads: int = 4,
               num_kv_heads: int = 2, intermediate_size: int = 128, max_position_embeddings: int = 2048,
               init_std: float = 0.2, dtype: torch.dtype = torch.float32, tokenizer=None, vocab: int | None = None):
    """(model, tokenizer): a Llama-architecture model with random weights, deterministic per seed;
    `tokenizer` replaces the bundled one (the vocabulary sizes the embeddings); `vocab` cuts the
    bundled one to its first `vocab` ids.

    `init_std` is larger than the usual 0.02 so that next-token distributions are peaked: greedy
    decoding then has clear winners and batched-vs-single comparisons are not decided by noise.
    """
    from transformers import AutoModelForCausalLM, LlamaConfig

    tokenizer = tokenizer if tokenizer is not None else tiny_tokenizer(vocab=vocab)
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
