"""Public data files sparring does not ship (their licenses, or their size), and where to find them.

The Deal or No Deal human dialogues (CC BY-NC 4.0) and contexts come from the authors' repository
(Lewis et al. 2017, facebookresearch/end-to-end-negotiator); QuALITY (CC BY 4.0) from
nyu-mll/quality. A command or experiment that needs one resolves it in this order:

1. the path the user gave (an option, or a config key), a file or a folder holding it;
2. `SPARRING_DATA_DIR`: a folder holding the files under their upstream names;
3. sparring's data cache (`$SPARRING_CACHE_DIR/data`), filled by `sparring data fetch NAME`.

Missing data is one clear message naming the option, the variable and the fetch command.
`fetch` downloads with a progress bar into a temporary file, checks the SHA-256 and only then
moves it into place, so a cut download never leaves a half file behind. The checksums pinned
here are those of the reference copies sparring was tested with; an entry without one is
checked against `--sha256` when given and its checksum is printed either way.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from sparring.errors import ConfigError, SparringError

ENV_DIR = "SPARRING_DATA_DIR"
_DOND = "https://raw.githubusercontent.com/facebookresearch/end-to-end-negotiator/master/src/data/negotiate/"


@dataclass(frozen=True)
class DataFile:
    name: str
    filename: str  # the upstream name: how the file is found in a folder
    url: str
    sha256: str | None
    license: str
    description: str
    unpack: bool = False  # a zip archive, extracted into a folder of that name


CATALOG: dict[str, DataFile] = {f.name: f for f in [
    DataFile("dond-dialogues", "data.txt", _DOND + "data.txt",
             "d91710623bfbd51c8c50873f80f116442713326ca5fc2e863ba9da999a993499", "CC BY-NC 4.0",
             "Deal or No Deal human dialogues, every game from both sides (Lewis et al. 2017)"),
    DataFile("dond-contexts", "selfplay.txt", _DOND + "selfplay.txt",
             "05b7d66c309617f0f1a5562ab8c1d2de933e712a4c8419fd924f4a2c899ab3aa", "CC BY-NC 4.0",
             "Deal or No Deal game contexts used for self-play (4,086 games)"),
    DataFile("dond-val", "val.txt", _DOND + "val.txt",
             "6e61cdbbeb95dfcee037522c7546242dc7d047ee8f2e1a2135db3e03dc3e8f46", "CC BY-NC 4.0",
             "Deal or No Deal validation dialogues"),
    DataFile("dond-test", "test.txt", _DOND + "test.txt",
             "0bba15987ccfd990d8c42b1c8678e02d0d8013ce223e1d1e3e4070d38c05f579", "CC BY-NC 4.0",
             "Deal or No Deal test dialogues"),
    DataFile("quality", "QuALITY.v1.0.1", "https://github.com/nyu-mll/quality/raw/main/data/v1.0.1/QuALITY.v1.0.1.zip",
             None, "CC BY 4.0", "QuALITY v1.0.1 long-document questions (train/dev/test JSONL)", unpack=True),
]}


def entry(name: str) -> DataFile:
    if name not in CATALOG:
        from sparring.errors import UnknownNameError

        raise UnknownNameError("data file", name, list(CATALOG))
    return CATALOG[name]


def cache_root() -> Path:
    from sparring.models.bundled import cache_dir

    return cache_dir() / "data"


def cached_path(name: str) -> Path:
    return cache_root() / name / entry(name).filename


def find(name: str) -> Path | None:
    """The file (or unpacked folder) from `SPARRING_DATA_DIR` or the cache; None if neither has it."""
    e = entry(name)
    folder = os.environ.get(ENV_DIR)
    for candidate in ([Path(folder).expanduser() / e.filename] if folder else []) + [cached_path(name)]:
        if candidate.exists():
            return candidate
    return None


def resolve(name: str, given: str | Path | None = None, option: str = "its path") -> Path:
    """Where data file `name` is: `given` (a file, or a folder holding it), else `find(name)`;
    a clear error naming `option`, `SPARRING_DATA_DIR` and the fetch command if it is nowhere."""
    e = entry(name)
    if given:
        path = Path(given).expanduser()
        if path.is_dir() and (path / e.filename).exists():
            return path / e.filename
        if path.exists():
            return path
        raise ConfigError(f"{e.description}: {path} does not exist (give the file {e.filename} or a folder "
                          f"holding it)", key=option)
    found = find(name)
    if found is not None:
        return found
    raise SparringError(f"{e.description}: not shipped with sparring ({e.license}); give {option}, or set "
                        f"{ENV_DIR} to a folder holding {e.filename}, or fetch it once with `sparring data fetch "
                        f"{name}` (from {e.url})")


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch(name: str, url: str | None = None, sha256: str | None = None, force: bool = False,
          console=None) -> Path:
    """Download `name` into the cache (from `url`: a mirror of the same file), check its
    checksum, unpack an archive; returns the path. Already cached and not `force`: no download."""
    import httpx
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    e = entry(name)
    target = cached_path(name)
    if target.exists() and not force:
        return target
    want = sha256 or e.sha256
    source = url or e.url
    target.parent.mkdir(parents=True, exist_ok=True)
    console = console or Console(stderr=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{e.filename}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, httpx.stream("GET", source, follow_redirects=True, timeout=60) as response:
            if response.status_code != 200:
                raise SparringError(f"cannot fetch {name} from {source}: HTTP {response.status_code}")
            total = int(response.headers.get("Content-Length") or 0) or None
            with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                          TransferSpeedColumn(), console=console, transient=True) as bar:
                task = bar.add_task(f"fetching {name}", total=total)
                for chunk in response.iter_bytes(1 << 16):
                    out.write(chunk)
                    bar.advance(task, len(chunk))
        got = sha256_of(tmp)
        if want and got != want:
            raise SparringError(f"{name}: the file from {source} has SHA-256 {got}, expected {want}; it was not "
                                "kept (a changed upstream file or a bad mirror: check it, then pass --sha256 "
                                f"{got} to accept it)")
        if e.unpack:
            _unpack(tmp, target)
        else:
            os.replace(tmp, target)
        console.print(f"{name}: {target} (sha256 {got}{'' if want else ', not pinned'}; license {e.license})")
        return target
    except httpx.HTTPError as exc:
        raise SparringError(f"cannot fetch {name} from {source}: {exc}") from None
    finally:
        tmp.unlink(missing_ok=True)


def _unpack(archive: Path, target: Path) -> None:
    """Extract a zip into `target` atomically (a temporary folder renamed into place)."""
    import shutil

    work = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    try:
        with zipfile.ZipFile(archive) as z:
            z.extractall(work)
        inner = work / target.name
        src = inner if inner.is_dir() else work
        if target.exists():
            shutil.rmtree(target)
        os.replace(src, target)
    except zipfile.BadZipFile:
        raise SparringError(f"{archive.name}: not a zip archive") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
