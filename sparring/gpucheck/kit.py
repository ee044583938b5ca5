"""`scripts/gpu_check.sh prepare`: the folder that travels to an offline GPU machine.

A cluster's GPU node typically has a CUDA PyTorch image (PyTorch, transformers, PEFT, accelerate
and the scientific stack) but no package index and no Hub. The kit holds what sparring's training
path needs beyond that image: wheels for Python 3.12 / manylinux x86-64 (`--no-deps`, one version
of each: the version installed here, which sparring is tested with), the bundled model's tokenizer
files (the check builds its models from configs, so no weights travel), and `manifest.json`
saying what is in it and what was left out. The set is computed, not listed: sparring's own
requirements and theirs (markers evaluated for the target), minus what the image has (`IMAGE`,
read off the GPU image this project is lent; `--image FILE` gives another list, one name a
line), minus what the GPU path never imports (the API backends' SDKs, GGUF reading). The folder
may not exceed `max_mib` (60 MiB): bitsandbytes (4-bit loading, QLoRA) is carried only if it fits.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from sparring.errors import SparringError

# What the GPU image has (the device's `cuda` image as read on 2026-11-17; the usual CUDA PyTorch
# images have the same core: torch, transformers, peft, accelerate, numpy, scipy, pandas, pyarrow)
IMAGE = """absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs certifi
charset-normalizer click cloudpickle contourpy cycler filelock fonttools frozenlist fsspec grpcio h11 hf-xet
httpcore httpx huggingface-hub idna jinja2 joblib kiwisolver markdown markdown-it-py markupsafe matplotlib mdurl
mpmath multidict networkx numpy packaging pandas peft pillow pip propcache protobuf psutil pyarrow pygments
pyparsing python-dateutil pyyaml regex requests rich safetensors scipy sentencepiece setuptools shellingham six
sympy tensorboard tensorboard-data-server tokenizers torch tqdm transformers triton typer typing-extensions
urllib3 werkzeug wheel xxhash yarl""".split()
NOT_ON_GPU_PATH = {"torch", "openai", "anthropic", "gguf"}  # torch: the image's CUDA build; the rest: never imported
TARGET = {"python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux",
          "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
          "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64"]
OPTIONAL = {"bitsandbytes": "4-bit loading and QLoRA"}


def needed(image: list[str]) -> dict[str, str]:
    """name -> version of every distribution sparring's GPU path needs that `image` lacks."""
    import importlib.metadata as md

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    have = {canonicalize_name(n) for n in image}
    todo = [Requirement(r).name for r in md.requires("sparring") or []
            if (req := Requirement(r)).marker is None or req.marker.evaluate(TARGET)]
    out: dict[str, str] = {}
    while todo:
        name = canonicalize_name(todo.pop())
        if name in out or name in have or name in NOT_ON_GPU_PATH:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            raise SparringError(f"{name} is needed on the GPU machine but is not installed here; install sparring "
                                "with its dependencies (pip install -e .) before `prepare`") from None
        out[name] = dist.version
        for r in dist.requires or []:
            req = Requirement(r)
            if req.marker is None or req.marker.evaluate(TARGET):
                todo.append(req.name)
    return dict(sorted(out.items()))


def download(spec: str, dest: Path) -> Path:
    """One wheel for the target (no dependencies), with pip, from the configured index."""
    before = set(dest.glob("*.whl"))
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
           "--implementation", "cp", *[a for p in PLATFORMS for a in ("--platform", p)], "-d", str(dest), "-q", spec]
    done = subprocess.run(cmd, capture_output=True, text=True)
    new = set(dest.glob("*.whl")) - before
    if done.returncode != 0 or not new:
        raise SparringError(f"pip could not download {spec} for Python 3.12 / manylinux x86-64: "
                            f"{(done.stderr or done.stdout).strip()[-600:]}")
    return new.pop()


def copy_tokenizer(dest: Path) -> list[str]:
    """The bundled tokenizer's files and the marker that makes sparring's cache accept them."""
    from sparring.models.bundled import bundled_tokenizer_dir

    source = bundled_tokenizer_dir()
    dest.mkdir(parents=True, exist_ok=True)
    names = [p.name for p in source.iterdir()
             if p.is_file() and (p.name.startswith(("tokenizer", "special_tokens", "chat_template"))
                                 or p.name == "sparring-bundled.json")]
    for name in names:
        shutil.copy2(source / name, dest / name)
    return sorted(names)


def mib(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def prepare(kit: Path, image: list[str] | None = None, max_mib: float = 60.0) -> dict[str, Any]:
    """Build the kit folder (replacing an earlier one); returns its manifest."""
    image = image or IMAGE
    if kit.exists():
        shutil.rmtree(kit)
    wheels = kit / "wheels"
    wheels.mkdir(parents=True)
    carried = []
    for name, version in needed(image).items():
        path = download(f"{name}=={version}", wheels)
        carried.append({"name": name, "version": version, "file": path.name, "mib": round(path.stat().st_size / 2**20, 2)})
    tokenizer = copy_tokenizer(kit / "tokenizer")
    not_carried = {}
    for name, what in OPTIONAL.items():
        try:
            path = download(name, wheels)
        except SparringError as e:
            not_carried[name] = f"{what}: no wheel for the target ({str(e)[:200]})"
            continue
        if mib(kit) > max_mib:
            size = path.stat().st_size / 2**20
            path.unlink()
            not_carried[name] = f"{what}: its wheel is {size:.0f} MiB, the kit may hold {max_mib:.0f} MiB"
        else:
            carried.append({"name": name, "version": path.name.split("-")[1], "file": path.name,
                            "mib": round(path.stat().st_size / 2**20, 2)})
    total = mib(kit)
    if total > max_mib:
        raise SparringError(f"the kit is {total:.1f} MiB, over the {max_mib:.0f} MiB limit; see {kit}")
    manifest = {"created": time.strftime("%Y-%m-%d %H:%M:%S"), "target": "CPython 3.12, manylinux x86-64",
                "wheels": carried, "not_carried": not_carried, "tokenizer": tokenizer, "image": sorted(image),
                "mib": round(total, 2)}
    (kit / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return manifest
