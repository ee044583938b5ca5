"""Where a local model's files come from: sparring's bundled model, a directory, or the Hugging Face Hub.

Hub ids load as in transformers: downloaded on first use into the standard Hugging Face cache
(`HF_HOME`, with the hub's own progress bars) and read from there afterwards. `HF_HUB_OFFLINE=1`
(the hub's variable) or `SPARRING_OFFLINE=1` (sparring's, for the same purpose) keeps everything
offline: only cached files are used. Before transformers loads anything, one small file of the
repository is resolved through `huggingface_hub`, whose typed errors become one clear message
that names the model and what to do (misspelt, gated, private, offline and not cached, no network).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from sparring.errors import ConfigError

OFFLINE_ENV = "SPARRING_OFFLINE"
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_TRUE = ("1", "true", "yes", "on")


def offline() -> bool:
    """True when only cached files may be used (`SPARRING_OFFLINE`, `HF_HUB_OFFLINE` or
    `TRANSFORMERS_OFFLINE` set); read at call time, so a test or a wrapper can switch it."""
    return any(os.environ.get(k, "").strip().lower() in _TRUE
               for k in (OFFLINE_ENV, "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def is_hub_id(name: str) -> bool:
    """`owner/name` that is not an existing path."""
    return bool(_HUB_ID.match(name)) and not Path(name).expanduser().exists()


def _offline_switch() -> str:
    for k in (OFFLINE_ENV, "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(k, "").strip().lower() in _TRUE:
            return k
    return OFFLINE_ENV


def _download_hint(name: str, revision: str | None) -> str:
    rev = f" --revision {revision}" if revision else ""
    return f"`hf download {name}{rev}`"


def explain(exc: Exception, name: str, filename: str, revision: str | None) -> str:
    """One sentence for a failed hub lookup: what is wrong with `name` and what to do."""
    from huggingface_hub import constants
    from huggingface_hub import errors as e

    endpoint = constants.ENDPOINT
    local_missing = isinstance(exc, e.OfflineModeIsEnabled | e.LocalEntryNotFoundError)
    if local_missing and offline():
        return (f"{name!r} is not in the local Hugging Face cache ({constants.HF_HUB_CACHE}) and sparring is "
                f"offline ({_offline_switch()}=1): download it once on a connected machine with "
                f"{_download_hint(name, revision)} (and copy that cache here, or point HF_HOME at it), or unset "
                f"{_offline_switch()}")
    if local_missing:
        return (f"cannot reach {endpoint} to download {name!r}, and it is not in the local Hugging Face cache "
                f"({constants.HF_HUB_CACHE}): check the network (or HF_ENDPOINT), or download it on a connected "
                f"machine with {_download_hint(name, revision)}")
    if isinstance(exc, e.GatedRepoError):
        return (f"{name!r} is a gated model: accept its license at {endpoint}/{name}, then log in with "
                "`hf auth login` or set HF_TOKEN")
    if isinstance(exc, e.RevisionNotFoundError):
        return f"{name!r} has no revision {revision!r} on {endpoint} (give a branch, tag or commit hash)"
    if isinstance(exc, e.RepositoryNotFoundError):
        return (f"no model {name!r} on {endpoint}: check the spelling (owner/name); a private model needs "
                "`hf auth login` or HF_TOKEN")
    if isinstance(exc, e.EntryNotFoundError):
        return (f"{name!r} has no {filename}: not a transformers model repository (a repository of GGUF files "
                "needs `gguf_file:`)")
    return f"cannot download {name!r} from {endpoint}: {str(exc).splitlines()[0][:300]}"


def ensure_available(name: str, filename: str, revision: str | None, key: str) -> None:
    """Resolve one file of hub repository `name` (downloading it unless offline); ConfigError
    naming the model and the remedy when that is impossible."""
    from huggingface_hub import errors as e
    from huggingface_hub import hf_hub_download

    try:
        hf_hub_download(name, filename, revision=revision, local_files_only=offline())
    except e.HFValidationError as exc:
        raise ConfigError(f"{name!r} is not a valid Hugging Face model id ({exc})", key=key) from None
    except Exception as exc:  # typed hub errors, and the HTTP client's own when the network is down
        raise ConfigError(explain(exc, name, filename, revision), key=key) from None


def resolve_source(name: str, key: str, filename: str | None = None, revision: str | None = None) -> str:
    """What to hand `from_pretrained`: a local directory for `bundled:<name>`, an existing path,
    or a hub id whose repository was checked (and its small `filename` fetched) first."""
    from sparring.models.bundled import resolve_bundled

    bundled = resolve_bundled(name)
    if bundled is not None:
        return str(bundled)
    path = Path(name).expanduser()
    if path.exists():
        return str(path)
    if not is_hub_id(name):
        raise ConfigError(f"model directory {name!r} does not exist (and it is not a Hugging Face id owner/name)",
                          key=key)
    ensure_available(name, filename or "config.json", revision, key)
    return name


def load_kwargs(source: str, revision: str | None) -> dict[str, Any]:
    """`from_pretrained` keywords for `source`: the revision and the offline switch for hub ids,
    nothing for local directories."""
    if Path(source).expanduser().exists():
        return {}
    return {"revision": revision, "local_files_only": offline()}
