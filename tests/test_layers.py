"""The import graph of sparring: no cycle, and no import from a lower layer to a higher one, with
the layer order read from docs/architecture.md (written there once). Static: every import
statement counts, at module level or inside a function."""

from __future__ import annotations

import ast
import fnmatch
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "sparring"


def layer_table(text: str) -> list[tuple[str, list[str]]]:
    """(layer, module names) lowest first, from the `<!-- layers -->` block of architecture.md."""
    block = re.search(r"<!-- layers -->\s*```\w*\n(.*?)```\s*<!-- /layers -->", text, re.DOTALL)
    assert block, "docs/architecture.md has no <!-- layers --> block"
    table = []
    for line in block.group(1).splitlines():
        if line.strip():
            name, *modules = line.split()
            table.append((name, modules))
    return table


def layer_of(module: str, table: list[tuple[str, list[str]]]) -> int | None:
    """Index of `module`'s layer: the longest matching name wins (a name covers its submodules)."""
    best: tuple[int, int] | None = None
    for index, (_, names) in enumerate(table):
        for name in names:
            if fnmatch.fnmatchcase(module, name) or fnmatch.fnmatchcase(module, name + ".*"):
                if best is None or len(name) > best[0]:
                    best = (len(name), index)
    return None if best is None else best[1]


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    out = {}
    for path in package.rglob("*.py"):
        name = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def import_graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the sparring modules it imports (`from a.b import c` counts a.b, and a.b.c when
    that is a module), relative imports resolved."""
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            for target in targets:
                if target in mods and target != mod:
                    graph[mod].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), as in
    /work/shared/hooks/import_cycles.py."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def violations(graph: dict[str, set[str]], table: list[tuple[str, list[str]]]) -> list[str]:
    out = []
    for mod, targets in sorted(graph.items()):
        low = layer_of(mod, table)
        for target in sorted(targets):
            high = layer_of(target, table)
            if low is not None and high is not None and high > low:
                out.append(f"{mod} ({table[low][0]}) imports {target} ({table[high][0]})")
    return out


TABLE = layer_table((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"))
MODULES = modules()
GRAPH = import_graph(MODULES)


def test_every_module_has_a_layer():
    missing = [m for m in MODULES if m != "sparring" and layer_of(m, TABLE) is None]
    assert not missing, f"modules in no layer of docs/architecture.md: {missing}"


def test_no_import_cycle():
    assert cycles(GRAPH) == []


def test_no_import_from_a_lower_layer_to_a_higher_one():
    assert violations(GRAPH, TABLE) == []


def test_the_training_library_does_not_import_the_learning_suite():
    """`sparring.learning` (experiments, the arm runner) sits above `sparring.train`: the library
    never reaches into the research suite built on it."""
    assert layer_of("sparring.learning", TABLE) > layer_of("sparring.train", TABLE)
    leaks = sorted((m, t) for m, targets in GRAPH.items() if m.startswith("sparring.train")
                   for t in targets if t.startswith("sparring.learning"))
    assert not leaks, leaks


def test_the_check_finds_an_upward_import_and_a_cycle(tmp_path):
    """The checker itself: a tiny package where the engine imports analysis and two modules
    import each other."""
    pkg = tmp_path / "sparring"
    (pkg / "engine").mkdir(parents=True)
    (pkg / "analysis").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "engine" / "__init__.py").write_text("")
    (pkg / "analysis" / "__init__.py").write_text("")
    (pkg / "engine" / "run.py").write_text("def f():\n    from sparring.analysis.report import write\n")
    (pkg / "analysis" / "report.py").write_text("from . import plots\nwrite = 1\n")
    (pkg / "analysis" / "plots.py").write_text("from sparring.analysis.report import write\n")
    graph = import_graph(modules(pkg))
    assert violations(graph, TABLE) == [
        "sparring.engine.run (engine) imports sparring.analysis.report (analysis)"]
    assert cycles(graph) == [["sparring.analysis.plots", "sparring.analysis.report"]]
    assert layer_of("sparring.games.debate.report", TABLE) == [n for n, _ in TABLE].index("analysis")
    assert layer_of("sparring.games.debate.game", TABLE) == [n for n, _ in TABLE].index("games")
    assert layer_of("sparring.gameapi.game", TABLE) == [n for n, _ in TABLE].index("contract")
    assert layer_of("sparring.games", TABLE) == [n for n, _ in TABLE].index("games")


def test_no_module_outside_the_games_imports_a_game_folder():
    """The layers above learn about a game only through its registration and hooks."""
    leaks = [f"{m} imports {t}" for m, ts in sorted(GRAPH.items()) if not m.startswith("sparring.games")
             for t in sorted(ts) if t.startswith("sparring.games.")]
    assert leaks == []
