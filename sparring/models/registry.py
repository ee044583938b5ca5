"""Named model specs: the shipped `configs/models.yaml` merged with the user's own files.

Why a registry: experiment configs, the CLI and the trainers refer to models by a short name
("smollm2-135m", "gpt-4o-mini", "my-dpo-round-2"); what that name means — backend, arguments,
default sampling — lives in one place that the user can extend or override without editing the
package. Everything is validated when loaded (including backend arguments, without building the
model), so a typo fails at once with the file and the key path, not minutes into a run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sparring.config_io import format_validation_error, read_yaml, validate
from sparring.errors import ConfigError, UnknownNameError
from sparring.models.base import BACKENDS, Model
from sparring.models.spec import ModelMetadata, ModelSpec
from sparring.types import Sampling, Strict

ENV_VAR = "SPARRING_MODELS"
SHIPPED = "models.yaml"


def shipped_models_file() -> Path:
    """The models file shipped inside the package (configs/ ships as package data)."""
    return Path(str(resources.files("sparring") / "configs" / SHIPPED))


def shipped_experiments() -> Path:
    """The packaged experiment configs. A relative `models_file` is also looked up here, so
    `models_file: models/scripted.yaml` (the scripted partners and judges) works from any config as
    it does from the shipped ones."""
    return Path(str(resources.files("sparring") / "configs" / "experiments"))


# Backend modules that failed to import (module -> error), named in "unknown backend" errors.
def backend_class(name: str, *, file: str | None = None, key: str | None = None) -> type[Model]:
    """The backend registered under `name`, or a ConfigError listing the known backends."""
    if name in BACKENDS:
        return BACKENDS.get(name)
    known = ", ".join(BACKENDS.names())
    hint = "".join(f"; {m} could not be imported ({err})" for m, err in BACKENDS.import_errors().items())
    raise ConfigError(f"unknown backend {name!r}; known backends: {known}{hint}", file=file, key=key)


class _ModelsFile(Strict):
    """Top level of a models file; entries are validated one by one for precise key paths."""

    models: dict[str, Any] | None = None


def _read_file(path: Path) -> dict[str, ModelSpec]:
    file = str(path)
    raw = read_yaml(path)
    top = validate(_ModelsFile, raw, file=file)
    specs: dict[str, ModelSpec] = {}
    for name, entry in (top.models or {}).items():
        prefix = f"models.{name}"
        if not isinstance(name, str) or not name.strip():
            raise ConfigError("model names must be non-empty strings", file=file, key=prefix)
        if not isinstance(entry, dict):
            raise ConfigError("expected a mapping with 'backend', 'args', 'sampling', 'aliases', 'metadata'",
                              file=file, key=prefix)
        for reserved in ("name", "source"):
            if reserved in entry:
                raise ConfigError(f"{reserved!r} is set by the loader (the entry's key / file); remove it",
                                  file=file, key=f"{prefix}.{reserved}")
        spec = validate(ModelSpec, entry, file=file, prefix=prefix)
        spec = spec.model_copy(update={"name": name, "source": file})
        validate_spec(spec, prefix=prefix)
        specs[name] = spec
    return specs


def validate_spec(spec: ModelSpec, prefix: str | None = None) -> None:
    """Check `sampling` and the backend `args` without instantiating (loading) the model."""
    prefix = prefix or f"models.{spec.name}"
    validate(Sampling, spec.sampling, file=spec.source, prefix=f"{prefix}.sampling")
    if spec.backend not in BACKENDS and BACKENDS.import_errors():
        # Possibly the backend of a module that failed to import (missing SDK): keep the spec so
        # the other models stay usable; create_model reports the import failure.
        return
    cls = backend_class(spec.backend, file=spec.source, key=f"{prefix}.backend")
    try:
        validate(cls.Args, spec.args, file=spec.source, prefix=f"{prefix}.args")
    except ConfigError as e:
        if e.file is not None:
            raise
        # raised by a backend's own check (an inline api_key): add where it was written
        raise ConfigError(e.message, file=spec.source, key=f"{prefix}.args.{e.key or ''}".rstrip(".")) from None


def _user_files(user_file: str | Path | None) -> list[Path]:
    if user_file is not None:
        return [Path(user_file).expanduser()]
    env = os.environ.get(ENV_VAR, "")
    return [Path(p).expanduser() for p in env.split(os.pathsep) if p.strip()]


def load_model_specs(user_file: str | Path | None = None) -> dict[str, ModelSpec]:
    """Shipped specs overridden (whole entries) by the user's file — `user_file`, else the
    `SPARRING_MODELS` environment variable (several files separated by the OS path separator,
    later ones win). Raises ConfigError for any invalid entry or ambiguous alias."""
    specs = _read_file(shipped_models_file())
    for path in _user_files(user_file):
        if not path.is_file():
            where = f"{ENV_VAR}={os.environ.get(ENV_VAR)!r}" if user_file is None else "--models-file"
            raise ConfigError(f"models file not found (from {where})", file=str(path))
        specs.update(_read_file(path))
    _check_names(specs)
    return specs


def _check_names(specs: Mapping[str, ModelSpec]) -> None:
    """Every name and alias must resolve to exactly one spec."""
    owner: dict[str, ModelSpec] = dict(specs)
    for spec in specs.values():
        for alias in spec.aliases:
            other = owner.get(alias)
            if other is not None and other is not spec:
                files = spec.source if spec.source == other.source else f"{spec.source} and {other.source}"
                kind = "model" if alias in specs else "an alias of model"
                raise ConfigError(f"alias {alias!r} of model {spec.name!r} is also {kind} {other.name!r} "
                                  f"(in {files})", file=spec.source, key=f"models.{spec.name}.aliases")
            owner[alias] = spec


def hub_spec(name: str) -> ModelSpec:
    """The spec a bare Hugging Face id stands for: the `hf` backend on that model, defaults for
    everything else (a models file entry gives it a revision, sampling defaults, adapters)."""
    return ModelSpec(name=name, backend="hf", args={"model": name},
                     metadata=ModelMetadata(description=f"Hugging Face model {name} (not in a models file)"))


def resolve_name(name: str, specs: Mapping[str, ModelSpec]) -> str:
    """Canonical model name for a name or alias; UnknownNameError lists the closest names. A name
    that is no entry but a Hugging Face id (`owner/name`) is added to `specs` as `hub_spec(name)`,
    so `model: Qwen/Qwen2.5-0.5B-Instruct` works wherever a model name does."""
    from sparring.models.hub import is_hub_id

    if name in specs:
        return name
    for spec_name, spec in specs.items():
        if name in spec.aliases:
            return spec_name
    if isinstance(specs, dict) and is_hub_id(name):
        specs[name] = hub_spec(name)
        return name
    known = list(specs) + [a for s in specs.values() for a in s.aliases]
    raise UnknownNameError("model", name, known, where=shipped_elsewhere(name))


# Shipped models files that are not loaded unless a config names them (`models_file:`, relative to
# the shipped experiment configs), so that a test double never shadows a user's model of that name.
OPTIONAL_MODELS_FILES = ("models/scripted.yaml",)


def shipped_elsewhere(name: str) -> str:
    """Where a model name missing from the loaded files is defined among the shipped optional
    models files (the scripted partners and judges), as a sentence; "" when it is not."""
    for rel in OPTIONAL_MODELS_FILES:
        specs = _read_file(shipped_experiments() / rel)
        if name in specs or any(name in spec.aliases for spec in specs.values()):
            return (f"It is defined in the shipped models file {rel} (scripted partners and judges, loaded only "
                    f"when a config names it): add `models_file: {rel}` to your config (found beside it, in the "
                    "working directory or among the shipped configs).")
    return ""


def get_model_spec(name: str, specs: Mapping[str, ModelSpec] | None = None) -> ModelSpec:
    specs = load_model_specs() if specs is None else specs
    return specs[resolve_name(name, specs)]


def create_model(name_or_spec: str | ModelSpec, specs: Mapping[str, ModelSpec] | None = None,
                 **constructor_kwargs: Any) -> Model:
    """Build (load) the model. `constructor_kwargs` pass objects a YAML file cannot hold, such
    as `input_fn` for the human backend or `records` for replay."""
    spec = get_model_spec(name_or_spec, specs) if isinstance(name_or_spec, str) else name_or_spec
    prefix = f"models.{spec.name}"
    cls = backend_class(spec.backend, file=spec.source, key=f"{prefix}.backend")
    try:
        return cls(name=spec.name, **constructor_kwargs, **spec.args)
    except ValidationError as e:
        raise format_validation_error(e, cls.Args, file=spec.source, prefix=f"{prefix}.args") from None
    except ConfigError as e:
        if e.file is None and spec.source is not None:
            raise ConfigError(f"model {spec.name!r}: {e}", file=spec.source) from None
        raise

