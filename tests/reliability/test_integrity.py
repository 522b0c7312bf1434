"""The integrity check itself: clean indexes pass, and each kind of damage a crash or a bug
could leave is found and named."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from codesynapse.app import App
from codesynapse.graph.integrity import check_graph, check_memory, diff_dumps
from codesynapse.scope import make_scope
from codesynapse.settings import load_settings
from codesynapse.store.sqlite.graph import delete_symbols
from codesynapse.store.sqlite.memory import SqliteMemoryStore

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.fixture(scope="module")
def clean_db(tmp_path_factory) -> tuple[Path, str]:
    data = tmp_path_factory.mktemp("integrity-clean")
    root = data / "python_repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    app = App(root, load_settings({"data_dir": str(data / "d"), "watch": False}))
    try:
        app.index()
        gid = app.store.graph_id
    finally:
        app.close()
    return data / "d" / "graph.db", gid


@pytest.mark.parametrize("fixture", ["python_repo", "go_repo", "js_repo", "ts_repo", "rust_repo", "java_repo"])
def test_clean_indexes_pass(tmp_path, fixture):
    root = tmp_path / fixture
    shutil.copytree(FIXTURES / fixture, root)
    app = App(root, load_settings({"data_dir": str(tmp_path / "d"), "watch": False}))
    try:
        app.index()
    finally:
        app.close()
    rep = check_graph(tmp_path / "d" / "graph.db")
    assert rep.ok, str(rep)
    assert {"sqlite integrity_check", "rows belong to a file", "targets exist or are empty", "fts in sync"} <= set(
        rep.checks)


def damaged(clean: tuple[Path, str], tmp_path: Path, *sql: str) -> tuple[Path, str]:
    db, gid = clean
    out = tmp_path / "graph.db"
    src = sqlite3.connect(db)
    dst = sqlite3.connect(out)
    src.backup(dst)
    src.close()
    for stmt in sql:
        # $K: the graph's key, which the code graph's tables hold (graphs table); $G: its id (meta)
        dst.execute(stmt.replace("$K", "(SELECT key FROM graphs WHERE graph_id='$G')").replace("$G", gid))
    dst.commit()
    dst.close()
    return out, gid


CASES = {
    "orphan symbol": (["INSERT INTO symbols(graph_id, path, qname, name, kind, start_line, end_line) "
                       "VALUES ($K, 'gone.py', 'gone.f', 'f', 'function', 1, 2)"], "orphans"),
    "orphan call": (["INSERT INTO calls(graph_id, path, caller, callee, name, head, hint, hint_name, line, col, kind, "
                     "target, resolution, confidence) VALUES ($K, 'gone.py', 'gone.f', 'g', 'g', 'g', '', '', 1, 1, "
                     "'call', '', 'unresolved', 0)"], "orphans"),
    "graph rows of a skipped file": (["UPDATE files SET status='skipped', reason='too large' "
                                      "WHERE path='shop/cart.py'"], "orphans"),
    "dangling call target": (["UPDATE calls SET target='shop.nowhere.f', resolution='import' "
                              "WHERE id=(SELECT min(id) FROM calls WHERE target != '')"], "targets"),
    "dangling import target": (["UPDATE imports SET target='shop.nowhere' WHERE id=(SELECT min(id) FROM imports)"],
                               "targets"),
    "unresolved call claiming a resolution": (["UPDATE calls SET target='', resolution='import' "
                                               "WHERE id=(SELECT min(id) FROM calls WHERE target != '')"], "targets"),
    "duplicated call": (["INSERT INTO calls(graph_id, path, caller, callee, name, head, hint, hint_name, line, col, "
                         "kind, target, resolution, confidence) SELECT graph_id, path, caller, callee, name, head, "
                         "hint, hint_name, line, col, kind, target, resolution, confidence FROM calls "
                         "WHERE id=(SELECT min(id) FROM calls)"], "duplicates"),
    "rows of a graph key no graph id names": (["INSERT INTO symbols(graph_id, path, qname, name, kind, start_line, "
                                               "end_line) VALUES (999, 'shop/cart.py', 'shop.cart.f', 'f', "
                                               "'function', 1, 2)"], "graphs"),
    "bad line range": (["UPDATE symbols SET end_line=0 WHERE id=(SELECT min(id) FROM symbols)"], "symbols"),
    "unknown file status": (["UPDATE files SET status='half-written' WHERE path='shop/cart.py'"], "files"),
    "pending resolution after load": (["INSERT OR REPLACE INTO meta VALUES ('$G', 'resolution_pending', '1')"],
                                      "meta"),
    # the store writes a symbol's full-text words with its row: a row written alone has none
    "FTS row missing": (["INSERT INTO symbols(graph_id, path, qname, name, kind, start_line, end_line) "
                         "VALUES ($K, 'shop/cart.py', 'shop.cart.hidden', 'hidden', 'function', 1, 1)"], "fts"),
    # as many rows, but one row's words are not those its name makes (the tables are contentless)
    "FTS words of another name": (["UPDATE symbols SET name='zebra_quokka', qname='shop.cart.zebra_quokka' "
                                   "WHERE id=(SELECT min(id) FROM symbols WHERE kind='function')"], "fts"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_damage_is_found(clean_db, tmp_path, case):
    sql, kind = CASES[case]
    db, _ = damaged(clean_db, tmp_path, *sql)
    rep = check_graph(db)
    assert not rep.ok
    assert any(p.startswith(kind + ":") for p in rep.problems), str(rep)


def test_pending_resolution_right_after_a_crash_is_expected(clean_db, tmp_path):
    """Before any load, a crashed update leaves the flag set and may leave edges into what it
    deleted: not a problem yet (the next load re-resolves); after a load both are."""
    db, _ = damaged(clean_db, tmp_path, "INSERT OR REPLACE INTO meta VALUES ('$G', 'resolution_pending', '1')")
    conn = sqlite3.connect(db)
    with conn:  # as the store deletes a symbol: with its full-text words
        delete_symbols(conn, "qname=?", [("shop.pricing.with_tax",)])
    conn.close()
    assert check_graph(db, loaded=False).ok
    rep = check_graph(db, loaded=True)
    assert any(p.startswith("meta:") for p in rep.problems) and any(p.startswith("targets:") for p in rep.problems)


def test_a_torn_page_fails_sqlite_integrity(clean_db, tmp_path):
    db, _ = damaged(clean_db, tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=DELETE")
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.close()
    with open(db, "r+b") as f:  # scribble over the middle of an interior page
        f.seek(page * (pages // 2) + 16)
        f.write(b"\xde\xad\xbe\xef" * 256)
    rep = check_graph(db)
    assert not rep.ok and rep.problems[0].startswith("sqlite:"), str(rep)


def test_a_torn_schema_page_is_a_problem_not_a_crash(clean_db, tmp_path):
    """Damage where PRAGMA integrity_check itself must read (the schema on page 1) makes the
    check raise "database disk image is malformed"; the report names it (found when the torn
    page above landed on such a page in CI)."""
    db, _ = damaged(clean_db, tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    with open(db, "r+b") as f:  # past the 100-byte file header: the schema table's first page
        f.seek(100)
        f.write(b"\xde\xad\xbe\xef" * 256)
    rep = check_graph(db)
    assert not rep.ok and rep.problems[0].startswith("sqlite:"), str(rep)


def test_diff_dumps_names_the_rows():
    a = {"calls": [("a.py", "f", "g")], "symbols": [("a.py", "f")]}
    b = {"calls": [("a.py", "f", "g"), ("a.py", "f", "g")], "symbols": [("a.py", "f")]}
    assert diff_dumps(a, a) == []
    d = diff_dumps(a, b)
    assert len(d) == 1 and d[0].startswith("calls: 0 rows only in the first, 1 only in the second")


# ---- memory ------------------------------------------------------------------------------------


@pytest.fixture()
def memory_db(tmp_path) -> Path:
    path = tmp_path / "memory.sqlite3"
    store = SqliteMemoryStore(path)
    scope = make_scope("acme", "/repo", "s")
    now = "2026-01-01T00:00:00.000Z"
    a = store.upsert_entity(scope, name="Alice", aliases=["al"], type="person", durable=True, now=now).entity
    b = store.upsert_entity(scope, name="billing", aliases=[], type="svc", durable=True, now=now).entity
    store.upsert_fact(scope, subject_id=a.id, predicate="owns", object_id=b.id, confidence=1.0, source_client="t",
                      durable=True, now=now)
    store.close()
    return path


def test_clean_memory_passes(memory_db):
    rep = check_memory(memory_db)
    assert rep.ok, str(rep)
    assert rep.counts["live_facts"] == 1 and rep.counts["live_entities"] == 2


@pytest.mark.parametrize("sql,kind", [
    (["DELETE FROM memory_entities WHERE name='billing'"], "facts"),
    (["UPDATE memory_entities SET valid_to='2026-01-02' WHERE name='billing'"], "facts"),
    (["UPDATE memory_entities SET tenant='other' WHERE name='billing'"], "facts"),
    (["DELETE FROM memory_entities WHERE name='Alice'"], "aliases"),
    (["DROP INDEX memory_entities_live_name",
      "INSERT INTO memory_entities SELECT 'mem_' || hex(randomblob(12)), tenant, namespace, session, name, type, "
      "version, created_at, updated_at, valid_to FROM memory_entities WHERE name='Alice'"], "duplicates"),
    (["DROP INDEX memory_facts_live",
      "INSERT INTO memory_facts SELECT 'fact_' || hex(randomblob(12)), tenant, namespace, session, subject_id, "
      "predicate, object_id, confidence, source_client, created_at, updated_at, valid_to FROM memory_facts"],
     "duplicates"),
], ids=["fact to a missing entity", "live fact to a forgotten entity", "fact across tenants", "orphan alias",
        "duplicated live entity", "duplicated live fact"])
def test_memory_damage_is_found(memory_db, sql, kind):
    conn = sqlite3.connect(memory_db)
    for stmt in sql:
        conn.execute(stmt)
    conn.commit()
    conn.close()
    rep = check_memory(memory_db)
    assert any(p.startswith(kind + ":") for p in rep.problems), str(rep)


def test_a_store_killed_while_being_created(tmp_path):
    """An empty or half-created file (killed between connect and the last CREATE) is fine
    before a load and a problem after one."""
    db = tmp_path / "graph.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE meta(graph_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL)")
    conn.commit()
    conn.close()
    assert check_graph(db, loaded=False).ok
    rep = check_graph(db, loaded=True)
    assert not rep.ok and rep.problems[0].startswith("schema:")
