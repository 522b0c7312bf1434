"""Store faults: Neo4j (the scale-out code graph) or Milvus (memory vectors) unavailable or
slow. The daemon must answer every request with a clear error or a lexical fallback within
its deadline (never hang), and recover when the server comes back.

The servers are real (a Neo4j 5.26 and a milvus-lite server started by the harness); the
faults come from a TCP proxy between daemon and server (``faultproxy.FaultProxy``: down,
hung, slow) and from stopping a server and starting it again on the same port and data
(``Server.stop()``). Elapsed times are recorded for docs/RELIABILITY.md, not asserted: the
daemon enforces its own deadline; a reply that never comes within a minute fails.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from infra import servers as infra
from tests.reliability.faultproxy import FaultProxy
from tests.reliability.rawlsp import RawLsp, RpcError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
FAULTS = [("down", 0.0), ("blackhole", 0.0), ("slow", 3.0)]
TIMES: list[dict] = []


def _unavailable(what: str, e: Exception) -> None:
    if os.environ.get("CI", "").lower() == "true" or os.environ.get("CODESYNAPSE_REQUIRE_SERVERS") == "1":
        pytest.fail(f"{what} could not start: {e}", pytrace=False)
    pytest.skip(f"{what} could not start: {e}")


def _port(uri: str) -> int:
    return int(uri.rsplit(":", 1)[1].split("/")[0])


def restart_neo4j(server: infra.Server) -> infra.Server:
    """Stop a harness Neo4j and start it again on the same Bolt port and database home."""
    port = _port(server.uri)
    server.stop()
    java = infra.java_executable()
    classpath = infra.build_neo4j_launcher()
    argv = [java, "-Xms512m", "-Xmx512m", *infra.NEO4J_JVM_OPTIONS, "-cp", os.pathsep.join(classpath),
            infra.NEO4J_MAIN_CLASS, str(server.data_dir), str(port), "64m"]
    offset = server.log_path.stat().st_size if server.log_path.exists() else 0
    proc = infra._spawn(argv, server.log_path)
    again = infra.Server(name="neo4j", uri="", process=proc, data_dir=server.data_dir, log_path=server.log_path,
                         start_seconds=0.0, _stdin=proc.stdin, _stops_on_stdin_eof=True)
    infra._REGISTRY.add(again)
    line = infra._wait_for_line(proc, server.log_path, offset, "READY bolt://", 180, "neo4j")
    again.uri = line.split(" ", 1)[1]
    assert _port(again.uri) == port
    return again


def restart_milvus(server: infra.Server) -> infra.Server:
    port = _port(server.uri)
    server.stop()
    return infra._start_milvus_once(server.data_dir, server.log_path, port, 60)


def timed(d: RawLsp, method: str, params: Any) -> tuple[str, Any, float]:
    """('result', answer, s) or ('error', RpcError, s); a hang fails inside d.request."""
    t0 = time.monotonic()
    try:
        a = d.request(method, params)
        return "result", a, time.monotonic() - t0
    except RpcError as e:
        return "error", e, time.monotonic() - t0


def eventually(probe, timeout: float = 120.0, every: float = 0.5):
    end = time.monotonic() + timeout
    while True:
        v = probe()
        if v:
            return v
        assert time.monotonic() < end, "the daemon did not recover"
        time.sleep(every)


# ---- Neo4j ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def neo4j(tmp_path_factory):
    try:
        server = infra.start_neo4j(tmp_path_factory.mktemp("neo4j-faults"))
    except infra.ServerStartError as e:
        _unavailable("Neo4j", e)
    box = {"server": server}
    yield box
    box["server"].stop()


CONTEXT_REQUESTS = [
    ("codesynapse/symbolCard", {"selector": "shop.cart.Cart.total"}),
    ("codesynapse/callGraph", {"selector": "shop.pricing.with_tax", "depth": 2}),
    ("codesynapse/search", {"query": "cart"}),
    ("codesynapse/minimalContext", {"task": "how does Cart.total apply tax"}),
    ("codesynapse/indexStatus", {}),
]


def _card_ok(d: RawLsp) -> bool:
    try:
        return d.request("codesynapse/symbolCard", {"selector": "shop.cart.Cart.total"})["found"]
    except RpcError:
        return False


def test_neo4j_down_hung_slow_then_back(neo4j, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    proxy = FaultProxy("127.0.0.1", _port(neo4j["server"].uri))
    env = {"CODESYNAPSE_BACKEND": "neo4j", "CODESYNAPSE_NEO4J_URI": f"bolt://{proxy.address}"}
    try:
        with RawLsp(tmp_path / "data", env=env, log=tmp_path / "neo4j-daemon.log") as d:
            d.initialize(root)
            d.wait_ready()
            assert _card_ok(d)
            for mode, delay in FAULTS:
                proxy.set(mode, delay)
                for method, params in CONTEXT_REQUESTS:
                    kind, out, secs = timed(d, method, params)
                    TIMES.append({"store": "neo4j", "fault": mode, "method": method, "outcome": kind,
                                  "seconds": round(secs, 2),
                                  "error": (out.data.get("kind", "") if kind == "error" else "")})
                    if kind == "error":
                        assert out.code == -32803 and out.data.get("kind") in (
                            "StoreUnavailable", "StoreError", "deadline"), (mode, method, out)
                        assert out.message  # a clear message, not an internal error
                    elif method != "codesynapse/indexStatus":
                        assert "tokens" in out  # a full answer (slow, not failing)
                proxy.set("pass")
                eventually(lambda: _card_ok(d))
            # edits made while Neo4j is down reach the graph once it is back
            proxy.set("down")
            (root / "shop" / "pricing.py").write_text(
                (root / "shop" / "pricing.py").read_text() + "\n\ndef written_while_down(x):\n    return x\n")
            time.sleep(3.0)  # the watcher's batch is applied (and fails) meanwhile
            proxy.set("pass")
            eventually(lambda: _card_ok(d))
            found = eventually(lambda: _found(d, "shop.pricing.written_while_down"), timeout=30)
            assert found
    finally:
        proxy.close()


def _found(d: RawLsp, q: str) -> bool:
    try:
        return d.request("codesynapse/symbolCard", {"selector": q})["found"]
    except RpcError:
        return False


def test_neo4j_stopped_and_started_again(neo4j, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    env = {"CODESYNAPSE_BACKEND": "neo4j", "CODESYNAPSE_NEO4J_URI": neo4j["server"].uri, "CODESYNAPSE_WATCH": "0"}
    with RawLsp(tmp_path / "data", env=env, log=tmp_path / "neo4j-restart.log") as d:
        d.initialize(root)
        d.wait_ready()
        assert _card_ok(d)
        neo4j["server"].stop()
        for method, params in CONTEXT_REQUESTS:
            kind, out, secs = timed(d, method, params)
            TIMES.append({"store": "neo4j", "fault": "stopped", "method": method, "outcome": kind,
                          "seconds": round(secs, 2), "error": (out.data.get("kind", "") if kind == "error" else "")})
            if kind == "error":
                assert out.code == -32803 and out.data.get("kind") in ("StoreUnavailable", "StoreError", "deadline")
        neo4j["server"] = restart_neo4j(neo4j["server"])
        eventually(lambda: _card_ok(d))  # same data: the graph is there without a re-index
        a = d.request("codesynapse/callGraph", {"selector": "shop.pricing.with_tax", "direction": "callers"})
        assert [n["qualifiedName"] for n in a["callers"]["nodes"]]


def test_neo4j_down_at_start_initializes_then_indexes_when_it_is_back(neo4j, tmp_path):
    """Neo4j unreachable when the daemon starts: initialize answers (no -32603 with a
    traceback), the user is told (window/showMessage Error), requests answer RequestFailed
    naming Neo4j, and the daemon opens the graph and indexes once Neo4j answers."""
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    proxy = FaultProxy("127.0.0.1", _port(neo4j["server"].uri))
    proxy.set("down")
    env = {"CODESYNAPSE_BACKEND": "neo4j", "CODESYNAPSE_NEO4J_URI": f"bolt://{proxy.address}",
           "CODESYNAPSE_WATCH": "0"}
    try:
        with RawLsp(tmp_path / "data", env=env, log=tmp_path / "neo4j-late.log") as d:
            res = d.initialize(root)
            assert "capabilities" in res
            st = d.request("codesynapse/indexStatus", {})
            assert st["state"] == "failed" and proxy.address in st["error"], st
            kind, out, secs = timed(d, "codesynapse/symbolCard", {"selector": "shop.cart.Cart.total"})
            TIMES.append({"store": "neo4j", "fault": "down at start", "method": "codesynapse/symbolCard",
                          "outcome": kind, "seconds": round(secs, 2)})
            assert kind == "error" and out.code == -32803 and out.data.get("kind") == "StoreUnavailable", out
            assert proxy.address in out.message and "Traceback" not in json.dumps(out.data)
            shown = eventually(lambda: [n["params"] for n in list(d.notifications)
                                        if n.get("method") == "window/showMessage"], timeout=30)
            assert [m["type"] for m in shown] == [1] and "neo4j server" in shown[0]["message"], shown
            proxy.set("pass")
            eventually(lambda: d.request("codesynapse/indexStatus", {})["state"] == "ready")
            assert _card_ok(d)
    finally:
        proxy.close()


# ---- Milvus -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def milvus(tmp_path_factory):
    try:
        server = infra.start_milvus_server(tmp_path_factory.mktemp("milvus-faults"))
    except infra.ServerStartError as e:
        _unavailable("Milvus (milvus-lite server)", e)
    box = {"server": server}
    yield box
    box["server"].stop()


def _recall(d: RawLsp, q: str) -> dict:
    return d.request("codesynapse/memory/recall", {"query": q, "hops": 1})


def _dense_ran(d: RawLsp, q: str = "billing service") -> bool:
    try:
        return _recall(d, q)["legs"]["dense"]["ran"]
    except RpcError:
        return False


def test_milvus_down_hung_slow_then_back(milvus, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    proxy = FaultProxy("127.0.0.1", _port(milvus["server"].uri))
    env = {"CODESYNAPSE_MILVUS_URI": f"http://{proxy.address}", "CODESYNAPSE_WATCH": "0"}
    try:
        with RawLsp(tmp_path / "data", env=env, log=tmp_path / "milvus-daemon.log") as d:
            d.initialize(root)
            d.wait_ready()
            r = d.request("codesynapse/memory/remember", {"entities": [
                {"name": "billing service", "aliases": ["payments backend"], "durable": True},
                {"name": "Alice", "type": "person", "durable": True}],
                "facts": [{"subject": "Alice", "predicate": "owns", "object": "billing service", "durable": True}]})
            assert r["embedded"] >= 2
            assert _dense_ran(d)
            for n, (mode, delay) in enumerate(FAULTS):
                proxy.set(mode, delay)
                kind, out, secs = timed(d, "codesynapse/memory/recall", {"query": "billing service", "hops": 1})
                TIMES.append({"store": "milvus", "fault": mode, "method": "memory/recall", "outcome": kind,
                              "seconds": round(secs, 2), "dense": out["legs"]["dense"] if kind == "result" else None})
                assert kind == "result", out  # memory falls back to the lexical legs
                assert out["legs"]["dense"]["ran"] is False and out["legs"]["dense"]["reason"], out["legs"]
                assert [e["name"] for e in out["entries"]][:1] == ["billing service"]
                assert any(f["predicate"] == "owns" for f in out["facts"])
                kind, out, secs = timed(d, "codesynapse/memory/remember", {"entities": [
                    {"name": f"written during {mode}", "durable": True}]})
                TIMES.append({"store": "milvus", "fault": mode, "method": "memory/remember", "outcome": kind,
                              "seconds": round(secs, 2)})
                assert kind == "result", out
                assert out["embedded"] == 0 and (out["embeddingPending"] >= 1 or out["embeddingNote"]), out
                proxy.set("pass")
                eventually(lambda: _dense_ran(d))
                # what was written during the fault is embedded once the store is back
                eventually(lambda: "dense" in _found_by(d, f"written during {mode}"), timeout=60)
    finally:
        proxy.close()


def _found_by(d: RawLsp, name: str) -> list[str]:
    for e in _recall(d, name)["entries"]:
        if e["name"] == name:
            return e["foundBy"]
    return []


def test_milvus_stopped_and_started_again(milvus, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    env = {"CODESYNAPSE_MILVUS_URI": milvus["server"].uri, "CODESYNAPSE_WATCH": "0"}
    with RawLsp(tmp_path / "data", env=env, log=tmp_path / "milvus-restart.log") as d:
        d.initialize(root)
        d.wait_ready()
        d.request("codesynapse/memory/remember", {"entities": [{"name": "restart probe", "durable": True}]})
        assert _dense_ran(d, "restart probe")
        milvus["server"].stop()
        kind, out, secs = timed(d, "codesynapse/memory/recall", {"query": "restart probe"})
        TIMES.append({"store": "milvus", "fault": "stopped", "method": "memory/recall", "outcome": kind,
                      "seconds": round(secs, 2)})
        assert kind == "result" and out["legs"]["dense"]["ran"] is False
        assert [e["name"] for e in out["entries"]] == ["restart probe"]
        milvus["server"] = restart_milvus(milvus["server"])
        eventually(lambda: _dense_ran(d, "restart probe"))
        assert "dense" in _found_by(d, "restart probe")


def test_milvus_down_at_start_then_up(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    proxy = FaultProxy("127.0.0.1", 9)  # nothing to forward to yet
    proxy.set("down")
    server = None
    try:
        env = {"CODESYNAPSE_MILVUS_URI": f"http://{proxy.address}", "CODESYNAPSE_WATCH": "0"}
        with RawLsp(tmp_path / "data", env=env, log=tmp_path / "milvus-late.log") as d:
            d.initialize(root)
            d.wait_ready()
            t0 = time.monotonic()
            r = d.request("codesynapse/memory/remember", {"entities": [{"name": "late store", "durable": True}]})
            TIMES.append({"store": "milvus", "fault": "down at start", "method": "memory/remember",
                          "outcome": "result", "seconds": round(time.monotonic() - t0, 2)})
            assert r["embedded"] == 0 and r["embeddingPending"] == 1, r  # queued for the backfill
            assert "vector store unavailable" in r["embeddingNote"], r
            kind, out, secs = timed(d, "codesynapse/memory/recall", {"query": "late store", "hops": 1})
            TIMES.append({"store": "milvus", "fault": "down at start", "method": "memory/recall",
                          "outcome": kind, "seconds": round(secs, 2)})
            assert kind == "result", out
            assert out["legs"]["dense"]["ran"] is False and [e["name"] for e in out["entries"]] == ["late store"]
            assert "vector store unavailable" in out["legs"]["dense"]["reason"], out["legs"]
            # remembered while the store is still down (after some failed retries)
            time.sleep(4.0)
            r = d.request("codesynapse/memory/remember", {"entities": [{"name": "later store", "durable": True}]})
            assert r["embedded"] == 0 and r["embeddingPending"] == 2, r
            try:
                server = infra.start_milvus_server(tmp_path / "milvus")
            except infra.ServerStartError as e:
                _unavailable("Milvus (milvus-lite server)", e)
            proxy.retarget("127.0.0.1", _port(server.uri))
            proxy.set("pass")
            eventually(lambda: _dense_ran(d, "late store"), timeout=30)
            # both entities queued during the outage reached the dense leg (the backfill)
            eventually(lambda: "dense" in _found_by(d, "late store"), timeout=30)
            eventually(lambda: "dense" in _found_by(d, "later store"), timeout=30)
    finally:
        proxy.close()
        if server is not None:
            server.stop()


def test_vector_store_retries_end_with_the_service(tmp_path):
    """Milvus unreachable from the start, no server at all: remember queues, recall answers
    lexically, the background retries count up, and closing the service ends them."""
    from codesynapse.memory.factory import open_memory
    from codesynapse.memory.models import decode_recall, decode_remember
    from codesynapse.scope import make_scope

    proxy = FaultProxy("127.0.0.1", 9)
    proxy.set("down")
    svc = open_memory(tmp_path / "memory", make_scope("acme", "/repo/late"),
                      {"vectors": "server", "milvus_uri": f"http://{proxy.address}"})
    try:
        r = svc.remember(decode_remember({"entities": [{"name": "queued while down", "durable": True}]}))
        assert (r.embedded, r.embedding_pending) == (0, 1)
        out = svc.recall(decode_recall({"query": "queued while down"}))
        assert [e.name for e in out.entries] == ["queued while down"]
        assert out.legs.dense.ran is False and "vector store unavailable" in out.legs.dense.reason
        eventually(lambda: svc.vector_retries >= 2, timeout=60)
        assert svc.vectors_retrying
    finally:
        svc.close()
        proxy.close()
    assert not svc.vectors_retrying and svc.vectors is None


def test_record_times(tmp_path):
    """The module's tally for docs/RELIABILITY.md (it runs after the fault tests): one row per
    request sent under a fault, naming the store, the fault, the method and the outcome (an
    answer, or an error whose kind is named; a hang fails in the test that sent it),
    appended as one JSON line to CODESYNAPSE_RELIABILITY_TALLY (else a scratch file) that
    reads back as the rows."""
    if not TIMES:
        pytest.skip("no store-fault test ran in this session (servers not started or deselected)")
    faults = {mode for mode, _delay in FAULTS} | {"stopped", "down at start"}
    for row in TIMES:
        assert row["store"] in ("neo4j", "milvus"), row
        assert row["fault"] in faults, row
        assert row["method"].startswith(("codesynapse/", "memory/")), row
        assert row["outcome"] in ("result", "error"), row
        assert isinstance(row["seconds"], (int, float)) and row["seconds"] >= 0, row
        if row["outcome"] == "error" and "error" in row:
            assert row["error"] in ("StoreUnavailable", "StoreError", "deadline"), row
    out = Path(os.environ.get("CODESYNAPSE_RELIABILITY_TALLY") or tmp_path / "tally.jsonl")
    before = out.read_text(encoding="utf-8").splitlines() if out.exists() else []
    with open(out, "a", encoding="utf-8") as f:
        f.write(json.dumps({"module": "store faults", "times": TIMES}) + "\n")
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[:-1] == before
    assert json.loads(lines[-1]) == {"module": "store faults", "times": TIMES}
