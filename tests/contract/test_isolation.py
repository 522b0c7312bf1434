"""Two code graphs in one database (one SQLite file, or one Neo4j) with identical paths and
qualified names: every read, write, count and search of one graph id never sees or
touches the other. (Memory isolation between tenants, namespaces and sessions with
identical names is in test_memory_store.py.)"""

from __future__ import annotations

from codesynapse.graph.model import Resolution
from tests.contract.graphdata import B, DUMP, write_sample


def test_two_graph_ids_with_identical_content_never_see_each_other(make_graph_store):
    x = make_graph_store()
    y = make_graph_store()
    write_sample(x)
    write_sample(y)
    x.set_meta({"indexed_commit": "x"})
    y.set_meta({"indexed_commit": "y"})

    # writes, re-resolution and deletes on y
    y.delete_files(["pkg/a.py"])
    y.write_files([(B, 999)])
    y.update_call_targets([(c.id, Resolution("elsewhere", "module", 0.5)) for c in y.all_calls()])
    y.update_import_targets([(i, "elsewhere") for i, _ in y.all_imports()])

    # x is exactly as written
    assert x.dump() == DUMP
    assert (x.get_meta("indexed_commit"), y.get_meta("indexed_commit")) == ("x", "y")
    assert [c.caller for c in x.callers("pkg.a.Child.run")] == ["pkg.b.main"]
    assert y.callers("pkg.a.Child.run") == []
    assert x.count_callers("elsewhere") == 0 and y.count_callers("elsewhere") == 5
    assert x.count_search("run") == 3 and y.count_search("run") == 0
    assert [r.qname for r, _ in x.search("run", 10)] == ["pkg.a.Base.run", "pkg.a.Child.run", "pkg.a.run_all"]
    assert y.search("run", 10) == []
    assert [s.qname for s in y.symbols_by_name("main")] == ["pkg.b.main"]
    assert x.stats().symbols == 9 and y.stats().symbols == 3
    assert [f.path for f in y.files()] == ["big.py", "pkg/b.py"]
    assert y.file("pkg/b.py").mtime_ns == 999 and x.file("pkg/b.py").mtime_ns == 102
    assert y.subtypes("pkg.a.Base") == [] and [i.child for i in x.subtypes("pkg.a.Base")] == ["pkg.a.Child"]
    assert y.symbol_at("pkg/a.py", 6) is None and x.symbol_at("pkg/a.py", 6).qname == "pkg.a.Base.run"
    assert y.unresolved_named("unknown") == [] and len(x.unresolved_named("unknown")) == 1
    assert len(x.calls_touching(["run"])) == 2 and len(y.calls_touching(["run"])) == 1
    # row ids are only meaningful inside their graph: an id of x, asked of y, is never x's row
    y_rows = {s.id: s for s in y.all_symbols()}
    for s in x.all_symbols():
        assert y.symbol_by_id(s.id) == y_rows.get(s.id)


def test_a_store_for_a_new_graph_id_starts_empty(make_graph_store):
    write_sample(make_graph_store())
    fresh = make_graph_store()
    assert fresh.files() == [] and fresh.count_search("run") == 0
    assert fresh.dump() == {"files": [], "symbols": [], "calls": [], "imports": [], "inherits": []}
