"""Decorator-based registries: adding a backend/game/dataset is one module plus `@register`."""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


def closest(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """Closest known names to `name`, for 'did you mean' hints."""
    known = list(known)
    lowered = {k.lower(): k for k in known}
    hits = difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=0.5)
    subs = [k for k in known if name.lower() in k.lower() and k not in hits]
    return [lowered[h] for h in hits] + subs[: max(0, n - len(hits))]


class Registry(Generic[T]):
    """Maps names to classes/factories. `modules` are imported lazily on first lookup so that
    registration happens without import-time side effects in the package root."""

    instances: list[Registry] = []  # every registry, for `registered_modules`

    def __init__(self, kind: str, modules: Iterable[str] = ()):
        Registry.instances.append(self)
        self.kind = kind
        self._items: dict[str, T] = {}
        self._modules = list(modules)
        self._loaded = False
        self._import_errors: dict[str, str] = {}

    def register(self, *names: str) -> Callable[[T], T]:
        def deco(obj: T) -> T:
            for name in names:
                if name in self._items and self._items[name] is not obj:
                    raise ValueError(f"{self.kind} {name!r} registered twice")
                self._items[name] = obj
            return obj

        return deco

    def _load(self) -> None:
        """Import the registering modules once; one broken module must not hide the others."""
        if not self._loaded:
            self._loaded = True
            for mod in self._modules:
                try:
                    importlib.import_module(mod)
                except ImportError as e:  # e.g. an optional dependency missing
                    self._import_errors[mod] = f"{type(e).__name__}: {e}"

    def get(self, name: str) -> T:
        from sparring.errors import UnknownNameError

        self._load()
        if name not in self._items:
            err = UnknownNameError(self.kind, name, list(self._items))
            if self._import_errors:
                broken = "; ".join(f"{m}: {e}" for m, e in self._import_errors.items())
                err.args = (f"{err.args[0]} (some {self.kind} modules failed to import: {broken})",)
            raise err
        return self._items[name]

    def names(self) -> list[str]:
        self._load()
        return sorted(self._items)

    def __contains__(self, name: str) -> bool:
        self._load()
        return name in self._items


def registered_modules() -> list[tuple[str, str | None]]:
    """(name, file) of the modules that registered something (built-in or user plugins, e.g. a
    custom game defined in a test or a research script), so a worker process can import the same
    ones before resolving an experiment — by file when the name alone is not importable there."""
    import sys

    names = {getattr(obj, "__module__", None) for reg in Registry.instances for obj in reg._items.values()}
    out = []
    for name in sorted(n for n in names if n and n not in ("__main__", "__mp_main__")):
        out.append((name, getattr(sys.modules.get(name), "__file__", None)))
    return out


def import_plugin(name: str, file: str | None) -> None:
    """Import `name`, or load it from `file` under that name if it is not on this process's path."""
    import importlib.util
    import sys

    if name in sys.modules:
        return
    try:
        importlib.import_module(name)
        return
    except ImportError:
        if not file:
            raise
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load module {name!r} from {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
