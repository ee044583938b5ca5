"""The model being trained: a base model from the registry (or a directory), LoRA on top.

Device and precision follow the machine: bf16 on a CUDA GPU, fp32 on CPU (bf16 autocast made a
forward 7x slower on CPU). QLoRA loads the base in 4 bits through bitsandbytes (CUDA only).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparring.errors import ConfigError
from sparring.train.config import TrainSettings


def base_spec(model: str, models_file: str | None = None) -> Any:
    """The registry's `hf` spec of a base model name or Hugging Face id (None for a model
    directory), looked up in the shipped models, `models_file` (else $SPARRING_MODELS); a clear
    ConfigError for an unknown name or another backend. Reads no weights."""
    from sparring.models.registry import load_model_specs, resolve_name

    if Path(model).expanduser().is_dir():
        return None
    specs = load_model_specs(models_file)
    try:
        spec = specs[resolve_name(model, specs)]
    except KeyError:
        raise ConfigError(f"unknown model {model!r}: give a model name from `sparring models list`, a Hugging "
                          "Face id (owner/name) or a model directory", key="model") from None
    if spec.backend != "hf":
        raise ConfigError(f"model {model!r} uses the {spec.backend!r} backend; training needs a local `hf` model",
                          key="model")
    return spec


@dataclass(frozen=True)
class Base:
    """A base model resolved once (the registry read once, the hub checked once): its `hf`
    arguments, what `from_pretrained` loads, and the keywords it loads with."""

    name: str
    args: dict[str, Any]
    source: str
    kwargs: dict[str, Any]

    def tokenizer_source(self) -> str:
        """Where the tokenizer loads from (a hub id: its tokenizer_config.json checked)."""
        from sparring.models.hub import resolve_source

        if self.source != str(self.args["model"]):  # the bundled model's converted directory
            return self.source
        return resolve_source(str(self.args["model"]), "model", "tokenizer_config.json", self.args.get("revision"))


def resolve(model: str, models_file: str | None = None) -> Base:
    """The base model `model` names (a registry name, a Hugging Face id or a directory)."""
    from sparring.models.hub import load_kwargs, resolve_source

    spec = base_spec(model, models_file)
    args = {"model": str(Path(model).expanduser())} if spec is None else dict(spec.args)
    source = resolve_source(str(args["model"]), "model", None, args.get("revision"))
    kwargs = {**load_kwargs(source, args.get("revision")), "trust_remote_code": bool(args.get("trust_remote_code", False))}
    return Base(model, args, source, kwargs)


def base_args(model: str, models_file: str | None = None) -> dict[str, Any]:
    """The `hf` arguments of a base model (`{"model": path}` for a directory)."""
    spec = base_spec(model, models_file)
    return {"model": str(Path(model).expanduser())} if spec is None else dict(spec.args)


def resolve_base(model: str, models_file: str | None = None) -> str:
    """What `from_pretrained` loads for a model name, Hugging Face id or path: a local directory
    or a hub id whose repository was checked."""
    return resolve(model, models_file).source


def base_kwargs(model: str, models_file: str | None = None) -> dict[str, Any]:
    """`from_pretrained` keywords of a base model: revision and offline switch for hub ids,
    `trust_remote_code` as its spec says."""
    return resolve(model, models_file).kwargs


def load_tokenizer(model: str | Base, models_file: str | None = None) -> Any:
    """The base model's tokenizer with the chat template the `hf` backend plays with (the spec's
    `chat_template`, the tokenizer's own, or the plain one for base models), so a model is
    trained on exactly the text it is prompted with."""
    from transformers import AutoTokenizer

    from sparring.models.hf_load import chat_template

    base = model if isinstance(model, Base) else resolve(model, models_file)
    tokenizer = AutoTokenizer.from_pretrained(base.tokenizer_source(), **base.kwargs)
    tokenizer.chat_template = chat_template(tokenizer, base.args.get("chat_template"))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def use_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def load_policy(settings: TrainSettings, trainable: bool = True) -> tuple[Any, Any]:
    """(model, tokenizer): the base, with `settings.adapter` loaded when given (trainable, so that
    its previous weights become the DPO reference), ready for a TRL trainer."""
    import torch
    from transformers import AutoModelForCausalLM

    models_file = settings.models_file
    base = resolve(settings.model, models_file)  # once: the registry and the hub are read here only
    kwargs: dict[str, Any] = dict(base.kwargs)
    if use_cuda():
        kwargs["dtype"] = torch.bfloat16
        if settings.quantization:
            from accelerate import PartialState
            from transformers import BitsAndBytesConfig

            kwargs["quantization_config"] = (
                BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16)
                if settings.quantization == "4bit" else BitsAndBytesConfig(load_in_8bit=True))
            # quantized weights cannot be moved after loading: each process loads onto its own GPU
            kwargs["device_map"] = {"": PartialState().local_process_index}
    elif settings.quantization:
        raise ConfigError(f"quantization {settings.quantization!r} (bitsandbytes) needs a CUDA GPU; remove it to "
                          "train in full precision on CPU", key="quantization")
    tokenizer = load_tokenizer(base)
    try:
        model = AutoModelForCausalLM.from_pretrained(base.source, **kwargs)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot load model {settings.model!r}: {str(exc).splitlines()[0][:300]}",
                          key="model") from None
    if settings.adapter:
        from peft import PeftModel

        check_adapter(settings.adapter, settings.model, models_file, source=base.source)
        try:
            model = PeftModel.from_pretrained(model, settings.adapter, is_trainable=trainable)  # type: ignore[assignment]
        except (RuntimeError, ValueError, KeyError) as e:  # size mismatch, target modules not in this base
            raise ConfigError(f"adapter {settings.adapter!r} does not fit the base model {settings.model!r} "
                              f"({str(e).splitlines()[0][:300]}); train it on this base, or set `model` to its base",
                              key="adapter") from None
    return model, tokenizer


# base-model config keys that fix every LoRA weight's shape: an adapter trained on a base that
# differs in one of them cannot be loaded on this one
SHAPE_KEYS = ("model_type", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
              "num_key_value_heads", "vocab_size")


def check_adapter(adapter: str, model: str, models_file: str | None = None, source: str | None = None) -> None:
    """A clear ConfigError (key `adapter`) unless `adapter` is a LoRA adapter directory whose recorded
    base has the same architecture as `model`'s (reads two small JSON files, no weights). A base it
    records but that is not on this machine is not an error: loading then checks every shape.
    `source`: `model` already resolved (`Base.source`)."""
    import json

    path = Path(adapter).expanduser()
    if not path.is_dir():
        raise ConfigError(f"adapter directory {adapter!r} does not exist", key="adapter")
    config_file = path / "adapter_config.json"
    if not config_file.is_file():
        raise ConfigError(f"adapter directory {adapter!r} has no adapter_config.json (not a PEFT adapter; "
                          "give the directory a training run saved its adapter to)", key="adapter")
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except ValueError as e:
        raise ConfigError(f"{config_file}: not valid JSON ({e})", key="adapter") from None
    if config.get("peft_type") != "LORA":
        raise ConfigError(f"{config_file}: peft_type {config.get('peft_type')!r}; only LoRA adapters can be "
                          "trained further", key="adapter")
    recorded = config.get("base_model_name_or_path")
    theirs = _shape(str(recorded)) if recorded else None
    ours = _shape(source or resolve_base(model, models_file))
    if theirs and ours and theirs != ours:
        diff = ", ".join(f"{k} {theirs.get(k)} vs {ours.get(k)}" for k in SHAPE_KEYS if theirs.get(k) != ours.get(k))
        raise ConfigError(f"adapter {adapter!r} is a LoRA of {recorded!r}, not of the base model {model!r} "
                          f"({diff}); train it on this base, or set `model` to its base", key="adapter")


def _shape(source: str) -> dict[str, Any] | None:
    """The shape-defining keys of a model directory's (or a cached hub model's) config.json
    (None: no readable config here)."""
    import json

    path = Path(source).expanduser() / "config.json"
    if not path.is_file():
        from huggingface_hub import try_to_load_from_cache

        from sparring.models.hub import is_hub_id

        cached = try_to_load_from_cache(source, "config.json") if is_hub_id(source) else None
        if not isinstance(cached, str):
            return None
        path = Path(cached)
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return {k: config.get(k) for k in SHAPE_KEYS}


def lora_config(settings: TrainSettings) -> Any:
    """The PEFT config for a new adapter (None: full fine-tuning, or an adapter is continued)."""
    if settings.lora is None or settings.adapter:
        return None
    from peft import LoraConfig

    lo = settings.lora
    return LoraConfig(r=lo.r, lora_alpha=lo.alpha, lora_dropout=lo.dropout, target_modules=lo.target_modules,
                      bias=lo.bias, modules_to_save=lo.modules_to_save, task_type="CAUSAL_LM")


def with_new_adapter(model: Any, config: Any) -> Any:
    """Wrap `model` in a new trainable PEFT adapter (`config` None: returned as it is)."""
    if config is None:
        return model
    from peft import get_peft_model

    return get_peft_model(model, config)


def disable_dropout(model: Any) -> int:
    """Set every dropout of `model` (LoRA's included) to p = 0, as TRL's `disable_dropout` does;
    PyTorch's dropout at p = 0 returns its input without drawing a mask. Returns how many."""
    import torch

    found = [m for m in model.modules() if isinstance(m, torch.nn.Dropout)]
    for m in found:
        m.p = 0.0
    return len(found)


def prepare_training(model: Any, no_dropout: bool, checkpointing: bool) -> None:
    """Ready a loaded policy for training passes: every dropout off (`disable_dropout`), and
    activation checkpointing (non-reentrant: no input needs a gradient) by the name the installed
    transformers gives it (`activation_checkpointing_enable` from 5.24, the deprecated
    `gradient_checkpointing_enable` before)."""
    if no_dropout:
        disable_dropout(model)
    if checkpointing and hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    elif checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})


@contextmanager
def merged_adapter(model: Any, on_switch: Callable[[], None]) -> Iterator[None]:
    """The active LoRA adapter folded into the base weights for the block (PEFT's `merge_adapter`:
    generation then runs plain layers, no LoRA matmuls a token), unmerged after it whatever happens
    (training needs the adapter's own weights for its gradients). `on_switch` runs at both switches,
    e.g. to drop states cached under the other form of the weights."""
    model.merge_adapter()
    on_switch()
    try:
        yield
    finally:
        model.unmerge_adapter()
        on_switch()


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
