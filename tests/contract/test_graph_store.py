"""The GraphStore contract, run on SQLite and on Neo4j: writes, reads, ordering, counts,
resolution updates, search, stats, dump and limits, on a hand-written graph with known
answers (graphdata.py)."""

from __future__ import annotations

import msgspec
import pytest
from codesynapse.extract.model import (
    CallSite,
    FileExtraction,
    ImportRef,
    Inherit,
    Symbol,
)
from codesynapse.graph.model import FileRow, GraphStats, Resolution
from codesynapse.store.graph import SCHEMA_VERSION, GraphStore

from tests.contract.graphdata import (
    CALL_TARGETS,
    DUMP,
    INHERIT_TARGETS,
    A,
    B,
    write_sample,
)


@pytest.fixture
def g(graph_store):
    write_sample(graph_store)
    return graph_store


def qnames(rows):
    return [r.qname for r in rows]


def sites(calls):
    return [(c.path, c.line, c.caller, c.callee, c.target, c.resolution) for c in calls]


def test_implements_the_protocol(graph_store):
    assert isinstance(graph_store, GraphStore)
    assert graph_store.get_meta("schema_version") == str(SCHEMA_VERSION) == "8"


def test_dump_holds_exactly_what_was_written(g):
    assert g.dump() == DUMP


def test_meta_round_trip_and_overwrite(graph_store):
    assert graph_store.get_meta("policy_fingerprint") is None
    graph_store.set_meta({"policy_fingerprint": "abc", "indexed_commit": "c1"})
    graph_store.set_meta({"indexed_commit": "c2"})
    assert graph_store.get_meta("policy_fingerprint") == "abc"
    assert graph_store.get_meta("indexed_commit") == "c2"


def test_files_in_path_order_with_their_fields(g):
    files = g.files()
    assert [f.path for f in files] == ["big.py", "pkg/a.py", "pkg/b.py"]
    a = g.file("pkg/a.py")
    assert (a.language, a.hash, a.size, a.mtime_ns, a.lines, a.module, a.status, a.reason) == (
        "python", "ha", 300, 101, 30, "pkg.a", "indexed", "")
    assert a.indexed_at > 0
    big = g.file("big.py")
    assert (big.status, big.reason, big.mtime_ns) == ("skipped", "too large (5000000 > 1048576 bytes)", 7)
    assert g.file("nope.py") is None


def test_symbols_in_file_by_position_and_lookups(g):
    assert qnames(g.symbols_in_file("pkg/a.py")) == [
        "pkg.a", "pkg.a.Base", "pkg.a.Base.run", "pkg.a.Child", "pkg.a.Child.run", "pkg.a.run_all"]
    assert qnames(g.symbols_by_qname("pkg.a.Child.run")) == ["pkg.a.Child.run"]
    assert qnames(g.symbols_by_name("run")) == ["pkg.a.Base.run", "pkg.a.Child.run"]
    assert qnames(g.symbols_by_name("run", limit=1)) == ["pkg.a.Base.run"]
    assert g.symbols_by_qname("pkg.a.Missing") == []
    assert qnames(g.all_symbols()) == [
        "pkg.a", "pkg.a.Base", "pkg.a.Base.run", "pkg.a.Child", "pkg.a.Child.run", "pkg.a.run_all",
        "pkg.b", "pkg.b.main", "pkg.b.test_main"]


def test_symbol_rows_keep_every_field_and_id_round_trips(g):
    s = g.symbols_by_qname("pkg.b.test_main")[0]
    assert (s.path, s.name, s.kind, s.signature, s.start_line, s.end_line, s.start_col, s.end_col, s.hash,
            s.summary, s.parent, s.is_test, s.exported, s.language) == (
        "pkg/b.py", "test_main", "test", "test test_main", 11, 12, 0, 10, "h-pkg.b.test_main", "", "pkg.b", True,
        True, "python")
    assert g.symbol_by_id(s.id) == s
    assert g.symbols_by_qname("pkg.a.Base")[0].summary == "The base."


def test_symbol_by_unknown_id_is_none(g):
    ids = {s.id for s in g.all_symbols()}
    assert g.symbol_by_id(max(ids) + 1000) is None


def test_symbol_at_is_the_innermost_non_module_symbol(g):
    assert g.symbol_at("pkg/a.py", 6).qname == "pkg.a.Base.run"
    assert g.symbol_at("pkg/a.py", 11) is None  # between classes: only the module holds it
    assert g.symbol_at("pkg/a.py", 12).qname == "pkg.a.Child"
    assert g.symbol_at("pkg/zzz.py", 1) is None


def test_callers_callees_and_counts(g):
    assert sites(g.callers("pkg.a.Child.run")) == [
        ("pkg/b.py", 5, "pkg.b.main", "Child().run", "pkg.a.Child.run", "inferred")]
    assert g.count_callers("pkg.a.Child.run") == 1
    assert sites(g.callees("pkg.b.main")) == [
        ("pkg/b.py", 4, "pkg.b.main", "run_all", "pkg.a.run_all", "import"),
        ("pkg/b.py", 5, "pkg.b.main", "Child().run", "pkg.a.Child.run", "inferred"),
        ("pkg/b.py", 6, "pkg.b.main", "unknown", "", "unresolved"),
        ("pkg/b.py", 7, "pkg.b.main", "print", "", "external"),
    ]
    assert g.count_callees("pkg.b.main") == 4
    assert [c.line for c in g.callees("pkg.b.main", limit=2)] == [4, 5]
    assert g.callers("pkg.nothing") == [] and g.count_callers("pkg.nothing") == 0


def test_batch_reads_answer_many_keys_at_once(g):
    """symbols_by_qnames, files_by_paths, symbols_in_files, callers_many, callees_many,
    subtypes_many and the relation_counts: each key as its one-key read answers it, keys
    without rows absent (counts: 0), repeated keys once, the per-key limit applied per key."""
    by_q = g.symbols_by_qnames(["pkg.b.main", "pkg.a.Child.run", "pkg.nothing", "pkg.b.main"])
    assert {q: [(r.path, r.kind) for r in rows] for q, rows in by_q.items()} == {
        "pkg.b.main": [("pkg/b.py", "function")], "pkg.a.Child.run": [("pkg/a.py", "method")]}
    assert g.symbols_by_qnames([]) == {}
    files = g.files_by_paths(["pkg/b.py", "big.py", "nope.py"])
    assert {p: (f.hash, f.status) for p, f in files.items()} == {"pkg/b.py": ("hb", "indexed"),
                                                                  "big.py": ("", "skipped")}
    in_files = g.symbols_in_files(["pkg/b.py", "pkg/a.py", "nope.py"])
    assert {p: qnames(rows) for p, rows in in_files.items()} == {
        "pkg/b.py": ["pkg.b", "pkg.b.main", "pkg.b.test_main"],
        "pkg/a.py": ["pkg.a", "pkg.a.Base", "pkg.a.Base.run", "pkg.a.Child", "pkg.a.Child.run", "pkg.a.run_all"]}
    callers = g.callers_many(["pkg.a.Child.run", "pkg.a.run_all", "pkg.b.main", "pkg.nothing"])
    assert {q: sites(rows) for q, rows in callers.items()} == {
        "pkg.a.Child.run": [("pkg/b.py", 5, "pkg.b.main", "Child().run", "pkg.a.Child.run", "inferred")],
        "pkg.a.run_all": [("pkg/b.py", 4, "pkg.b.main", "run_all", "pkg.a.run_all", "import")],
        "pkg.b.main": [("pkg/b.py", 12, "pkg.b.test_main", "main", "pkg.b.main", "local")]}
    callees = g.callees_many(["pkg.b.main", "pkg.a.run_all", "pkg.nothing"], limit=2)
    assert {q: [c.line for c in rows] for q, rows in callees.items()} == {"pkg.b.main": [4, 5],
                                                                          "pkg.a.run_all": [23]}
    assert [c.id for c in g.callees_many(["pkg.b.main"])["pkg.b.main"]] == [c.id for c in g.callees("pkg.b.main")]
    assert {q: [i.child for i in rows] for q, rows in g.subtypes_many(["pkg.a.Base", "pkg.a.Child"]).items()} == {
        "pkg.a.Base": ["pkg.a.Child"]}
    assert g.subtypes_many(["pkg.a.Base"], limit=0) == {}
    assert g.relation_counts(["pkg.a.Child.run", "pkg.b.main", "pkg.nothing"], ["unknown", "print", "run"]) == (
        {"pkg.a.Child.run": 1, "pkg.b.main": 1, "pkg.nothing": 0},
        {"pkg.a.Child.run": 1, "pkg.b.main": 4, "pkg.nothing": 0},  # Child.run calls super().run
        {"unknown": 1, "print": 0, "run": 0})
    assert g.relation_counts([]) == ({}, {}, {})


def test_call_rows_keep_hint_kind_and_confidence(g):
    c = g.callers("pkg.a.Child.run")[0]
    assert (c.name, c.col, c.kind, c.hint, c.confidence) == ("run", 4, "call", "pkg.a.Child", 0.85)
    new = g.callers("pkg.a.Child")[0]
    assert (new.kind, new.resolution, new.confidence) == ("new", "constructor", 0.95)


def test_unresolved_is_not_external(g):
    assert sites(g.unresolved_named("unknown")) == [("pkg/b.py", 6, "pkg.b.main", "unknown", "", "unresolved")]
    assert g.count_unresolved_named("unknown") == 1
    assert g.unresolved_named("print") == [] and g.count_unresolved_named("print") == 0


def test_calls_in_files_keep_the_order_of_paths(g):
    assert [(c.path, c.line) for c in g.calls_in_files(["pkg/b.py", "pkg/a.py"])] == [
        ("pkg/b.py", 4), ("pkg/b.py", 5), ("pkg/b.py", 6), ("pkg/b.py", 7), ("pkg/b.py", 12),
        ("pkg/a.py", 15), ("pkg/a.py", 23)]
    assert g.calls_in_files([]) == []


def test_calls_touching_name_head_and_hint(g):
    # "run": name of two calls; "Child": head of Child().run and the constructor call;
    # the hint name Child also matches Child().run
    touching = g.calls_touching(["run", "Child"])
    assert sorted((c.path, c.line) for c in touching) == [("pkg/a.py", 15), ("pkg/a.py", 23), ("pkg/b.py", 5)]
    ids = [c.id for c in touching]
    assert ids == sorted(ids)
    assert g.calls_touching(["nothing"]) == []


def test_calls_by_hint_name_reads_only_the_hint_index(g):
    # Child().run is hinted pkg.a.Child (hint name Child); "run" names two calls, none hinted run
    assert [(c.path, c.line) for c in g.calls_by_hint_name(["Child", "run"])] == [("pkg/b.py", 5)]
    assert g.calls_by_hint_name(["run"]) == [] and g.calls_by_hint_name([]) == []


def test_all_calls_in_insertion_order(g):
    calls = list(g.all_calls())
    assert [(c.path, c.line) for c in calls] == [
        ("pkg/a.py", 15), ("pkg/a.py", 23), ("pkg/b.py", 4), ("pkg/b.py", 5), ("pkg/b.py", 6), ("pkg/b.py", 7),
        ("pkg/b.py", 12)]
    assert [c.id for c in calls] == sorted(c.id for c in calls)


def test_update_call_targets_resolves_and_unresolves(g):
    unknown = g.unresolved_named("unknown")[0]
    to_child = g.callers("pkg.a.Child.run")[0]
    g.update_call_targets([(unknown.id, Resolution("pkg.a.run_all", "module", 0.7)),
                           (to_child.id, Resolution("", "unresolved", 0.0))])
    assert [(c.line, c.resolution, c.confidence) for c in g.callers("pkg.a.run_all")] == [
        (4, "import", 0.95), (6, "module", 0.7)]
    assert g.callers("pkg.a.Child.run") == []
    assert g.count_unresolved_named("run") == 1
    g.update_call_targets([])  # no-op


def test_imports_inherits_and_subtypes(g):
    assert [(i.path, i.module, i.name, i.line, i.target) for i in g.imports()] == [
        ("pkg/b.py", "pkg.a", "run_all", 1, "pkg.a.run_all"), ("pkg/b.py", "os", "", 2, "")]
    assert g.imports("pkg/a.py") == []
    assert [(i.child, i.base, i.target, i.resolution, i.confidence) for i in g.inherits("pkg/a.py")] == [
        ("pkg.a.Child", "Base", "pkg.a.Base", "local", 1.0)]
    assert [i.child for i in g.subtypes("pkg.a.Base")] == ["pkg.a.Child"]
    assert g.subtypes("pkg.a.Base", limit=0) == []
    assert g.subtypes("pkg.a.Child") == []


def test_update_import_and_inherit_targets_by_row_id(g):
    [(imp_id, _), (os_id, _)] = sorted(g.all_imports(), key=lambda p: p[1].line)
    g.update_import_targets([(os_id, "os")])
    assert [i.target for i in g.imports("pkg/b.py")] == ["pkg.a.run_all", "os"]
    [(inh_id, _)] = list(g.all_inherits())
    g.update_inherit_targets([(inh_id, Resolution("", "unresolved", 0.0))])
    assert g.subtypes("pkg.a.Base") == []
    assert [(i.target, i.resolution) for i in g.inherits()] == [("", "unresolved")]


C = FileExtraction(
    path="pkg/c.py", language="python", hash="hc", size=90, lines=9, module="pkg.c",
    symbols=[Symbol(qname="pkg.c", name="c", kind="module", signature="", start_line=1, end_line=9, start_col=0,
                    end_col=0, hash="x")],
    imports=[ImportRef(module="os.path", name="join", line=1),
             ImportRef(module="collections.abc", name="Mapping", alias="Map", line=2),
             ImportRef(module="json", line=3),
             ImportRef(module="pkg.a", name="*", line=4)],
    inherits=[Inherit(child="pkg.c.X", base="typing.Generic[T]", line=5),
              Inherit(child="pkg.c.Y", base="abc.ABC", line=6),
              Inherit(child="pkg.c.Z", base="Base", line=7)])


def test_imports_touching_paths_names_and_modules(make_graph_store):
    """Only the rows that name what changed: by file, by bound name or alias, by the first or
    last segment of the module, by whole module; each once, in row-id order, ids as in
    all_imports; another graph's rows never."""
    store = make_graph_store()
    store.write_files([(A, 1), (B, 2), (C, 3)])
    make_graph_store().write_files([(B, 2), (C, 3)])  # another graph in the same database

    def imps(rows):
        return [(r.path, r.module, r.name, r.alias) for _, r in rows]

    assert store.imports_touching([], []) == [] and store.imports_touching([], [], []) == []
    assert imps(store.imports_touching(["pkg/c.py", "nope.py"], [])) == [
        ("pkg/c.py", "os.path", "join", ""), ("pkg/c.py", "collections.abc", "Mapping", "Map"),
        ("pkg/c.py", "json", "", ""), ("pkg/c.py", "pkg.a", "*", "")]
    assert imps(store.imports_touching([], ["join"])) == [("pkg/c.py", "os.path", "join", "")]
    assert imps(store.imports_touching([], ["Map"])) == [("pkg/c.py", "collections.abc", "Mapping", "Map")]
    assert imps(store.imports_touching([], ["Mapping"])) == [("pkg/c.py", "collections.abc", "Mapping", "Map")]
    assert imps(store.imports_touching([], ["os"])) == [("pkg/b.py", "os", "", ""), ("pkg/c.py", "os.path", "join", "")]
    assert imps(store.imports_touching([], ["path", "abc"])) == [
        ("pkg/c.py", "os.path", "join", ""), ("pkg/c.py", "collections.abc", "Mapping", "Map")]
    assert imps(store.imports_touching([], ["a"])) == [
        ("pkg/b.py", "pkg.a", "run_all", ""), ("pkg/c.py", "pkg.a", "*", "")]
    assert imps(store.imports_touching([], [], ["pkg.a"])) == [
        ("pkg/b.py", "pkg.a", "run_all", ""), ("pkg/c.py", "pkg.a", "*", "")]
    assert store.imports_touching([], ["collections.abc", "pkg.a", "nothing"], ["pkg", "os.path.join"]) == []
    assert imps(store.imports_touching(["pkg/b.py"], ["json", "os"], ["os.path"])) == [
        ("pkg/b.py", "pkg.a", "run_all", ""), ("pkg/b.py", "os", "", ""), ("pkg/c.py", "os.path", "join", ""),
        ("pkg/c.py", "json", "", "")]
    ids = dict((r, i) for i, r in store.all_imports())
    assert [i for i, r in store.imports_touching(["pkg/b.py", "pkg/c.py"], [])] == sorted(ids.values())
    assert all(ids[r] == i for i, r in store.imports_touching([], ["os", "json", "a"]))


def test_inherits_touching_paths_and_base_segments(make_graph_store):
    """Bases are matched by their last and first segment without generic arguments."""
    store = make_graph_store()
    store.write_files([(A, 1), (B, 2), (C, 3)])
    make_graph_store().write_files([(A, 1), (C, 3)])

    def inh(rows):
        return [(r.path, r.child, r.base) for _, r in rows]

    assert store.inherits_touching([], []) == []
    assert inh(store.inherits_touching(["pkg/a.py"], [])) == [("pkg/a.py", "pkg.a.Child", "Base")]
    assert inh(store.inherits_touching([], ["Generic"])) == [("pkg/c.py", "pkg.c.X", "typing.Generic[T]")]
    assert inh(store.inherits_touching([], ["typing", "abc"])) == [
        ("pkg/c.py", "pkg.c.X", "typing.Generic[T]"), ("pkg/c.py", "pkg.c.Y", "abc.ABC")]
    assert inh(store.inherits_touching([], ["Base"])) == [
        ("pkg/a.py", "pkg.a.Child", "Base"), ("pkg/c.py", "pkg.c.Z", "Base")]
    assert store.inherits_touching(["pkg/b.py"], ["T", "Generic[T]", "typing.Generic", "pkg.a.Base"]) == []
    assert inh(store.inherits_touching(["pkg/a.py"], ["ABC"])) == [
        ("pkg/a.py", "pkg.a.Child", "Base"), ("pkg/c.py", "pkg.c.Y", "abc.ABC")]
    ids = dict((r, i) for i, r in store.all_inherits())
    assert [i for i, _ in store.inherits_touching(["pkg/a.py", "pkg/c.py"], [])] == sorted(ids.values())


def test_stats(g):
    assert g.stats() == GraphStats(
        files=2, skipped=1, symbols=9, calls=7, resolved_calls=5, imports=2, inherits=1,
        languages={"python": 2}, kinds={"class": 2, "function": 2, "method": 2, "module": 2, "test": 1})


def test_empty_graph(graph_store):
    assert graph_store.files() == [] and list(graph_store.all_symbols()) == []
    assert graph_store.stats() == GraphStats(files=0, skipped=0, symbols=0, calls=0, resolved_calls=0, imports=0,
                                             inherits=0, languages={}, kinds={})
    assert graph_store.dump() == {"files": [], "symbols": [], "calls": [], "imports": [], "inherits": []}


def test_rewriting_a_file_replaces_everything_it_owned(g):
    smaller = FileExtraction(path="pkg/a.py", language="python", hash="ha2", size=50, lines=5, module="pkg.a",
                             symbols=[Symbol(qname="pkg.a", name="a", kind="module", signature="", start_line=1,
                                             end_line=5, start_col=0, end_col=0, hash="x")])
    g.write_files([(smaller, 200)])
    assert qnames(g.symbols_in_file("pkg/a.py")) == ["pkg.a"]
    assert g.inherits("pkg/a.py") == [] and g.calls_in_files(["pkg/a.py"]) == []
    assert g.file("pkg/a.py").hash == "ha2"
    # pkg/b.py is untouched: its calls still name targets that no longer exist
    assert g.count_callers("pkg.a.run_all") == 1


def test_rewriting_a_file_with_one_line_more_stores_exactly_the_new_version(g, backend):
    """A one-line edit rewrites the file: the stored rows are exactly the new extraction's
    (moved rows moved, the new function and its call added, the resolution of an unchanged
    call updated); SQLite keeps the rows that did not change, with their ids."""
    before = {s.qname: s.id for s in g.symbols_in_file("pkg/a.py")}
    grown = msgspec.structs.replace(
        A, hash="ha3", lines=31,
        symbols=[msgspec.structs.replace(A.symbols[0], end_line=31), *A.symbols[1:],
                 Symbol(qname="pkg.a.probe", name="probe", kind="function", signature="def probe()", start_line=31,
                        end_line=31, start_col=0, end_col=20, hash="hp")],
        calls=[*A.calls, CallSite(caller="pkg.a.probe", callee="run_all", name="run_all", line=31, col=14)])
    targets = {("pkg/a.py", 0): Resolution("pkg.a.Base.run", "super", 0.9),
               ("pkg/a.py", 1): Resolution("pkg.a.Child", "constructor", 0.9),
               ("pkg/a.py", 2): Resolution("pkg.a.run_all", "local", 1.0)}
    g.write_files([(grown, 300)], call_targets=targets)
    assert [(s.qname, s.start_line, s.end_line) for s in g.symbols_in_file("pkg/a.py")] == [
        ("pkg.a", 1, 31), ("pkg.a.Base", 3, 10), ("pkg.a.Base.run", 5, 8), ("pkg.a.Child", 12, 20),
        ("pkg.a.Child.run", 14, 18), ("pkg.a.run_all", 22, 25), ("pkg.a.probe", 31, 31)]
    assert sites(g.calls_in_files(["pkg/a.py"])) == [
        ("pkg/a.py", 15, "pkg.a.Child.run", "super().run", "pkg.a.Base.run", "super"),
        ("pkg/a.py", 23, "pkg.a.run_all", "Child", "pkg.a.Child", "constructor"),
        ("pkg/a.py", 31, "pkg.a.probe", "run_all", "pkg.a.run_all", "local")]
    assert [c.confidence for c in g.calls_in_files(["pkg/a.py"])] == [0.9, 0.9, 1.0]
    assert [(c.path, c.line) for c in g.callers("pkg.a.run_all")] == [("pkg/a.py", 31), ("pkg/b.py", 4)]
    assert [s.qname for s, _ in g.search("probe", 5)] == ["pkg.a.probe"]
    assert g.stats().symbols == 10 and g.stats().calls == 8
    assert g.inherits("pkg/a.py")[0].target == ""  # written without inherit targets: unresolved
    after = {s.qname: s.id for s in g.symbols_in_file("pkg/a.py")}
    if backend == "sqlite":
        assert {q: after[q] for q in before if q != "pkg.a"} == {q: i for q, i in before.items() if q != "pkg.a"}
        assert after["pkg.a"] != before["pkg.a"]
    g.write_files([(A, 101)], call_targets=CALL_TARGETS, inherit_targets=INHERIT_TARGETS)
    assert g.dump() == DUMP


def test_a_skipped_row_replaces_an_indexed_file_and_back(g):
    g.write_files([], [FileRow(path="pkg/a.py", language="python", status="skipped", reason="binary (NUL byte)")])
    assert g.symbols_in_file("pkg/a.py") == []
    assert (g.file("pkg/a.py").status, g.stats().skipped) == ("skipped", 2)
    g.write_files([(A, 300)])
    assert g.file("pkg/a.py").status == "indexed" and len(g.symbols_in_file("pkg/a.py")) == 6


def test_delete_files(g):
    g.delete_files(["pkg/b.py", "big.py", "never-there.py"])
    assert [f.path for f in g.files()] == ["pkg/a.py"]
    assert g.symbols_by_qname("pkg.b.main") == [] and g.callees("pkg.b.main") == []
    assert g.imports() == []
    g.delete_files([])


def test_restamp_files_moves_the_mtime_of_rows_that_hold_the_hash_only(g):
    g.write_files([], [FileRow(path="bin.py", language="python", hash="hz", size=9, mtime_ns=5, status="skipped",
                               reason="binary (NUL byte)")])
    before = {f.path: f for f in g.files()}
    symbols = g.symbols_in_file("pkg/a.py")
    g.restamp_files([("pkg/a.py", "ha", 9_001),  # holds "ha": restamped
                     ("bin.py", "hz", 9_002),  # skipped for its bytes, which it holds: restamped
                     ("pkg/b.py", "not-its-hash", 9_003),  # another hash: left as it is
                     ("big.py", "", 9_004),  # skipped by its stat, no hash: left as it is
                     ("never-there.py", "ha", 9_005)])
    after = {f.path: f for f in g.files()}
    assert list(after) == ["big.py", "bin.py", "pkg/a.py", "pkg/b.py"]
    assert (after["pkg/a.py"].mtime_ns, after["bin.py"].mtime_ns) == (9_001, 9_002)
    assert msgspec.structs.replace(after["pkg/a.py"], mtime_ns=101) == before["pkg/a.py"]
    assert msgspec.structs.replace(after["bin.py"], mtime_ns=5) == before["bin.py"]
    assert after["pkg/b.py"] == before["pkg/b.py"] and after["big.py"] == before["big.py"]
    assert g.symbols_in_file("pkg/a.py") == symbols
    g.restamp_files([])
    assert g.file("pkg/a.py").mtime_ns == 9_001


def test_written_without_calls_then_insert_calls(graph_store):
    graph_store.write_files([(A, 1), (B, 2)], with_calls=False)
    assert graph_store.stats().calls == 0
    graph_store.insert_calls([("pkg/b.py", B.calls[0], Resolution("pkg.a.run_all", "import", 0.95)),
                              ("pkg/b.py", B.calls[2], Resolution("", "unresolved", 0.0))])
    assert sites(graph_store.callees("pkg.b.main")) == [
        ("pkg/b.py", 4, "pkg.b.main", "run_all", "pkg.a.run_all", "import"),
        ("pkg/b.py", 6, "pkg.b.main", "unknown", "", "unresolved")]
    graph_store.insert_calls([])


def test_missing_resolutions_are_stored_unresolved(graph_store):
    graph_store.write_files([(B, 1)])
    assert {(c.target, c.resolution, c.confidence) for c in graph_store.callees("pkg.b.main")} == {
        ("", "unresolved", 0.0)}
    assert [i.target for i in graph_store.imports()] == ["", ""]


# ---- search ---------------------------------------------------------------------------------

def test_search_ranks_name_matches_first_with_stable_ties(g):
    hits = g.search("run", 10)
    # two exact names tie (same field lengths) and fall back to qualified-name order; the
    # name-term match (run_all → "run all") comes after
    assert [r.qname for r, _ in hits] == ["pkg.a.Base.run", "pkg.a.Child.run", "pkg.a.run_all"]
    scores = [s for _, s in hits]
    assert scores[0] == scores[1] > scores[2] > 0
    assert g.count_search("run") == 3
    assert [r.qname for r, _ in g.search("run", 1, offset=1)] == ["pkg.a.Child.run"]
    assert g.search("run", 0) == []


def test_search_splits_camel_case_and_snake_case(g):
    assert "pkg.a.run_all" in [r.qname for r, _ in g.search("RunAll", 10)]
    assert [r.qname for r, _ in g.search("all", 10)] == ["pkg.a.run_all"]
    assert {r.qname for r, _ in g.search("test_main", 10)} >= {"pkg.b.test_main"}
    assert g.count_search("nothing_like_it") == 0


def test_search_ignores_query_syntax(g):
    for text in ('run" OR *:*', "run) AND (", "NEAR(run", "ft_name:run", "-run", "'; DROP TABLE symbols; --", "",
                 "   ", "***"):
        hits = g.search(text, 10)
        assert all(r.qname.endswith("run") or "run" in r.qname for r, _ in hits), text
        assert g.count_search(text) == len(hits), text


def test_search_folds_case_and_accents(graph_store):
    fx = FileExtraction(path="c.py", language="python", hash="h", size=1, lines=3, module="c", symbols=[
        Symbol(qname="c.Café", name="Café", kind="class", signature="", start_line=1, end_line=2, start_col=0,
               end_col=0, hash="1")])
    graph_store.write_files([(fx, 1)])
    assert [r.qname for r, _ in graph_store.search("cafe", 5)] == ["c.Café"]
    assert [r.qname for r, _ in graph_store.search("CAFÉ", 5)] == ["c.Café"]


# ---- values are data, never query text --------------------------------------------------------

HOSTILE = [
    "x'}) DETACH DELETE n //",
    "x\") MATCH (n) DETACH DELETE n //",
    "x'; DROP TABLE symbols; --",
    "ünïcödé 🚀 \\ \" ' ` $g {graph_id: 'other'}",
]


@pytest.mark.parametrize("value", HOSTILE)
def test_hostile_values_round_trip_as_plain_data(graph_store, value):
    fx = FileExtraction(path=value, language="python", hash=value, size=1, lines=1, module=value, symbols=[
        Symbol(qname=value, name=value, kind="function", signature=value, start_line=1, end_line=1, start_col=0,
               end_col=0, hash=value, summary=value, parent=value)],
        calls=[CallSite(caller=value, callee=value, name=value, line=1, col=0, receiver_hint=value)])
    graph_store.write_files([(fx, 1)], call_targets={(value, 0): Resolution(value, "local", 1.0)})
    graph_store.set_meta({value: value})
    assert graph_store.get_meta(value) == value
    [s] = graph_store.symbols_by_qname(value)
    assert (s.path, s.name, s.signature, s.summary, s.parent) == (value, value, value, value, value)
    assert [c.target for c in graph_store.callers(value)] == [value]
    assert graph_store.unresolved_named(value) == []
    assert len(graph_store.calls_touching([value])) == 1
    assert graph_store.stats().symbols == 1


# ---- limits -----------------------------------------------------------------------------------

def test_limits_zero_one_and_negative(g):
    assert g.callers("pkg.a.run_all", limit=0) == []
    assert g.symbols_by_name("run", limit=0) == []
    assert len(g.callees("pkg.b.main", limit=1)) == 1
    # SQLite reads a negative LIMIT as "no limit"; Neo4j does the same (docs/BACKENDS.md)
    assert len(g.callees("pkg.b.main", limit=-1)) == 4
    assert len(g.unresolved_named("unknown", limit=-1)) == 1


@pytest.fixture
def small_batches(monkeypatch):
    """Shrink the Neo4j adapter's batch sizes so that a few thousand rows cross every
    boundary (statement chunks, insert_calls transactions, pages, calls_touching chunks);
    SQLite's own chunk (300 names) is crossed as it is."""
    from codesynapse.store.neo4j import graph as neo4j

    monkeypatch.setattr(neo4j, "CHUNK", 500)
    monkeypatch.setattr(neo4j, "CALLS_PER_TX", 1_000)
    monkeypatch.setattr(neo4j, "PAGE", 400)
    monkeypatch.setattr(neo4j, "TOUCH_CHUNK", 300)


def test_large_batches_cross_every_chunk_boundary(graph_store, small_batches):
    """2,400 call sites (Neo4j: several UNWIND chunks and three insert_calls transactions),
    700 names in calls_touching and 1,200 paths in delete_files."""
    fx = FileExtraction(path="big/gen.py", language="python", hash="h", size=1, lines=1, module="big.gen",
                        symbols=[Symbol(qname="big.gen.f", name="f", kind="function", signature="", start_line=1,
                                        end_line=1, start_col=0, end_col=0, hash="1")])
    graph_store.write_files([(fx, 1)], with_calls=False)
    items = [("big/gen.py", CallSite(caller="big.gen.f", callee=f"fn{i}", name=f"fn{i}", line=i, col=0),
              Resolution("big.gen.f" if i % 2 else "", "local" if i % 2 else "unresolved", 1.0 if i % 2 else 0.0))
             for i in range(2_400)]
    graph_store.insert_calls(items)
    assert graph_store.count_callees("big.gen.f") == 2_400
    assert graph_store.count_callers("big.gen.f") == 1_200
    assert [c.line for c in graph_store.callers("big.gen.f", limit=3)] == [1, 3, 5]
    touching = graph_store.calls_touching([f"fn{i}" for i in range(0, 1_400, 2)])
    assert len(touching) == 700
    calls = list(graph_store.all_calls())
    assert len(calls) == 2_400 and [c.line for c in calls[:3]] == [0, 1, 2]
    assert [c.line for c in calls[-2:]] == [2_398, 2_399]
    graph_store.update_call_targets([(c.id, Resolution("big.gen.f", "local", 1.0)) for c in calls if not c.line % 2])
    assert graph_store.count_callers("big.gen.f") == 2_400
    graph_store.delete_files(["big/gen.py"] + [f"nothing/{i}.py" for i in range(1_200)])
    assert graph_store.stats().calls == 0 and graph_store.files() == []


def test_all_symbols_pages_through_large_graphs(graph_store, small_batches):
    syms = [Symbol(qname=f"m.s{i:05d}", name=f"s{i:05d}", kind="function", signature="", start_line=i + 1,
                   end_line=i + 1, start_col=0, end_col=0, hash=str(i)) for i in range(1_000)]
    # two files with the same qualified names: pages break inside runs of equal qnames
    graph_store.write_files([(FileExtraction(path=p, language="python", hash="h", size=1, lines=1_000,
                                             module="m", symbols=syms), 1) for p in ("m1.py", "m2.py")])
    got = [(s.qname, s.path) for s in graph_store.all_symbols()]
    assert got == [(f"m.s{i:05d}", p) for i in range(1_000) for p in ("m1.py", "m2.py")]


# ---- schema and errors ------------------------------------------------------------------------

def test_a_graph_of_another_schema_version_is_rebuilt(make_graph_store):
    """The index is derived data: a store that finds another schema version drops the graph
    and starts empty (SQLite drops the whole file, Neo4j that graph id: docs/BACKENDS.md)."""
    first = make_graph_store()
    write_sample(first)
    first.set_meta({"schema_version": "99"})
    again = make_graph_store(first.graph_id)
    assert again.get_meta("schema_version") == str(SCHEMA_VERSION)
    assert again.files() == [] and again.stats().symbols == 0
    write_sample(again)
    assert make_graph_store(first.graph_id).dump() == DUMP  # the current version is kept


def test_concurrent_writers_of_different_files(graph_store):
    from concurrent.futures import ThreadPoolExecutor

    def one(i: int) -> None:
        fx = FileExtraction(path=f"p{i}.py", language="python", hash=str(i), size=1, lines=1, module=f"p{i}",
                            symbols=[Symbol(qname=f"p{i}.f", name="f", kind="function", signature="", start_line=1,
                                            end_line=1, start_col=0, end_col=0, hash=str(i))],
                            calls=[CallSite(caller=f"p{i}.f", callee="g", name="g", line=1, col=0)])
        graph_store.write_files([(fx, i)])

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(one, range(16)))
    assert [f.path for f in graph_store.files()] == sorted(f"p{i}.py" for i in range(16))
    assert graph_store.count_unresolved_named("g") == 16
    ids = [s.id for s in graph_store.all_symbols()]
    assert len(set(ids)) == 16
