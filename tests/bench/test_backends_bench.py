"""`codesynapse bench backends`: SQLite vs a real Neo4j (the harness server) on the Python
fixture, through the CLI as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.neo4j
def test_bench_backends_compares_sqlite_and_neo4j(neo4j_server, tmp_path):
    env = {**os.environ, "CODESYNAPSE_NEO4J_URI": neo4j_server.uri, "CODESYNAPSE_BENCH_CACHE": str(tmp_path / "cache"),
           "CODESYNAPSE_EMBEDDER": "none"}
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "codesynapse", "bench", "backends", "--corpus",
                          str(REPO / "fixtures" / "python_repo"), "--quick", "--out", str(out)],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    perf = (out / "PERFORMANCE.md").read_text(encoding="utf-8")
    section = perf.split("<!-- bench:backends -->", 1)[1].split("<!-- /bench:backends -->", 1)[0]
    # the same 6 files indexed on both; cards and call graphs answer the same on both backends
    assert "symbolCard 10/10 identical" in section and "callGraph 10/10 identical" in section, section
    raw = json.loads((tmp_path / "cache" / "results" / "performance.json").read_text())["backends"]["results"]
    assert sorted(raw["backends"]) == ["neo4j", "sqlite"]
    assert {b: raw["backends"][b]["index"]["files"] for b in raw["backends"]} == {"neo4j": 6, "sqlite": 6}


def test_bench_backends_without_a_neo4j_server_says_what_to_set(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CODESYNAPSE_NEO4J_URI"}
    run = subprocess.run([sys.executable, "-m", "codesynapse", "bench", "backends", "--corpus",
                          str(REPO / "fixtures" / "python_repo"), "--out", str(tmp_path)],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "CODESYNAPSE_NEO4J_URI" in run.stderr
