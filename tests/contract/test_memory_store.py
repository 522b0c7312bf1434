"""The MemoryStore contract on SQLite and on Neo4j: the remember/recall primitives
(entities, aliases, exact lookup, facts and their endpoints), tombstones, the change feed,
the embedding queue, session purge, and isolation between tenants, namespaces and
sessions that use identical names."""

from __future__ import annotations

import pytest
from codesynapse.errors import StoreError
from codesynapse.scope import Scope
from codesynapse.store.memory import MemoryStore, TodoItem

T0 = "2026-01-01T00:00:00.000Z"
T1 = "2026-01-02T00:00:00.000Z"
T2 = "2026-01-03T00:00:00.000Z"


class Scopes:
    """Two sessions of one namespace, a second namespace and a second tenant, all with
    the same session names: only the scope keeps them apart."""

    def __init__(self, tenant: str):
        self.A1 = Scope(tenant=tenant, graph_id="g", namespace=f"{tenant}|repo1", session="s1")
        self.A2 = Scope(tenant=tenant, graph_id="g", namespace=f"{tenant}|repo1", session="s2")
        self.B = Scope(tenant=tenant, graph_id="g", namespace=f"{tenant}|repo2", session="s1")
        other = tenant + "-other"
        # same namespace string as A1 under another tenant
        self.T = Scope(tenant=other, graph_id="g", namespace=f"{tenant}|repo1", session="s1")
        self.T2 = Scope(tenant=other, graph_id="g", namespace=f"{other}|repo1", session="s1")


@pytest.fixture
def sc(tenant) -> Scopes:
    return Scopes(tenant)


@pytest.fixture
def m(memory_store):
    return memory_store


def add(store, scope, name, *, durable=False, aliases=(), type="", now=T0):
    return store.upsert_entity(scope, name=name, aliases=list(aliases), type=type, durable=durable, now=now).entity


def fact(store, scope, s, p, o, *, durable=False, confidence=1.0, source="", now=T0):
    return store.upsert_fact(scope, subject_id=s.id, predicate=p, object_id=o.id, confidence=confidence,
                             source_client=source, durable=durable, now=now)


def ids(recs):
    return [r.id for r in recs]


def test_implements_the_protocol(m):
    assert isinstance(m, MemoryStore)


# ---- entities ---------------------------------------------------------------------------------

def test_create_update_and_unchanged(m, sc):
    out = m.upsert_entity(sc.A1, name="net.Backoff", aliases=["RetryPolicy", "net.Backoff", "RetryPolicy", "Backoff"],
                          type="class", durable=True, now=T0)
    e = out.entity
    assert out.status == "created"
    assert (e.tenant, e.namespace, e.session, e.name, e.aliases, e.type, e.version, e.created_at, e.updated_at) == (
        sc.A1.tenant, sc.A1.namespace, "", "net.Backoff", ("RetryPolicy", "Backoff"), "class", 1, T0, T0)
    assert e.id.startswith("mem_") and len(e.id) == 28
    same = m.upsert_entity(sc.A1, name="net.Backoff", aliases=["RetryPolicy", "Backoff"], type="class",
                           durable=True, now=T1)
    assert (same.status, same.entity.version, same.entity.updated_at) == ("unchanged", 1, T0)
    upd = m.upsert_entity(sc.A1, name="net.Backoff", aliases=["Backoff", "Retry"], type="class", durable=True,
                          now=T2)
    assert (upd.status, upd.entity.id, upd.entity.aliases, upd.entity.version) == (
        "updated", e.id, ("Backoff", "Retry"), 2)
    assert (upd.entity.created_at, upd.entity.updated_at) == (T0, T2)


def test_exact_lookup_by_id_name_and_alias_in_contract_order(m, sc):
    a = add(m, sc.A1, "alpha", durable=True, aliases=["shared-alias"])
    b = add(m, sc.A1, "beta", durable=True, aliases=["alpha-ish"])
    s = add(m, sc.A1, "shared-alias")  # a session entity whose *name* is a's alias
    # by the first term matched, then name before alias, then session before durable, then id
    assert ids(m.find_exact(sc.A1, ["shared-alias"])) == [s.id, a.id]
    assert ids(m.find_exact(sc.A1, ["alpha-ish", "alpha"])) == [b.id, a.id]
    assert ids(m.find_exact(sc.A1, [b.id, "nothing"])) == [b.id]
    assert ids(m.find_exact(sc.A1, ["shared-alias"], durable_only=True)) == [a.id]
    assert ids(m.find_exact(sc.A1, ["shared-alias", "alpha", "beta"], limit=2)) == [s.id, a.id]
    assert m.find_exact(sc.A1, ["", "Alpha"]) == []  # exact: case kept


def test_replaced_aliases_are_no_longer_found(m, sc):
    e = add(m, sc.A1, "Foo", durable=True, aliases=["Old"])
    m.upsert_entity(sc.A1, name="Foo", aliases=["New"], type="", durable=True, now=T1)
    assert m.find_exact(sc.A1, ["Old"]) == []
    assert ids(m.find_exact(sc.A1, ["New"])) == [e.id]
    assert m.get_entities(sc.A1, [e.id])[e.id].aliases == ("New",)


def test_same_name_durable_and_session_are_distinct(m, sc):
    d = add(m, sc.A1, "X", durable=True)
    s = add(m, sc.A1, "X")
    assert d.id != s.id
    assert ids(m.find_exact(sc.A1, ["X"])) == [s.id, d.id]
    assert ids(m.find_exact(sc.A2, ["X"])) == [d.id]


def test_iter_entities_by_id_and_list_pages_by_name(m, sc):
    recs = {n: add(m, sc.A1, n, durable=n in ("alpha", "delta")) for n in ["delta", "alpha", "charlie", "bravo"]}
    fact(m, sc.A1, recs["alpha"], "p", recs["bravo"])
    assert ids(m.iter_entities(sc.A1)) == sorted(r.id for r in recs.values())
    page1 = m.list_entities(sc.A1, durable=None, after=None, limit=2)
    assert [(r.name, n) for r, n in page1] == [("alpha", 1), ("bravo", 1)]
    last = page1[-1][0]
    page2 = m.list_entities(sc.A1, durable=None, after=(last.name, last.id), limit=2)
    assert [(r.name, n) for r, n in page2] == [("charlie", 0), ("delta", 0)]
    assert [r.name for r, _ in m.list_entities(sc.A1, durable=True, after=None, limit=9)] == ["alpha", "delta"]
    assert [r.name for r, _ in m.list_entities(sc.A1, durable=False, after=None, limit=9)] == ["bravo", "charlie"]
    # another session: only the durable ones, and not the session fact
    assert [(r.name, n) for r, n in m.list_entities(sc.A2, durable=None, after=None, limit=9)] == [
        ("alpha", 0), ("delta", 0)]


# ---- facts ------------------------------------------------------------------------------------

def test_facts_create_update_and_read_with_endpoint_names(m, sc):
    a = add(m, sc.A1, "ticket 412")
    b = add(m, sc.A1, "schema change")
    f, created = fact(m, sc.A1, a, "blocked_by", b, confidence=0.9, source="claude")
    assert created
    assert (f.subject_id, f.subject_name, f.predicate, f.object_id, f.object_name, f.confidence, f.source_client,
            f.session, f.created_at, f.updated_at) == (
        a.id, "ticket 412", "blocked_by", b.id, "schema change", 0.9, "claude", "s1", T0, T0)
    assert f.id.startswith("fact_")
    again, created = fact(m, sc.A1, a, "blocked_by", b, confidence=0.4, source="x", now=T1)
    assert (created, again.id, again.confidence, again.source_client, again.updated_at) == (
        False, f.id, 0.4, "x", T1)
    assert ids(m.facts_touching(sc.A1, [a.id], limit=10)) == [f.id]
    assert ids(m.facts_touching(sc.A1, [b.id], limit=10)) == [f.id]


def test_facts_touching_order_and_limit(m, sc):
    a, b, c = (add(m, sc.A1, n, durable=True) for n in ("a", "b", "c"))
    f1, _ = fact(m, sc.A1, a, "p", b, durable=True, confidence=0.5, now=T0)
    f2, _ = fact(m, sc.A1, c, "q", a, durable=True, confidence=0.9, now=T0)
    f3, _ = fact(m, sc.A1, a, "r", c, durable=True, confidence=0.5, now=T1)
    # confidence desc, updated_at desc, id
    assert ids(m.facts_touching(sc.A1, [a.id], limit=10)) == [f2.id, f3.id, f1.id]
    assert ids(m.facts_touching(sc.A1, [a.id, b.id, c.id], limit=2)) == [f2.id, f3.id]
    assert m.facts_touching(sc.A1, [a.id], limit=0) == []
    assert m.facts_touching(sc.A1, [], limit=10) == []
    # the count is what facts_touching returns without a limit (each fact once)
    assert m.count_facts_touching(sc.A1, [a.id]) == 3
    assert m.count_facts_touching(sc.A1, [a.id, b.id, c.id]) == 3
    assert m.count_facts_touching(sc.A1, [b.id]) == 1
    assert m.count_facts_touching(sc.B, [a.id]) == 0 and m.count_facts_touching(sc.A1, []) == 0


def test_durable_fact_cannot_reference_a_session_entity(m, sc):
    d = add(m, sc.A1, "durable one", durable=True)
    s = add(m, sc.A1, "session one")
    with pytest.raises(StoreError, match="durable fact"):
        fact(m, sc.A1, d, "p", s, durable=True)


def test_fact_endpoints_must_be_live_and_in_scope(m, sc):
    a = add(m, sc.A1, "a", durable=True)
    foreign_ns = add(m, sc.B, "b", durable=True)
    foreign_tenant = add(m, sc.T, "b", durable=True)
    other_session = add(m, sc.A2, "b")
    for other in (foreign_ns, foreign_tenant, other_session):
        with pytest.raises(StoreError, match="not a live entity"):
            fact(m, sc.A1, a, "p", other)
    gone = add(m, sc.A1, "gone", durable=True)
    m.forget_entities(sc.A1, [gone.id], T1)
    with pytest.raises(StoreError, match="not a live entity"):
        fact(m, sc.A1, a, "p", gone)


def test_session_fact_between_durable_entities_stays_in_its_session(m, sc):
    a = add(m, sc.A1, "a", durable=True)
    b = add(m, sc.A1, "b", durable=True)
    fact(m, sc.A1, a, "p", b)
    assert len(m.facts_touching(sc.A1, [a.id], limit=10)) == 1
    assert m.facts_touching(sc.A2, [a.id], limit=10) == []


# ---- tombstones -------------------------------------------------------------------------------

def test_forget_entity_tombstones_it_and_its_facts(m, sc):
    a = add(m, sc.A1, "a", aliases=["aa"])
    b = add(m, sc.A1, "b")
    c = add(m, sc.A1, "c")
    fact(m, sc.A1, a, "p", b)
    fact(m, sc.A1, c, "q", b)
    fact(m, sc.A1, a, "r", c)
    assert m.forget_entities(sc.A1, [b.id], T1) == (1, 2)
    assert m.get_entities(sc.A1, [b.id]) == {}
    assert m.find_exact(sc.A1, ["b", b.id]) == []
    assert [f.predicate for f in m.facts_touching(sc.A1, [a.id, b.id, c.id], limit=10)] == ["r"]
    assert m.forget_entities(sc.A1, [b.id], T2) == (0, 0)  # already gone
    # a new entity may take the forgotten name; it is a different entity
    b2 = add(m, sc.A1, "b", now=T2)
    assert b2.id != b.id and b2.version == 1
    assert m.facts_touching(sc.A1, [b2.id], limit=10) == []


def test_forget_is_scoped(m, sc):
    d = add(m, sc.A1, "durable", durable=True)
    s = add(m, sc.A1, "mine")
    assert m.forget_entities(sc.A2, [s.id], T1) == (0, 0)  # another session cannot see it
    assert m.forget_entities(sc.B, [d.id], T1) == (0, 0)
    assert m.forget_entities(sc.T, [d.id], T1) == (0, 0)
    assert set(m.get_entities(sc.A1, [d.id, s.id])) == {d.id, s.id}
    assert m.forget_entities(sc.A2, [d.id], T1) == (1, 0)  # durable memory is shared
    assert m.get_entities(sc.A1, [d.id]) == {}


def test_forget_facts_by_triple_and_by_id(m, sc):
    a = add(m, sc.A1, "a")
    b = add(m, sc.A1, "b")
    f1, _ = fact(m, sc.A1, a, "p", b)
    f2, _ = fact(m, sc.A1, b, "q", a)
    assert m.forget_facts(sc.A2, subject_id=a.id, predicate="p", object_id=b.id, now=T1) == 0
    assert m.forget_facts(sc.A1, subject_id=a.id, predicate="other", object_id=b.id, now=T1) == 0
    assert m.forget_facts(sc.A1, subject_id=a.id, predicate="p", object_id=b.id, now=T1) == 1
    assert m.forget_fact_ids(sc.A2, [f2.id], T1) == []
    assert m.forget_fact_ids(sc.A1, [f2.id, "fact_" + "0" * 24], T1) == [f2.id]
    assert m.forget_fact_ids(sc.A1, [f2.id], T2) == []
    assert m.facts_touching(sc.A1, [a.id], limit=10) == []
    # a forgotten fact can be stated again: a new fact
    f3, created = fact(m, sc.A1, a, "p", b, now=T2)
    assert created and f3.id != f1.id


# ---- change feed ------------------------------------------------------------------------------

def test_change_feed_is_scoped_and_ordered(m, sc):
    c0 = m.change_cursor(sc.A1)
    assert c0 == 0
    e = add(m, sc.A1, "mine")
    add(m, sc.A2, "theirs")
    add(m, sc.B, "elsewhere", durable=True)
    add(m, sc.T, "foreign", durable=True)
    d = add(m, sc.A2, "shared", durable=True)
    add(m, sc.A2, "shared", durable=True)  # unchanged: no change recorded
    after, changed = m.changes_since(sc.A1, c0)
    assert changed == [e.id, d.id]
    assert m.change_cursor(sc.A1) == after > c0
    assert m.changes_since(sc.A1, after) == (after, [])
    m.forget_entities(sc.A1, [e.id], T1)
    m.upsert_entity(sc.A1, name="shared", aliases=["x"], type="", durable=True, now=T1)
    after2, changed = m.changes_since(sc.A1, after)
    assert changed == [e.id, d.id] and after2 > after
    one, first = m.changes_since(sc.A1, c0, limit=1)
    assert first == [e.id] and c0 < one < after


# ---- embedding queue --------------------------------------------------------------------------

def test_embedding_queue_tracks_versions(m, sc):
    a = add(m, sc.A1, "a", durable=True)
    b = add(m, sc.A1, "b")
    add(m, sc.A2, "other session")
    add(m, sc.B, "other namespace")
    assert m.enqueue_missing(sc.A1, "k1") == 2
    assert m.pending_embeddings(sc.A1, "k1") == 2
    assert m.enqueue_missing(sc.A1, "k1") == 0  # already queued at this version
    todo = m.take_embedding_todo(sc.A1, "k1", 10)
    assert sorted(t.entity_id for t in todo) == sorted([a.id, b.id])
    assert m.pending_embeddings(sc.A2, "k1") == 1  # sees the durable one only
    m.mark_embedded(sc.A1, "k1", todo)
    assert m.pending_embeddings(sc.A1, "k1") == 0
    assert m.enqueue_missing(sc.A1, "k1") == 0
    assert m.embedded_version(sc.A1, "k1", a.id) == 1
    assert m.embedded_version(sc.B, "k1", a.id) is None
    assert m.embedded_version(sc.A1, "k2", a.id) is None
    a2 = m.upsert_entity(sc.A1, name="a", aliases=["alias"], type="", durable=True, now=T1).entity
    assert a2.version == 2
    assert m.enqueue_missing(sc.A1, "k1") == 1
    assert m.take_embedding_todo(sc.A1, "k1", 10) == [TodoItem(entity_id=a.id, version=2)]
    assert m.enqueue_missing(sc.A1, "k2") == 2
    m.forget_entities(sc.A1, [a.id], T1)
    assert [t.entity_id for t in m.take_embedding_todo(sc.A1, "k2", 10)] == [b.id]


def test_enqueue_keeps_order_and_ignores_foreign_ids(m, sc):
    a = add(m, sc.A1, "a", durable=True)
    b = add(m, sc.A1, "b", durable=True)
    foreign = add(m, sc.B, "f", durable=True)
    m.enqueue_embedding(sc.A1, "k", [TodoItem(entity_id=b.id, version=1), TodoItem(entity_id=a.id, version=1),
                                     TodoItem(entity_id=foreign.id, version=1)])
    assert m.take_embedding_todo(sc.A1, "k", 10) == [TodoItem(entity_id=b.id, version=1),
                                                     TodoItem(entity_id=a.id, version=1)]
    assert m.take_embedding_todo(sc.A1, "k", 1) == [TodoItem(entity_id=b.id, version=1)]
    assert m.take_embedding_todo(sc.B, "k", 10) == []
    m.mark_embedded(sc.A1, "k", [TodoItem(entity_id=foreign.id, version=1)])
    assert m.embedded_version(sc.B, "k", foreign.id) is None


# ---- session end ------------------------------------------------------------------------------

def test_purge_session_removes_only_that_session(m, sc):
    d = add(m, sc.A1, "durable", durable=True)
    d2 = add(m, sc.A1, "durable2", durable=True)
    s = add(m, sc.A1, "session")
    other = add(m, sc.A2, "other session")
    fact(m, sc.A1, s, "p", d)
    fact(m, sc.A1, d, "q", d2)  # a session fact between durable entities
    durable_fact, _ = fact(m, sc.A1, d2, "r", d, durable=True)
    m.enqueue_missing(sc.A1, "k")
    c = m.change_cursor(sc.A1)
    assert m.purge_session(sc.A1) == [s.id]
    assert m.get_entities(sc.A1, [d.id, s.id]).keys() == {d.id}
    assert ids(m.facts_touching(sc.A1, [d.id], limit=10)) == [durable_fact.id]
    assert m.get_entities(sc.A2, [other.id]).keys() == {other.id}
    assert {t.entity_id for t in m.take_embedding_todo(sc.A1, "k", 10)} == {d.id, d2.id}
    assert m.changes_since(sc.A1, c)[1] == [s.id]
    # the session's name is free again
    assert add(m, sc.A1, "session").id != s.id
    with pytest.raises(StoreError):
        m.purge_session(Scope(tenant=sc.A1.tenant, graph_id="g", namespace=sc.A1.namespace, session=""))


# ---- isolation --------------------------------------------------------------------------------

def test_identical_names_never_cross_tenants_namespaces_or_sessions(m, sc):
    made = {}
    for label, scope in (("A1", sc.A1), ("A2", sc.A2), ("B", sc.B), ("T", sc.T), ("T2", sc.T2)):
        made[label] = (add(m, scope, "Config", durable=True, aliases=["Cfg"]), add(m, scope, "Scratch"))
        fact(m, scope, made[label][1], "uses", made[label][0])
    a_durable, a_session = made["A1"]
    # one durable Config per namespace: A1 and A2 share it (the second upsert is "unchanged")
    assert made["A2"][0].id == a_durable.id
    every = {e.id for pair in made.values() for e in pair}
    for label, scope in (("A1", sc.A1), ("A2", sc.A2), ("B", sc.B), ("T", sc.T), ("T2", sc.T2)):
        durable, session = made[label]
        others = sorted(every - {durable.id, session.id})
        assert len(others) == 7, label
        assert ids(m.find_exact(scope, ["Config", "Cfg", "Scratch"])) == [durable.id, session.id], label
        assert m.get_entities(scope, others) == {}, label
        assert ids(m.find_exact(scope, others)) == [], label
        assert m.facts_touching(scope, others, limit=100) == [], label
        assert {e.id for e in m.iter_entities(scope)} == {durable.id, session.id}, label
    # the two sessions of A share durable Config but each sees only its own Scratch and fact
    assert ids(m.find_exact(sc.A2, ["Scratch"])) == [made["A2"][1].id]
    assert [f.subject_id for f in m.facts_touching(sc.A2, [a_durable.id], limit=10)] == [made["A2"][1].id]
    assert [f.subject_id for f in m.facts_touching(sc.A1, [a_durable.id], limit=10)] == [a_session.id]


def test_hostile_names_are_plain_data(m, sc):
    for name in ("x'}) DETACH DELETE n //", "x' OR '1'='1", "$t", "{tenant: 'x'}", "ünï 🚀 \\ \" `"):
        e = add(m, sc.A1, name, durable=True, aliases=[name + "!"])
        assert ids(m.find_exact(sc.A1, [name])) == [e.id]
        assert ids(m.find_exact(sc.A1, [name + "!"])) == [e.id]
        assert m.find_exact(sc.B, [name]) == []


# ---- rows planted behind the store's back --------------------------------------------------------

def _plant(memory_store, backend, tmp_path, *, foreign_entity: dict, fact: dict) -> None:
    """Write a foreign entity (with one alias) and a fact straight into the backend."""
    if backend == "sqlite":
        import sqlite3

        conn = sqlite3.connect(tmp_path / "memory.sqlite3")
        e = foreign_entity
        conn.execute("INSERT INTO memory_entities(id, tenant, namespace, session, name, type, version, created_at, "
                     "updated_at, valid_to) VALUES (?,?,?,?,?,'',1,?,?,NULL)",
                     (e["id"], e["tenant"], e["namespace"], e["session"], e["name"], T0, T0))
        conn.execute("INSERT INTO memory_aliases(entity_id, tenant, namespace, session, alias, position) "
                     "VALUES (?,?,?,?,?,0)", (e["id"], e["tenant"], e["namespace"], e["session"], e["alias"]))
        f = fact
        conn.execute("INSERT INTO memory_facts(id, tenant, namespace, session, subject_id, predicate, object_id, "
                     "confidence, source_client, created_at, updated_at, valid_to) "
                     "VALUES (?,?,?,?,?,?,?,1.0,'',?,?,NULL)",
                     (f["id"], f["tenant"], f["namespace"], f["session"], f["subject_id"], f["predicate"],
                      f["object_id"], T0, T0))
        conn.commit()
        conn.close()
        return
    if backend == "hugegraph":
        from tests.contract.hugegraph_helpers import plant_memory_rows

        return plant_memory_rows(memory_store, foreign_entity, fact, T0)
    from neo4j import GraphDatabase

    with GraphDatabase.driver(memory_store.uri, auth=None) as d:
        d.execute_query(
            "CREATE (e:CsMemEntity {id: $e.id, tenant: $e.tenant, namespace: $e.namespace, session: $e.session, "
            "name: $e.name, live_name: $e.name, aliases: [$e.alias], type: '', version: 1, created_at: $t, "
            "updated_at: $t})-[:ALIAS]->(:CsMemAlias {entity_id: $e.id, tenant: $e.tenant, namespace: $e.namespace, "
            "session: $e.session, alias: $e.alias})", e=foreign_entity, t=T0)
        d.execute_query(
            "MATCH (s:CsMemEntity {id: $f.subject_id}), (o:CsMemEntity {id: $f.object_id}) "
            "CREATE (s)-[:FACT {id: $f.id, tenant: $f.tenant, namespace: $f.namespace, session: $f.session, "
            "predicate: $f.predicate, confidence: 1.0, source_client: '', created_at: $t, updated_at: $t}]->(o)",
            f=fact, t=T0)


@pytest.mark.parametrize("foreign", ["tenant", "namespace", "session"])
def test_planted_foreign_rows_are_never_returned(m, sc, backend, tmp_path, foreign):
    mine = add(m, sc.A1, "Config", durable=True, aliases=["Cfg"])
    other = {"tenant": (sc.T, sc.A1.namespace, ""), "namespace": (sc.A1, sc.B.namespace, ""),
             "session": (sc.A1, sc.A1.namespace, "s2")}[foreign]
    fid = "fact_" + "f" * 24
    eid = "mem_" + "f" * 24
    _plant(m, backend, tmp_path,
           foreign_entity={"id": eid, "tenant": other[0].tenant, "namespace": other[1], "session": other[2],
                           "name": "Config", "alias": "Cfg"},
           # a fact that claims to be A1's, from A1's entity to the foreign one
           fact={"id": fid, "tenant": sc.A1.tenant, "namespace": sc.A1.namespace, "session": "",
                 "subject_id": mine.id, "predicate": "uses", "object_id": eid})
    assert ids(m.find_exact(sc.A1, ["Config", "Cfg", eid])) == [mine.id]
    assert m.get_entities(sc.A1, [eid]) == {}
    assert m.facts_touching(sc.A1, [mine.id, eid], limit=10) == []
    assert m.count_facts_touching(sc.A1, [mine.id, eid]) == 0
    assert [(r.name, n) for r, n in m.list_entities(sc.A1, durable=None, after=None, limit=10)] == [("Config", 0)]
    assert m.forget_entities(sc.A1, [eid], T1) == (0, 0)
    # tombstoning my entity does not reach into the foreign one
    assert m.forget_entities(sc.A1, [mine.id], T1)[0] == 1


def test_concurrent_upserts_of_one_name_make_one_entity(m, sc):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=6) as pool:
        outs = list(pool.map(lambda i: m.upsert_entity(sc.A1, name="race", aliases=["r"], type="", durable=True,
                                                       now=T0), range(12)))
    assert len({o.entity.id for o in outs}) == 1
    assert sorted(o.status for o in outs) == ["created"] + ["unchanged"] * 11
    assert [r.name for r, _ in m.list_entities(sc.A1, durable=True, after=None, limit=10)] == ["race"]


# ---- session owners: the memory of a session whose process is gone ------------------------------

def test_session_owners_and_the_purge_of_sessions_whose_process_is_gone(m, sc):
    from codesynapse.memory.factory import purge_orphaned_sessions

    d = add(m, sc.A1, "durable", durable=True)
    d2 = add(m, sc.A1, "durable2", durable=True)
    gone = add(m, sc.A1, "scratch of a killed daemon", aliases=["scratch"])
    fact(m, sc.A1, gone, "about", d)
    fact(m, sc.A1, d, "noted", d2)  # a session fact between durable entities
    running = add(m, sc.A2, "scratch of a running daemon")
    unowned_scope = Scope(tenant=sc.A1.tenant, graph_id="g", namespace=sc.A1.namespace, session="s3")
    unowned = add(m, unowned_scope, "written before owners were recorded")
    foreign = add(m, sc.T, "another tenant's session memory")  # same namespace string, session s1
    m.claim_session(sc.A1, "proc-gone", T0)
    m.claim_session(sc.A2, "proc-running", T0)
    m.claim_session(sc.T, "proc-gone", T0)
    assert m.session_owners(sc.A1) == {"s1": "proc-gone", "s2": "proc-running", "s3": ""}
    assert m.session_owners(sc.B) == {}
    me = Scope(tenant=sc.A1.tenant, graph_id="g", namespace=sc.A1.namespace, session="s4")
    m.claim_session(me, "proc-gone", T0)  # the caller's own session is never purged
    assert purge_orphaned_sessions(m, me, alive=lambda owner: owner == "proc-running") == 2
    assert m.session_owners(sc.A1) == {"s2": "proc-running", "s4": "proc-gone"}
    assert m.get_entities(sc.A1, [d.id, gone.id]).keys() == {d.id}
    assert m.facts_touching(sc.A1, [d.id], limit=10) == []
    assert m.find_exact(sc.A1, ["scratch"]) == []
    assert m.get_entities(unowned_scope, [unowned.id]) == {}
    assert m.get_entities(sc.A2, [running.id]).keys() == {running.id}
    assert m.get_entities(sc.T, [foreign.id]).keys() == {foreign.id}  # another tenant: not this purge's
    assert m.session_owners(sc.T) == {"s1": "proc-gone"}
    # a session that ends cleanly takes its owner record with it
    m.purge_session(sc.A2)
    assert m.session_owners(sc.A1) == {"s4": "proc-gone"}
    with pytest.raises(StoreError):
        m.claim_session(Scope(tenant=sc.A1.tenant, graph_id="g", namespace=sc.A1.namespace, session=""), "p", T0)


# ---- anchors (issue 25) -----------------------------------------------------------------------

def spec(qname, path="pkg/mod.py", h="h1", line=3):
    from codesynapse.store.memory import AnchorSpec

    return AnchorSpec(qname=qname, name=qname.rsplit(".", 1)[-1], path=path, hash=h, kind="function", line=line)


def test_anchors_are_stored_replaced_and_read_in_order(m, sc):
    e = add(m, sc.A1, "retry policy")
    m.set_anchors(sc.A1, e.id, [spec("pkg.mod.settle"), spec("pkg.mod.refund", line=9)], T0)
    got = m.anchors_of(sc.A1, [e.id])[e.id]
    assert [(a.qname, a.name, a.path, a.hash, a.kind, a.line, a.status) for a in got] == [
        ("pkg.mod.settle", "settle", "pkg/mod.py", "h1", "function", 3, ""),
        ("pkg.mod.refund", "refund", "pkg/mod.py", "h1", "function", 9, "")]
    m.set_anchors(sc.A1, e.id, [spec("pkg.mod.refund")], T1)
    assert [a.qname for a in m.anchors_of(sc.A1, [e.id])[e.id]] == ["pkg.mod.refund"]


def test_anchors_keep_the_scope_of_their_entity(m, sc):
    mine = add(m, sc.A1, "note")
    team = add(m, sc.A1, "team note", durable=True)
    m.set_anchors(sc.A1, mine.id, [spec("pkg.mod.settle")], T0)
    m.set_anchors(sc.A1, team.id, [spec("pkg.mod.settle")], T0)
    assert sorted(a.entity_id for a in m.anchored_to(sc.A1, ["pkg.mod.settle"])) == sorted([mine.id, team.id])
    assert [a.entity_id for a in m.anchored_to(sc.A2, ["pkg.mod.settle"])] == [team.id]  # another session
    for other in (sc.B, sc.T, sc.T2):  # another namespace, another tenant (same namespace string)
        assert m.anchored_to(other, ["pkg.mod.settle"]) == []
        assert m.anchors_of(other, [mine.id, team.id]) == {}
        assert m.anchors_to_check(other, ["pkg/mod.py"], ["settle"]) == []
    assert m.anchors_of(sc.A2, [mine.id]) == {}
    with pytest.raises(StoreError):  # an entity the scope cannot see gets no anchors
        m.set_anchors(sc.A2, mine.id, [spec("pkg.mod.refund")], T1)
    with pytest.raises(StoreError):
        m.set_anchors(sc.B, team.id, [spec("pkg.mod.refund")], T1)


def test_staleness_pass_sees_every_session_and_writes_by_id_in_scope(m, sc):
    import msgspec

    a1 = add(m, sc.A1, "one")
    a2 = add(m, sc.A2, "two")
    m.set_anchors(sc.A1, a1.id, [spec("pkg.mod.settle")], T0)
    m.set_anchors(sc.A2, a2.id, [spec("pkg.other.helper", path="pkg/other.py")], T0)
    got = m.anchors_to_check(sc.A1, ["pkg/mod.py", "pkg/other.py"], [])
    assert sorted(a.entity_id for a in got) == sorted([a1.id, a2.id])
    mod = next(a for a in got if a.entity_id == a1.id)
    # a foreign scope's write changes nothing
    m.update_anchors(sc.B, [msgspec.structs.replace(mod, status="removed", status_at=T1)])
    assert m.anchors_of(sc.A1, [a1.id])[a1.id][0].status == ""
    m.update_anchors(sc.A1, [msgspec.structs.replace(mod, status="removed", status_at=T1)])
    (now,) = m.anchors_of(sc.A1, [a1.id])[a1.id]
    assert (now.status, now.status_at) == ("removed", T1)
    # a removed anchor is found again by its symbol's name, wherever it went
    assert [a.id for a in m.anchors_to_check(sc.A1, [], ["settle"])] == [mod.id]
    assert m.anchors_to_check(sc.A1, [], ["helper"]) == []  # not removed: found by its path only
    moved = msgspec.structs.replace(now, qname="pkg.new.settle", path="pkg/new.py", line=7, status="moved",
                                    previous="pkg.mod.settle @ pkg/mod.py:3")
    m.update_anchors(sc.A1, [moved])
    (back,) = m.anchors_of(sc.A1, [a1.id])[a1.id]
    assert (back.qname, back.path, back.line, back.status, back.previous, back.hash) == (
        "pkg.new.settle", "pkg/new.py", 7, "moved", "pkg.mod.settle @ pkg/mod.py:3", "h1")
    # renamed in place: re-anchored to the new symbol, whose content hash is its own
    renamed = msgspec.structs.replace(back, qname="pkg.new.settle_all", name="settle_all", hash="h2",
                                      previous="pkg.new.settle @ pkg/new.py:7")
    m.update_anchors(sc.A1, [renamed])
    (again,) = m.anchors_of(sc.A1, [a1.id])[a1.id]
    assert (again.qname, again.name, again.hash, again.previous) == (
        "pkg.new.settle_all", "settle_all", "h2", "pkg.new.settle @ pkg/new.py:7")


def test_anchors_of_forgotten_and_purged_entities_are_not_read(m, sc):
    gone = add(m, sc.A1, "gone", durable=True)
    sess = add(m, sc.A1, "session one")
    m.set_anchors(sc.A1, gone.id, [spec("pkg.mod.settle")], T0)
    m.set_anchors(sc.A1, sess.id, [spec("pkg.mod.settle")], T0)
    m.forget_entities(sc.A1, [gone.id], T1)
    assert [a.entity_id for a in m.anchored_to(sc.A1, ["pkg.mod.settle"])] == [sess.id]
    m.purge_session(sc.A1)
    assert m.anchored_to(sc.A1, ["pkg.mod.settle"]) == []
    assert m.anchors_to_check(sc.A1, ["pkg/mod.py"], ["settle"]) == []


def test_fact_anchors_are_stored_in_the_facts_scope_and_read_while_it_lives(m, sc):
    import msgspec

    s, o = add(m, sc.A1, "retry policy", durable=True), add(m, sc.A1, "settle job", durable=True)
    mine, _ = fact(m, sc.A1, s, "implemented_by", o)
    team, _ = fact(m, sc.A1, s, "documented_in", o, durable=True)
    m.set_fact_anchors(sc.A1, mine.id, [spec("pkg.mod.settle"), spec("pkg.mod.refund", line=9)], T0)
    m.set_fact_anchors(sc.A1, team.id, [spec("pkg.mod.settle")], T0)
    got = m.fact_anchors_of(sc.A1, [mine.id, team.id])
    assert [(a.qname, a.line, a.status) for a in got[mine.id]] == [("pkg.mod.settle", 3, ""),
                                                                   ("pkg.mod.refund", 9, "")]
    assert [a.qname for a in got[team.id]] == ["pkg.mod.settle"]
    # a fact's anchors are not an entity's: entity reads never return them
    assert m.anchored_to(sc.A1, ["pkg.mod.settle"]) == []
    assert m.anchors_of(sc.A1, [mine.id, team.id]) == {}
    hits = m.facts_anchored_to(sc.A1, ["pkg.mod.settle"])
    assert sorted(f.id for _, f in hits) == sorted([mine.id, team.id])
    assert {f.id: (f.subject_name, f.predicate, f.object_name) for _, f in hits}[mine.id] == (
        "retry policy", "implemented_by", "settle job")
    # replaced, not added to
    m.set_fact_anchors(sc.A1, mine.id, [spec("pkg.mod.refund")], T1)
    assert [a.qname for a in m.fact_anchors_of(sc.A1, [mine.id])[mine.id]] == ["pkg.mod.refund"]
    # scope: another session sees the durable fact's anchors only; other namespaces and tenants none
    assert [f.id for _, f in m.facts_anchored_to(sc.A2, ["pkg.mod.settle", "pkg.mod.refund"])] == [team.id]
    assert m.fact_anchors_of(sc.A2, [mine.id]) == {}
    for other in (sc.B, sc.T, sc.T2):
        assert m.facts_anchored_to(other, ["pkg.mod.settle", "pkg.mod.refund"]) == []
        assert m.fact_anchors_of(other, [mine.id, team.id]) == {}
        assert m.anchors_to_check(other, ["pkg/mod.py"], ["settle"]) == []
        with pytest.raises(StoreError):
            m.set_fact_anchors(other, team.id, [spec("pkg.mod.refund")], T1)
    with pytest.raises(StoreError):  # a fact the scope cannot see gets no anchors
        m.set_fact_anchors(sc.A2, mine.id, [spec("pkg.mod.settle")], T1)
    # the staleness pass sees them (every session) and writes them by id
    check = {a.entity_id: a for a in m.anchors_to_check(sc.A2, ["pkg/mod.py"], [])}
    assert set(check) == {mine.id, team.id}
    m.update_anchors(sc.A1, [msgspec.structs.replace(check[mine.id], status="changed", status_at=T1)])
    (now,) = m.fact_anchors_of(sc.A1, [mine.id])[mine.id]
    assert (now.status, now.status_at) == ("changed", T1)
    # a forgotten fact's anchors are not read; a purged session's are gone
    m.forget_facts(sc.A1, subject_id=s.id, predicate="documented_in", object_id=o.id, now=T1)
    assert m.facts_anchored_to(sc.A1, ["pkg.mod.settle"]) == []
    assert m.fact_anchors_of(sc.A1, [team.id]) == {}
    assert [a.entity_id for a in m.anchors_to_check(sc.A1, ["pkg/mod.py"], [])] == [mine.id]
    m.purge_session(sc.A1)
    assert m.anchors_to_check(sc.A1, ["pkg/mod.py"], ["refund"]) == []


def test_hostile_anchor_values_are_plain_data(m, sc):
    e = add(m, sc.A1, "x")
    q = "a' OR '1'='1\") RETURN n //; DROP TABLE memory_anchors; g.V().drop()"
    m.set_anchors(sc.A1, e.id, [spec(q, path="p'\"/x.py")], T0)
    assert [a.qname for a in m.anchored_to(sc.A1, [q])] == [q]
    assert m.anchored_to(sc.A1, ["' OR 1=1 --"]) == []
