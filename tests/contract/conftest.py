"""One contract suite for every store backend.

``graph_store`` / ``make_graph_store`` run each test on SQLite and on a real Neo4j 5.26 (the
session-wide ``neo4j_server``); ``memory_store`` likewise; ``dep`` (test_vectors.py) runs the Milvus
adapter on an embedded milvus-lite folder and on a separate milvus-lite server process.
The Neo4j and Milvus servers are shared by the whole test session, so every test writes
under graph ids / tenants that are unique to it and removes them afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from codesynapse.graph.sqlite import SqliteGraphStore
from codesynapse.memory.sqlite_store import SqliteMemoryStore
from tests.contract.support import BACKENDS, unique


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def neo4j_uri(backend: str, request: pytest.FixtureRequest) -> str:
    """The Bolt URI of the session's Neo4j ('' on the SQLite run: the server is not started)."""
    if backend != "neo4j":
        return ""
    return request.getfixturevalue("neo4j_server").uri


@pytest.fixture
def hugegraph_url(backend: str, request: pytest.FixtureRequest) -> str:
    """The Gremlin URL of the session's HugeGraph ('' on the other runs)."""
    if backend != "hugegraph":
        return ""
    return request.getfixturevalue("hugegraph_server").uri


@pytest.fixture
def make_graph_store(backend: str, neo4j_uri: str, hugegraph_url: str, tmp_path, request) -> Iterator[Callable]:
    """``make(graph_id=None)`` opens a GraphStore of this run's backend. Stores of one test
    share one database (one SQLite file, or the one Neo4j), as the daemon's graphs do."""
    opened: list = []

    def make(graph_id: str | None = None):
        gid = graph_id or unique(request, "graph")
        if backend == "sqlite":
            store = SqliteGraphStore(tmp_path / "graph.sqlite3", gid)
        elif backend == "hugegraph":
            from codesynapse.graph.hugegraph import HugeGraphStore

            store = HugeGraphStore(hugegraph_url, gid)
        else:
            from codesynapse.graph.neo4j import Neo4jGraphStore

            store = Neo4jGraphStore(neo4j_uri, gid)
        opened.append(store)
        return store

    yield make
    for store in opened:
        if backend != "sqlite":
            store.delete_graph()
        store.close()


@pytest.fixture
def graph_store(make_graph_store):
    return make_graph_store()


@pytest.fixture
def memory_store(backend: str, neo4j_uri: str, hugegraph_url: str, tmp_path) -> Iterator:
    if backend == "sqlite":
        store = SqliteMemoryStore(tmp_path / "memory.sqlite3")
    elif backend == "hugegraph":
        from codesynapse.memory.hugegraph_store import HugeGraphMemoryStore

        store = HugeGraphMemoryStore(hugegraph_url)
    else:
        from codesynapse.memory.neo4j_store import Neo4jMemoryStore

        store = Neo4jMemoryStore(neo4j_uri)
    yield store
    store.close()


@pytest.fixture
def tenant(request: pytest.FixtureRequest, memory_store, backend: str) -> Iterator[str]:
    """A tenant name unique to this test; its namespaces are removed from Neo4j afterwards
    (this fixture is torn down before ``memory_store`` closes)."""
    name = unique(request, "tenant")
    yield name
    if backend != "sqlite":
        for t in (name, name + "-other"):
            for ns in (f"{name}|repo1", f"{name}|repo2", f"{name}-other|repo1"):
                memory_store.delete_namespace(t, ns)
