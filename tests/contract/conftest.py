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
from codesynapse.store.sqlite.graph import SqliteGraphStore
from codesynapse.store.sqlite.memory import SqliteMemoryStore

from tests.contract.support import BACKENDS, unique


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "requires(*capabilities): runs only on graph stores that declare every "
                                       "capability (GraphStore.capabilities, docs/BACKENDS.md 'Transactions')")
    config.addinivalue_line("markers", "lacks(*capabilities): runs only on graph stores that declare none of "
                                       "the capabilities (what such a store promises instead)")


def graph_store_class(backend: str) -> type:
    if backend == "sqlite":
        return SqliteGraphStore
    if backend == "hugegraph":
        from codesynapse.store.hugegraph.graph import HugeGraphStore

        return HugeGraphStore
    from codesynapse.store.neo4j.graph import Neo4jGraphStore

    return Neo4jGraphStore


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """This run's backend; a test marked ``requires``/``lacks`` is skipped, naming the
    capability, on a backend whose declared capabilities do not match."""
    caps = graph_store_class(request.param).capabilities
    need = request.node.get_closest_marker("requires")
    for name in need.args if need else ():
        if not getattr(caps, name):
            pytest.skip(f"the {request.param} graph store does not declare {name}")
    lack = request.node.get_closest_marker("lacks")
    for name in lack.args if lack else ():
        if getattr(caps, name):
            pytest.skip(f"the {request.param} graph store declares {name} (this test is for stores without it)")
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
            from codesynapse.store.hugegraph.graph import HugeGraphStore

            store = HugeGraphStore(hugegraph_url, gid)
        else:
            from codesynapse.store.neo4j.graph import Neo4jGraphStore

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
        from codesynapse.store.hugegraph.memory import HugeGraphMemoryStore

        store = HugeGraphMemoryStore(hugegraph_url)
    else:
        from codesynapse.store.neo4j.memory import Neo4jMemoryStore

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
