"""Imports run one way (STYLE.md, habit 12): no import cycle among the server's modules.

The import graph is read from the source (``ast``), counting every import statement: those
at module level and those inside functions and methods (an import inside a function hides a
cycle from Python at start, not from the design). ``from pkg import name`` is an edge to
``pkg.name`` when that is a module, else to ``pkg``. Each cycle found is listed as a path of
modules, ``a -> b -> a``.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "codesynapse"
SRC = Path(__file__).resolve().parents[2] / "server" / PACKAGE

# Known cycles allowed for now: none (issue 23 removed the last two, store/hugegraph graph <->
# deps and bench accuracy <-> accuracy_lsp). A row names a cycle as a set of modules; the test
# fails on a row that no longer names a cycle, so this list only shrinks.
KNOWN: frozenset[frozenset[str]] = frozenset()


def module_names() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imported(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The server modules that ``module`` imports anywhere in its source."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.name
                while name and name not in modules:  # import a.b.c where c is a name: a.b
                    name = name.rpartition(".")[0]
                if name:
                    out.add(name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in modules:
                    out.add(sub)
                elif target in modules:
                    out.add(target)
    out.discard(module)
    return out


def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    return {m: imported(m, p, modules) for m, p in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan), as a
    path that starts and ends at the component's first module in name order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    comps: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted((_path_in(graph, comp) for comp in comps), key=lambda p: p[0])


def _path_in(graph: dict[str, set[str]], comp: set[str]) -> list[str]:
    """The shortest cycle through the component's first module (breadth first)."""
    start = min(comp)
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & comp):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, v, start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no cycle through {start} in {sorted(comp)}")


def test_the_graph_sees_imports_inside_functions():
    """The reader itself: a function-level import is an edge (``cli`` imports ``lsp.server``
    only inside ``cmd_serve``), and so are ``from pkg import module`` and a package's
    ``__init__``."""
    graph = import_graph()
    assert "codesynapse.lsp.server" in graph["codesynapse.cli"]
    assert "codesynapse.lsp.navigation" in graph["codesynapse.lsp.server"]  # from codesynapse.lsp import …
    assert "codesynapse.extract.engine" in graph["codesynapse.extract"]


def test_cycles_finds_a_cycle_and_names_its_path():
    graph = {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a", "p.d"}, "p.d": set()}
    assert cycles(graph) == [["p.a", "p.b", "p.c", "p.a"]]
    assert cycles({"p.a": {"p.b"}, "p.b": set()}) == []


def test_no_import_cycle_among_server_modules():
    found = cycles(import_graph())
    unknown = [c for c in found if frozenset(c) not in KNOWN]
    assert not unknown, "import cycles:\n" + "\n".join(" -> ".join(c) for c in unknown)


def test_known_cycles_still_exist():
    """A known cycle that is gone must leave the allow-list (it only shrinks)."""
    found = {frozenset(c) for c in cycles(import_graph())}
    gone = [sorted(k) for k in KNOWN if k not in found]
    assert not gone, f"no longer cycles, remove from KNOWN: {gone}"
