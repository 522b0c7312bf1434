"""The memory vector contract on both Milvus deployments, through the one adapter
(``MilvusVectors``): an embedded milvus-lite folder, and a separate milvus-lite server
process reached by URI (the session's ``milvus_server``). Insert, search, delete and the
scope re-check of every hit, including rows planted behind the adapter's back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from pymilvus import MilvusClient

from codesynapse.errors import StoreError
from codesynapse.memory.vectors import MilvusVectors, VectorRow, collection_name
from codesynapse.scope import Scope
from tests.contract.support import VECTOR_BACKENDS, unique

E1 = "mem_" + "1" * 24
E2 = "mem_" + "2" * 24
E3 = "mem_" + "3" * 24
E4 = "mem_" + "4" * 24

A1 = Scope(tenant="acme", graph_id="g", namespace="acme|r1", session="s1")
A2 = Scope(tenant="acme", graph_id="g", namespace="acme|r1", session="s2")
B = Scope(tenant="acme", graph_id="g", namespace="acme|r2", session="s1")
T = Scope(tenant="globex", graph_id="g", namespace="acme|r1", session="s1")  # same namespace string


@dataclass
class Deployment:
    vectors: MilvusVectors
    raw: MilvusClient  # a second client that writes behind the adapter's back
    key: str  # model keys unique to this test (collections on a shared server)
    key2: str
    made: list[str] = field(default_factory=list)


@pytest.fixture(params=VECTOR_BACKENDS)
def dep(request, tmp_path) -> Iterator[Deployment]:
    h = unique(request, "model")[1:]
    key, key2 = f"{h}0000_4", f"{h}ffff_4"
    if request.param == "lite":
        v = MilvusVectors(lite_dir=tmp_path / "milvus", endpoint_dir=tmp_path)
        info = json.loads((tmp_path / "milvus-endpoint.json").read_text())
        raw = MilvusClient(uri=f"http://127.0.0.1:{info['port']}")
    else:
        server = request.getfixturevalue("milvus_server")
        v = MilvusVectors(uri=server.uri)
        raw = MilvusClient(uri=server.uri)
    d = Deployment(v, raw, key, key2)
    yield d
    try:
        for k in (key, key2):
            if raw.has_collection(collection_name(k)):
                raw.drop_collection(collection_name(k))
    finally:
        raw.close()
        v.close()


def row(eid, vec, *, durable=True, version=1):
    return VectorRow(entity_id=eid, version=version, durable=durable, vector=vec)


def ids(hits):
    return [h.entity_id for h in hits]


def test_role_and_filters_per_deployment(dep):
    assert dep.vectors.role in ("owner", "server")
    dep.vectors.upsert(A1, dep.key, 4, [row(E1, [1, 0, 0, 0])])
    assert ids(dep.vectors.search(A1, dep.key, 4, [1, 0, 0, 0])) == [E1]
    # neither milvus-lite folder nor milvus-lite server binds filter templates: the adapter
    # ends up sending validated literal digests on both (docs/BACKENDS.md)
    assert dep.vectors.templated_filters is False


def test_search_is_scoped_to_tenant_namespace_and_session(dep):
    v = dep.vectors
    v.upsert(A1, dep.key, 4, [row(E1, [1, 0, 0, 0]), row(E2, [1, 0.1, 0, 0], durable=False)])
    v.upsert(B, dep.key, 4, [row(E3, [1, 0, 0, 0])])
    v.upsert(T, dep.key, 4, [row(E4, [1, 0, 0, 0])])
    assert ids(v.search(A1, dep.key, 4, [1, 0, 0, 0])) == [E1, E2]
    assert ids(v.search(A2, dep.key, 4, [1, 0, 0, 0])) == [E1]
    assert ids(v.search(B, dep.key, 4, [1, 0, 0, 0])) == [E3]
    assert ids(v.search(T, dep.key, 4, [1, 0, 0, 0])) == [E4]
    hit = v.search(A1, dep.key, 4, [1, 0, 0, 0])[0]
    assert hit.version == 1 and hit.score == pytest.approx(1.0)
    assert ids(v.search(A1, dep.key, 4, [1, 0, 0, 0], limit=1)) == [E1]


def test_planted_rows_are_dropped_by_the_scope_recheck(dep):
    dep.vectors.upsert(A1, dep.key, 4, [row(E1, [0, 1, 0, 0])])
    base = {"version": 1, "sess_d": "", "vec": [1, 0, 0, 0]}
    dep.raw.upsert(collection_name(dep.key), [
        {**base, "id": E2, "tenant_d": B.tenant_digest, "ns_d": B.namespace_digest, "has_vec": True},
        {**base, "id": E3, "tenant_d": A1.tenant_digest, "ns_d": A1.namespace_digest, "has_vec": False},
        {**base, "id": "not-an-entity-id", "tenant_d": A1.tenant_digest, "ns_d": A1.namespace_digest,
         "has_vec": True},
        {**base, "id": E4, "tenant_d": A1.tenant_digest, "ns_d": A1.namespace_digest,
         "sess_d": A2.session_digest, "has_vec": True},
    ])
    assert ids(dep.vectors.search(A1, dep.key, 4, [1, 0, 0, 0])) == [E1]
    assert ids(dep.vectors.search(A2, dep.key, 4, [1, 0, 0, 0])) == [E4, E1]


def test_delete_removes_from_every_model_collection_and_is_scoped(dep):
    v = dep.vectors
    v.upsert(A1, dep.key, 4, [row(E1, [1, 0, 0, 0]), row(E2, [0, 1, 0, 0])])
    v.upsert(A1, dep.key2, 4, [row(E1, [1, 0, 0, 0])])
    assert {collection_name(dep.key), collection_name(dep.key2)} <= set(v.collections())
    v.delete(B, [E1])  # another namespace cannot delete A's rows
    assert (v.count(dep.key), v.count(dep.key2)) == (2, 1)
    v.delete(A1, [E1])
    assert (v.count(dep.key), v.count(dep.key2)) == (1, 0)
    assert ids(v.search(A1, dep.key, 4, [1, 0, 0, 0])) == [E2]
    v.delete(A1, [])


def test_invalid_rows_are_never_written(dep):
    v = dep.vectors
    with pytest.raises(StoreError, match="invalid vector"):
        v.upsert(A1, dep.key, 4, [row(E1, [0, 0, 0, 0])])
    with pytest.raises(StoreError, match="invalid vector"):
        v.upsert(A1, dep.key, 4, [row(E1, [float("nan"), 1, 0, 0])])
    with pytest.raises(StoreError, match="invalid vector"):
        v.upsert(A1, dep.key, 4, [row(E1, [1, 0, 0])])
    with pytest.raises(StoreError, match="not an entity id"):
        v.upsert(A1, dep.key, 4, [row('x" or 1==1', [1, 0, 0, 0])])
    with pytest.raises(StoreError, match="not an entity id"):
        v.delete(A1, ['x" or id != "'])
    assert v.count(dep.key) == 0


def test_upsert_replaces_and_only_the_requested_model_is_searched(dep):
    v = dep.vectors
    v.upsert(A1, dep.key, 4, [row(E1, [1, 0, 0, 0])])
    v.upsert(A1, dep.key, 4, [row(E1, [1, 0, 0, 0], version=2)])
    v.upsert(A1, dep.key2, 4, [row(E2, [1, 0, 0, 0])])
    assert [(h.entity_id, h.version) for h in v.search(A1, dep.key, 4, [1, 0, 0, 0])] == [(E1, 2)]
    assert ids(v.search(A1, dep.key2, 4, [1, 0, 0, 0])) == [E2]
    assert v.count(dep.key) == 1
