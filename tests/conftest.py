"""Shared pytest fixtures: real store servers started by the test harness.

``neo4j_server`` and ``milvus_server`` are session-scoped: each server starts once, on the
first test that asks for it, and stops at the end of the session (or at interpreter exit,
whatever happens). A server that cannot start makes the tests that need it

* FAIL (an error at setup) when CI is "true" or CODESYNAPSE_REQUIRE_SERVERS=1, and
* SKIP with the reason otherwise, so a laptop without Java still runs everything else.

Both servers are shared by the whole session: a test must use names (collections, graph
ids, labels' property values) that no other test uses, or clean up what it wrote.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from infra.hugegraph import start_hugegraph
from infra.servers import Server, ServerStartError, start_milvus_server, start_neo4j

# `codesynapse serve` started by a test serves its one client in its own process (the shared
# workspace daemon would outlive the test by its grace period); tests/reliability/test_daemon.py
# sets CODESYNAPSE_SHARE=1 for the daemon's own tests.
os.environ.setdefault("CODESYNAPSE_SHARE", "0")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "hugegraph: needs the HugeGraph server started by the test harness")


def servers_required() -> bool:
    """True when a missing server must fail the run instead of skipping tests."""
    return os.environ.get("CI", "").lower() == "true" or os.environ.get("CODESYNAPSE_REQUIRE_SERVERS") == "1"


def _unavailable(what: str, error: Exception) -> None:
    message = f"{what} could not start: {error}"
    if servers_required():
        pytest.fail(message + "\n(CI=true or CODESYNAPSE_REQUIRE_SERVERS=1: failing instead of skipping)", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def neo4j_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A Neo4j 5.26 Community over Bolt (auth disabled); connect to ``.uri``."""
    try:
        server = start_neo4j(tmp_path_factory.mktemp("neo4j"))
    except ServerStartError as e:
        _unavailable("Neo4j", e)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A milvus-lite 3.x server process; ``pymilvus.MilvusClient(uri=server.uri)``."""
    try:
        server = start_milvus_server(tmp_path_factory.mktemp("milvus"))
    except ServerStartError as e:
        _unavailable("Milvus (milvus-lite server)", e)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def hugegraph_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A HugeGraph 1.5.0 (RocksDB, auth off); ``.uri`` is its Gremlin server's HTTP endpoint,
    ``.rest_uri`` its REST API."""
    try:
        server = start_hugegraph(tmp_path_factory.mktemp("hugegraph"))
    except ServerStartError as e:
        _unavailable("HugeGraph", e)
    try:
        yield server
    finally:
        server.stop()
