"""The Milvus adapter against real milvus-lite (embedded folder, owner/client) and a
milvus-lite server process reached by URI."""

from __future__ import annotations

import json

import pytest
from pymilvus import MilvusClient

from codesynapse.errors import StoreError
from codesynapse.memory.vectors import (
    MilvusVectors,
    VectorRow,
    collection_name,
    scope_filter,
)
from codesynapse.scope import Scope

KEY = "0123456789abcdef_4"
KEY2 = "fedcba9876543210_4"
E1 = "mem_" + "1" * 24
E2 = "mem_" + "2" * 24
E3 = "mem_" + "3" * 24

A1 = Scope(tenant="acme", graph_id="g", namespace="acme|r1", session="s1")
A2 = Scope(tenant="acme", graph_id="g", namespace="acme|r1", session="s2")
B = Scope(tenant="acme", graph_id="g", namespace="acme|r2", session="s1")


@pytest.fixture
def vectors(tmp_path):
    v = MilvusVectors(lite_dir=tmp_path / "milvus", endpoint_dir=tmp_path)
    yield v
    v.close()


def raw_client(tmp_path) -> MilvusClient:
    info = json.loads((tmp_path / "milvus-endpoint.json").read_text())
    return MilvusClient(uri=f"http://127.0.0.1:{info['port']}")


def row(eid, vec, *, durable=True, version=1):
    return VectorRow(entity_id=eid, version=version, durable=durable, vector=vec)


def ids(hits):
    return [h.entity_id for h in hits]


def test_first_process_owns_the_folder_and_records_the_endpoint(vectors, tmp_path):
    assert vectors.role == "owner"
    info = json.loads((tmp_path / "milvus-endpoint.json").read_text())
    assert info["host"] == "127.0.0.1" and info["port"] > 0
    assert (tmp_path / "milvus-endpoint.json").stat().st_mode & 0o777 == 0o600


def test_a_second_opener_joins_as_client_and_takes_over_when_owner_closes(vectors, tmp_path):
    vectors.upsert(A1, KEY, 4, [row(E1, [1, 0, 0, 0])])
    second = MilvusVectors(lite_dir=tmp_path / "milvus", endpoint_dir=tmp_path)
    try:
        assert second.role == "client"
        assert ids(second.search(A1, KEY, 4, [1, 0, 0, 0])) == [E1]
        vectors.close()
        assert not (tmp_path / "milvus-endpoint.json").exists()
        # the next call notices the owner left (endpoint removed) and takes over
        assert ids(second.search(A1, KEY, 4, [1, 0, 0, 0])) == [E1]
        assert second.role == "owner"
    finally:
        second.close()


def test_collections_are_named_by_model_key():
    assert collection_name(KEY) == "cs_mem_0123456789abcdef_4"
    with pytest.raises(StoreError):
        collection_name("x; drop")


def test_search_is_scoped_to_tenant_namespace_and_session(vectors):
    vectors.upsert(A1, KEY, 4, [row(E1, [1, 0, 0, 0]), row(E2, [1, 0.1, 0, 0], durable=False)])
    vectors.upsert(B, KEY, 4, [row(E3, [1, 0, 0, 0])])
    assert ids(vectors.search(A1, KEY, 4, [1, 0, 0, 0])) == [E1, E2]
    assert ids(vectors.search(A2, KEY, 4, [1, 0, 0, 0])) == [E1]
    assert ids(vectors.search(B, KEY, 4, [1, 0, 0, 0])) == [E3]
    hit = vectors.search(A1, KEY, 4, [1, 0, 0, 0])[0]
    assert hit.version == 1 and hit.score == pytest.approx(1.0)


def test_lite_filters_use_literal_digests_because_templates_fail(vectors, tmp_path):
    assert vectors.templated_filters is False
    expr, params = scope_filter(A1, templated=False)
    assert params == {}
    assert expr == (f'tenant_d == "{A1.tenant_digest}" and ns_d == "{A1.namespace_digest}" '
                    f'and (sess_d == "" or sess_d == "{A1.session_digest}")')
    vectors.upsert(A1, KEY, 4, [row(E1, [1, 0, 0, 0])])
    client = raw_client(tmp_path)
    with pytest.raises(Exception, match="unexpected character"):
        client.search(collection_name(KEY), data=[[1, 0, 0, 0]], filter="tenant_d == {t}",
                      filter_params={"t": A1.tenant_digest}, output_fields=["id"])


def test_rows_planted_with_foreign_digests_or_without_vectors_never_come_back(vectors, tmp_path):
    vectors.upsert(A1, KEY, 4, [row(E1, [0, 1, 0, 0])])
    client = raw_client(tmp_path)
    base = {"version": 1, "sess_d": ""}
    client.upsert(collection_name(KEY), [
        {**base, "id": E2, "tenant_d": B.tenant_digest, "ns_d": B.namespace_digest,
         "has_vec": True, "vec": [1, 0, 0, 0]},
        {**base, "id": E3, "tenant_d": A1.tenant_digest, "ns_d": A1.namespace_digest,
         "has_vec": False, "vec": [1, 0, 0, 0]},
        {**base, "id": "not-an-entity-id", "tenant_d": A1.tenant_digest,
         "ns_d": A1.namespace_digest, "has_vec": True, "vec": [1, 0, 0, 0]},
        {**base, "id": "mem_" + "4" * 24, "tenant_d": A1.tenant_digest,
         "ns_d": A1.namespace_digest, "sess_d": A2.session_digest, "has_vec": True,
         "vec": [1, 0, 0, 0]},
    ])
    assert ids(vectors.search(A1, KEY, 4, [1, 0, 0, 0])) == [E1]


def test_invalid_vectors_are_never_written(vectors):
    with pytest.raises(StoreError, match="invalid vector"):
        vectors.upsert(A1, KEY, 4, [row(E1, [0, 0, 0, 0])])
    with pytest.raises(StoreError, match="invalid vector"):
        vectors.upsert(A1, KEY, 4, [row(E1, [float("nan"), 1, 0, 0])])
    with pytest.raises(StoreError, match="not an entity id"):
        vectors.upsert(A1, KEY, 4, [row('x" or 1==1', [1, 0, 0, 0])])
    assert vectors.count(KEY) == 0


def test_delete_removes_from_every_model_collection(vectors):
    vectors.upsert(A1, KEY, 4, [row(E1, [1, 0, 0, 0]), row(E2, [0, 1, 0, 0])])
    vectors.upsert(A1, KEY2, 4, [row(E1, [1, 0, 0, 0])])
    assert vectors.collections() == [collection_name(KEY), collection_name(KEY2)]
    vectors.delete(A1, [E1])
    assert (vectors.count(KEY), vectors.count(KEY2)) == (1, 0)
    assert ids(vectors.search(A1, KEY, 4, [1, 0, 0, 0])) == [E2]


def test_delete_is_scoped(vectors):
    vectors.upsert(A1, KEY, 4, [row(E1, [1, 0, 0, 0])])
    vectors.delete(B, [E1])
    assert vectors.count(KEY) == 1


def test_only_the_requested_model_collection_is_searched(vectors):
    vectors.upsert(A1, KEY, 4, [row(E1, [1, 0, 0, 0])])
    vectors.upsert(A1, KEY2, 4, [row(E2, [1, 0, 0, 0])])
    assert ids(vectors.search(A1, KEY2, 4, [1, 0, 0, 0])) == [E2]


def test_upsert_replaces_the_version(vectors):
    vectors.upsert(A1, KEY, 4, [row(E1, [1, 0, 0, 0])])
    vectors.upsert(A1, KEY, 4, [row(E1, [1, 0, 0, 0], version=2)])
    assert [h.version for h in vectors.search(A1, KEY, 4, [1, 0, 0, 0])] == [2]
    assert vectors.count(KEY) == 1


def test_milvus_server_by_uri_uses_the_same_adapter(milvus_server):
    v = MilvusVectors(uri=milvus_server.uri)
    try:
        assert v.role == "server" and v.templated_filters is True
        key = "00000000000000aa_4"
        v.upsert(A1, key, 4, [row(E1, [1, 0, 0, 0]), row(E2, [0, 1, 0, 0], durable=False)])
        v.upsert(B, key, 4, [row(E3, [1, 0, 0, 0])])
        assert ids(v.search(A2, key, 4, [1, 0, 0, 0])) == [E1]
        # milvus-lite's server rejects filter templates: the adapter falls back to literal
        # digests once and remembers it
        assert v.templated_filters is False
        v.delete(A1, [E1, E2])
        assert ids(v.search(A1, key, 4, [1, 0, 0, 0])) == []
        assert ids(v.search(B, key, 4, [1, 0, 0, 0])) == [E3]
    finally:
        v.close()


def test_an_hnsw_collection_answers_like_exact_cosine_inside_the_scope(tmp_path):
    """index_type = HNSW (faiss, through milvus-lite): the index is built with HNSW and the
    nearest rows of the scope come back as exact cosine ranks them, foreign rows excluded."""
    import numpy as np

    rng = np.random.default_rng(25)
    mat = rng.standard_normal((400, 16)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    key = "0123456789abcdef_16"
    v = MilvusVectors(lite_dir=tmp_path / "milvus", endpoint_dir=tmp_path, index_type="HNSW")
    try:
        ours = [f"mem_{i:024x}" for i in range(300)]
        theirs = [f"mem_{i:024x}" for i in range(300, 400)]
        v.upsert(A1, key, 16, [row(e, mat[i].tolist()) for i, e in enumerate(ours)])
        v.upsert(B, key, 16, [row(e, mat[300 + i].tolist()) for i, e in enumerate(theirs)])
        v._call("flush", lambda c: c.flush(collection_name(key)))
        info = v._call("describe", lambda c: c.describe_index(collection_name(key), "vec"))
        assert info["index_type"] == "HNSW"
        for qi in (0, 7, 150, 299, 350):
            q = mat[qi] + 0.05 * rng.standard_normal(16).astype(np.float32)
            q /= np.linalg.norm(q)
            want = [ours[i] for i in np.argsort(-(mat[:300] @ q))[:5]]
            hits = v.search(A1, key, 16, q.tolist(), limit=5)
            assert ids(hits) == want
    finally:
        v.close()
