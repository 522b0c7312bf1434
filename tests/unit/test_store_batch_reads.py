"""The SQLite store's batch symbol reads and relation counts (one query per chunk of keys)
answer what the one-key reads answer, key by key and in their order, across chunk boundaries."""

from __future__ import annotations

from pathlib import Path

from codesynapse.index.indexer import Indexer
from codesynapse.store.sqlite import graph as sqlite_graph
from codesynapse.store.sqlite.graph import SqliteGraphStore


def test_batch_symbol_reads_equal_the_one_key_reads(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    for f in range(12):
        body = "".join(f"def f{i}(x):\n    return f{i + 1}(x) + print(x)\n\n\nclass C{i}:\n    def m(self):\n        return 1\n\n\n"
                       for i in range(f * 3, f * 3 + 9))  # names shared between files
        (root / f"m{f}.py").write_text(body)
    store = SqliteGraphStore(tmp_path / "g.db", "g")
    Indexer(root, store, None, workers=1).index_tree()
    monkeypatch.setattr(sqlite_graph, "_KEYS_PER_QUERY", 7)  # many chunks, keys split across them
    qnames = sorted({s.qname for s in store.all_symbols()}, reverse=True) + ["m0.nothing"]
    qnames += qnames[:5]  # repeated keys
    got = store.symbols_by_qnames(qnames)
    want = {q: store.symbols_by_qname(q) for q in dict.fromkeys(qnames) if store.symbols_by_qname(q)}
    assert got == want and list(got) == list(want)
    assert sum(len(v) for v in got.values()) == len(list(store.all_symbols()))
    paths = [f"m{f}.py" for f in range(11, -1, -1)] + ["none.py", "m3.py"]
    got_f = store.symbols_in_files(paths)
    want_f = {p: store.symbols_in_file(p) for p in dict.fromkeys(paths) if store.symbols_in_file(p)}
    assert got_f == want_f and list(got_f) == list(want_f)
    names = sorted({c.name for c in store.calls_in_files(paths[:12])}) + ["nothing_named_so"]
    callers, callees, unresolved = store.relation_counts(qnames, names)
    assert callers == {q: store.count_callers(q) for q in dict.fromkeys(qnames)}
    assert callees == {q: store.count_callees(q) for q in dict.fromkeys(qnames)}
    assert unresolved == {n: store.count_unresolved_named(n) for n in names}
    assert any(callers.values()) and any(callees.values())
    store.close()


def _calls_repo(root: Path, callers_of_g: int) -> None:
    root.mkdir(exist_ok=True)
    (root / "lib.py").write_text("def g(x):\n    return x\n\n\ndef h(x):\n    return g(x)\n")
    (root / "use.py").write_text("from lib import g\n\n\n"
                                 + "".join(f"def u{i}(x):\n    return g(x)\n\n\n" for i in range(callers_of_g)))


def test_relation_counts_read_once_and_follow_every_commit(tmp_path: Path) -> None:
    """Counts already read are not counted again while the graph is unchanged, and a commit,
    by this store or by another connection to the file, is seen at once."""
    root = tmp_path / "repo"
    _calls_repo(root, 3)
    store = SqliteGraphStore(tmp_path / "g.db", "g")
    Indexer(root, store, None, workers=1).index_tree()
    assert store.relation_counts(["lib.g", "lib.h"])[0] == {"lib.g": 4, "lib.h": 0}
    seen: list[str] = []
    store._conn().set_trace_callback(seen.append)
    assert store.relation_counts(["lib.g", "lib.h"]) == ({"lib.g": 4, "lib.h": 0}, {"lib.g": 0, "lib.h": 1}, {})
    assert not [s for s in seen if "count(*)" in s]  # answered without counting again
    store._conn().set_trace_callback(None)

    _calls_repo(root, 5)  # this store writes: 5 callers in use.py, h's
    Indexer(root, store, None, workers=1).index_tree()
    assert store.relation_counts(["lib.g"])[0] == {"lib.g": 6} == {"lib.g": store.count_callers("lib.g")}

    other = SqliteGraphStore(tmp_path / "g.db", "g")  # another connection writes
    _calls_repo(root, 1)
    Indexer(root, other, None, workers=1).index_tree()
    assert store.relation_counts(["lib.g"])[0] == {"lib.g": 2} == {"lib.g": other.count_callers("lib.g")}
    other.close()
    store.close()


def test_members_in_files_are_the_file_symbols_of_those_parents_in_file_order(tmp_path: Path, monkeypatch) -> None:
    """``members_in_files``: what ``symbols_in_files`` reads of those files, only the symbols
    whose parent is one of the given ones, in each file's order, across chunk boundaries."""
    root = tmp_path / "repo"
    root.mkdir()
    for f in range(4):
        (root / f"m{f}.py").write_text("".join(
            f"class C{i}:\n    def a(self):\n        return 1\n\n    def b(self):\n        return 2\n\n\n"
            f"def f{i}():\n    return 0\n\n\n" for i in range(6)))
    store = SqliteGraphStore(tmp_path / "g.db", "g")
    Indexer(root, store, None, workers=1).index_tree()
    monkeypatch.setattr(sqlite_graph, "_KEYS_PER_QUERY", 4)  # paths and parents over several reads
    paths = ["m3.py", "m0.py", "none.py", "m2.py"]
    parents = ["m0.C5", "m0.C1", "m3.C2", "m2.C0", "m2.C4", "m0.C3", "m1.C1", "nothing"]
    got = store.members_in_files(paths, parents)
    assert list(got) == ["m3.py", "m0.py", "m2.py"]
    assert [x.qname for x in got["m0.py"]] == ["m0.C1.a", "m0.C1.b", "m0.C3.a", "m0.C3.b", "m0.C5.a", "m0.C5.b"]
    every = store.symbols_in_files(paths)
    assert got == {p: [x for x in rows if x.parent in parents] for p, rows in every.items()}
    assert store.members_in_files(paths, []) == {} == store.members_in_files([], parents)
    store.close()


def test_the_lexical_terms_document_counts_are_read_once_and_follow_every_commit(tmp_path: Path,
                                                                                  monkeypatch) -> None:
    """``_distinctive`` leaves out a term more than ``LEX_COMMON_MIN`` symbols hold: the counts
    it reads are not read again while the file is unchanged, and a commit by another
    connection is seen at once."""
    monkeypatch.setattr(sqlite_graph, "LEX_COMMON_MIN", 2)
    monkeypatch.setattr(sqlite_graph, "LEX_COMMON_SHARE", 0.0)
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def alpha_one():\n    pass\n\n\ndef beta_one():\n    pass\n")
    store = SqliteGraphStore(tmp_path / "g.db", "g")
    Indexer(root, store, None, workers=1).index_tree()
    assert store._distinctive(["alpha", "beta"]) == ["alpha", "beta"]
    seen: list[str] = []
    store._conn().set_trace_callback(seen.append)
    assert store._distinctive(["alpha", "beta"]) == ["alpha", "beta"]
    assert not [s for s in seen if "lex_vocab" in s or "docsize" in s]  # counted once
    store._conn().set_trace_callback(None)
    other = SqliteGraphStore(tmp_path / "g.db", "g")  # another connection: alpha in 3 symbols
    (root / "b.py").write_text("def alpha_two():\n    pass\n\n\ndef alpha_three():\n    pass\n")
    Indexer(root, other, None, workers=1).index_tree()
    assert store._distinctive(["alpha", "beta"]) == ["beta"]
    other.close()
    store.close()


def test_a_term_in_more_than_lex_common_max_symbols_is_left_out_whatever_its_share(tmp_path: Path,
                                                                                    monkeypatch) -> None:
    """On a kernel-size tree 10% of the symbols is a posting list of 250,000 rows: past
    ``LEX_COMMON_MAX`` symbols a term is left out even when its share is under
    ``LEX_COMMON_SHARE``; the rarest term stays when every one is that common."""
    monkeypatch.setattr(sqlite_graph, "LEX_COMMON_MIN", 1)
    monkeypatch.setattr(sqlite_graph, "LEX_COMMON_SHARE", 1.0)  # the share alone keeps every term
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("".join(f"def alpha_{i}():\n    pass\n\n\n" for i in range(3))
                               + "def beta_one():\n    pass\n\n\ndef beta_two():\n    pass\n")
    store = SqliteGraphStore(tmp_path / "g.db", "g")
    Indexer(root, store, None, workers=1).index_tree()
    assert store._distinctive(["alpha", "beta"]) == ["alpha", "beta"]
    monkeypatch.setattr(sqlite_graph, "LEX_COMMON_MAX", 2)
    assert store._distinctive(["alpha", "beta"]) == ["beta"]  # alpha is in 3 symbols
    monkeypatch.setattr(sqlite_graph, "LEX_COMMON_MAX", 1)
    assert store._distinctive(["alpha", "beta"]) == ["beta"]  # both over: the rarest stays
    store.close()


def test_kept_counts_stay_right_when_the_kept_set_overflows(tmp_path: Path, monkeypatch) -> None:
    """Past ``_COUNTS_KEPT`` the kept counts start again; a key kept before that and asked in
    the same call keeps its count (relation counts, and the terms' document counts)."""
    monkeypatch.setattr(sqlite_graph, "_COUNTS_KEPT", 2)
    root = tmp_path / "repo"
    _calls_repo(root, 3)
    (root / "words.py").write_text("def alpha_one():\n    pass\n\n\ndef beta_one():\n    pass\n\n\n"
                                   "def beta_two():\n    pass\n")
    store = SqliteGraphStore(tmp_path / "g.db", "g")
    Indexer(root, store, None, workers=1).index_tree()
    assert store.relation_counts(["lib.g"])[0] == {"lib.g": 4}
    assert store.relation_counts(["lib.g", "lib.h", "nothing.x"])[0] == {"lib.g": 4, "lib.h": 0, "nothing.x": 0}
    assert store.relation_counts(["lib.g", "lib.h"])[1] == {"lib.g": 0, "lib.h": 1}
    df = store._lex_df(["alpha"])
    assert df["alpha"] == 1 and df[""] > 3
    again = store._lex_df(["alpha", "beta", "one"])  # alpha and the total kept, then the set overflows
    assert (again["alpha"], again["beta"], again["one"], again[""]) == (1, 2, 2, df[""])
    assert store._lex_df(["beta", "alpha"]) == {"": df[""], "beta": 2, "alpha": 1}
    store.close()
