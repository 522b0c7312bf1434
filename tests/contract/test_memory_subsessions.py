"""The sub-session visibility rule on every memory backend (SQLite, Neo4j, HugeGraph): a child
scope (``scope.child_scope``) reads durable rows, its own session's and its parent's; its
parent, a sibling and other sessions never read the child's; ``own_only`` (what forget uses)
reaches the child's own and durable rows only."""

from __future__ import annotations

from codesynapse.scope import Scope, child_scope

T0 = "2026-01-01T00:00:00.000Z"
T1 = "2026-01-02T00:00:00.000Z"


def add(store, scope, name, *, durable=False):
    return store.upsert_entity(scope, name=name, aliases=[], type="", durable=durable, now=T0).entity


def fact(store, scope, s, p, o, *, durable=False):
    return store.upsert_fact(scope, subject_id=s.id, predicate=p, object_id=o.id, confidence=1.0, source_client="",
                             durable=durable, now=T0)


def names(recs):
    return sorted(r.name for r in recs)


def test_a_child_reads_its_parents_session_rows_and_nobody_reads_the_childs(memory_store, tenant):
    m = memory_store
    parent = Scope(tenant=tenant, graph_id="g", namespace=f"{tenant}|repo1", session="parent")
    sibling_top = Scope(tenant=tenant, graph_id="g", namespace=f"{tenant}|repo1", session="other")
    other_ns = Scope(tenant=tenant, graph_id="g", namespace=f"{tenant}|repo2", session="parent")
    child = child_scope(parent, "sub")
    sibling = child_scope(parent, "sub2")

    team = add(m, parent, "team", durable=True)
    plan = add(m, parent, "plan")
    fact(m, parent, plan, "owned_by", team)
    add(m, other_ns, "plan")
    note = add(m, child, "note")
    fact(m, child, note, "about", plan)  # a child's fact may point at its parent's entity

    assert names(m.find_exact(child, ["plan", "team", "note"])) == ["note", "plan", "team"]
    assert names(m.iter_entities(child)) == ["note", "plan", "team"]
    assert names(m.find_exact(parent, ["plan", "team", "note"])) == ["plan", "team"]
    assert names(m.find_exact(sibling, ["plan", "team", "note"])) == ["plan", "team"]
    assert names(m.find_exact(sibling_top, ["plan", "team", "note"])) == ["team"]
    assert m.find_exact(child, ["plan"], durable_only=True) == []
    assert sorted(f.predicate for f in m.facts_touching(child, [plan.id], limit=10)) == ["about", "owned_by"]
    assert [f.predicate for f in m.facts_touching(parent, [plan.id], limit=10)] == ["owned_by"]
    assert set(m.get_entities(child, [plan.id, note.id, team.id])) == {plan.id, note.id, team.id}
    assert set(m.get_entities(parent, [plan.id, note.id, team.id])) == {plan.id, team.id}
    # what a child may change: its own rows and durable ones, never its parent's session rows
    own = child.own_only
    assert names(m.find_exact(own, ["plan", "team", "note"])) == ["note", "team"]
    assert m.forget_entities(own, [plan.id], T1) == (0, 0)
    assert names(m.find_exact(parent, ["plan"])) == ["plan"]
    # the parent's session ends: the child reads nothing of it any more
    m.purge_session(parent)
    assert names(m.find_exact(child, ["plan", "team", "note"])) == ["note", "team"]
