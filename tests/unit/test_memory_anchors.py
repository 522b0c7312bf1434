"""Memory anchored to code (issue 25), on a real App: a real SQLite code graph indexed from a
small repository, the real SQLite memory store, live updates through the LiveUpdater (the
path didChange/didSave take) and full indexes. The embedder and vector store are off: anchors
do not depend on them (the hybrid legs have their own tests)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from codesynapse.app import App
from codesynapse.errors import InvalidParams
from codesynapse.memory.models import MAX_ANCHORS
from codesynapse.methods import call_method
from codesynapse.scope import make_scope
from codesynapse.settings import load_settings
from codesynapse.watch.live import LiveUpdater

SETTLE = textwrap.dedent('''\
    """Settlement jobs."""


    def settle(batch, retries=3):
        """Settle one batch of payments."""
        return [p for p in batch if p]


    def refund(payment):
        return payment


    class Ledger:
        def post(self, entry):
            return entry
''')


def _app(tmp_path: Path) -> App:
    root = tmp_path / "repo"
    (root / "pay").mkdir(parents=True)
    (root / "pay" / "__init__.py").write_text("")
    (root / "pay" / "jobs.py").write_text(SETTLE)
    (root / "pay" / "other.py").write_text("def helper():\n    return 1\n")
    app = App(root, load_settings({"data_dir": str(tmp_path / "data"), "workers": 1, "embedder": "none",
                                   "symbol_vectors": False}))
    app.index()
    return app


@pytest.fixture
def app(tmp_path):
    a = _app(tmp_path)
    yield a
    a.close()


def scope_of(app, label=""):
    return make_scope(app.settings.tenant, app.workspace.identity, label)


def remember(app, scope, **params):
    return call_method(app, "codesynapse/memory/remember", params, scope)


def recall(app, scope, query, **params):
    return call_method(app, "codesynapse/memory/recall", {"query": query, **params}, scope)


def anchors_of(answer, name):
    return next(e for e in answer["entries"] if e["name"] == name).get("anchors", [])


def live_write(app, rel: str, text: str) -> None:
    """A saved edit through the live updater (what didSave / the watcher apply)."""
    (app.workspace.root / rel).write_text(text)
    live = LiveUpdater(app)
    live.disk_changed(rel)
    live.start(watch=False)
    try:
        assert live.wait_idle(60)
    finally:
        live.stop()


# ---- 1. anchors at write time ---------------------------------------------------------------

def test_qualified_name_and_position_anchors_are_resolved_and_hydrated(app):
    s = scope_of(app)
    uri = (app.workspace.root / "pay" / "jobs.py").as_uri()
    out = remember(app, s, entities=[
        {"name": "retry policy", "anchors": ["pay.jobs.settle", {"uri": uri, "line": 13, "character": 8}]}])
    assert out["entities"][0]["anchors"] == ["pay.jobs.settle", "pay.jobs.Ledger.post"]
    got = anchors_of(recall(app, s, "retry policy"), "retry policy")
    assert [(a["qualifiedName"], a["path"], a["line"]) for a in got] == [
        ("pay.jobs.settle", "pay/jobs.py", 4), ("pay.jobs.Ledger.post", "pay/jobs.py", 14)]
    assert "settle" in got[0]["card"] and "Settle one batch of payments" in got[0]["card"]
    assert all("status" not in a for a in got)


def test_unknown_anchor_is_invalid_params_naming_it_and_writes_nothing(app):
    s = scope_of(app)
    with pytest.raises(InvalidParams) as e:
        remember(app, s, entities=[{"name": "ghost", "anchors": ["pay.jobs.settle", "pay.jobs.nope"]}])
    assert e.value.field == "entities[0].anchors[1]" and "pay.jobs.nope" in str(e.value)
    assert recall(app, s, "ghost")["entries"] == []  # nothing was written, not even the entity
    with pytest.raises(InvalidParams) as e:
        remember(app, s, entities=[{"name": "far", "anchors": [{"uri": "file:///etc/passwd", "line": 0}]}])
    assert e.value.field == "entities[0].anchors[0].uri"


def test_anchor_count_is_bounded(app):
    s = scope_of(app)
    with pytest.raises(InvalidParams) as e:
        remember(app, s, entities=[{"name": "many", "anchors": ["pay.jobs.settle"] * (MAX_ANCHORS + 1)}])
    assert "entities" in e.value.field and str(MAX_ANCHORS) in str(e.value)


# ---- 3. staleness ---------------------------------------------------------------------------

def test_live_change_marks_changed_and_a_line_move_only_follows(app):
    s = scope_of(app)
    remember(app, s, entities=[{"name": "settle note", "anchors": ["pay.jobs.settle"]},
                               {"name": "refund note", "anchors": ["pay.jobs.refund"]}])
    # settle's body changes; refund only moves down by the lines added above it
    live_write(app, "pay/jobs.py", SETTLE.replace("return [p for p in batch if p]",
                                                  "done = [p for p in batch if p]\n    return done"))
    res = recall(app, s, "settle note")
    (a,) = anchors_of(res, "settle note")
    assert a["status"] == "changed" and a["statusAt"]
    (b,) = anchors_of(recall(app, s, "refund note"), "refund note")
    assert "status" not in b and b["line"] == 10  # was 9


def test_live_delete_marks_removed_and_nothing_is_deleted(app):
    s = scope_of(app)
    remember(app, s, entities=[{"name": "refund note", "anchors": ["pay.jobs.refund"]}])
    live_write(app, "pay/jobs.py", SETTLE.replace("def refund(payment):\n    return payment\n", ""))
    (a,) = anchors_of(recall(app, s, "refund note"), "refund note")
    assert (a["status"], a["qualifiedName"], a["path"]) == ("removed", "pay.jobs.refund", "pay/jobs.py")


def test_move_to_another_file_with_the_same_content_is_re_anchored(app):
    s = scope_of(app)
    remember(app, s, entities=[{"name": "refund note", "anchors": ["pay.jobs.refund"]}])
    body = "def refund(payment):\n    return payment\n"
    # two live saves: removed from jobs.py first, then it appears in other.py
    live_write(app, "pay/jobs.py", SETTLE.replace(body, ""))
    live_write(app, "pay/other.py", "def helper():\n    return 1\n\n\n" + body)
    (a,) = anchors_of(recall(app, s, "refund note"), "refund note")
    assert (a["status"], a["qualifiedName"], a["path"], a["line"]) == ("moved", "pay.other.refund",
                                                                       "pay/other.py", 5)
    assert a["previous"].startswith("pay.jobs.refund @ pay/jobs.py")


def test_full_index_marks_a_changed_symbol_and_re_anchors_a_renamed_module(app):
    s = scope_of(app)
    remember(app, s, entities=[{"name": "ledger note", "anchors": ["pay.jobs.Ledger.post"]},
                               {"name": "settle note", "anchors": ["pay.jobs.settle"]}])
    root = app.workspace.root
    # a file rename (the module's name changes, the definitions' bytes do not) and an edit,
    # seen by a full index, not by live updates
    (root / "pay" / "jobs.py").rename(root / "pay" / "settlement.py")
    text = (root / "pay" / "settlement.py").read_text()
    (root / "pay" / "settlement.py").write_text(text.replace("retries=3", "retries=5"))
    app.index()
    (led,) = anchors_of(recall(app, s, "ledger note"), "ledger note")
    assert (led["status"], led["qualifiedName"], led["path"]) == ("moved", "pay.settlement.Ledger.post",
                                                                  "pay/settlement.py")
    (st,) = anchors_of(recall(app, s, "settle note"), "settle note")
    assert st["status"] == "removed"  # renamed file and changed bytes: no same-content symbol


def test_a_rename_in_place_is_re_anchored_by_a_live_save(app):
    s = scope_of(app)
    remember(app, s, entities=[{"name": "settle note", "anchors": ["pay.jobs.settle"]},
                               {"name": "post note", "anchors": ["pay.jobs.Ledger.post"]}])
    # same file, same body, new names (a function and a method)
    live_write(app, "pay/jobs.py", SETTLE.replace("def settle(", "def settle_batch(")
               .replace("def post(", "def record("))
    (a,) = anchors_of(recall(app, s, "settle note"), "settle note")
    assert (a["status"], a["qualifiedName"], a["path"], a["line"]) == ("moved", "pay.jobs.settle_batch",
                                                                       "pay/jobs.py", 4)
    assert a["previous"] == "pay.jobs.settle @ pay/jobs.py:4"
    assert "settle_batch" in a["card"]
    (p,) = anchors_of(recall(app, s, "post note"), "post note")
    assert (p["status"], p["qualifiedName"]) == ("moved", "pay.jobs.Ledger.record")


def test_a_rename_in_an_unsaved_buffer_is_re_anchored(app):
    s = scope_of(app)
    remember(app, s, entities=[{"name": "refund note", "anchors": ["pay.jobs.refund"]}])
    live = LiveUpdater(app)
    live.start(watch=False)
    try:  # what didChange applies: the buffer, not the disk (which still has the old name)
        live.buffer_changed("pay/jobs.py", SETTLE.replace("def refund(", "def refund_payment("))
        assert live.wait_idle(60)
    finally:
        live.stop()
    (a,) = anchors_of(recall(app, s, "refund note"), "refund note")
    assert (a["status"], a["qualifiedName"], a["line"]) == ("moved", "pay.jobs.refund_payment", 9)


def test_a_recursive_function_renamed_with_its_calls_is_re_anchored(tmp_path):
    app = _app(tmp_path)
    try:
        fact = "def fact(n):\n    return 1 if n < 2 else n * fact(n - 1)\n"
        live_write(app, "pay/other.py", fact)
        s = scope_of(app)
        remember(app, s, entities=[{"name": "fact note", "anchors": ["pay.other.fact"]}])
        live_write(app, "pay/other.py", fact.replace("fact", "factorial"))
        (a,) = anchors_of(recall(app, s, "fact note"), "fact note")
        assert (a["status"], a["qualifiedName"]) == ("moved", "pay.other.factorial")
    finally:
        app.close()


def test_a_rename_with_a_body_change_is_removed_and_a_full_index_re_anchors_a_rename(app):
    s = scope_of(app)
    remember(app, s, entities=[{"name": "settle note", "anchors": ["pay.jobs.settle"]},
                               {"name": "refund note", "anchors": ["pay.jobs.refund"]}])
    root = app.workspace.root
    # seen by a full index: settle renamed with its body changed, refund renamed only
    (root / "pay" / "jobs.py").write_text(
        SETTLE.replace("def settle(batch, retries=3)", "def settle_all(batch, retries=4)")
        .replace("def refund(", "def refund_payment("))
    app.index()
    (st,) = anchors_of(recall(app, s, "settle note"), "settle note")
    assert (st["status"], st["qualifiedName"]) == ("removed", "pay.jobs.settle")
    (rf,) = anchors_of(recall(app, s, "refund note"), "refund note")
    assert (rf["status"], rf["qualifiedName"], rf["line"]) == ("moved", "pay.jobs.refund_payment", 9)
    assert rf["previous"] == "pay.jobs.refund @ pay/jobs.py:9"


def test_undoing_a_change_clears_the_mark(app):
    s = scope_of(app)
    remember(app, s, entities=[{"name": "settle note", "anchors": ["pay.jobs.settle"]}])
    live_write(app, "pay/jobs.py", SETTLE.replace("retries=3", "retries=4"))
    assert anchors_of(recall(app, s, "settle note"), "settle note")[0]["status"] == "changed"
    live_write(app, "pay/jobs.py", SETTLE)
    assert "status" not in anchors_of(recall(app, s, "settle note"), "settle note")[0]


def test_anchors_keep_the_scope(app):
    a, b = scope_of(app, "a"), scope_of(app, "b")
    remember(app, a, entities=[{"name": "session note", "anchors": ["pay.jobs.settle"]}])
    remember(app, a, entities=[{"name": "team note", "durable": True, "anchors": ["pay.jobs.refund"]}])
    assert "session note" not in [e["name"] for e in recall(app, b, "session note")["entries"]]
    assert [x["qualifiedName"] for x in anchors_of(recall(app, b, "team note"), "team note")] == ["pay.jobs.refund"]


# ---- 4. memory in context answers ----------------------------------------------------------

def test_context_answers_list_the_memory_anchored_to_their_symbols(app):
    s = scope_of(app)
    remember(app, s, entities=[{"name": "retry policy", "anchors": ["pay.jobs.settle"]}],
             facts=[{"subject": "retry policy", "predicate": "applies_to", "object": "settlement job"}])
    card = call_method(app, "codesynapse/symbolCard", {"selector": "pay.jobs.settle"}, s)
    mem = card["memory"]
    assert mem["count"] == 1 and mem["notice"].startswith("Supplied by agents")
    assert mem["entries"] == [{"name": "retry policy", "symbol": "pay.jobs.settle",
                               "facts": ["retry policy applies_to settlement job"]}]
    ctx = call_method(app, "codesynapse/symbolContext", {"selector": "pay.jobs.settle"}, s)
    assert ctx["memory"]["entries"][0]["name"] == "retry policy"
    mc = call_method(app, "codesynapse/minimalContext", {"task": "settle the payments batch"}, s)
    assert [e["name"] for e in mc["memory"]["entries"]] == ["retry policy"]
    diff = ("--- a/pay/jobs.py\n+++ b/pay/jobs.py\n@@ -6,1 +6,1 @@\n"
            "-    return [p for p in batch if p]\n+    return list(batch)\n")
    pr = call_method(app, "codesynapse/prContext", {"diff": diff}, s)
    assert pr["memory"]["entries"][0]["symbol"] == "pay.jobs.settle"
    other = call_method(app, "codesynapse/symbolCard", {"selector": "pay.jobs.refund"}, s)
    assert "memory" not in other  # nothing anchored there


def test_context_memory_is_scope_bound(app):
    a, b = scope_of(app, "a"), scope_of(app, "b")
    remember(app, a, entities=[{"name": "my session note", "anchors": ["pay.jobs.settle"]}])
    assert call_method(app, "codesynapse/symbolCard", {"selector": "pay.jobs.settle"}, a)["memory"]["count"] == 1
    assert "memory" not in call_method(app, "codesynapse/symbolCard", {"selector": "pay.jobs.settle"}, b)
    # another namespace (another repository identity) never sees it either
    from codesynapse.scope import make_scope as mk
    c = mk(app.settings.tenant, "another-repo")
    assert "memory" not in call_method(app, "codesynapse/symbolCard", {"selector": "pay.jobs.settle"}, c)


def test_context_memory_stays_within_the_budget_and_counts_what_it_leaves_out(app):
    s = scope_of(app)
    remember(app, s, entities=[{"name": f"note {i} " + "x" * 120, "anchors": ["pay.jobs.settle"]}
                               for i in range(12)])
    ans = call_method(app, "codesynapse/symbolCard", {"selector": "pay.jobs.settle", "maxTokens": 300}, s)
    assert ans["tokens"] <= 300
    mem = ans["memory"]
    assert mem["count"] == 12 and mem["omitted"] == 12 - len(mem["entries"]) and mem["howToGetMore"]
    assert mem["notice"]


def test_stale_status_shows_in_context_answers(app):
    s = scope_of(app)
    remember(app, s, entities=[{"name": "settle note", "anchors": ["pay.jobs.settle"]}])
    live_write(app, "pay/jobs.py", SETTLE.replace("retries=3", "retries=4"))
    (e,) = call_method(app, "codesynapse/symbolCard", {"selector": "pay.jobs.settle"}, s)["memory"]["entries"]
    assert e["anchor"] == "changed" and e["anchorAt"]


def test_anchor_cards_count_towards_32_kib_and_are_counted_when_left_out(tmp_path):
    root = tmp_path / "big"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    names = [f"handle_{'very_long_segment_' * 8}{i}" for i in range(16)]
    (root / "pkg" / "wide.py").write_text("".join(
        f'def {n}(event, retries=3, {", ".join(f"arg{j}=None" for j in range(12))}):\n'
        f'    """{"Explain this handler in some detail. " * 4}"""\n    return event\n\n\n' for n in names))
    app = App(root, load_settings({"data_dir": str(tmp_path / "data"), "workers": 1, "embedder": "none",
                                   "symbol_vectors": False}))
    try:
        app.index()
        s = scope_of(app)
        remember(app, s, entities=[{"name": f"wide note {k}", "anchors": [f"pkg.wide.{n}" for n in names]}
                                   for k in range(8)])
        res = recall(app, s, "wide note")
        assert res["resultBytes"] <= 32 * 1024 and res["truncated"] is True
        shown = sum(len(e.get("anchors", [])) for e in res["entries"])
        assert res["omitted"]["anchors"] == 8 * 16 - shown - 16 * res["omitted"]["entries"] > 0
    finally:
        app.close()


# ---- fact anchors ---------------------------------------------------------------------------

def fact_of(answer, predicate):
    return next(f for f in answer["facts"] if f["predicate"] == predicate)


def test_fact_anchors_are_resolved_and_hydrated_in_recall(app):
    s = scope_of(app)
    uri = (app.workspace.root / "pay" / "jobs.py").as_uri()
    remember(app, s, facts=[{"subject": "retry policy", "predicate": "implemented_by", "object": "settle job",
                             "anchors": ["pay.jobs.settle", {"uri": uri, "line": 13, "character": 8}]}])
    got = fact_of(recall(app, s, "retry policy"), "implemented_by")["anchors"]
    assert [(a["qualifiedName"], a["path"], a["line"]) for a in got] == [
        ("pay.jobs.settle", "pay/jobs.py", 4), ("pay.jobs.Ledger.post", "pay/jobs.py", 14)]
    assert "Settle one batch of payments" in got[0]["card"]
    assert all("status" not in a for a in got)
    # the same fact remembered again with other anchors: they replace the old ones
    remember(app, s, facts=[{"subject": "retry policy", "predicate": "implemented_by", "object": "settle job",
                             "anchors": ["pay.jobs.refund"]}])
    got = fact_of(recall(app, s, "retry policy"), "implemented_by")["anchors"]
    assert [a["qualifiedName"] for a in got] == ["pay.jobs.refund"]


def test_unknown_fact_anchor_is_invalid_params_naming_it_and_writes_nothing(app):
    s = scope_of(app)
    with pytest.raises(InvalidParams) as err:
        remember(app, s, facts=[{"subject": "a", "predicate": "uses", "object": "b"},
                                {"subject": "retry policy", "predicate": "implemented_by", "object": "x",
                                 "anchors": ["pay.jobs.settle", "pay.jobs.nope"]}])
    assert err.value.field == "facts[1].anchors[1]"
    assert "pay.jobs.nope" in str(err.value)
    # nothing was written, not even the first fact or its entities
    assert recall(app, s, "retry policy")["entries"] == [] and recall(app, s, "a")["entries"] == []
    with pytest.raises(InvalidParams) as err:
        remember(app, s, facts=[{"subject": "a", "predicate": "uses", "object": "b",
                                 "anchors": [f"pay.jobs.settle{i}" for i in range(MAX_ANCHORS + 1)]}])
    assert err.value.field.startswith("facts[0].anchors")


def test_fact_anchor_staleness_follows_live_updates(app):
    s = scope_of(app)
    remember(app, s, facts=[{"subject": "retry policy", "predicate": "implemented_by", "object": "settle job",
                             "anchors": ["pay.jobs.settle"]},
                            {"subject": "retry policy", "predicate": "refunds_with", "object": "refund",
                             "anchors": ["pay.jobs.refund"]}])
    live_write(app, "pay/jobs.py", SETTLE.replace("retries=3", "retries=4")
               .replace("def refund(payment):\n    return payment\n", ""))
    ans = recall(app, s, "retry policy")
    (ch,) = fact_of(ans, "implemented_by")["anchors"]
    assert (ch["status"], ch["qualifiedName"]) == ("changed", "pay.jobs.settle") and ch["statusAt"]
    (rm,) = fact_of(ans, "refunds_with")["anchors"]
    assert (rm["status"], rm["qualifiedName"]) == ("removed", "pay.jobs.refund")
    live_write(app, "pay/jobs.py", SETTLE.replace("def settle(", "def settle_batch("))
    (mv,) = fact_of(recall(app, s, "retry policy"), "implemented_by")["anchors"]
    assert (mv["status"], mv["qualifiedName"]) == ("moved", "pay.jobs.settle_batch")


def test_context_answers_list_facts_anchored_to_their_symbols_in_scope(app):
    a, b = scope_of(app, "a"), scope_of(app, "b")
    remember(app, a, facts=[{"subject": "retry policy", "predicate": "implemented_by", "object": "settle job",
                             "anchors": ["pay.jobs.settle"]}])
    mem = call_method(app, "codesynapse/symbolCard", {"selector": "pay.jobs.settle"}, a)["memory"]
    assert mem["count"] == 1
    assert mem["entries"] == [{"fact": "retry policy implemented_by settle job", "symbol": "pay.jobs.settle"}]
    # another session does not see the session fact; a durable one it does
    assert "memory" not in call_method(app, "codesynapse/symbolCard", {"selector": "pay.jobs.settle"}, b)
    remember(app, a, facts=[{"subject": "ledger", "predicate": "posts_with", "object": "post",
                             "durable": True, "anchors": ["pay.jobs.Ledger.post"]}])
    mem = call_method(app, "codesynapse/symbolCard", {"selector": "pay.jobs.Ledger.post"}, b)["memory"]
    assert mem["entries"] == [{"fact": "ledger posts_with post", "symbol": "pay.jobs.Ledger.post",
                               "durable": True}]
    # a forgotten fact's anchors are no longer read
    call_method(app, "codesynapse/memory/forget",
                {"facts": [{"subject": "ledger", "predicate": "posts_with", "object": "post"}]}, b)
    assert "memory" not in call_method(app, "codesynapse/symbolCard", {"selector": "pay.jobs.Ledger.post"}, b)
