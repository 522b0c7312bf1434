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


def test_a_large_include_cycle_answers_as_the_preprocessor_order_once_its_definer_table_decides():
    # issue 24: a search entering a large include cycle walks it from its own entry; once the
    # searches inside a component took as many steps as a table of its definers costs, a name
    # with one definer (or none) in what the component reaches is answered for every module of
    # the component at once, and only a name with several definers is searched from its entry.
    # Headers 0..119 form one cycle (each includes the next, 119 includes 0) plus random
    # includes, and 120..159 hang below it; names are defined by none, one or several headers.
    import random

    from codesynapse.index import resolve

    for seed in range(4):
        rnd = random.Random(100 + seed)
        n, ring = 160, 120
        includes = {}
        for i in range(n):
            incs = [f"m{(i + 1) % ring}"] if i < ring else []
            incs += [f"m{rnd.randrange(n)}" for _ in range(rnd.randrange(3))]
            includes[f"m{i}"] = incs
        names = [f"n{k}" for k in range(30)]
        defines = {m: set() for m in includes}
        for k, nm in enumerate(names):
            for m in rnd.sample(sorted(includes), k % 4):  # 0, 1, 2 or 3 definers
                defines[m].add(nm)
        queries = [(m, nm) for m in includes for nm in names]
        want = {f"{m}.{nm}": _preprocessor_order(includes, defines, m, nm) for m, nm in queries}
        rnd.shuffle(queries)
        idx = SymbolIndex()
        for m, incs in includes.items():
            _c(idx, m, sorted(defines[m]), incs)
        got = {f"{m}.{nm}": idx.resolve_qname(f"{m}.{nm}") for m, nm in queries}
        assert got == want, seed
        stars = idx._cache[None]
        ring_comp = stars.component("m0")
        table = stars.tables.get((ring_comp, "."))
        assert isinstance(table, resolve._Definers)  # built, and it decided answers:
        decided = {k[1]: v[0] for k, v in idx._cache.items() if isinstance(k, tuple) and k[0] == ring_comp}
        assert any(v is not None for v in decided.values()) and any(v is None for v in decided.values())
        for nm, v in decided.items():  # each decided name has one answer from every ring module
            assert {want[f"m{i}.{nm}"] for i in range(ring)} == {v}


def test_a_definer_table_leaves_a_name_imported_by_name_to_the_search():
    # Python star imports in a cycle where one module also imports the name by name: the
    # named import is a possible answer of its own, so the table does not decide the name
    idx = SymbolIndex()
    idx.add_file("x.py", "x", "python", [("x", "module", ""), ("x.f", "function", "x")], [])
    idx.add_file("y.py", "y", "python", [("y", "module", ""), ("y.f", "function", "y")], [])
    idx.add_file("a.py", "a", "python", [("a", "module", "")],
                 [ImportRef(module="x", name="*", line=1), ImportRef(module="b", name="*", line=2)])
    idx.add_file("b.py", "b", "python", [("b", "module", "")],
                 [ImportRef(module="y", name="f", line=1), ImportRef(module="a", name="*", line=2)])
    from codesynapse.index import resolve

    stars = idx._cache.setdefault(None, resolve._Stars(idx))
    c = stars.component("a")
    assert stars.component("b") == c
    stars.work[c] = 10 ** 9  # as if the component had been walked long enough
    assert idx.resolve_qname("a.f") == "x.f"  # a's include order meets x first
    assert idx.resolve_qname("b.f") == "y.f"  # b imports f from y by name first
    # one component, two answers: the table was built and left f to the search
    assert isinstance(stars.tables[(c, ".")], resolve._Definers) and (c, "f", ".") not in idx._cache


def test_a_name_no_included_module_answers_skips_the_includes_and_answers_as_before():
    # issue 24: once the searches cost a pass over the symbol table, the star graph keeps a
    # map of the names its included modules can answer; a call of a name that only some .c
    # file defines then walks none of the caller's headers. Answers stay the preprocessor
    # order's; ``<stdio.h>`` beside a module ``stdio`` names nothing and keeps the map on.
    import random

    from codesynapse.index import resolve

    rnd = random.Random(7)
    n_h, n_c = 60, 40
    includes = {f"h{i}": [f"h{j}" for j in rnd.sample(range(n_h), 3) if j != i] for i in range(n_h)}
    defines = {f"h{i}": {f"api{k}" for k in range(20) if k % n_h == i % 20 and rnd.random() < 0.5} for i in range(n_h)}
    for i in range(n_c):  # each .c file includes three headers and defines its own functions
        includes[f"s{i}"] = [f"h{j}" for j in rnd.sample(range(n_h), 3)]
        defines[f"s{i}"] = {f"own{i}", f"own{(i + 1) % n_c}"}
    idx = SymbolIndex()
    for m, incs in includes.items():
        if m.startswith("h"):
            _c(idx, m, sorted(defines[m]), incs)
    for i in range(n_c):
        m = f"s{i}"
        syms = [(m, "module", "")] + [(f"{m}.{n}", "function", m) for n in sorted(defines[m])]
        refs = [ImportRef(module=h, name="*", line=k + 1) for k, h in enumerate(includes[m])]
        refs.append(ImportRef(module="stdio.h", name="*", line=9))
        idx.add_file(f"{m}.c", m, "c", syms, refs)
    idx.add_file("tools/stdio.c", "stdio", "c", [("stdio", "module", ""), ("stdio.put", "function", "stdio")], [])
    names = [f"api{k}" for k in range(20)] + [f"own{i}" for i in range(n_c)] + ["nowhere"]
    queries = [(f"s{i}", nm) for i in range(n_c) for nm in names] * 2
    rnd.shuffle(queries)
    got = [idx.resolve_qname(f"{m}.{nm}") for m, nm in queries]
    includes["stdio"] = []
    defines["stdio"] = {"put"}
    assert got == [_preprocessor_order(includes, defines, m, nm) for m, nm in queries]
    stars = idx._cache[None]
    assert stars.reach_names is not None and stars.reach_names is not resolve._ALL_NAMES
    h = hash("own3") & stars.reach_mask  # only s3.c defines own3: no header answers it
    assert not stars.reach_names[h >> 3] & (1 << (h & 7))
    h = hash("api3") & stars.reach_mask
    assert stars.reach_names[h >> 3] & (1 << (h & 7))


def test_edits_that_keep_the_star_graph_answer_as_a_table_built_from_scratch():
    # issue 24 (save to queryable on the kernel): an edit that leaves a file's module and
    # includes alone keeps the star graph, its definer tables and its reachable-name map; the
    # names the edit defines or drops are left to the search. After random such edits (and
    # some that change includes, which make the graph again), every answer is the
    # preprocessor order's on the edited tree.
    import random

    from codesynapse.index import resolve

    for seed in range(4):
        rnd = random.Random(300 + seed)
        n, ring = 120, 80
        includes = {f"m{i}": ([f"m{(i + 1) % ring}"] if i < ring else []) + [f"m{rnd.randrange(n)}"
                                                                          for _ in range(rnd.randrange(3))]
                    for i in range(n)}
        names = [f"n{k}" for k in range(24)]
        defines = {m: {nm for nm in names if rnd.random() < 0.03} for m in includes}
        idx = SymbolIndex()
        for m, incs in includes.items():
            _c(idx, m, sorted(defines[m]), incs)
        queries = [(m, nm) for m in includes for nm in names]
        for m, nm in queries:  # a full index's lookups: the tables and the map pay for themselves
            idx.resolve_qname(f"{m}.{nm}")
        stars = idx._cache[None]
        assert stars.tables and isinstance(stars.reach_names, bytearray)
        kept = 0
        for step in range(40):
            m = f"m{rnd.randrange(n)}"
            if step % 10 == 9:  # an include changes: the graph is made again
                includes[m] = includes[m] + [f"m{rnd.randrange(n)}"]
            else:
                nm = rnd.choice(names + ["fresh"])
                defines[m] = defines[m] ^ {nm}
            before = idx._cache.get(None)
            _c(idx, m, sorted(defines[m]), includes[m])
            kept += idx._cache.get(None) is before is not None
            sample = rnd.sample(queries, 200) + [(m2, "fresh") for m2 in includes]
            want = {f"{a}.{b}": _preprocessor_order(includes, defines, a, b) for a, b in sample}
            got = {f"{a}.{b}": idx.resolve_qname(f"{a}.{b}") for a, b in sample}
            assert got == want, (seed, step)
        assert kept >= 20, kept  # the define-only edits kept the graph (and its tables)
        assert isinstance(idx._cache[None], resolve._Stars)


def test_a_warmed_star_graph_has_its_largest_components_tables_before_any_lookup():
    # issue 24: a daemon started on an index makes the star graph and the tables of its
    # largest components before the first edit (SymbolIndex.warm_stars), instead of paying
    # for them in its first saves; answers stay the preprocessor order's.
    import random

    from codesynapse.index import resolve

    rnd = random.Random(11)
    n, ring = 90, 60
    includes = {f"m{i}": ([f"m{(i + 1) % ring}"] if i < ring else [f"m{i + 1}"] if i % 10 < 4 else [])
                + [f"m{rnd.randrange(n)}" for _ in range(rnd.randrange(2))] for i in range(n)}
    names = [f"n{k}" for k in range(20)]
    defines = {m: {nm for nm in names if rnd.random() < 0.04} for m in includes}
    idx = SymbolIndex()
    for m, incs in includes.items():
        _c(idx, m, sorted(defines[m]), incs)
    idx.warm_stars()
    stars = idx._cache[None]
    big = stars.component("m0")
    assert len(stars.members[big]) >= ring and stars.work == {}  # no search ran
    assert isinstance(stars.tables[(big, ".")], resolve._Definers)
    assert isinstance(stars.reach_names, bytearray)
    queries = [(m, nm) for m in includes for nm in names + ["absent"]]
    rnd.shuffle(queries)
    want = {f"{m}.{nm}": _preprocessor_order(includes, defines, m, nm) for m, nm in queries}
    assert {f"{m}.{nm}": idx.resolve_qname(f"{m}.{nm}") for m, nm in queries} == want
    # the table answered the ring's names with one definer or none: the same lookups on a
    # table that was not warmed walk more steps (before their work pays for a table)
    cold = SymbolIndex()
    for m, incs in includes.items():
        _c(cold, m, sorted(defines[m]), incs)
    assert {f"{m}.{nm}": cold.resolve_qname(f"{m}.{nm}") for m, nm in queries} == want
    assert stars.steps_taken < cold._cache[None].steps_taken, (stars.steps_taken, cold._cache[None].steps_taken)


def test_warming_again_keeps_the_tables_within_the_symbol_tables_size():
    # warm_stars makes definer tables while their entries add up to at most the symbol
    # table's qnames. A second warm (a daemon's live worker started again) counted from zero
    # beside the tables it had made and made the ones left out the first time: the memory
    # bound doubled with each start.
    from codesynapse.index import resolve

    idx = SymbolIndex()
    hub = [f"h{k}" for k in range(10)]
    for k, h in enumerate(hub):  # a chain of headers, each defining 10 names
        _c(idx, h, [f"n{k}_{j}" for j in range(10)], hub[k + 1:k + 2])
    for i in range(20):  # 20 two-header cycles, each including the chain
        _c(idx, f"a{i}", [f"x{i}"], [f"b{i}", "h0"])
        _c(idx, f"b{i}", [], [f"a{i}"])
    idx.warm_stars()
    stars = idx._cache[None]
    first = {k for k, t in stars.tables.items() if isinstance(t, resolve._Definers)}
    assert 0 < len(first) < len(stars.members)  # the bound left some components out
    idx.warm_stars()
    again = {k for k, t in stars.tables.items() if isinstance(t, resolve._Definers)}
    assert again == first


def test_python_edits_keeping_the_star_graph_answer_as_a_fresh_index():
    # the same on Python modules with star imports and named imports (re-exports): after
    # each edit of a module's definitions or named imports, every lookup answers as an index
    # built from scratch on the edited files (lookups ran before, so the star graph, its
    # tables and its map exist and are kept where keep_after allows)
    import random

    rnd = random.Random(5)
    n = 50
    names = [f"n{k}" for k in range(12)]
    mods = {}
    for i in range(n):
        stars = [f"m{rnd.randrange(n)}" for _ in range(rnd.randrange(3))]
        named = [(f"m{rnd.randrange(n)}", rnd.choice(names)) for _ in range(rnd.randrange(3))]
        mods[f"m{i}"] = [sorted({nm for nm in names if rnd.random() < 0.06}), stars, named]

    def put(idx, m):
        defines, stars, named = mods[m]
        syms = [(m, "module", "")] + [(f"{m}.{nm}", "function", m) for nm in defines]
        refs = [ImportRef(module=s, name="*", line=k + 1) for k, s in enumerate(stars)]
        refs += [ImportRef(module=s, name=nm, line=10 + k) for k, (s, nm) in enumerate(named)]
        idx.add_file(f"{m}.py", m, "python", syms, refs)

    idx = SymbolIndex()
    for m in mods:
        put(idx, m)
    queries = [(m, nm) for m in mods for nm in names]
    for m, nm in queries * 3:
        idx.resolve_qname(f"{m}.{nm}")
    kept = 0
    for step in range(30):
        m = f"m{rnd.randrange(n)}"
        if step % 3 == 2:
            mods[m][2] = mods[m][2] + [(f"m{rnd.randrange(n)}", rnd.choice(names))]
        else:
            mods[m][0] = sorted(set(mods[m][0]) ^ {rnd.choice(names)})
        before = idx._cache.get(None)
        put(idx, m)
        kept += before is not None and idx._cache.get(None) is before
        fresh = SymbolIndex()
        for m2 in mods:
            put(fresh, m2)
        sample = rnd.sample(queries, 150)
        assert {f"{a}.{b}": idx.resolve_qname(f"{a}.{b}") for a, b in sample} == \
            {f"{a}.{b}": fresh.resolve_qname(f"{a}.{b}") for a, b in sample}, step
    assert kept, "no edit kept the star graph"
