"""The LSP layer converts and calls services (issue 23 #1, "custom and standard requests take
the same path"): no handler module reads the graph store itself, nor reaches into the method
table's privates; each asks the App's services (``app.services``)."""

from __future__ import annotations

import ast
from pathlib import Path

import codesynapse.lsp as lsp

LSP = Path(lsp.__file__).parent


def _reaches(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    reaches = [(n.lineno, ast.unparse(n)) for n in ast.walk(tree)
               if isinstance(n, ast.Attribute) and n.attr in ("store", "_ctx")]
    imports = [(n.lineno, n.module or "") for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
               and (n.module or "").startswith(("codesynapse.store", "codesynapse.graph.deps"))]
    privates = [(n.lineno, f"{n.module}.{a.name}") for n in ast.walk(tree)
                if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("codesynapse.")
                for a in n.names if a.name.startswith("_")]
    return reaches + imports + privates


def test_no_lsp_module_touches_the_store():
    found = {p.name: r for p in sorted(LSP.glob("*.py")) if (r := _reaches(p))}
    assert found == {}


def test_the_reader_sees_a_store_reach(tmp_path):
    """The check itself: the shapes of reach that the LSP layer had before (issue 23)."""
    src = ("from codesynapse.context.deps import _stale\n"
           "from codesynapse.graph.deps import supported\n"
           "def f(ls):\n    return ls.app.store.findings('a.py')\n")
    p = tmp_path / "sample.py"
    p.write_text(src)
    found = _reaches(p)
    assert sorted(r[1] for r in found) == ["codesynapse.context.deps._stale", "codesynapse.graph.deps",
                                           "ls.app.store"]
