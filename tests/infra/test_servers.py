"""The test harness's servers start and answer real queries through their real clients."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import neo4j
import pytest
from pymilvus import DataType, MilvusClient

from infra.servers import INFRA_DIR, Server, start_milvus_server


# --------------------------------------------------------------------------- Neo4j


@pytest.fixture()
def neo4j_driver(neo4j_server: Server):
    driver = neo4j.GraphDatabase.driver(neo4j_server.uri, auth=None)
    try:
        yield driver
    finally:
        driver.execute_query("MATCH (n:InfraProbe) DETACH DELETE n")
        driver.execute_query("DROP CONSTRAINT infra_probe_key IF EXISTS")
        driver.execute_query("DROP INDEX infra_probe_names IF EXISTS")
        driver.close()


@pytest.mark.neo4j
def test_neo4j_is_community_5_26_on_loopback(neo4j_server: Server, neo4j_driver: neo4j.Driver) -> None:
    assert neo4j_server.uri.startswith("bolt://127.0.0.1:")
    neo4j_driver.verify_connectivity()
    assert neo4j_driver.get_server_info().agent.startswith("Neo4j/5.26.")
    records, _, _ = neo4j_driver.execute_query(
        "CALL dbms.components() YIELD name, edition RETURN name, edition"
    )
    assert [(r["name"], r["edition"]) for r in records] == [("Neo4j Kernel", "community")]


@pytest.mark.neo4j
def test_neo4j_writes_and_reads_nodes_with_parameters(neo4j_driver: neo4j.Driver) -> None:
    rows = [
        {"graph_id": "g1", "qname": "pkg.mod.parse_config", "name": "parse_config", "line": 10},
        {"graph_id": "g1", "qname": "pkg.mod.render", "name": "render", "line": 42},
        {"graph_id": "g2", "qname": "pkg.mod.parse_config", "name": "parse_config", "line": 7},
    ]
    summary = neo4j_driver.execute_query(
        "UNWIND $rows AS r MERGE (n:InfraProbe {graph_id: r.graph_id, qname: r.qname}) "
        "SET n.name = r.name, n.line = r.line",
        rows=rows,
    ).summary
    assert summary.counters.nodes_created == 3

    records, _, _ = neo4j_driver.execute_query(
        "MATCH (n:InfraProbe {graph_id: $graph_id}) RETURN n.qname AS qname, n.line AS line ORDER BY qname",
        graph_id="g1",
    )
    assert [(r["qname"], r["line"]) for r in records] == [("pkg.mod.parse_config", 10), ("pkg.mod.render", 42)]

    # A value that looks like Cypher stays a value.
    hostile = "x'}) DETACH DELETE n //"
    records, _, _ = neo4j_driver.execute_query(
        "MATCH (n:InfraProbe) WHERE n.graph_id = $graph_id RETURN count(n) AS c", graph_id=hostile
    )
    assert records[0]["c"] == 0


@pytest.mark.neo4j
def test_neo4j_composite_uniqueness_constraint(neo4j_driver: neo4j.Driver) -> None:
    neo4j_driver.execute_query(
        "CREATE CONSTRAINT infra_probe_key IF NOT EXISTS "
        "FOR (n:InfraProbe) REQUIRE (n.graph_id, n.qname) IS UNIQUE"
    )
    neo4j_driver.execute_query("CREATE (:InfraProbe {graph_id: $g, qname: $q})", g="g1", q="a.b")
    # Same qname in another graph is fine; the same pair is not.
    neo4j_driver.execute_query("CREATE (:InfraProbe {graph_id: $g, qname: $q})", g="g2", q="a.b")
    with pytest.raises(neo4j.exceptions.ConstraintError):
        neo4j_driver.execute_query("CREATE (:InfraProbe {graph_id: $g, qname: $q})", g="g1", q="a.b")

    records, _, _ = neo4j_driver.execute_query(
        "SHOW CONSTRAINTS YIELD name, type, labelsOrTypes, properties WHERE name = $name "
        "RETURN type, labelsOrTypes, properties",
        name="infra_probe_key",
    )
    assert [dict(r) for r in records] == [
        {"type": "UNIQUENESS", "labelsOrTypes": ["InfraProbe"], "properties": ["graph_id", "qname"]}
    ]


@pytest.mark.neo4j
def test_neo4j_fulltext_index_query(neo4j_driver: neo4j.Driver) -> None:
    neo4j_driver.execute_query(
        "CREATE FULLTEXT INDEX infra_probe_names IF NOT EXISTS FOR (n:InfraProbe) ON EACH [n.name, n.summary]"
    )
    neo4j_driver.execute_query("CALL db.awaitIndexes(60)")
    neo4j_driver.execute_query(
        "UNWIND $rows AS r CREATE (:InfraProbe {qname: r[0], name: r[1], summary: r[2]})",
        rows=[
            ["a.load_policy", "load_policy", "Read the policy file"],
            ["a.render_card", "render_card", "Format a symbol card"],
            ["a.unrelated", "helper", "Nothing to see"],
        ],
    )
    records, _, _ = neo4j_driver.execute_query(
        "CALL db.index.fulltext.queryNodes($index, $query) YIELD node, score "
        "RETURN node.qname AS qname, score ORDER BY score DESC",
        index="infra_probe_names",
        query="policy",
    )
    assert [r["qname"] for r in records] == ["a.load_policy"]
    assert records[0]["score"] > 0


# --------------------------------------------------------------------------- Milvus


def connect_milvus(uri: str, attempts: int = 3) -> MilvusClient:
    """A client of the session's milvus-lite server. gRPC shares one connection per target
    between the channels of a process: after earlier tests' clients, the server may have closed
    it for "Too many pings" (keepalive) and the first call on it fails UNAVAILABLE; a new client
    then gets a fresh connection (seen once in CI)."""
    from pymilvus.exceptions import MilvusException

    for attempt in range(attempts):
        try:
            return MilvusClient(uri=uri)
        except MilvusException:
            if attempt == attempts - 1:
                raise
            time.sleep(1.0)
    raise AssertionError("unreachable")


def test_milvus_server_collection_lifecycle(milvus_server: Server) -> None:
    assert milvus_server.uri.startswith("http://127.0.0.1:")
    client = connect_milvus(milvus_server.uri)
    name = f"infra_probe_{uuid.uuid4().hex[:8]}"
    try:
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
        schema.add_field("namespace", DataType.VARCHAR, max_length=64)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=4)
        index = client.prepare_index_params()
        index.add_index("vector", metric_type="COSINE", index_type="FLAT")
        client.create_collection(name, schema=schema, index_params=index)
        assert name in client.list_collections()

        inserted = client.insert(
            name,
            [
                {"id": "a", "namespace": "n1", "vector": [1.0, 0.0, 0.0, 0.0]},
                {"id": "b", "namespace": "n2", "vector": [1.0, 0.0, 0.0, 0.0]},
                {"id": "c", "namespace": "n1", "vector": [0.8, 0.2, 0.0, 0.0]},
                {"id": "d", "namespace": "n1", "vector": [0.0, 0.0, 1.0, 0.0]},
            ],
        )
        assert inserted["insert_count"] == 4

        hits = client.search(
            name, data=[[1.0, 0.0, 0.0, 0.0]], limit=3, filter='namespace == "n1"', output_fields=["namespace"]
        )[0]
        assert [h["id"] for h in hits] == ["a", "c", "d"]
        assert {h["entity"]["namespace"] for h in hits} == {"n1"}

        rows = client.query(name, filter='namespace == "n2"', output_fields=["id"])
        assert [r["id"] for r in rows] == ["b"]

        client.delete(name, ids=["a"])
        rows = client.query(name, filter='namespace == "n1"', output_fields=["id"])
        assert sorted(r["id"] for r in rows) == ["c", "d"]
        hits = client.search(name, data=[[1.0, 0.0, 0.0, 0.0]], limit=1, filter='namespace == "n1"')[0]
        assert [h["id"] for h in hits] == ["c"]
    finally:
        client.drop_collection(name)
        client.close()


# --------------------------------------------------------------------------- cleanup


@pytest.mark.parametrize("kind", ["milvus", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_server_dies_with_a_killed_test_process(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """A SIGKILLed parent (a crashed pytest) leaves no server process behind."""
    if kind == "neo4j":
        request.getfixturevalue("neo4j_server")  # skip or fail here, by the usual rule, without Java
    starter = {"milvus": "start_milvus_server", "neo4j": "start_neo4j"}[kind]
    script = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(INFRA_DIR.parent)!r})
        from infra.servers import {starter}
        server = {starter}({str(tmp_path)!r})
        sys.stdout.write(f"{{server.pid}}\\n")
        sys.stdout.flush()
        time.sleep(600)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        line = parent.stdout.readline()
        assert line.strip().isdigit(), f"helper did not report a pid: {line!r}"
        child = int(line)
        assert _alive(child)
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 30
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child), f"{kind} server pid {child} outlived its killed parent"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes (its reaper is init).
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def test_stop_is_idempotent(tmp_path: Path) -> None:
    server = start_milvus_server(tmp_path)
    assert server.alive()
    assert server.stop() == 0  # SIGINT: milvus-lite closed its data dir and exited cleanly
    assert not server.alive()
    server.stop()  # again: no error


def test_servers_start_from_a_process_with_grpc_in_use(tmp_path: Path) -> None:
    """The harness forks (``preexec_fn``) from pytest, where milvus-lite's gRPC runs threads.

    gRPC's fork handlers restart its poller in the child, where ``close_fds`` then closes the
    poller's epoll descriptor: now and then the child aborted (SIGABRT, "epoll_wait error: Bad
    file descriptor") before it could exec Neo4j. The harness turns those handlers off; the
    children it forks run no gRPC.
    """
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(INFRA_DIR.parent)!r})
        from pathlib import Path
        from infra.servers import _spawn
        from pymilvus import MilvusClient
        client = MilvusClient({str(tmp_path / "m.db")!r})
        client.create_collection("c", dimension=4)
        client.insert("c", [{{"id": 1, "vector": [0.5] * 4}}])
        codes = []
        for _ in range(20):
            child = _spawn(["true"], Path({str(tmp_path / "child.log")!r}))
            child.stdin.close()
            codes.append(child.wait())
        client.close()
        print(codes)
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRPC_")}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == str([0] * 20), done.stdout
    # gRPC says, on every fork it handles, that it ran or skipped its handlers
    assert "fork() handlers" not in done.stderr and "fork_posix" not in done.stderr, done.stderr[-2000:]
