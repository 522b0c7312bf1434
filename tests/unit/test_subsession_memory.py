"""Sub-session memory on real SQLite, real milvus-lite and the real local model: a child
(``scope.child_scope``) reads its parent's session memory and durable memory, writes its own,
never changes its parent's, and nobody else (the parent, a sibling, another session) sees the
child's session memory."""

from __future__ import annotations

import msgspec
import pytest

from codesynapse.memory.factory import open_memory
from codesynapse.memory.models import decode_forget, decode_list, decode_recall, decode_remember
from codesynapse.memory.service import MemoryService
from codesynapse.memory.vectors import row_session_digest, scope_filter
from codesynapse.errors import StoreError
from codesynapse.scope import child_scope, make_scope


@pytest.fixture
def client(tmp_path):
    opened: list[MemoryService] = []

    def make(scope, settings=None) -> MemoryService:
        svc = open_memory(tmp_path / "data", scope, settings)
        opened.append(svc)
        return svc

    yield make
    for s in reversed(opened):
        s.close()


def remember(svc, **params):
    return msgspec.to_builtins(svc.remember(decode_remember(params)))


def recall(svc, query, **params):
    return msgspec.to_builtins(svc.recall(decode_recall({"query": query, **params})))


def names(res):
    return [e["name"] for e in res["entries"]]


def listed(svc, **params):
    return [e["name"] for e in msgspec.to_builtins(svc.list(decode_list(params)))["entries"]]


def test_child_scope_keeps_tenant_graph_and_namespace():
    parent = make_scope("acme", "/repo/one", "editor")
    child = child_scope(parent, "sub-agent")
    assert (child.tenant, child.graph_id, child.namespace) == (parent.tenant, parent.graph_id, parent.namespace)
    assert child.session != parent.session and child.parent_session == parent.session
    assert child.visible_sessions == ("", child.session, parent.session)
    assert parent.visible_sessions == ("", parent.session)
    assert child.own_only.visible_sessions == ("", child.session)


def test_child_reads_parent_session_memory_and_writes_its_own(client):
    off = {"embedder": "off"}
    parent = client(make_scope("acme", "/repo/one"), off)
    child = client(child_scope(parent.scope, "sub"), off)
    sibling = client(make_scope("acme", "/repo/one"), off)
    remember(parent, entities=[{"name": "flaky login test"}],
             facts=[{"subject": "flaky login test", "predicate": "blocked_by", "object": "auth.Session"}])
    remember(parent, entities=[{"name": "release checklist", "durable": True}])

    got = recall(child, "flaky login test")
    assert names(got)[0] == "flaky login test"
    assert [(f["subject"], f["predicate"], f["object"]) for f in got["facts"]] == [
        ("flaky login test", "blocked_by", "auth.Session")]
    assert names(recall(child, "release checklist")) == ["release checklist"]

    out = remember(child, entities=[{"name": "child scratch note"}])
    assert [(e["name"], e["durable"], e["status"]) for e in out["entities"]] == [
        ("child scratch note", False, "created")]
    assert names(recall(child, "child scratch note")) == ["child scratch note"]
    # the child's session memory is its own: the parent and a sibling session do not see it
    assert recall(parent, "child scratch note")["entries"] == []
    assert recall(sibling, "child scratch note")["entries"] == []
    assert recall(sibling, "flaky login test")["entries"] == []
    # list: "this session's" is the child's own; both lists hold what the child can read
    assert listed(child, durable=False) == ["child scratch note"]
    assert sorted(listed(child)) == ["auth.Session", "child scratch note", "flaky login test",
                                     "release checklist"]


def test_child_never_changes_its_parents_memory(client):
    off = {"embedder": "off"}
    parent = client(make_scope("acme", "/repo/one"), off)
    child = client(child_scope(parent.scope), off)
    remember(parent, entities=[{"name": "parent plan"}],
             facts=[{"subject": "parent plan", "predicate": "depends_on", "object": "db migration"}])
    pid = recall(parent, "parent plan", includeIds=True)["entries"][0]["id"]
    forgot = msgspec.to_builtins(child.forget(decode_forget({
        "names": ["parent plan"], "ids": [pid],
        "facts": [{"subject": "parent plan", "predicate": "depends_on", "object": "db migration"}]})))
    assert (forgot["entities"], forgot["facts"]) == (0, 0)
    assert sorted(forgot["notFound"]) == sorted(["parent plan", pid, "parent plan depends_on db migration"])
    still = recall(parent, "parent plan")
    assert names(still)[0] == "parent plan" and len(still["facts"]) == 1
    # a child entity of the same name is the child's own, beside the parent's
    out = remember(child, entities=[{"name": "parent plan", "type": "note"}])
    assert out["entities"][0]["status"] == "created"
    assert recall(parent, "parent plan", includeIds=True)["entries"][0]["id"] == pid


def test_parent_memory_ends_with_the_parent_session(client):
    off = {"embedder": "off"}
    parent = client(make_scope("acme", "/repo/one"), off)
    child = client(child_scope(parent.scope), off)
    remember(parent, entities=[{"name": "short lived idea"}])
    assert names(recall(child, "short lived idea")) == ["short lived idea"]
    parent.end_session()
    assert recall(child, "short lived idea")["entries"] == []


def test_child_finds_parent_memory_through_the_dense_leg(client):
    parent = client(make_scope("acme", "/repo/one"))
    child = client(child_scope(parent.scope))
    stranger = client(make_scope("acme", "/repo/one"))
    remember(parent, entities=[{"name": "exponential backoff for the payment gateway"}])
    res = recall(child, "retry payments with growing delays")
    assert res["legs"]["dense"]["ran"] is True
    assert "exponential backoff for the payment gateway" in names(res)
    assert "dense" in res["entries"][names(res).index("exponential backoff for the payment gateway")]["foundBy"]
    other = recall(stranger, "retry payments with growing delays")
    assert "exponential backoff for the payment gateway" not in names(other)


def test_vector_rows_carry_their_entitys_session_only():
    parent = make_scope("acme", "/repo/one")
    child = child_scope(parent)
    assert row_session_digest(child, False, child.session) == child.session_digest
    assert row_session_digest(child, False, parent.session) == parent.session_digest
    assert row_session_digest(child, True, parent.session) == ""
    with pytest.raises(StoreError):
        row_session_digest(child, False, make_scope("acme", "/repo/one").session)
    expr, params = scope_filter(child, templated=True)
    assert params == {"t": child.tenant_digest, "n": child.namespace_digest, "s": child.session_digest,
                      "p": parent.session_digest}
    assert expr == 'tenant_d == {t} and ns_d == {n} and (sess_d == "" or sess_d == {s} or sess_d == {p})'
    top, top_params = scope_filter(parent, templated=False)
    assert "p" not in top_params and top.count("sess_d ==") == 2
