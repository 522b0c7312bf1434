"""The typed service layer (issue 23 #1): the App builds one ``Services`` object and every
request reaches its services through it, with the request's scope passed in. On a real App:
a SQLite code graph indexed from a small repository and the real SQLite memory store (the
embedder and vectors off: memory sessions do not depend on them)."""

from __future__ import annotations

import ast
import sqlite3
from pathlib import Path

import pytest

from codesynapse.app import App
from codesynapse.methods import call_method
from codesynapse.scope import make_scope
from codesynapse.services import Services
from codesynapse.settings import load_settings
from codesynapse.store.sqlite.graph import open_sqlite_graph

SRC = Path(__file__).resolve().parents[2] / "server" / "codesynapse"


def _app(tmp_path: Path) -> App:
    root = tmp_path / "repo"
    (root / "pay").mkdir(parents=True)
    (root / "pay" / "__init__.py").write_text("")
    (root / "pay" / "jobs.py").write_text("def settle(batch):\n    return refund(batch)\n\n\n"
                                          "def refund(payment):\n    return payment\n")
    app = App(root, load_settings({"data_dir": str(tmp_path / "data"), "workers": 1, "embedder": "none",
                                   "symbol_vectors": False}))
    app.index()
    return app


@pytest.fixture
def app(tmp_path):
    a = _app(tmp_path)
    yield a
    a.close()


def _remember(app, scope, name: str, durable: bool) -> None:
    call_method(app, "codesynapse/memory/remember",
                {"entities": [{"name": name, "type": "note", "durable": durable}]}, scope)


def _entity_rows(app, session: str) -> list[str]:
    db = app.workspace.data_dir / "memory" / "memory.sqlite3"
    with sqlite3.connect(db) as con:
        return [r[0] for r in con.execute("SELECT name FROM memory_entities WHERE session = ? ORDER BY name",
                                          (session,))]


def test_the_app_builds_one_typed_services_object(app):
    s = app.services
    assert isinstance(s, Services)
    assert s.context is s.context and s.navigation is s.navigation and s.ledger is s.ledger
    assert s.anchors is s.anchors and s.subsessions is s.subsessions
    own = s.own_scope
    assert own is s.own_scope
    assert (own.tenant, own.namespace) == (make_scope(app.settings.tenant, app.workspace.identity).tenant,
                                            make_scope(app.settings.tenant, app.workspace.identity).namespace)
    # a request without a connection is counted in the App's own session
    call_method(app, "codesynapse/symbolCard", {"selector": "pay.jobs.settle"})
    assert s.ledger.session(own).total.answers == 1


def test_the_context_service_follows_a_reopened_store(app):
    """A context service binds the store it was built on; after the App's store is replaced
    (``App._reopen_store``) requests answer from the new one, not the closed old one."""
    before = call_method(app, "codesynapse/symbolCard", {"selector": "pay.jobs.settle"})
    old = app.store
    new, _notice = open_sqlite_graph(app.workspace.db_path, app.workspace.graph_id)
    app.store = new
    old.close()
    after = call_method(app, "codesynapse/symbolCard", {"selector": "pay.jobs.settle"})
    assert after["card"]["qualifiedName"] == before["card"]["qualifiedName"] == "pay.jobs.settle"
    assert after["card"]["callees"] == before["card"]["callees"]
    assert [c["qualifiedName"] for c in after["card"]["callees"]] == ["pay.jobs.refund"]
    assert app.services.navigation.symbol("pay.jobs.refund").path == "pay/jobs.py"


def test_memory_is_one_service_per_session_and_ends_with_its_session(app):
    alice = make_scope(app.settings.tenant, app.workspace.identity, "alice")
    bob = make_scope(app.settings.tenant, app.workspace.identity, "bob")
    mem = app.services.memory(alice)
    assert app.services.memory(alice) is mem
    assert app.services.memory(bob) is not mem
    _remember(app, alice, "alice-draft", durable=False)
    _remember(app, alice, "alice-decision", durable=True)
    _remember(app, bob, "bob-draft", durable=False)
    assert _entity_rows(app, alice.session) == ["alice-draft"]

    app.services.end_session(alice)  # the connection closed (daemon/session.py)
    assert _entity_rows(app, alice.session) == []  # session memory deleted
    assert _entity_rows(app, "") == ["alice-decision"]  # durable memory stays
    assert _entity_rows(app, bob.session) == ["bob-draft"]  # another session untouched
    assert app.services.memory(bob) is not mem


def test_closing_the_app_ends_every_open_session(tmp_path):
    app = _app(tmp_path)
    carol = make_scope(app.settings.tenant, app.workspace.identity, "carol")
    _remember(app, carol, "carol-draft", durable=False)
    _remember(app, carol, "carol-decision", durable=True)
    app.close()
    db = tmp_path / "data"
    rows = sqlite3.connect(next(db.rglob("memory.sqlite3"))).execute(
        "SELECT name, session FROM memory_entities ORDER BY name").fetchall()
    assert rows == [("carol-decision", "")]


def _service_dict_uses(path: Path) -> list[tuple[int, str]]:
    """Uses of ``<x>.services`` as a dict: ``services[...]``, ``services.get/setdefault/pop(...)``."""
    out = []
    for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Attribute) and n.value.attr == "services":
            out.append((n.lineno, ast.unparse(n)))
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
              and n.func.attr in ("get", "setdefault", "pop", "items", "values")
              and isinstance(n.func.value, ast.Attribute) and n.func.value.attr == "services"):
            out.append((n.lineno, ast.unparse(n)))
    return out


def test_no_module_keeps_services_under_string_keys():
    """Services are typed fields built in one place (services.py), not dict entries that any
    module may add ("context", "memory:<session>", "clients" ...)."""
    found = {str(p.relative_to(SRC)): uses for p in sorted(SRC.rglob("*.py")) if (uses := _service_dict_uses(p))}
    assert found == {}
