"""The model being trained: a base model from the registry (or a directory), LoRA on top.

Device and precision follow the machine: bf16 on a CUDA GPU, fp32 on CPU (bf16 autocast made a
forward 7x slower on CPU). QLoRA loads the base in 4 bits through bitsandbytes (CUDA only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sparring.errors import ConfigError
from sparring.train.config import TrainSettings


def base_spec(model: str) -> Any:
    """The registry's `hf` spec of a base model name (None for a model directory); a clear
    ConfigError for an unknown name or another backend. Reads no weights."""
    from sparring.models.registry import load_model_specs, resolve_name

    if Path(model).expanduser().is_dir():
        return None
    specs = load_model_specs()
    try:
        spec = specs[resolve_name(model, specs)]
    except KeyError:
        raise ConfigError(f"unknown model {model!r}: give a model name from `sparring models list` or a "
                          "model directory", key="model") from None
    if spec.backend != "hf":
        raise ConfigError(f"model {model!r} uses the {spec.backend!r} backend; training needs a local `hf` model",
                          key="model")
    return spec


def resolve_base(model: str) -> str:
    """A local directory for a model name (an `hf` spec of the registry) or a path."""
    from sparring.models import hf_load

    spec = base_spec(model)
    if spec is None:
        return str(Path(model).expanduser())
    return hf_load.resolve_source(str(spec.args["model"]), "model")


def use_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def load_policy(settings: TrainSettings, trainable: bool = True) -> tuple[Any, Any]:
    """(model, tokenizer): the base, with `settings.adapter` loaded when given (trainable, so that
    its previous weights become the DPO reference), ready for a TRL trainer."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from sparring.models.bundled import offline_hf

    source = resolve_base(settings.model)
    kwargs: dict[str, Any] = {"local_files_only": True}
    if use_cuda():
        kwargs["dtype"] = torch.bfloat16
        if settings.quantization == "4bit":
            from transformers import BitsAndBytesConfig

            kwargs["quantization_config"] = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                                               bnb_4bit_compute_dtype=torch.bfloat16)
            # 4-bit weights cannot be moved after loading: each process loads onto its own GPU
            from accelerate import PartialState

            kwargs["device_map"] = {"": PartialState().local_process_index}
    elif settings.quantization:
        raise ConfigError("quantization (QLoRA) needs a CUDA GPU; remove it to train in full precision on CPU",
                          key="quantization")
    with offline_hf():
        tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(source, **kwargs)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if settings.adapter:
        from peft import PeftModel

        if not (Path(settings.adapter) / "adapter_config.json").is_file():
            raise ConfigError(f"adapter directory {settings.adapter!r} has no adapter_config.json", key="adapter")
        model = PeftModel.from_pretrained(model, settings.adapter, is_trainable=trainable)  # type: ignore[assignment]
    return model, tokenizer


def lora_config(settings: TrainSettings) -> Any:
    """The PEFT config for a new adapter (None: full fine-tuning, or an adapter is continued)."""
    if settings.lora is None or settings.adapter:
        return None
    from peft import LoraConfig

    lo = settings.lora
    return LoraConfig(r=lo.r, lora_alpha=lo.alpha, lora_dropout=lo.dropout, target_modules=lo.target_modules,
                      task_type="CAUSAL_LM")


def with_new_adapter(model: Any, config: Any) -> Any:
    """Wrap `model` in a new trainable PEFT adapter (`config` None: returned as it is)."""
    if config is None:
        return model
    from peft import get_peft_model

    return get_peft_model(model, config)


def save_adapter(model: Any, tokenizer: Any, out: str | Path, state_dict: dict[str, Any] | None = None) -> Path:
    """Save only the trained adapter (`default`), never the frozen reference copy TRL adds, plus
    the tokenizer; the hf backend loads the directory as an adapter on its base model.
    `state_dict`: the complete weights when the model's own are sharded (ZeRO-3)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if hasattr(model, "peft_config"):
        model.save_pretrained(str(out), selected_adapters=["default"], state_dict=state_dict)
    else:
        model.save_pretrained(str(out), safe_serialization=True, state_dict=state_dict)
    tokenizer.save_pretrained(str(out))
    return out
