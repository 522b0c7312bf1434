"""The LSP layer converts and calls services (issue 23 #1, "custom and standard requests take
the same path"): the standard features' handlers never read the graph store themselves."""

from __future__ import annotations

import ast
from pathlib import Path

import codesynapse.lsp.navigation as navigation


def test_standard_lsp_handlers_do_not_touch_the_store():
    tree = ast.parse(Path(navigation.__file__).read_text())
    reaches = [(n.lineno, ast.unparse(n)) for n in ast.walk(tree)
               if isinstance(n, ast.Attribute) and n.attr in ("store", "_ctx")]
    imports = [(n.lineno, n.module) for n in ast.walk(tree)
               if isinstance(n, ast.ImportFrom) and n.module in ("codesynapse.methods", "codesynapse.store.graph")]
    assert reaches == [] and imports == []
