"""The harness's HugeGraph: version, loopback only, Gremlin with bindings, and cleanup."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

from infra.hugegraph import HUGEGRAPH_VERSION
from infra.servers import INFRA_DIR, Server
from infra.test_servers import _alive

pytestmark = pytest.mark.hugegraph


def _gremlin(server: Server, script: str, bindings: dict | None = None) -> list:
    body = json.dumps({"gremlin": script, "bindings": bindings or {},
                       "aliases": {"graph": "hugegraph", "g": "__g_hugegraph"}}).encode()
    req = urllib.request.Request(server.uri, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())["result"]["data"]


def test_hugegraph_is_1_5_on_loopback(hugegraph_server: Server) -> None:
    with urllib.request.urlopen(f"{hugegraph_server.rest_uri}/versions", timeout=10) as resp:
        versions = json.loads(resp.read())
    assert versions["versions"]["core"].startswith(HUGEGRAPH_VERSION), versions
    assert hugegraph_server.uri.startswith("http://127.0.0.1:")
    assert hugegraph_server.rest_uri.startswith("http://127.0.0.1:")
    conf = hugegraph_server.data_dir / "conf"
    assert "host: 127.0.0.1\n" in (conf / "gremlin-server.yaml").read_text()
    assert "backend=rocksdb" in (conf / "graphs" / "hugegraph.properties").read_text()


def test_gremlin_evaluates_scripts_with_bindings(hugegraph_server: Server) -> None:
    assert _gremlin(hugegraph_server, "x * 2", {"x": 21}) == [42]
    assert _gremlin(hugegraph_server, "graph.toString()") == ["standardhugegraph[hugegraph]"]
    assert _gremlin(hugegraph_server, "s", {"s": "g.V().drop().iterate()"}) == ["g.V().drop().iterate()"]


def test_hugegraph_dies_with_a_killed_test_process(hugegraph_server: Server, tmp_path: Path) -> None:
    """A SIGKILLed parent (a crashed pytest) leaves no HugeGraph behind (parent-death signal).
    Asks for the session server first so that it skips or fails by the usual rule."""
    script = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(INFRA_DIR.parent)!r})
        from infra.hugegraph import start_hugegraph
        server = start_hugegraph({str(tmp_path)!r})
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
    deadline = time.monotonic() + 60
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(child), f"hugegraph pid {child} outlived its killed parent"
