"""Loading for the `hf` backend: where the weights are, which device/dtype, quantization, LoRA.

A hub id is downloaded on first use into the standard Hugging Face cache and read from there
afterwards; `HF_HUB_OFFLINE=1` or `SPARRING_OFFLINE=1` keep loading offline (`hub.py`). The
bundled model and model directories never touch the network.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import torch

from sparring.errors import ConfigError
from sparring.models.chat import PLAIN_CHAT_TEMPLATE
from sparring.models.hub import load_kwargs, resolve_source

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolve_device(device: str) -> torch.device:
    """`auto` -> the first CUDA device if there is one, else CPU."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError) as exc:
        raise ConfigError(f"invalid device {device!r} ({exc})", key="device") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device {device!r} requested but CUDA is not available; use device: cpu",
                          key="device")
    return dev


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """`auto` -> bfloat16 on CUDA (fast, safe range), float32 on CPU (bf16 matmuls are slow there)."""
    if dtype == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    return _DTYPES[dtype]


def quantization_config(kind: str | None, device: torch.device, dtype: torch.dtype):
    """bitsandbytes 4/8-bit config; only CUDA is supported, so anything else is a clear error."""
    if kind is None:
        return None
    if device.type != "cuda":
        raise ConfigError(f"quantization {kind!r} uses bitsandbytes, which needs a CUDA device, but the "
                          f"model would run on {device.type}; remove `quantization` or use a GPU",
                          key="quantization")
    try:
        import bitsandbytes  # noqa: F401
    except ImportError:
        raise ConfigError("quantization needs bitsandbytes: pip install 'sparring[cuda]'",
                          key="quantization") from None
    from transformers import BitsAndBytesConfig

    if kind == "4bit":
        return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=dtype)
    return BitsAndBytesConfig(load_in_8bit=True)


def load_tokenizer(args: Any):
    from transformers import AutoTokenizer

    gguf = args.gguf_file if not args.tokenizer else None
    revision = None if args.tokenizer else args.revision
    source = resolve_source(args.tokenizer or args.model, "tokenizer" if args.tokenizer else "model",
                            gguf or "tokenizer_config.json", revision)
    kwargs: dict[str, Any] = {"trust_remote_code": args.trust_remote_code, **load_kwargs(source, revision)}
    if gguf:
        kwargs["gguf_file"] = gguf
    try:
        return AutoTokenizer.from_pretrained(source, **kwargs)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot load the tokenizer of {args.tokenizer or args.model!r}: {exc}",
                          key="tokenizer" if args.tokenizer else "model") from None


def load_model(args: Any, device: torch.device, dtype: torch.dtype):
    """The causal LM on `device`, in eval mode."""
    from transformers import AutoModelForCausalLM

    quant = quantization_config(args.quantization, device, dtype)
    source = resolve_source(args.model, "model", args.gguf_file, args.revision)
    kwargs: dict[str, Any] = {"dtype": dtype, "trust_remote_code": args.trust_remote_code,
                              **load_kwargs(source, args.revision)}
    if args.gguf_file:
        kwargs["gguf_file"] = args.gguf_file
    if quant is not None:
        kwargs.update(quantization_config=quant, device_map={"": device.index or 0})
    try:
        model = AutoModelForCausalLM.from_pretrained(source, **kwargs)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot load model {args.model!r}: {exc}", key="model") from None
    if quant is None:
        model.to(device)  # type: ignore[arg-type]  # transformers' stub types `to` narrowly
    return model.eval()


def attach_adapters(model, adapters: dict[str, str]):
    """Load every named LoRA adapter onto one base (a `PeftModel`); switched per request later."""
    if not adapters:
        return model
    from peft import PeftModel

    for name, path in adapters.items():
        if not (Path(path).expanduser() / "adapter_config.json").is_file():
            raise ConfigError(f"adapter directory {path!r} has no adapter_config.json", key=f"adapters.{name}")
    for name, path in adapters.items():
        path = str(Path(path).expanduser())
        if isinstance(model, PeftModel):
            model.load_adapter(path, adapter_name=name, is_trainable=False)
        else:
            model = PeftModel.from_pretrained(model, path, adapter_name=name, is_trainable=False)
    return model.eval()


def chat_template(tokenizer, override: str | None) -> str:
    """The override (a template string or a path to a .jinja file), the tokenizer's, or a plain one."""
    if override:
        path = Path(override).expanduser()
        if "{" not in override and path.is_file():
            return path.read_text()
        if "{" not in override:
            raise ConfigError(f"chat_template {override!r} is neither a Jinja template nor an existing file",
                              key="chat_template")
        return override
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, dict):  # several named templates: use the default one
        template = template.get("default") or next(iter(template.values()))
    if template:
        return template
    warnings.warn("tokenizer has no chat template; using plain 'role: content' turns "
                  "(set `chat_template` to choose one)", stacklevel=3)
    return PLAIN_CHAT_TEMPLATE


def context_limit(model, tokenizer, override: int | None) -> int | None:
    """Args.max_context, else the smaller of the tokenizer's and the model config's limits."""
    if override:
        return override
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    limits = [v for a in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")
              if isinstance(v := getattr(config, a, None), int) and v > 0]
    tok_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_max, int) and 0 < tok_max < 10_000_000:
        limits.append(tok_max)
    return min(limits) if limits else None


def eos_ids(model, tokenizer) -> set[int]:
    """Every id that ends a turn: the generation config's (may be a list) and the tokenizer's."""
    ids: set[int] = set()
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    for value in (configured, getattr(tokenizer, "eos_token_id", None)):
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, (list, tuple)):
            ids.update(int(v) for v in value)
    return ids
