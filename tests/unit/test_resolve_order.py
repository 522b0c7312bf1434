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


# -- include graphs: the search per strongly connected component (issue 24) -------------

def _c(idx: SymbolIndex, module: str, defines: list[str], includes: list[str]) -> None:
    """A C header ``module``.h defining ``defines`` and including ``includes``, in order."""
    syms = [(module, "module", "")] + [(f"{module}.{n}", "function", module) for n in defines]
    idx.add_file(f"{module}.h", module, "c", syms,
                 [ImportRef(module=m, name="*", line=i + 1) for i, m in enumerate(includes)])


def _two_way() -> SymbolIndex:
    """``a`` includes ``b`` then ``c``; ``b`` includes ``a`` then ``d`` (a and b: one component);
    ``c`` and ``d`` both define ``f``; ``e`` (included by ``d``) defines ``g``; ``x`` includes
    ``b`` then ``a``."""
    idx = SymbolIndex()
    _c(idx, "a", [], ["b", "c"])
    _c(idx, "b", [], ["a", "d"])
    _c(idx, "c", ["f"], [])
    _c(idx, "d", ["f"], ["e"])
    _c(idx, "e", ["g"], [])
    _c(idx, "x", [], ["b", "a"])
    return idx


def test_inside_an_include_cycle_each_module_sees_what_its_own_include_order_meets_first():
    # as a preprocessor with include guards reads them: a -> b -> (a: already open) -> d: d.f;
    # b -> a -> (b: open) -> c: c.f; x -> b -> a -> c: c.f. These are also the answers of the
    # walk with a per-walk cycle guard (7b7b129), which the component search replaces.
    want = {"a.f": "d.f", "b.f": "c.f", "x.f": "c.f", "a.g": "e.g", "b.g": "e.g", "x.g": "e.g",
            "a.h": None, "b.h": None, "x.h": None, "c.g": None}
    queries = list(want)
    for order in (queries, queries[::-1], queries[3:] + queries[:3], ["b.h", "a.f", "x.f", "b.f"] + queries):
        idx = _two_way()
        assert {q: idx.resolve_qname(q) for q in order} == want, order
    # a module's answer kept for one entry of the cycle is not another entry's
    idx = _two_way()
    assert idx.resolve_qname("a.f") == "d.f"
    assert idx.resolve_qname("b.f") == "c.f"
    idx = _two_way()
    assert idx.resolve_qname("b.f") == "c.f"
    assert idx.resolve_qname("a.f") == "d.f"


def test_an_include_chain_longer_than_the_depth_limit_is_followed_to_its_end():
    idx = SymbolIndex()
    for i in range(12):  # h0 includes h1 ... h11, which defines f: twelve headers deep
        _c(idx, f"h{i}", ["f"] if i == 11 else [], [f"h{i + 1}"] if i < 11 else [])
    drv = [("drv", "module", ""), ("drv.probe", "function", "drv")]
    idx.add_file("drv.c", "drv", "c", drv, [ImportRef(module="h0", name="*", line=1)])
    assert idx.resolve_qname("h0.f") == "h11.f"
    r = Resolver(idx).resolve_call("drv.c", "drv.probe", "f", "")
    assert (r.target, r.resolution) == ("h11.f", "import")


def _preprocessor_order(includes: dict[str, list[str]], defines: dict[str, set[str]], start: str, name: str):
    """The reference: the first module a preprocessor with include guards opens, from
    ``start``, that defines ``name`` (a module first, then its includes, depth first)."""
    opened: set[str] = set()

    def visit(m: str):
        opened.add(m)
        if name in defines[m]:
            return f"{m}.{name}"
        for inc in includes[m]:
            if inc not in opened:
                found = visit(inc)
                if found:
                    return found
        return None

    return visit(start)


def test_random_include_graphs_with_cycles_answer_as_the_preprocessor_order_in_any_lookup_order():
    import random

    for seed in range(6):
        rnd = random.Random(seed)
        n = 40
        includes = {f"m{i}": [f"m{rnd.randrange(n)}" for _ in range(rnd.randrange(4))] for i in range(n)}
        defines = {f"m{i}": {nm for nm in "fgh" if rnd.random() < 0.08} for i in range(n)}
        queries = [(f"m{i}", nm) for i in range(n) for nm in "fghz"]
        want = {f"{m}.{nm}": _preprocessor_order(includes, defines, m, nm) for m, nm in queries}
        for shuffle in range(3):
            rnd.shuffle(queries)
            idx = SymbolIndex(cache_limit=50 if shuffle == 2 else 1_000_000)  # 50: emptied on the way
            for m, incs in includes.items():
                _c(idx, m, sorted(defines[m]), incs)
            got = {f"{m}.{nm}": idx.resolve_qname(f"{m}.{nm}") for m, nm in queries}
            assert got == want, (seed, shuffle)


def test_a_changed_include_is_seen_by_the_next_lookup():
    idx = _two_way()
    assert idx.resolve_qname("a.f") == "d.f"
    _c(idx, "b", [], ["a"])  # b no longer includes d
    assert idx.resolve_qname("a.f") == "c.f"
    assert idx.resolve_qname("a.g") is None
    _c(idx, "c", ["f"], ["e"])
    assert idx.resolve_qname("a.g") == "e.g"


def test_a_name_bound_only_by_an_alias_is_still_found_through_a_star_import():
    # the star search skips names that no qname ends with and no file imports by name:
    # ``from b import f as g`` makes ``g`` such a name although no qname ends with it
    idx = SymbolIndex()
    idx.add_file("b.py", "b", "python", [("b", "module", ""), ("b.f", "function", "b")], [])
    idx.add_file("a.py", "a", "python", [("a", "module", "")], [ImportRef(module="b", name="f", alias="g", line=1)])
    idx.add_file("c.py", "c", "python", [("c", "module", "")], [ImportRef(module="a", name="*", line=1)])
    assert idx.resolve_qname("c.g") == "b.f"
    assert idx.resolve_qname("c.f") is None  # a imports f as g only
    assert idx.resolve_qname("c.nowhere") is None
