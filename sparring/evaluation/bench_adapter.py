"""`sparring bench MODEL --adapter DIR`: the model with a trained LoRA adapter, as a model of its own.

The games resolve models by name through a models file, so the adapted model becomes an entry
`MODEL+DIRNAME` (the base spec with `adapters: {adapter: DIR}, default_adapter: adapter`, the
shape the learning suite registers its `MODEL@STAGE` adapters in) written to `OUTPUT/models.yaml`
together with the entries of the user's `--models-file`. Both the games and the statscore then
play it: the games through the hf backend's adapter switch, lm-eval through `HFLM(peft=DIR)`.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from sparring.errors import SparringError

ADAPTER = "adapter"


def adapted_models(models: list[str], adapter: str, models_file: str | None, out: Path) -> tuple[list[str], str]:
    """(the adapted model names, the models file that defines them) for `models` with `adapter`."""
    from sparring.config_io import read_yaml
    from sparring.models.registry import load_model_specs, resolve_name

    path = Path(adapter).expanduser().resolve()
    if not (path / "adapter_config.json").is_file():
        raise SparringError(f"--adapter {adapter}: not an adapter directory (no adapter_config.json)")
    specs = load_model_specs(models_file)
    entries: dict[str, Any] = {}
    if models_file:
        entries.update((read_yaml(Path(models_file).expanduser()) or {}).get("models") or {})
    names = []
    for model in models:
        spec = specs[resolve_name(model, specs)]
        if spec.backend != "hf":
            raise SparringError(f"--adapter: model {model!r} uses the {spec.backend!r} backend; a LoRA adapter "
                                "plays on a local transformers model (backend hf)")
        args = copy.deepcopy(spec.args)
        args["adapters"] = {**(args.get("adapters") or {}), ADAPTER: str(path)}
        args["default_adapter"] = ADAPTER
        name = f"{spec.name}+{path.name}"
        entries[name] = {"backend": "hf", "args": args, "sampling": dict(spec.sampling),
                         "metadata": {"description": f"{spec.name} with the LoRA adapter {path.name}"}}
        names.append(name)
    out.mkdir(parents=True, exist_ok=True)
    target = out / "models.yaml"
    target.write_text(yaml.safe_dump({"models": entries}, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return names, str(target)


__all__ = ["adapted_models"]
