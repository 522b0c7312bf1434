"""The SQLite graph's on-disk layout (issue 24 #3, a smaller index): the code graph's tables
hold a small graph key instead of the graph id, and the head and hint indexes of calls hold
only the calls whose lookup by name would not find them. Answers stay those of the port
(tests/contract/test_graph_store.py); here: what is stored, and that lookups still find every
row a plain scan finds."""

from __future__ import annotations

import sqlite3

import pytest

from codesynapse.extract.model import CallSite, FileExtraction, Symbol
from codesynapse.graph.model import Resolution
from codesynapse.store.sqlite.graph import SqliteGraphStore


def _sym(qname: str, line: int) -> Symbol:
    return Symbol(qname=qname, name=qname.rsplit(".", 1)[-1], kind="function", signature="", start_line=line,
                  end_line=line + 1, start_col=0, end_col=1, hash=f"h{line}")


# C-like calls (callee = name = head, no hint), Python calls through a receiver (head !=
# name), one with a receiver hint, one whose head is another call's name
CALLS = [
    CallSite(caller="m.f", callee="kmalloc", name="kmalloc", line=2, col=1),
    CallSite(caller="m.f", callee="spin_lock", name="spin_lock", line=3, col=1),
    CallSite(caller="m.f", callee="os.path.join", name="join", line=4, col=1),
    CallSite(caller="m.f", callee="self.save", name="save", line=5, col=1, receiver_hint="pkg.Repo"),
    CallSite(caller="m.g", callee="kmalloc(n)->next", name="next", line=8, col=1),
    CallSite(caller="m.g", callee="Repo", name="Repo", line=9, col=1),
]
FX = FileExtraction(path="m.c", language="c", hash="h", size=10, lines=10, module="m",
                    symbols=[_sym("m.f", 1), _sym("m.g", 7)], calls=CALLS)


@pytest.fixture
def store(tmp_path):
    s = SqliteGraphStore(tmp_path / "graph.db", "a" * 16)
    s.write_files([(FX, 1)], call_targets={("m.c", 0): Resolution("mm.kmalloc", "import", 0.9),
                                           ("m.c", 5): Resolution("pkg.Repo", "local", 1.0)})
    yield s
    s.close()


def _index_entries(db, index: str) -> int:
    conn = sqlite3.connect(db)
    try:
        try:
            return conn.execute("SELECT sum(ncell) FROM dbstat WHERE name=? AND pagetype='leaf'",
                                (index,)).fetchone()[0] or 0
        except sqlite3.OperationalError:
            pytest.skip("this SQLite has no dbstat table")
    finally:
        conn.close()


def test_rows_hold_the_graph_key_not_the_graph_id(tmp_path, store):
    other = SqliteGraphStore(tmp_path / "graph.db", "b" * 16)
    try:
        other.write_files([(FX, 1)])
        conn = sqlite3.connect(tmp_path / "graph.db")
        keys = dict(conn.execute("SELECT graph_id, key FROM graphs").fetchall())
        assert keys == {"a" * 16: 1, "b" * 16: 2}
        for table in ("files", "symbols", "calls"):
            assert sorted(conn.execute(f"SELECT DISTINCT graph_id FROM {table}").fetchall()) == [(1,), (2,)]
        conn.close()
        # each store reads its own rows only, and a store opened again keeps its key
        assert len(store.callees("m.f")) == 4 and len(other.callees("m.f")) == 4
        other.delete_files(["m.c"])
        assert other.callees("m.f") == [] and len(store.callees("m.f")) == 4
        again = SqliteGraphStore(tmp_path / "graph.db", "b" * 16)
        assert again._gk == 2 and again.callees("m.f") == []
        again.close()
    finally:
        other.close()


def test_head_and_hint_indexes_leave_out_what_the_name_finds(tmp_path, store):
    # head != name: os.path.join (os), self.save (self), kmalloc(n)->next (kmalloc); hint: save's
    conn = sqlite3.connect(tmp_path / "graph.db")
    assert [r[0] for r in conn.execute("SELECT head FROM calls ORDER BY line")] == ["", "", "os", "self", "kmalloc", ""]
    conn.close()
    assert _index_entries(tmp_path / "graph.db", "calls_head") == 3
    assert _index_entries(tmp_path / "graph.db", "calls_hint") == 1
    assert _index_entries(tmp_path / "graph.db", "calls_name") == len(CALLS)


def test_the_target_index_holds_resolved_calls_only(tmp_path, store):
    assert _index_entries(tmp_path / "graph.db", "calls_target") == 2
    assert [(c.line, c.target) for c in store.callers("mm.kmalloc")] == [(2, "mm.kmalloc")]
    assert store.count_callers("pkg.Repo") == 1 and store.count_callers("nothing") == 0
    assert store.stats().resolved_calls == 2 and store.stats().calls == len(CALLS)


@pytest.mark.parametrize("names", [["kmalloc"], ["os", "self"], ["Repo"], ["spin_lock", "join"], ["next"],
                                   ["nothing"]])
def test_calls_touching_finds_what_a_scan_finds(store, names):
    def head(callee: str) -> str:  # the first segment, as the extractor's callers write it
        for sep in (".", "(", "[", ":", "->"):
            callee = callee.split(sep, 1)[0]
        return callee

    want = sorted((c.line, c.col) for c in store.all_calls()
                  if c.name in names or head(c.callee) in names or (c.hint and c.hint.rsplit(".", 1)[-1] in names))
    assert sorted((c.line, c.col) for c in store.calls_touching(names)) == want
    assert want or names == ["nothing"]


def _old_layout(db, tables: str, *rows: str) -> None:
    """A store file of an older layout: ``tables`` beside meta, whose schema version is the
    current one (graph id ``a`` * 16: ``$G`` in ``rows``), and ``rows`` inserted."""
    from codesynapse.store.graph import SCHEMA_VERSION

    conn = sqlite3.connect(db)
    conn.executescript("CREATE TABLE meta(graph_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, "
                       "PRIMARY KEY(graph_id, key));" + tables)
    conn.execute("INSERT INTO meta VALUES (?, 'schema_version', ?)", ("a" * 16, str(SCHEMA_VERSION)))
    for sql in rows:
        conn.execute(sql.replace("$G", "a" * 16))
    conn.commit()
    conn.close()


def test_a_store_from_before_the_graph_key_is_rebuilt(tmp_path):
    db = tmp_path / "graph.db"
    # the tables of the previous layout: rows by graph id, no graphs table
    _old_layout(db, "CREATE TABLE files(graph_id TEXT NOT NULL, path TEXT NOT NULL, language TEXT, hash TEXT, "
                    "size INTEGER, mtime_ns INTEGER, lines INTEGER, module TEXT, status TEXT NOT NULL, reason TEXT, "
                    "indexed_at REAL, PRIMARY KEY(graph_id, path));",
                "INSERT INTO files VALUES ('$G', 'old.c', 'c', 'h', 1, 1, 1, 'old', 'indexed', '', 0)")
    from codesynapse.store.graph import SCHEMA_VERSION

    s = SqliteGraphStore(db, "a" * 16)
    try:
        assert s.files() == [] and s.get_meta("schema_version") == str(SCHEMA_VERSION)
        s.write_files([(FX, 1)])
        assert [f.path for f in s.files()] == ["m.c"]
    finally:
        s.close()


def test_a_plain_calls_callee_is_stored_once(tmp_path, store):
    # the callee column is empty when it is the call's name; the row read back names it again
    conn = sqlite3.connect(tmp_path / "graph.db")
    assert [r[0] for r in conn.execute("SELECT callee FROM calls ORDER BY line")] == [
        "", "", "os.path.join", "self.save", "kmalloc(n)->next", ""]
    conn.close()
    assert [(c.callee, c.name) for c in sorted(store.all_calls(), key=lambda c: c.line)] == [
        (c.callee, c.name) for c in CALLS]
    assert [c.callee for c in store.callees("m.f")] == ["kmalloc", "spin_lock", "os.path.join", "self.save"]


def _words(db, table: str) -> dict[str, int]:
    conn = sqlite3.connect(db)
    try:
        conn.execute(f"CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, {table}, 'row')")
        return {t: d for t, d in conn.execute("SELECT term, doc FROM temp.v")}
    finally:
        conn.close()


def test_full_text_words_are_not_stored_twice_and_leave_with_their_symbol(tmp_path, store):
    """The full-text tables are contentless: no column of the symbol rows holds their words,
    and a symbol that is replaced or deleted takes its words with it (they are deleted by
    being named again, made from the row)."""
    db = tmp_path / "graph.db"
    conn = sqlite3.connect(db)
    cols = {r[1] for r in conn.execute("PRAGMA table_info(symbols)")}
    conn.close()
    assert not cols & {"terms", "lex_name", "lex_qname", "lex_sig", "lex_doc", "lex_path"}
    assert _words(db, "symbols_fts") == {"m": 2, "f": 1, "g": 1}  # qnames split at dots
    # an edit renames g (the same file written again) and adds a documented function
    fx = FileExtraction(path="m.c", language="c", hash="h2", size=10, lines=12, module="m",
                        symbols=[_sym("m.f", 1), _sym("m.parse_header", 7),
                                 Symbol(qname="m.retry_later", name="retry_later", kind="function",
                                        signature="int retry_later(struct request *rq)", start_line=10,
                                        end_line=11, start_col=0, end_col=1, hash="h10",
                                        summary="Retry the request after a delay.")], calls=CALLS)
    store.write_files([(fx, 2)])
    words = _words(db, "symbols_lex")
    assert "g" not in _words(db, "symbols_fts") and words["header"] == 1 and words["request"] == 1
    assert words["delay"] == 1 and words["f"] == 1  # stemmed summary words, and f's (unchanged) row
    assert next(s.qname for s, _ in store.lexical_search(["retri", "request"], 5)) == "m.retry_later"
    store.delete_files(["m.c"])
    assert _words(db, "symbols_fts") == {} and _words(db, "symbols_lex") == {}
    from codesynapse.graph.integrity import check_graph

    store.write_files([(fx, 3)])
    rep = check_graph(db)
    assert rep.ok and "fts words match the symbol rows" in rep.checks, str(rep)


def test_an_index_whose_words_another_version_made_is_rebuilt(tmp_path, store):
    """Words made by other code could not be deleted (they are named again to be deleted):
    an index recording another lexical fingerprint is rebuilt when opened."""
    from codesynapse.store.sqlite.graph import LEX_FINGERPRINT

    db = tmp_path / "graph.db"
    assert store.get_meta("lex_fingerprint") == LEX_FINGERPRINT
    store.close()
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value='0000' WHERE key='lex_fingerprint'")
    conn.commit()
    conn.close()
    again = SqliteGraphStore(db, "a" * 16)
    try:
        assert again.files() == [] and again.get_meta("lex_fingerprint") == LEX_FINGERPRINT
        again.write_files([(FX, 1)])
        assert [s.qname for s, _ in again.search("f", 5)] == ["m.f"]
    finally:
        again.close()


def test_a_store_with_words_in_its_symbol_rows_is_rebuilt(tmp_path):
    """The layout before contentless full-text tables (a ``terms`` column in symbols) is
    rebuilt, though its schema version is the current one."""
    db = tmp_path / "graph.db"
    _old_layout(db, "CREATE TABLE graphs(key INTEGER PRIMARY KEY, graph_id TEXT NOT NULL UNIQUE);"
                    "CREATE TABLE symbols(id INTEGER PRIMARY KEY, graph_id INTEGER NOT NULL, path TEXT NOT NULL, "
                    "qname TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL, terms TEXT);",
                "INSERT INTO graphs VALUES (1, '$G')",
                "INSERT INTO symbols VALUES (1, 1, 'old.c', 'old.f', 'f', 'function', 'f')")
    s = SqliteGraphStore(db, "a" * 16)
    try:
        conn = sqlite3.connect(db)
        assert "terms" not in {r[1] for r in conn.execute("PRAGMA table_info(symbols)")}
        conn.close()
        assert s.symbols_by_qname("old.f") == []
        s.write_files([(FX, 1)])
        assert [s2.qname for s2, _ in s.search("f", 5)] == ["m.f"]
    finally:
        s.close()
