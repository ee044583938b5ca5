"""Canonical JSON of small key tuples, for ids and seeds that must never change across versions.

`stable_dumps(x)` equals `json.dumps(x, sort_keys=True, default=str)` byte for byte, but runs
several times faster for the plain lists of strings, numbers and booleans that episode ids and
seeds are made of (computed once per scheduled episode, i.e. tens of thousands of times per run).
"""

from __future__ import annotations

import json
import math
from json.encoder import encode_basestring_ascii
from typing import Any


def _enc(x: Any) -> str | None:
    t = type(x)
    if t is str:
        return encode_basestring_ascii(x)
    if t is bool:
        return "true" if x else "false"
    if t is int:
        return str(x)
    if x is None:
        return "null"
    if t is list or t is tuple:
        parts = [_enc(v) for v in x]
        if any(p is None for p in parts):
            return None
        return "[" + ", ".join(parts) + "]"  # type: ignore[arg-type]
    return None  # floats, dicts, other objects: let json decide


def stable_dumps(x: Any) -> str:
    fast = _enc(x)
    return fast if fast is not None else json.dumps(x, sort_keys=True, default=str)


def json_safe(x: Any) -> Any:
    """JSON-safe copy for result files: NaN -> None, tuples -> lists, recursively."""
    if isinstance(x, float):
        return None if math.isnan(x) else x
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    return x
