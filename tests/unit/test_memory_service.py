"""MemoryService end to end on real SQLite, real milvus-lite and the real local model:
several clients (sessions, namespaces, tenants) against the same stores."""

from __future__ import annotations

import json
import math
import threading

import msgspec
import pytest
from pymilvus import MilvusClient

from codesynapse.errors import DeadlineExceeded, InvalidParams
from codesynapse.memory.factory import open_memory
from codesynapse.memory.models import (
    decode_forget,
    decode_list,
    decode_recall,
    decode_remember,
)
from codesynapse.memory.service import MemoryService, MemorySettings, settings_from_dict
from codesynapse.memory.vectors import collection_name
from codesynapse.scope import make_scope

MODEL_KEY = "8199be6f699a395f_384"


@pytest.fixture
def data(tmp_path):
    return tmp_path / "data"


@pytest.fixture
def opened():
    services: list[MemoryService] = []
    yield services
    for s in reversed(services):
        s.close()


@pytest.fixture
def client(data, opened):
    """open_memory for a scope; every service is closed after the test."""

    def make(scope, settings=None) -> MemoryService:
        svc = open_memory(data, scope, settings)
        opened.append(svc)
        return svc

    return make


def remember(svc, **params):
    return msgspec.to_builtins(svc.remember(decode_remember(params)))


def recall(svc, query, **params):
    return msgspec.to_builtins(svc.recall(decode_recall({"query": query, **params})))


def names(res):
    return [e["name"] for e in res["entries"]]


def triples(res):
    return [(f["subject"], f["predicate"], f["object"]) for f in res["facts"]]


def encoded_size(res) -> int:
    return len(json.dumps(res, separators=(",", ":"), ensure_ascii=False).encode())


def assert_budget(res):
    assert res["resultBytes"] == encoded_size(res)
    assert res["tokens"] == math.ceil(res["resultBytes"] / 4)
    assert res["resultBytes"] <= 32 * 1024


def raw_milvus(data) -> MilvusClient:
    info = json.loads((data / "milvus-endpoint.json").read_text())
    return MilvusClient(uri=f"http://127.0.0.1:{info['port']}")


# ---- isolation --------------------------------------------------------------------------

def test_session_memory_is_invisible_to_other_sessions(client):
    a1 = client(make_scope("acme", "/repo/one"))
    a2 = client(make_scope("acme", "/repo/one"))
    assert a1.scope.namespace == a2.scope.namespace and a1.scope.session != a2.scope.session
    out = remember(a1, entities=[{"name": "scratch retry idea"}],
                   facts=[{"subject": "scratch retry idea", "predicate": "relates_to",
                           "object": "net.Backoff"}])
    assert [(e["name"], e["durable"], e["status"]) for e in out["entities"]] == [
        ("scratch retry idea", False, "created"), ("net.Backoff", False, "created")]
    mine = recall(a1, "scratch retry idea")
    assert names(mine)[0] == "scratch retry idea"
    assert triples(mine) == [("scratch retry idea", "relates_to", "net.Backoff")]
    theirs = recall(a2, "scratch retry idea")
    assert theirs["entries"] == [] and theirs["facts"] == []
    assert theirs["legs"]["dense"]["ran"] is True
    assert msgspec.to_builtins(a2.list(decode_list({})))["entries"] == []


def test_durable_memory_is_shared_within_the_namespace_only(client):
    a1 = client(make_scope("acme", "/repo/one"))
    a2 = client(make_scope("acme", "/repo/one"))
    other_ns = client(make_scope("acme", "/repo/two"))
    other_tenant = client(make_scope("globex", "/repo/one"))
    remember(a1, entities=[{"name": "net.Backoff", "aliases": ["RetryPolicy"], "type": "class",
                            "durable": True},
                           {"name": "settings.yaml", "durable": True}],
             facts=[{"subject": "net.Backoff", "predicate": "configured_in",
                     "object": "settings.yaml", "durable": True, "sourceClient": "claude"}])
    res = recall(a2, "where is the retry policy")
    assert names(res) == ["net.Backoff"]
    assert res["entries"][0]["foundBy"] == ["lexical", "dense"]
    assert res["entries"][0]["durable"] is True
    assert triples(res) == [("net.Backoff", "configured_in", "settings.yaml")]
    assert res["facts"][0]["sourceClient"] == "claude"
    for outsider in (other_ns, other_tenant):
        r = recall(outsider, "net.Backoff")
        assert r["entries"] == [] and r["facts"] == []


def test_identical_names_in_two_namespaces_never_cross(client):
    one = client(make_scope("acme", "/repo/one"))
    two = client(make_scope("acme", "/repo/two"))
    remember(one, facts=[{"subject": "Config", "predicate": "lives_in", "object": "settings.py",
                          "durable": True}])
    remember(two, facts=[{"subject": "Config", "predicate": "lives_in", "object": "config.go",
                          "durable": True}])
    r1 = recall(one, "Config", includeIds=True)
    r2 = recall(two, "Config", includeIds=True)
    assert triples(r1) == [("Config", "lives_in", "settings.py")]
    assert triples(r2) == [("Config", "lives_in", "config.go")]
    assert r1["entries"][0]["id"] != r2["entries"][0]["id"]
    assert names(r1) == ["Config", "settings.py"]
    assert names(r2) == ["Config", "config.go"]


def test_a_foreign_row_planted_in_milvus_is_dropped(client, data):
    mine = client(make_scope("acme", "/repo/one"))
    theirs = client(make_scope("acme", "/repo/two"))
    remember(mine, entities=[{"name": "Config", "durable": True}])
    foreign = remember(theirs, entities=[{"name": "Configuration loader", "durable": True}])
    foreign_id = foreign["entities"][0]["id"]
    qvec = mine.embedder.embed(["Config"])[0]
    base = {"version": 1, "sess_d": "", "has_vec": True, "vec": qvec}
    s = mine.scope
    raw_milvus(data).upsert(collection_name(MODEL_KEY), [
        # passes the Milvus filter (our digests) but the entity belongs to another namespace
        {**base, "id": foreign_id, "tenant_d": s.tenant_digest, "ns_d": s.namespace_digest},
        # passes the filter, names no entity at all
        {**base, "id": "mem_" + "e" * 24, "tenant_d": s.tenant_digest,
         "ns_d": s.namespace_digest},
    ])
    res = recall(mine, "Config", includeIds=True)
    assert names(res) == ["Config"]
    assert res["legs"]["dense"]["hits"] == 3  # Milvus returned them; hydration dropped two
    assert foreign_id not in [e["id"] for e in res["entries"]]


def test_deleted_entities_are_not_recalled_even_if_their_vector_survives(client, data):
    a = client(make_scope("acme", "/repo/one"))
    out = remember(a, entities=[{"name": "ticket 412", "durable": True}],
                   facts=[{"subject": "ticket 412", "predicate": "blocked_by",
                           "object": "schema change", "durable": True}])
    tid = out["entities"][0]["id"]
    assert names(recall(a, "ticket 412"))[0] == "ticket 412"
    forgot = msgspec.to_builtins(a.forget(decode_forget({"names": ["ticket 412"]})))
    assert (forgot["entities"], forgot["facts"], forgot["notFound"]) == (1, 1, [])
    after = recall(a, "ticket 412")
    assert "ticket 412" not in names(after)
    assert after["facts"] == []
    qv = a.embedder.embed(["ticket 412"])[0]
    assert tid not in [h.entity_id for h in a.vectors.search(a.scope, MODEL_KEY, 384, qv)]
    # a delete that did not reach Milvus (row planted back) still cannot resurrect it
    s = a.scope
    raw_milvus(data).upsert(collection_name(MODEL_KEY), [{
        "id": tid, "tenant_d": s.tenant_digest, "ns_d": s.namespace_digest, "sess_d": "",
        "version": 1, "has_vec": True, "vec": a.embedder.embed(["ticket 412"])[0]}])
    again = recall(a, "ticket 412", includeIds=True)
    assert tid not in [e["id"] for e in again["entries"]]
    # other sessions do not see it either
    other = client(make_scope("acme", "/repo/one"))
    assert "ticket 412" not in names(recall(other, "ticket 412"))


def test_re_aliased_entity_is_not_recalled_by_its_old_alias(client):
    a1 = client(make_scope("acme", "/repo/one"))
    # a second client without an embedder re-aliases it: the old vector (version 1) stays
    a2 = client(make_scope("acme", "/repo/one"), {"embedder": "off"})
    remember(a1, entities=[{"name": "Foo", "aliases": ["RetryPolicy"], "durable": True}])
    assert names(recall(a1, "RetryPolicy")) == ["Foo"]
    upd = remember(a2, entities=[{"name": "Foo", "aliases": ["Other"], "durable": True}])
    assert upd["entities"][0]["status"] == "updated"
    assert upd["embeddingNote"] == "dense index off: the embedder is off (setting embedder = off)"
    res = recall(a1, "RetryPolicy")
    assert res["legs"]["dense"]["hits"] == 1  # the stale vector was found ...
    assert res["entries"] == []  # ... and dropped at hydration
    assert names(recall(a1, "Other")) == ["Foo"]


def test_renamed_alias_is_reembedded_when_the_embedder_works(client):
    a = client(make_scope("acme", "/repo/one"))
    remember(a, entities=[{"name": "Foo", "aliases": ["RetryPolicy"], "durable": True}])
    out = remember(a, entities=[{"name": "Foo", "aliases": ["ExponentialBackoff"],
                                 "durable": True}])
    assert (out["embedded"], out["embeddingPending"]) == (1, 0)
    res = recall(a, "ExponentialBackoff")
    assert names(res) == ["Foo"]
    assert res["entries"][0]["foundBy"] == ["exact", "lexical", "dense"]


# ---- limits -----------------------------------------------------------------------------

def test_at_most_8_entries_with_truncated_and_omitted(client):
    a = client(make_scope("acme", "/repo/one"), {"embedder": "off"})
    remember(a, entities=[{"name": f"alpha widget {i:02d}"} for i in range(12)])
    res = recall(a, "alpha widget")
    assert len(res["entries"]) == 8
    assert res["truncated"] is True
    assert res["omitted"]["entries"] == 2  # lexical leg gave 10 candidates
    assert res["legs"]["lexical"]["hits"] == 10
    assert_budget(res)
    assert len(recall(a, "alpha widget", limit=3)["entries"]) == 3
    assert len(recall(a, "alpha widget", limit=50)["entries"]) == 8


def test_hops_are_clamped_to_2(client):
    a = client(make_scope("acme", "/repo/one"), {"embedder": "off"})
    remember(a, facts=[{"subject": "alpha", "predicate": "calls", "object": "bravo"},
                       {"subject": "bravo", "predicate": "calls", "object": "charlie"},
                       {"subject": "charlie", "predicate": "calls", "object": "delta"}])
    assert names(recall(a, "alpha")) == ["alpha"]
    assert triples(recall(a, "alpha", hops=0)) == []
    assert triples(recall(a, "alpha", hops=1)) == [("alpha", "calls", "bravo")]
    two = recall(a, "alpha", hops=2)
    assert triples(two) == [("alpha", "calls", "bravo"), ("bravo", "calls", "charlie")]
    assert [f.get("hop") for f in two["facts"]] == [None, 2]  # hop 1 is the default, left out
    assert triples(recall(a, "alpha", hops=9)) == triples(two)
    # a fact budget of 1 leaves the second hop's fact out, and says so
    one = recall(a, "alpha", hops=2, maxFacts=1)
    assert triples(one) == [("alpha", "calls", "bravo")]
    assert (one["truncated"], one["omitted"]["facts"]) == (True, 1)
    assert two["truncated"] is False and "omitted" not in two


def test_at_most_80_facts(client):
    a = client(make_scope("acme", "/repo/one"), {"embedder": "off"})
    remember(a, facts=[{"subject": "hub", "predicate": "links", "object": f"leaf {i:03d}"}
                       for i in range(100)])
    res = recall(a, "hub", limit=1)
    assert names(res) == ["hub"]
    assert len(res["facts"]) == 80
    assert res["truncated"] is True and res["omitted"]["facts"] == 20
    assert_budget(res)
    few = recall(a, "hub", limit=1, maxFacts=5)
    assert len(few["facts"]) == 5 and few["truncated"] is True
    assert few["omitted"]["facts"] == 95


def test_result_json_stays_within_32_kib(client):
    a = client(make_scope("acme", "/repo/one"), {"embedder": "off"})
    long = "x" * 240
    remember(a, entities=[
        {"name": f"bulky {i} {long}", "aliases": [f"alias {i} {j} {long}" for j in range(16)]}
        for i in range(8)])
    remember(a, facts=[{"subject": f"bulky 0 {long}", "predicate": "links",
                        "object": f"target {i} {long}"} for i in range(60)])
    res = recall(a, "bulky")
    assert_budget(res)
    assert res["truncated"] is True
    assert res["resultBytes"] > 30 * 1024
    assert res["omitted"]["facts"] + res["omitted"]["entries"] > 0
    assert res["omitted"]["howToGetMore"]


def test_roots_are_returned_without_facts(client):
    a = client(make_scope("acme", "/repo/one"))
    remember(a, entities=[{"name": "lonely entity"}])
    res = recall(a, "lonely entity")
    assert names(res) == ["lonely entity"] and res["facts"] == []
    assert res["truncated"] is False
    assert "hint" not in res and "omitted" not in res


def test_recall_items_leave_out_their_defaults(client):
    a = client(make_scope("acme", "/repo/one"), {"embedder": "off"})
    remember(a, facts=[{"subject": "switchMap", "predicate": "cancels", "object": "inner subscription"},
                       {"subject": "switchMap", "predicate": "preferred_over", "object": "mergeMap",
                        "confidence": 0.7}])
    res = recall(a, "switchMap")
    created = res["entries"][0]["createdAt"]
    # session entities, no type, never updated: name, legs and creation time only ("Map" is
    # a word of both names for the lexical leg)
    assert res["entries"] == [{"name": "switchMap", "foundBy": ["exact", "lexical"], "createdAt": created},
                              {"name": "mergeMap", "foundBy": ["lexical"], "createdAt": created}]
    assert [{k: v for k, v in f.items() if k != "createdAt"} for f in res["facts"]] == [
        {"subject": "switchMap", "predicate": "cancels", "object": "inner subscription"},
        {"subject": "switchMap", "predicate": "preferred_over", "object": "mergeMap", "confidence": 0.7}]
    assert res["legs"] == {"exact": {"ran": True, "hits": 1}, "lexical": {"ran": True, "hits": 2},
                           "dense": {"ran": False, "hits": 0,
                                     "reason": "the embedder is off (setting embedder = off)"}}
    assert "omitted" not in res and "hint" not in res and res["truncated"] is False
    assert res["notice"] == "Supplied by agents and clients, not verified against the code: check the source."
    assert_budget(res)


def test_no_match_gives_a_bounded_hint(client):
    a = client(make_scope("acme", "/repo/one"))
    res = recall(a, "zebra giraffe")
    assert res["entries"] == [] and res["hint"].startswith("no memory matched")
    assert_budget(res)


# ---- fallbacks ---------------------------------------------------------------------------

class _Stub:
    """An embedder fault we cannot cause with the real model."""

    def __init__(self, real, vector=None, gate: threading.Event | None = None):
        self.model_key = real.model_key
        self.dim = real.dim
        self._real = real
        self._vector = vector
        self._gate = gate

    def embed(self, texts):
        if self._gate is not None:
            self._gate.wait(30)
        if self._vector is not None:
            from codesynapse.memory.embedder import validate_vector
            return [validate_vector(self._vector, self.dim) for _ in texts]
        return self._real.embed(texts)


def _lexical_answer(res, name):
    assert names(res) == [name]
    assert res["legs"]["lexical"] == {"ran": True, "hits": 1}
    assert res["legs"]["dense"]["ran"] is False
    return res["legs"]["dense"]["reason"]


def _with_stub(base: MemoryService, stub, **settings) -> MemoryService:
    return MemoryService(base.store, base.vectors, stub, base.scope,
                         settings=msgspec.structs.replace(MemorySettings(), **settings))


def test_fallback_when_no_embedder(client):
    a = client(make_scope("acme", "/repo/one"), {"embedder": "off"})
    remember(a, entities=[{"name": "net.Backoff"}])
    assert _lexical_answer(recall(a, "backoff"), "net.Backoff") == \
        "the embedder is off (setting embedder = off)"


def test_fallback_when_the_vector_store_is_off(client):
    a = client(make_scope("acme", "/repo/one"), {"vectors": "off"})
    remember(a, entities=[{"name": "net.Backoff"}])
    assert _lexical_answer(recall(a, "backoff"), "net.Backoff") == \
        "the vector store is off (setting vectors = off)"


def test_fallback_when_the_embedder_times_out(client):
    a = client(make_scope("acme", "/repo/one"))
    remember(a, entities=[{"name": "net.Backoff"}])
    gate = threading.Event()
    slow = _with_stub(a, _Stub(a.embedder, gate=gate), vector_timeout_s=0.2)
    try:
        for _ in range(2):  # both vector worker threads end up stuck in the model
            reason = _lexical_answer(recall(slow, "backoff"), "net.Backoff")
            assert reason == "vector leg timed out (no answer within 0.2 s); lexical only"
        # while the hung calls are still running, later recalls do not wait for them
        reason = _lexical_answer(recall(slow, "backoff"), "net.Backoff")
        assert reason == ("vector leg timed out (the vector workers are still busy with calls "
                          "that timed out); lexical only")
    finally:
        gate.set()
        slow.close()


def test_default_vector_timeout_is_2_s_and_deadline_10_s():
    s = MemorySettings()
    assert (s.vector_timeout_s, s.recall_deadline_s) == (2.0, 10.0)


@pytest.mark.parametrize(("vector", "reason"), [
    ([float("nan")] * 384, "query embedding rejected: vector holds non-finite values"),
    ([0.0] * 384, "query embedding rejected: vector is all zeros"),
])
def test_fallback_when_the_embedder_returns_nan_or_zeros(client, vector, reason):
    a = client(make_scope("acme", "/repo/one"))
    remember(a, entities=[{"name": "net.Backoff"}])
    bad = _with_stub(a, _Stub(a.embedder, vector=vector))
    try:
        assert _lexical_answer(recall(bad, "backoff"), "net.Backoff") == reason
        # remembering with a broken model keeps the entity lexical and queues its vector
        out = remember(bad, entities=[{"name": "queued entity"}])
        assert out["embedded"] == 0 and out["embeddingPending"] == 1
        assert out["embeddingNote"].startswith("embedding deferred: vector")
    finally:
        bad.close()
    # the working embedder drains the queue
    assert a.backfill() == 1


def test_embedding_that_times_out_is_finished_in_the_background(client):
    a = client(make_scope("acme", "/repo/one"))
    gate = threading.Event()
    slow = _with_stub(a, _Stub(a.embedder, gate=gate), vector_timeout_s=0.2)
    try:
        out = remember(slow, entities=[{"name": "net.Backoff", "aliases": ["RetryPolicy"]}])
        assert (out["embedded"], out["embeddingPending"]) == (0, 1)
        assert out["embeddingNote"] == "embedding deferred: no answer within 0.2 s"
        gate.set()  # the model answers again: the background drain writes the vector
        assert slow.wait_backfill(30)
        assert slow.store.pending_embeddings(slow.scope, MODEL_KEY) == 0
        res = recall(a, "retry policy")
        assert names(res) == ["net.Backoff"] and "dense" in res["entries"][0]["foundBy"]
    finally:
        gate.set()
        slow.close()


def test_deadline_exceeded(client):
    a = client(make_scope("acme", "/repo/one"))
    remember(a, entities=[{"name": "net.Backoff"}])
    gate = threading.Event()
    slow = _with_stub(a, _Stub(a.embedder, gate=gate), recall_deadline_s=0.2)
    try:
        with pytest.raises(DeadlineExceeded, match="0.2 s"):
            slow.recall(decode_recall({"query": "backoff"}))
    finally:
        gate.set()
        slow.close()


# ---- model change -----------------------------------------------------------------------

class _OtherModel:
    """A second model (we ship only one): deterministic 8-dim vectors from the text."""

    model_key = "feedfacefeedface_8"
    dim = 8

    def embed(self, texts):
        out = []
        for t in texts:
            v = [0.0] * 8
            for ch in t.lower():
                v[ord(ch) % 8] += 1.0
            out.append(v)
        return out


def test_model_change_backfills_and_retired_collection_is_not_queried(client):
    a = client(make_scope("acme", "/repo/one"))
    remember(a, entities=[{"name": "net.Backoff", "durable": True},
                          {"name": "ticket 412", "durable": True}])
    old = a.vectors.count(MODEL_KEY)
    new = MemoryService(a.store, a.vectors, _OtherModel(), a.scope)
    try:
        assert a.store.pending_embeddings(a.scope, "feedfacefeedface_8") == 2
        assert new.backfill() == 2
        assert a.vectors.count("feedfacefeedface_8") == 2
        res = msgspec.to_builtins(new.recall(decode_recall({"query": "ticket 412"})))
        assert res["legs"]["dense"]["ran"] is True
        assert names(res)[0] == "ticket 412"
        # forget removes the entity from both model collections
        new.forget(decode_forget({"names": ["ticket 412"]}))
        assert (a.vectors.count(MODEL_KEY), a.vectors.count("feedfacefeedface_8")) == (
            old - 1, 1)
    finally:
        new.close()


# ---- requests ----------------------------------------------------------------------------

def test_free_text_is_redacted_before_it_is_stored(client):
    a = client(make_scope("acme", "/repo/one"))
    token = "ghp_" + "A1b2C3d4" * 5
    out = remember(a, entities=[{"name": f"deploy key {token}"}],
                   facts=[{"subject": f"deploy key {token}", "predicate": "used_by",
                           "object": "ci", "sourceClient": "agent AKIAIOSFODNN7EXAMPLE"}])
    assert out["entities"][0]["name"] == "deploy key [REDACTED:github_token]"
    listed = msgspec.to_builtins(a.list(decode_list({})))
    assert [e["name"] for e in listed["entries"]] == ["ci", "deploy key [REDACTED:github_token]"]
    res = recall(a, "deploy key")
    assert res["facts"][0]["sourceClient"] == "agent [REDACTED:aws_access_key]"
    assert token not in json.dumps(res)


def test_remember_updates_and_reports_status(client):
    a = client(make_scope("acme", "/repo/one"))
    first = remember(a, entities=[{"name": "X", "aliases": ["Y"]}])
    again = remember(a, entities=[{"name": "X", "aliases": ["Y"]}])
    changed = remember(a, entities=[{"name": "X", "aliases": ["Z"]}])
    assert [first["entities"][0]["status"], again["entities"][0]["status"],
            changed["entities"][0]["status"]] == ["created", "unchanged", "updated"]
    assert first["entities"][0]["id"] == changed["entities"][0]["id"]
    assert (first["embedded"], again["embedded"], changed["embedded"]) == (1, 0, 1)


def test_facts_between_durable_entities_default_to_session(client):
    a1 = client(make_scope("acme", "/repo/one"))
    a2 = client(make_scope("acme", "/repo/one"))
    remember(a1, entities=[{"name": "A", "durable": True}, {"name": "B", "durable": True}],
             facts=[{"subject": "A", "predicate": "uses", "object": "B"}])
    assert triples(recall(a1, "A")) == [("A", "uses", "B")]
    assert triples(recall(a2, "A")) == []


def test_durable_fact_on_a_session_only_name_creates_a_durable_entity(client):
    a1 = client(make_scope("acme", "/repo/one"))
    a2 = client(make_scope("acme", "/repo/one"))
    remember(a1, entities=[{"name": "draft"}])
    out = remember(a1, facts=[{"subject": "draft", "predicate": "becomes", "object": "release",
                               "durable": True}])
    assert [(e["name"], e["durable"]) for e in out["entities"]] == [
        ("draft", True), ("release", True)]
    assert triples(recall(a2, "draft")) == [("draft", "becomes", "release")]


def test_forget_a_single_fact_and_unknown_names(client):
    a = client(make_scope("acme", "/repo/one"))
    remember(a, facts=[{"subject": "A", "predicate": "uses", "object": "B"},
                       {"subject": "A", "predicate": "owns", "object": "C"}])
    res = msgspec.to_builtins(a.forget(decode_forget({
        "facts": [{"subject": "A", "predicate": "uses", "object": "B"}],
        "names": ["nobody"]})))
    assert (res["entities"], res["facts"], res["notFound"]) == (0, 1, ["nobody"])
    assert triples(recall(a, "A")) == [("A", "owns", "C")]


def test_forget_by_id_and_other_sessions_cannot_forget_session_memory(client):
    a1 = client(make_scope("acme", "/repo/one"))
    a2 = client(make_scope("acme", "/repo/one"))
    eid = remember(a1, entities=[{"name": "mine"}])["entities"][0]["id"]
    res = msgspec.to_builtins(a2.forget(decode_forget({"ids": [eid]})))
    assert (res["entities"], res["notFound"]) == (0, [eid])
    assert names(recall(a1, "mine")) == ["mine"]
    res = msgspec.to_builtins(a1.forget(decode_forget({"ids": [eid]})))
    assert (res["entities"], res["notFound"]) == (1, [])


def test_list_pages_with_a_cursor(client):
    a = client(make_scope("acme", "/repo/one"), {"embedder": "off"})
    remember(a, entities=[{"name": n, "durable": n in ("b", "d")} for n in "edcba"])
    p1 = msgspec.to_builtins(a.list(decode_list({"limit": 2})))
    assert [e["name"] for e in p1["entries"]] == ["a", "b"] and p1["truncated"] is True
    p2 = msgspec.to_builtins(a.list(decode_list({"limit": 2, "cursor": p1["nextCursor"]})))
    assert [e["name"] for e in p2["entries"]] == ["c", "d"]
    p3 = msgspec.to_builtins(a.list(decode_list({"limit": 2, "cursor": p2["nextCursor"]})))
    assert [e["name"] for e in p3["entries"]] == ["e"] and p3["truncated"] is False
    assert p3["nextCursor"] == ""
    durable = msgspec.to_builtins(a.list(decode_list({"durable": True})))
    assert [e["name"] for e in durable["entries"]] == ["b", "d"]
    with pytest.raises(InvalidParams) as info:
        a.list(decode_list({"cursor": "!!!"}))
    assert info.value.field == "cursor"


def test_end_session_purges_session_memory_only(client):
    a1 = client(make_scope("acme", "/repo/one"))
    remember(a1, entities=[{"name": "temp note"}, {"name": "keeper", "durable": True}])
    assert a1.end_session() == 1
    a2 = client(make_scope("acme", "/repo/one"))
    listed = msgspec.to_builtins(a2.list(decode_list({})))
    assert [e["name"] for e in listed["entries"]] == ["keeper"]


def test_settings_fall_back_with_a_warning(caplog):
    s = settings_from_dict({"vectorTimeoutS": 99, "vectors": "cloud", "embedder": "off",
                            "nativeHybrid": "yes", "bogus": 1})
    assert (s.vector_timeout_s, s.vectors, s.embedder, s.native_hybrid) == (
        2.0, "lite", "off", False)
    warned = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("memory setting 'vectorTimeoutS' must be within 0.0..10.0")
               for m in warned)
    assert any(m.startswith("memory setting 'vectors' must be one of") for m in warned)
    assert any(m.startswith("memory setting 'nativeHybrid': Expected `bool`") for m in warned)
    assert "memory setting 'bogus' is unknown; ignored" in warned
