"""Numbers as table cells, shared by the HTML report and the web app (one definition, so a value
reads the same in both): `–` for a missing value (None, NaN, an undefined template variable)."""

from __future__ import annotations

import math
from typing import Any

import jinja2


def missing(v: Any) -> bool:
    return v is None or isinstance(v, jinja2.Undefined) or (isinstance(v, float) and not math.isfinite(v))


def fmt_num(v: Any, digits: int = 3) -> str:
    """Integers as they are, floats with `digits` decimals, anything else as text."""
    if missing(v):
        return "–"
    if isinstance(v, (bool, int)):
        return str(v)
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)
