"""SqliteMemoryStore on a real SQLite file: scoping, visibility, tombstones, change feed,
embedding to-do queue."""

from __future__ import annotations

import sqlite3

import pytest
from codesynapse.errors import StoreError
from codesynapse.scope import Scope
from codesynapse.store.memory import MemoryStore, TodoItem
from codesynapse.store.sqlite.memory import SqliteMemoryStore

T0 = "2026-01-01T00:00:00.000Z"
T1 = "2026-01-02T00:00:00.000Z"


def scope(tenant: str = "acme", ns: str = "acme|repo1", session: str = "s1") -> Scope:
    return Scope(tenant=tenant, graph_id="g", namespace=ns, session=session)


A1 = scope()
A2 = scope(session="s2")
B = scope(ns="acme|repo2")
T = scope(tenant="globex", ns="globex|repo1")


@pytest.fixture
def store(tmp_path):
    s = SqliteMemoryStore(tmp_path / "memory.sqlite3")
    yield s
    s.close()


def add(store, sc, name, *, durable=False, aliases=(), type=""):
    return store.upsert_entity(sc, name=name, aliases=list(aliases), type=type, durable=durable,
                               now=T0).entity


def test_implements_the_protocol_and_uses_wal(store, tmp_path):
    assert isinstance(store, MemoryStore)
    conn = sqlite3.connect(tmp_path / "memory.sqlite3")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_session_entity_visible_only_to_its_session(store):
    e = add(store, A1, "scratch")
    assert e.session == "s1" and not e.durable
    assert [r.name for r in store.find_exact(A1, ["scratch"])] == ["scratch"]
    assert store.find_exact(A2, ["scratch"]) == []
    assert store.get_entities(A2, [e.id]) == {}
    assert list(store.iter_entities(A2)) == []


def test_durable_entity_shared_in_namespace_only(store):
    e = add(store, A1, "net.Backoff", durable=True)
    assert e.session == ""
    assert [r.id for r in store.find_exact(A2, ["net.Backoff"])] == [e.id]
    assert store.find_exact(B, ["net.Backoff"]) == []
    assert store.find_exact(T, ["net.Backoff"]) == []
    assert store.get_entities(B, [e.id]) == {}
    assert store.get_entities(T, [e.id]) == {}


def test_identical_names_in_two_namespaces_never_cross(store):
    a = add(store, A1, "Config", durable=True)
    b = add(store, B, "Config", durable=True)
    assert a.id != b.id
    assert [r.id for r in store.find_exact(A1, ["Config"])] == [a.id]
    assert [r.id for r in store.find_exact(B, ["Config"])] == [b.id]
    # a foreign id is not found even when asked for by id
    assert store.find_exact(A1, [b.id]) == []


def test_foreign_rows_planted_in_the_tables_are_not_returned(store, tmp_path):
    mine = add(store, A1, "Config", durable=True)
    conn = sqlite3.connect(tmp_path / "memory.sqlite3")
    conn.execute(
        "INSERT INTO memory_entities(id, tenant, namespace, session, name, type, version, "
        "created_at, updated_at, valid_to) VALUES (?,?,?,?,?,?,?,?,?,NULL)",
        ("mem_" + "f" * 24, "globex", "acme|repo1", "", "Config", "", 1, T0, T0))
    conn.execute(
        "INSERT INTO memory_aliases(entity_id, tenant, namespace, session, alias, position) "
        "VALUES (?,?,?,?,?,?)", ("mem_" + "f" * 24, "globex", "acme|repo1", "", "Cfg", 0))
    conn.commit()
    conn.close()
    assert [r.id for r in store.find_exact(A1, ["Config", "Cfg"])] == [mine.id]


def test_upsert_updates_replaces_aliases_and_bumps_version(store):
    e = add(store, A1, "Foo", durable=True, aliases=["RetryPolicy", "Foo", "RetryPolicy"])
    assert e.aliases == ("RetryPolicy",) and e.version == 1
    same = store.upsert_entity(A1, name="Foo", aliases=["RetryPolicy"], type="", durable=True,
                               now=T1)
    assert same.status == "unchanged" and same.entity.version == 1
    upd = store.upsert_entity(A1, name="Foo", aliases=["Other"], type="class", durable=True,
                              now=T1)
    assert upd.status == "updated"
    assert upd.entity.id == e.id
    assert upd.entity.aliases == ("Other",)
    assert upd.entity.version == 2
    assert (upd.entity.created_at, upd.entity.updated_at) == (T0, T1)
    assert store.find_exact(A1, ["RetryPolicy"]) == []
    assert [r.id for r in store.find_exact(A1, ["Other"])] == [e.id]


def test_same_name_durable_and_session_are_distinct(store):
    d = add(store, A1, "X", durable=True)
    s = add(store, A1, "X")
    assert d.id != s.id
    # session first, then durable
    assert [r.id for r in store.find_exact(A1, ["X"])] == [s.id, d.id]
    assert [r.id for r in store.find_exact(A1, ["X"], durable_only=True)] == [d.id]


def test_facts_bind_both_endpoints_and_tombstones(store):
    a = add(store, A1, "ticket 412")
    b = add(store, A1, "schema change")
    f, created = store.upsert_fact(A1, subject_id=a.id, predicate="blocked_by", object_id=b.id,
                                   confidence=0.9, source_client="claude", durable=False, now=T0)
    assert created
    assert (f.subject_name, f.predicate, f.object_name, f.confidence, f.source_client) == (
        "ticket 412", "blocked_by", "schema change", 0.9, "claude")
    again, created = store.upsert_fact(A1, subject_id=a.id, predicate="blocked_by",
                                       object_id=b.id, confidence=0.4, source_client="x",
                                       durable=False, now=T1)
    assert not created and again.id == f.id and again.confidence == 0.4
    assert [x.id for x in store.facts_touching(A1, [b.id], limit=10)] == [f.id]
    assert store.facts_touching(A2, [a.id, b.id], limit=10) == []
    assert store.forget_entities(A1, [b.id], T1) == (1, 1)
    assert store.facts_touching(A1, [a.id], limit=10) == []
    assert store.get_entities(A1, [b.id]) == {}
    assert store.find_exact(A1, ["schema change"]) == []


def test_durable_fact_cannot_reference_session_entity(store):
    a = add(store, A1, "durable one", durable=True)
    s = add(store, A1, "session one")
    with pytest.raises(StoreError, match="durable fact"):
        store.upsert_fact(A1, subject_id=a.id, predicate="p", object_id=s.id, confidence=1.0,
                          source_client="", durable=True, now=T0)


def test_fact_endpoint_of_another_namespace_is_refused(store):
    a = add(store, A1, "a", durable=True)
    foreign = add(store, B, "b", durable=True)
    with pytest.raises(StoreError, match="not a live entity"):
        store.upsert_fact(A1, subject_id=a.id, predicate="p", object_id=foreign.id,
                          confidence=1.0, source_client="", durable=True, now=T0)


def test_session_fact_on_durable_entities_is_invisible_to_other_sessions(store):
    a = add(store, A1, "a", durable=True)
    b = add(store, A1, "b", durable=True)
    store.upsert_fact(A1, subject_id=a.id, predicate="p", object_id=b.id, confidence=1.0,
                      source_client="", durable=False, now=T0)
    assert len(store.facts_touching(A1, [a.id], limit=10)) == 1
    assert store.facts_touching(A2, [a.id], limit=10) == []


def test_forget_facts_by_triple_and_id(store):
    a = add(store, A1, "a")
    b = add(store, A1, "b")
    f1, _ = store.upsert_fact(A1, subject_id=a.id, predicate="p", object_id=b.id,
                              confidence=1.0, source_client="", durable=False, now=T0)
    f2, _ = store.upsert_fact(A1, subject_id=b.id, predicate="q", object_id=a.id,
                              confidence=1.0, source_client="", durable=False, now=T0)
    assert store.count_facts_touching(A1, [a.id]) == 2
    assert store.count_facts_touching(A1, [a.id, b.id]) == 2
    assert store.count_facts_touching(A2, [a.id]) == 0
    assert store.forget_facts(A2, subject_id=a.id, predicate="p", object_id=b.id, now=T1) == 0
    assert store.forget_facts(A1, subject_id=a.id, predicate="p", object_id=b.id, now=T1) == 1
    assert store.forget_fact_ids(A2, [f2.id], T1) == []
    assert store.forget_fact_ids(A1, [f2.id, "fact_" + "0" * 24], T1) == [f2.id]
    assert store.facts_touching(A1, [a.id], limit=10) == []
    assert f1.id != f2.id


def test_list_entities_pages_by_name_and_counts_facts(store):
    names = ["delta", "alpha", "charlie", "bravo"]
    recs = {n: add(store, A1, n, durable=n in ("alpha", "delta")) for n in names}
    store.upsert_fact(A1, subject_id=recs["alpha"].id, predicate="p",
                      object_id=recs["bravo"].id, confidence=1.0, source_client="",
                      durable=False, now=T0)
    page1 = store.list_entities(A1, durable=None, after=None, limit=2)
    assert [(r.name, n) for r, n in page1] == [("alpha", 1), ("bravo", 1)]
    last = page1[-1][0]
    page2 = store.list_entities(A1, durable=None, after=(last.name, last.id), limit=2)
    assert [(r.name, n) for r, n in page2] == [("charlie", 0), ("delta", 0)]
    assert [r.name for r, _ in store.list_entities(A1, durable=True, after=None, limit=9)] == [
        "alpha", "delta"]
    assert [r.name for r, _ in store.list_entities(A1, durable=False, after=None, limit=9)] == [
        "bravo", "charlie"]
    # another session sees only the durable ones, and not the session fact
    assert [(r.name, n) for r, n in store.list_entities(A2, durable=None, after=None, limit=9)] \
        == [("alpha", 0), ("delta", 0)]


def test_change_feed_is_scoped(store):
    c0 = store.change_cursor(A1)
    e = add(store, A1, "mine")
    add(store, A2, "theirs")
    add(store, B, "elsewhere", durable=True)
    d = add(store, A2, "shared", durable=True)
    after, ids = store.changes_since(A1, c0)
    assert ids == [e.id, d.id]
    assert store.change_cursor(A1) == after
    assert store.changes_since(A1, after) == (after, [])
    store.forget_entities(A1, [e.id], T1)
    assert store.changes_since(A1, after)[1] == [e.id]


def test_embedding_queue_tracks_versions(store):
    a = add(store, A1, "a", durable=True)
    b = add(store, A1, "b")
    add(store, A2, "other session")
    assert store.enqueue_missing(A1, "k1") == 2
    assert store.pending_embeddings(A1, "k1") == 2
    todo = store.take_embedding_todo(A1, "k1", 10)
    assert sorted(t.entity_id for t in todo) == sorted([a.id, b.id])
    store.mark_embedded(A1, "k1", todo)
    assert store.pending_embeddings(A1, "k1") == 0
    assert store.enqueue_missing(A1, "k1") == 0
    assert store.embedded_version(A1, "k1", a.id) == 1
    # a change of aliases makes the vector stale: queued again at the new version
    a2 = store.upsert_entity(A1, name="a", aliases=["alias"], type="", durable=True,
                             now=T1).entity
    assert store.enqueue_missing(A1, "k1") == 1
    assert store.take_embedding_todo(A1, "k1", 10) == [TodoItem(entity_id=a.id, version=2)]
    assert a2.version == 2
    # a new model key needs everything again
    assert store.enqueue_missing(A1, "k2") == 2
    # forgetting drops queued work
    store.forget_entities(A1, [a.id], T1)
    assert [t.entity_id for t in store.take_embedding_todo(A1, "k2", 10)] == [b.id]


def test_purge_session_removes_only_that_session(store):
    d = add(store, A1, "durable", durable=True)
    s = add(store, A1, "session")
    other = add(store, A2, "other session")
    store.upsert_fact(A1, subject_id=s.id, predicate="p", object_id=d.id, confidence=1.0,
                      source_client="", durable=False, now=T0)
    assert store.purge_session(A1) == [s.id]
    assert store.get_entities(A1, [d.id, s.id]).keys() == {d.id}
    assert store.facts_touching(A1, [d.id], limit=10) == []
    assert store.get_entities(A2, [other.id]).keys() == {other.id}


def test_two_connections_on_one_file_see_each_other(tmp_path):
    s1 = SqliteMemoryStore(tmp_path / "m.sqlite3")
    s2 = SqliteMemoryStore(tmp_path / "m.sqlite3")
    try:
        e = add(s1, A1, "shared", durable=True)
        assert [r.id for r in s2.find_exact(A2, ["shared"])] == [e.id]
    finally:
        s1.close()
        s2.close()
