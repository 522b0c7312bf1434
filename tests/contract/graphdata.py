"""A small hand-written code graph with known answers, for the GraphStore contract.

pkg/a.py  module pkg.a: class Base (run), class Child(Base) (run), function run_all
pkg/b.py  module pkg.b: function main, calling pkg.a.run_all (import), Child().run
          (inferred), unknown() (unresolved) and print (external)
big.py    skipped: too large
"""

from __future__ import annotations

from codesynapse.extract.model import CallSite, FileExtraction, ImportRef, Inherit, Symbol
from codesynapse.graph.model import FileRow, Resolution


def sym(qname: str, kind: str, start: int, end: int, parent: str = "", *, is_test: bool = False,
        summary: str = "") -> Symbol:
    name = qname.rsplit(".", 1)[-1]
    return Symbol(qname=qname, name=name, kind=kind, signature=f"{kind} {name}", start_line=start, end_line=end,
                  start_col=0, end_col=10, hash=f"h-{qname}", summary=summary, parent=parent, is_test=is_test)


A = FileExtraction(
    path="pkg/a.py", language="python", hash="ha", size=300, lines=30, module="pkg.a",
    symbols=[
        sym("pkg.a", "module", 1, 30),
        sym("pkg.a.Base", "class", 3, 10, "pkg.a", summary="The base."),
        sym("pkg.a.Base.run", "method", 5, 8, "pkg.a.Base"),
        sym("pkg.a.Child", "class", 12, 20, "pkg.a"),
        sym("pkg.a.Child.run", "method", 14, 18, "pkg.a.Child"),
        sym("pkg.a.run_all", "function", 22, 25, "pkg.a"),
    ],
    calls=[
        CallSite(caller="pkg.a.Child.run", callee="super().run", name="run", line=15, col=8),
        CallSite(caller="pkg.a.run_all", callee="Child", name="Child", line=23, col=4, kind="new"),
    ],
    inherits=[Inherit(child="pkg.a.Child", base="Base", line=12)],
)

B = FileExtraction(
    path="pkg/b.py", language="python", hash="hb", size=200, lines=12, module="pkg.b",
    symbols=[
        sym("pkg.b", "module", 1, 12),
        sym("pkg.b.main", "function", 3, 10, "pkg.b"),
        sym("pkg.b.test_main", "test", 11, 12, "pkg.b", is_test=True),
    ],
    calls=[
        CallSite(caller="pkg.b.main", callee="run_all", name="run_all", line=4, col=4),
        CallSite(caller="pkg.b.main", callee="Child().run", name="run", line=5, col=4, receiver_hint="pkg.a.Child"),
        CallSite(caller="pkg.b.main", callee="unknown", name="unknown", line=6, col=4),
        CallSite(caller="pkg.b.main", callee="print", name="print", line=7, col=4),
        CallSite(caller="pkg.b.test_main", callee="main", name="main", line=12, col=4),
    ],
    imports=[ImportRef(module="pkg.a", name="run_all", line=1), ImportRef(module="os", line=2)],
)

BIG = FileRow(path="big.py", language="python", size=5_000_000, mtime_ns=7, status="skipped",
              reason="too large (5000000 > 1048576 bytes)")

CALL_TARGETS = {
    ("pkg/a.py", 0): Resolution("pkg.a.Base.run", "super", 0.9),
    ("pkg/a.py", 1): Resolution("pkg.a.Child", "constructor", 0.95),
    ("pkg/b.py", 0): Resolution("pkg.a.run_all", "import", 0.95),
    ("pkg/b.py", 1): Resolution("pkg.a.Child.run", "inferred", 0.85),
    # ("pkg/b.py", 2) stays unresolved
    ("pkg/b.py", 3): Resolution("", "external", 0.0),
    ("pkg/b.py", 4): Resolution("pkg.b.main", "local", 1.0),
}
INHERIT_TARGETS = {("pkg/a.py", 0): Resolution("pkg.a.Base", "local", 1.0)}
IMPORT_TARGETS = {("pkg/b.py", 0): "pkg.a.run_all"}


def write_sample(store) -> None:
    store.write_files([(A, 101), (B, 102)], [BIG], call_targets=CALL_TARGETS, inherit_targets=INHERIT_TARGETS,
                      import_targets=IMPORT_TARGETS)


# The whole sample as dump() tuples.
DUMP = {
    "files": [
        ("big.py", "python", "", 5000000, 0, "", "skipped", "too large (5000000 > 1048576 bytes)"),
        ("pkg/a.py", "python", "ha", 300, 30, "pkg.a", "indexed", ""),
        ("pkg/b.py", "python", "hb", 200, 12, "pkg.b", "indexed", ""),
    ],
    "symbols": [
        ("pkg/a.py", "pkg.a", "a", "module", "module a", 1, 30, 0, 10, "h-pkg.a", "", "", 0, 1, "python"),
        ("pkg/a.py", "pkg.a.Base", "Base", "class", "class Base", 3, 10, 0, 10, "h-pkg.a.Base", "The base.",
         "pkg.a", 0, 1, "python"),
        ("pkg/a.py", "pkg.a.Base.run", "run", "method", "method run", 5, 8, 0, 10, "h-pkg.a.Base.run", "",
         "pkg.a.Base", 0, 1, "python"),
        ("pkg/a.py", "pkg.a.Child", "Child", "class", "class Child", 12, 20, 0, 10, "h-pkg.a.Child", "", "pkg.a",
         0, 1, "python"),
        ("pkg/a.py", "pkg.a.Child.run", "run", "method", "method run", 14, 18, 0, 10, "h-pkg.a.Child.run", "",
         "pkg.a.Child", 0, 1, "python"),
        ("pkg/a.py", "pkg.a.run_all", "run_all", "function", "function run_all", 22, 25, 0, 10,
         "h-pkg.a.run_all", "", "pkg.a", 0, 1, "python"),
        ("pkg/b.py", "pkg.b", "b", "module", "module b", 1, 12, 0, 10, "h-pkg.b", "", "", 0, 1, "python"),
        ("pkg/b.py", "pkg.b.main", "main", "function", "function main", 3, 10, 0, 10, "h-pkg.b.main", "", "pkg.b",
         0, 1, "python"),
        ("pkg/b.py", "pkg.b.test_main", "test_main", "test", "test test_main", 11, 12, 0, 10, "h-pkg.b.test_main",
         "", "pkg.b", 1, 1, "python"),
    ],
    "calls": [
        ("pkg/a.py", "pkg.a.Child.run", "super().run", "run", "", 15, 8, "call", "pkg.a.Base.run", "super", 0.9),
        ("pkg/a.py", "pkg.a.run_all", "Child", "Child", "", 23, 4, "new", "pkg.a.Child", "constructor", 0.95),
        ("pkg/b.py", "pkg.b.main", "Child().run", "run", "pkg.a.Child", 5, 4, "call", "pkg.a.Child.run", "inferred",
         0.85),
        ("pkg/b.py", "pkg.b.main", "print", "print", "", 7, 4, "call", "", "external", 0.0),
        ("pkg/b.py", "pkg.b.main", "run_all", "run_all", "", 4, 4, "call", "pkg.a.run_all", "import", 0.95),
        ("pkg/b.py", "pkg.b.main", "unknown", "unknown", "", 6, 4, "call", "", "unresolved", 0.0),
        ("pkg/b.py", "pkg.b.test_main", "main", "main", "", 12, 4, "call", "pkg.b.main", "local", 1.0),
    ],
    "imports": [
        ("pkg/b.py", "os", "", "", 2, ""),
        ("pkg/b.py", "pkg.a", "run_all", "", 1, "pkg.a.run_all"),
    ],
    "inherits": [
        ("pkg/a.py", "pkg.a.Child", "Base", "inherits", 12, "pkg.a.Base", "local", 1.0),
    ],
}
