"""Merge a LoRA adapter into its base model: a plain model directory any tool can load (vLLM,
llama.cpp converters, `hf` specs without `adapters:`)."""

from __future__ import annotations

import json
from pathlib import Path


def merge_adapter(adapter: str | Path, out: str | Path, base: str | None = None) -> Path:
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from sparring.train.policy import resolve

    adapter, out = Path(adapter), Path(out)
    if base is None:
        base = json.loads((adapter / "adapter_config.json").read_text()).get("base_model_name_or_path")
    if not base:
        from sparring.errors import SparringError

        raise SparringError(f"{adapter}: the adapter does not name its base model; pass --base")
    resolved = resolve(base)  # once: the registry and the hub are read here only
    model = AutoModelForCausalLM.from_pretrained(resolved.source, **resolved.kwargs)
    own = (adapter / "tokenizer_config.json").is_file()
    tokenizer = AutoTokenizer.from_pretrained(adapter if own else resolved.source, **({} if own else resolved.kwargs))
    merged = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
    out.mkdir(parents=True, exist_ok=True)
    merged.save_pretrained(str(out), safe_serialization=True)
    tokenizer.save_pretrained(str(out))
    return out
