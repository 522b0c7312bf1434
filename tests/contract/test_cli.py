"""The real CLI on both graph backends: ``codesynapse index`` and ``codesynapse query`` run
as separate processes, configured only through the environment
(``CODESYNAPSE_BACKEND=neo4j CODESYNAPSE_NEO4J_URI=bolt://…``), on one copy of
fixtures/python_repo; the answers must be the same as SQLite's.

Only what docs/BACKENDS.md lists may differ: ``backend`` in indexStatus, timings and
timestamps, and BM25 scores and the order of BM25-ranked (not exact) search results.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "python_repo"
VOLATILE = {"lastUpdate", "seconds", "filesPerSecond", "dataDir"}

QUERIES = [
    ("codesynapse/callGraph", {"selector": "shop.cart.BaseCart.add"}),
    ("codesynapse/callGraph", {"selector": "shop.cart.Cart.checkout", "direction": "callees", "depth": 2}),
    ("codesynapse/callGraph", {"selector": "shop.pricing.with_tax", "direction": "callers", "depth": 2}),
    ("codesynapse/symbolCard", {"selector": "shop.cart.Cart.total"}),
    ("codesynapse/symbolCard", {"selector": "Cart"}),
    ("codesynapse/symbolContext", {"selector": "shop.payment.pay_for"}),
    ("codesynapse/snippet", {"selector": "shop.pricing.apply_discount"}),
    ("codesynapse/symbolCard", {"selector": "shop.nothing.here"}),
]


def run_cli(args: list[str], env: dict[str, str]) -> dict:
    proc = subprocess.run([sys.executable, "-m", "codesynapse", *args], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return json.loads(proc.stdout)


def strip(value):
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def answers(backend: str, root: Path, data_dir: Path, neo4j_uri: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODESYNAPSE_")}
    env.update(CODESYNAPSE_BACKEND=backend, CODESYNAPSE_DATA_DIR=str(data_dir), CODESYNAPSE_WORKERS="1")
    if backend == "neo4j":
        env["CODESYNAPSE_NEO4J_URI"] = neo4j_uri
    out = {"index": run_cli(["index", str(root), "--json"], env)}
    for i, (method, params) in enumerate(QUERIES):
        out[f"{i}:{method}"] = run_cli(["query", method, "--root", str(root), "--no-index", "--compact",
                                        "--params", json.dumps(params)], env)
    out["search"] = run_cli(["query", "codesynapse/search", "--root", str(root), "--no-index", "--compact",
                             "--params", json.dumps({"query": "cart total", "mode": "full"})], env)
    out["status"] = run_cli(["query", "codesynapse/indexStatus", "--root", str(root), "--no-index"], env)
    return out


@pytest.fixture(scope="module")
def lite_and_neo4j(neo4j_server, tmp_path_factory):
    """The same CLI answers on SQLite and on Neo4j, computed once for this module's tests."""
    tmp = tmp_path_factory.mktemp("cli-backends")
    root = tmp / "python_repo"
    shutil.copytree(FIXTURE, root)
    lite = answers("sqlite", root, tmp / "data-sqlite", "")
    neo = answers("neo4j", root, tmp / "data-neo4j", neo4j_server.uri)
    try:
        yield lite, neo
    finally:
        from codesynapse.store.neo4j.graph import Neo4jGraphStore

        store = Neo4jGraphStore(neo4j_server.uri, neo["status"]["graphId"])
        store.delete_graph()
        store.close()


@pytest.mark.neo4j
def test_cli_answers_are_the_same_on_sqlite_and_neo4j(lite_and_neo4j):
    lite, neo = lite_and_neo4j
    assert lite["status"]["graphId"] == neo["status"]["graphId"]
    assert (lite["status"]["backend"], neo["status"]["backend"]) == ("sqlite", "neo4j")
    for key in ("files", "skipped", "symbols", "edges", "calls", "resolvedCalls", "imports", "inherits",
                "languages", "kinds"):
        assert neo["status"][key] == lite["status"][key], key
    assert strip(neo["index"]) == strip(lite["index"])
    for i, (method, _) in enumerate(QUERIES):
        key = f"{i}:{method}"
        assert strip(neo[key]) == strip(lite[key]), key
    # spot checks with written-out values, so "equal" is not "equally wrong"
    card = lite["3:codesynapse/symbolCard"]["card"]
    assert [c["qualifiedName"] for c in card["callers"]] == ["shop.cart.Cart.checkout", "test_cart.test_total"]
    nodes = lite["0:codesynapse/callGraph"]["callers"]["nodes"]
    assert sorted((n["qualifiedName"], e["resolution"]) for n in nodes for e in n["sites"]) == [
        ("shop.payment.pay_for", "inferred"), ("test_cart.test_total", "inferred")]
    assert lite["7:codesynapse/symbolCard"]["found"] is False

    # search: the same exact matches in the same order, and the same best hit
    s_lite, s_neo = lite["search"], neo["search"]
    exact = [r["qualifiedName"] for r in s_lite["results"] if r["match"] == "exact"]
    assert [r["qualifiedName"] for r in s_neo["results"] if r["match"] == "exact"] == exact
    assert s_lite["results"][0]["qualifiedName"] == s_neo["results"][0]["qualifiedName"] == "shop.cart.Cart.total"


@pytest.mark.neo4j
@pytest.mark.xfail(strict=True, reason="the lexical leg's stemmed per-symbol fields (context/lexical.py) are kept "
                   "on SQLite only; Neo4j searches its name index with the task's words and their stems, so "
                   "the approximate hits differ (docs/BACKENDS.md)")
def test_cli_search_finds_the_same_approximate_hits_on_sqlite_and_neo4j(lite_and_neo4j):
    lite, neo = lite_and_neo4j
    s_lite, s_neo = lite["search"], neo["search"]
    assert s_neo["total"] == s_lite["total"]
    assert sorted(r["qualifiedName"] for r in s_neo["results"]) == sorted(
        r["qualifiedName"] for r in s_lite["results"])


def test_cli_reports_an_unreachable_neo4j(tmp_path):
    """A Neo4j that is not there: the CLI exits 2 with one line naming the URI and why, and no
    traceback."""
    root = tmp_path / "python_repo"
    shutil.copytree(FIXTURE, root)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODESYNAPSE_")}
    env.update(CODESYNAPSE_BACKEND="neo4j", CODESYNAPSE_NEO4J_URI="bolt://127.0.0.1:9", CODESYNAPSE_DATA_DIR=str(
        tmp_path / "data"))
    proc = subprocess.run([sys.executable, "-m", "codesynapse", "index", str(root)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.startswith("codesynapse: neo4j connect to bolt://127.0.0.1:9 failed")
    assert "Traceback" not in proc.stderr
