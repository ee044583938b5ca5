"""A local model behind an OpenAI-compatible endpoint, served by transformers' own server
(`transformers serve`, transformers 5): the bundled model, any `hf` model of the registry or a
directory, with a trained LoRA adapter merged in. `sparring models serve` runs it.

Why: verifiers' `vf-eval`, prime-rl's evaluation and sparring's own `openai` backend all speak to an
OpenAI endpoint; without one, evaluating the bundled model or a trained adapter there meant writing
a server. transformers already ships one (FastAPI + uvicorn), so sparring only prepares what it
serves: the model's local directory (the bundled GGUF converted once; an adapter merged into its
base) under the name clients ask for. `transformers serve DIR` pins the server to the model id
`DIR`; the served name is a link to the directory, in a folder the server runs in, so a client asks
for `smollm2-135m` rather than a path of this machine.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from sparring.errors import SparringError


@dataclass(frozen=True)
class Served:
    """What one server serves: the model id clients send, the directory it loads, the folder the
    server runs in (where the id is a link to the directory)."""

    name: str
    directory: Path
    folder: Path

    def command(self, host: str, port: int, device: str = "auto") -> list[str]:
        """The `transformers serve` command line (run it with `cwd=self.folder`)."""
        exe = shutil.which("transformers") or str(Path(sys.executable).parent / "transformers")
        return [exe, "serve", self.name, "--host", host, "--port", str(port), "--device", device]


def _safe(name: str) -> str:
    """A served name usable as one path component (and so as a model id the server resolves)."""
    clean = re.sub(r"[^A-Za-z0-9._@+-]+", "-", name).strip("-.")
    if not clean:
        raise SparringError(f"served name {name!r}: use letters, digits and . _ @ + -")
    return clean


def prepare(model: str, adapter: str | Path | None = None, name: str | None = None,
            models_file: str | None = None, folder: Path | None = None) -> Served:
    """The local directory of `model` (a registry name, a Hugging Face id or a directory; the
    bundled model converted once), with `adapter` merged in when given, linked as `name` (default:
    the model's name, or MODEL+ADAPTER-DIR-NAME) in `folder` (default: sparring's cache). Loads
    weights only to merge."""
    from sparring.models.bundled import cache_dir
    from sparring.train.policy import resolve

    if adapter is not None and not (Path(adapter) / "adapter_config.json").is_file():
        raise SparringError(f"{adapter} is not an adapter directory (no adapter_config.json)")
    base = resolve(model, models_file)
    own = Path(model).expanduser().name if Path(model).expanduser().is_dir() else model  # a directory: its name
    served = _safe(name or (f"{own}+{Path(adapter).resolve().name}" if adapter is not None else own))
    folder = folder or cache_dir() / "serve"
    folder.mkdir(parents=True, exist_ok=True)
    directory = Path(base.source)
    if adapter is not None:
        from sparring.train.merge import merge_adapter

        directory = folder / ".merged" / served  # a served name never starts with "." (`_safe`)
        if directory.exists():
            shutil.rmtree(directory)
        merge_adapter(adapter, directory, base=base.source)
    elif not directory.is_dir():  # a hub id: the server downloads it itself, by that id
        return Served(base.source, directory, folder)
    link = folder / served  # a link this function made before (the served name is ours to replace)
    if link.is_symlink():
        link.unlink()
    link.symlink_to(directory.resolve(), target_is_directory=True)
    return Served(served, directory, folder)


def wait_ready(base_url: str, timeout_s: float = 120.0, process: subprocess.Popen | None = None) -> None:
    """Block until the server at `base_url` (…/v1) lists its models; a clear error if it exits or
    does not answer in time."""
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise SparringError(f"the model server exited (code {process.returncode}) before it answered")
        try:
            if httpx.get(f"{base_url}/models", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SparringError(f"the model server at {base_url} did not answer within {timeout_s:.0f} s")


def models_entry(served: Served, host: str, port: int) -> dict:
    """A models-file entry that plays through the endpoint with sparring's `openai` backend."""
    return {"backend": "openai",
            "args": {"model": served.name, "base_url": f"http://{host}:{port}/v1", "concurrency": 4,
                     "supports_prefill": False},
            "metadata": {"description": f"{served.name} served by `sparring models serve` (transformers serve)"}}
