"""Decorator-based registries: adding a backend/game/dataset is one module plus `@register`."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Generic, TypeVar

from sparring.errors import SparringError, UnknownNameError, closest  # noqa: F401  (closest: re-exported)

T = TypeVar("T")


class PluginError(SparringError):
    """A registered object (a game, a backend) does not implement its contract."""


class Registry(Generic[T]):
    """Maps names to classes/factories, filled by decorators in the modules that define them.

    Registering modules are found on first lookup, never at import time of the package root:
    - `scan`: packages searched recursively for modules whose source contains `marker` (the
      decorator's name, e.g. "@register_game("), so adding a game, backend or dataset is a new
      module in its folder with no list to edit;
    - `entry_points`: a Python entry-point group (e.g. "sparring.games") through which another
      installed package adds its own (each entry point names a module, imported, or an object,
      loaded: the import registers it);
    - `modules`: explicit module names (rarely needed).
    """

    instances: list[Registry] = []  # every registry, for `registered_modules`

    def __init__(self, kind: str, modules: Iterable[str] = (), *, scan: Iterable[str] = (),
                 marker: str | None = None, entry_points: str | None = None,
                 check: Callable[[Any], list[str]] | None = None):
        Registry.instances.append(self)
        self.kind = kind
        self._items: dict[str, T] = {}
        self._primary: dict[str, str] = {}  # every registered name -> the first name of its object
        self._check = check
        self._modules = list(modules)
        self._scan, self._marker, self._group = list(scan), marker, entry_points
        self._loaded = False
        self._import_errors: dict[str, str] = {}

    def register(self, *names: str) -> Callable[[T], T]:
        """Decorator registering `obj` under `names` (the first is its canonical name, the others
        aliases). With a `check`, an object that does not implement the contract is refused with
        a message naming its module (the plug-in) and what is missing."""
        def deco(obj: T) -> T:
            if self._check is not None:
                problems = self._check(obj)
                if problems:
                    where = f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', obj)}"
                    raise PluginError(f"{self.kind} plug-in {where} (registered as {', '.join(map(repr, names))}) "
                                      f"does not implement the {self.kind} contract: {'; '.join(problems)}")
            for name in names:
                if name in self._items and self._items[name] is not obj:
                    raise ValueError(f"{self.kind} {name!r} registered twice")
                self._items[name] = obj
                self._primary[name] = names[0]
            return obj

        return deco

    def _load(self) -> None:
        """Import the registering modules once; one broken module must not hide the others."""
        if self._loaded:
            return
        self._loaded = True
        modules = list(self._modules)
        for package in self._scan:
            modules += scan_modules(package, self._marker)
        for mod in modules:
            try:
                importlib.import_module(mod)
            except ImportError as e:  # e.g. an optional dependency missing
                self._import_errors[mod] = f"{type(e).__name__}: {e}"
        if self._group:
            for ep in _entry_points(self._group):
                try:
                    ep.load()
                except Exception as e:  # noqa: BLE001 — a broken plugin must not hide the rest
                    self._import_errors[f"{ep.name} ({ep.value})"] = f"{type(e).__name__}: {e}"

    def get(self, name: str) -> T:
        self._load()
        if name not in self._items:
            err = UnknownNameError(self.kind, name, list(self._items))
            if self._import_errors:
                broken = "; ".join(f"{m}: {e}" for m, e in self._import_errors.items())
                err.args = (f"{err.args[0]} (some {self.kind} modules failed to import: {broken})",)
            raise err
        return self._items[name]

    def canonical(self, name: str) -> str:
        """The canonical name of `name` (an alias resolves to the first name its object was
        registered under); an unknown name is returned unchanged."""
        self._load()
        return self._primary.get(name, name)

    def import_errors(self) -> dict[str, str]:
        """Modules (or entry points) that failed to import while filling this registry, with why;
        their names are missing, the rest of the registry works."""
        self._load()
        return dict(self._import_errors)

    def names(self) -> list[str]:
        self._load()
        return sorted(self._items)

    def items(self) -> list[tuple[str, T]]:
        self._load()
        return sorted(self._items.items())

    def __contains__(self, name: str) -> bool:
        self._load()
        return name in self._items


def scan_modules(package: str, marker: str | None) -> list[str]:
    """Dotted names of the modules under `package` (recursively) whose text contains `marker`.

    Reads files instead of importing them, so a scan costs no imports (torch, matplotlib) beyond
    the modules that actually register something.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return []
    out: list[str] = []
    for root in spec.submodule_search_locations:
        base = Path(root)
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(base).with_suffix("")
            if any(not part.isidentifier() for part in rel.parts):
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if marker is None or marker in text:
                parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
                out.append(".".join((package, *parts)))
    return out


def _entry_points(group: str) -> list[Any]:
    from importlib.metadata import entry_points

    return list(entry_points(group=group))


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
