"""MkDocs hook: a page line `<!-- config: module.Class -->` becomes the table of that pydantic
config's keys (name, type, default, description), read from the model itself at build time, so
the configs reference cannot drift from the code. Nested config models get their own table."""

from __future__ import annotations

import importlib
import re
import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

MARKER = re.compile(r"^<!-- config: ([\w.]+) -->$", re.MULTILINE)


def _type(annotation: Any) -> str:
    """A readable type: `int | None`, `list[str]`, `dict[str, Any]`, a model's name."""
    if isinstance(annotation, type):
        return annotation.__name__
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type(a) for a in args)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(_type(a) for a in args)}]" if args else name
    return str(annotation).replace("typing.", "")


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        try:
            value = field.default_factory()
        except TypeError:
            return "(computed)"
        return "defaults" if isinstance(value, BaseModel) else f"`{value!r}`"
    return "" if field.default is PydanticUndefined else f"`{field.default!r}`"


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for a in typing.get_args(annotation) for m in _models_in(a)]


def table(model: type[BaseModel], seen: set[type] | None = None) -> str:
    """The markdown tables of `model` and of every config model nested in it."""
    seen = seen if seen is not None else set()
    seen.add(model)
    lines = [f"**`{model.__name__}`**" + (f": {model.__doc__.strip().splitlines()[0]}" if model.__doc__ else ""), "",
             "| key | type | default | what |", "|---|---|---|---|"]
    nested: list[type[BaseModel]] = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        text = (field.description or "").replace("|", "\\|").replace("\n", " ")
        kind = _type(field.annotation).replace("|", "\\|")
        lines.append(f"| `{key}` | {kind} | {_default(field).replace('|', chr(92) + '|')} | {text} |")
        nested += [m for m in _models_in(field.annotation) if m not in seen and m.__module__.startswith("sparring")]
    out = "\n".join(lines) + "\n"
    for m in dict.fromkeys(nested):
        if m not in seen:
            out += "\n" + table(m, seen)
    return out


def _resolve(path: str) -> type[BaseModel]:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return MARKER.sub(lambda m: table(_resolve(m.group(1))), markdown)
