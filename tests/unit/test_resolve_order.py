"""SymbolIndex.resolve_qname is a pure function of the reference and the symbol table: the
answer never depends on which names were looked up before (the indexer resolves calls in
batches whose order changes with index.memoryBudget), nor on a walk running at the same time
in another thread (an LSP request's resolve_alias while the indexer resolves).

The fixtures are real symbol tables built with add_file: Python re-exports that form a cycle
(``a`` imports ``f`` from ``b``; ``b`` tries ``a`` first, then ``c``, which defines it), a
chain of re-exports longer than the resolution depth, and C headers that include each other.
Each failed before resolve_qname kept its walk state per walk: the cycle guard's None (and an
answer cut by the depth limit) stayed in the index-wide cache.
"""

from __future__ import annotations

import threading

from codesynapse.extract.model import ImportRef
from codesynapse.index.resolve import Resolver, SymbolIndex


def _py(idx: SymbolIndex, module: str, defines: list[str], imports: list[tuple[str, str]]) -> None:
    """A Python module ``module``.py defining ``defines`` and doing ``from m import n`` for
    each (m, n) of ``imports``, in order."""
    syms = [(module, "module", "")] + [(f"{module}.{n}", "function", module) for n in defines]
    refs = [ImportRef(module=m, name=n, line=i + 1) for i, (m, n) in enumerate(imports)]
    idx.add_file(f"{module}.py", module, "python", syms, refs)


def _cyclic() -> SymbolIndex:
    idx = SymbolIndex()
    _py(idx, "a", [], [("b", "f")])
    # try: from a import f / except ImportError: from c import f
    _py(idx, "b", [], [("a", "f"), ("c", "f")])
    _py(idx, "c", ["f"], [])
    return idx


def test_a_cyclic_re_export_resolves_the_same_whatever_was_asked_first():
    fresh = _cyclic()
    assert fresh.resolve_qname("a.f") == "c.f"
    assert fresh.resolve_qname("b.f") == "c.f"
    other_order = _cyclic()
    # b.f walks a.f while b.f is being resolved: that inner answer must not stay behind
    assert other_order.resolve_qname("b.f") == "c.f"
    assert other_order.resolve_qname("a.f") == "c.f"


def test_an_answer_cut_by_the_depth_limit_does_not_leak_into_a_later_lookup():
    def chain() -> SymbolIndex:
        # m0.f -> m1.f -> ... -> m9.f: ten hops, one more than a lookup may follow
        idx = SymbolIndex()
        for i in range(9):
            _py(idx, f"m{i}", [], [(f"m{i + 1}", "f")])
        _py(idx, "m9", ["f"], [])
        return idx

    fresh = chain()
    assert fresh.resolve_qname("m1.f") == "m9.f"  # nine hops: within the limit
    after = chain()
    assert after.resolve_qname("m0.f") is None  # ten hops: cut
    # m1.f was walked by m0.f one level down, where the cut came one hop earlier
    assert after.resolve_qname("m1.f") == "m9.f"


def _headers() -> SymbolIndex:
    """C: ``io.h`` includes ``sys.h``; ``sys.h`` includes ``io.h`` (a cycle), then ``wr.h``;
    ``wr.c`` defines ``sys_write``; ``drv.c`` includes ``io.h``."""
    idx = SymbolIndex()
    idx.add_file("io.h", "io", "c", [("io", "module", "")], [ImportRef(module="sys", name="*", line=1)])
    idx.add_file("sys.h", "sys", "c", [("sys", "module", "")],
                 [ImportRef(module="io", name="*", line=1), ImportRef(module="wr", name="*", line=2)])
    idx.add_file("wr.c", "wr", "c", [("wr", "module", ""), ("wr.sys_write", "function", "wr")], [])
    idx.add_file("drv.c", "drv", "c", [("drv", "module", ""), ("drv.probe", "function", "drv")],
                 [ImportRef(module="io", name="*", line=1)])
    return idx


def test_calls_through_include_cycles_resolve_alike_in_any_order():
    queries = ["io.sys_write", "sys.sys_write", "io.missing", "sys.missing", "drv.sys_write"]
    want = {"io.sys_write": "wr.sys_write", "sys.sys_write": "wr.sys_write", "io.missing": None,
            "sys.missing": None, "drv.sys_write": "wr.sys_write"}
    for order in (queries, queries[::-1], queries[1:] + queries[:1]):
        idx = _headers()
        assert {q: idx.resolve_qname(q) for q in order} == want, order
    # and through the resolver, as a call in drv.c is resolved after another file's lookup
    idx = _headers()
    assert idx.resolve_qname("sys.sys_write") == "wr.sys_write"
    r = Resolver(idx).resolve_call("drv.c", "drv.probe", "sys_write", "")
    assert (r.target, r.resolution) == ("wr.sys_write", "import")


class _Paused(dict):
    """A symbol table that stops the walk asking for ``key`` until ``go`` is set: a second
    thread's lookup then runs in the middle of the first walk, as an LSP request does while
    the indexer resolves."""

    def __init__(self, *a, key: str, **kw):
        super().__init__(*a, **kw)
        self.key = key
        self.reached = threading.Event()
        self.go = threading.Event()
        self.armed = False

    def __contains__(self, q):
        if self.armed and q == self.key and threading.current_thread() is not threading.main_thread():
            self.reached.set()
            self.go.wait(10)
        return super().__contains__(q)


def test_a_lookup_running_in_another_thread_sees_no_half_walked_answer():
    idx = _cyclic()
    kinds = _Paused(idx.kinds, key="c.f")
    idx.kinds = kinds
    kinds.armed = True
    got: dict[str, str | None] = {}
    t = threading.Thread(target=lambda: got.setdefault("walker", idx.resolve_qname("a.f")))
    t.start()
    try:
        # the walker is inside a.f -> b.f, about to look at c.f
        assert kinds.reached.wait(10)
        assert idx.resolve_qname("a.f") == "c.f"
        assert idx.resolve_qname("b.f") == "c.f"
    finally:
        kinds.go.set()
        t.join(10)
    assert got["walker"] == "c.f"
