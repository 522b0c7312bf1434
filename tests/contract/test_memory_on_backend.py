"""Memory follows the configured backend: with `backend = neo4j` entities and facts live in
Neo4j (no SQLite memory file is created), and durable memory written by one session is
recalled by another App on the same graph."""

from __future__ import annotations

import shutil
from pathlib import Path

from codesynapse.app import App
from codesynapse.methods import call_method
from codesynapse.settings import load_settings

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "python_repo"


def test_memory_uses_neo4j_when_the_backend_is_neo4j(neo4j_server, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    settings = {"data_dir": str(tmp_path / "data"), "backend": "neo4j", "neo4j_uri": neo4j_server.uri,
                "embedder": "none"}
    a = App(root, load_settings(settings))
    try:
        a.index()
        r = call_method(a, "codesynapse/memory/remember", {
            "entities": [{"name": "RetryPolicyNeo", "aliases": ["backoff-neo"], "type": "concept", "durable": True}]})
        assert r["tokens"] >= 1
    finally:
        a.close()
    assert not (tmp_path / "data" / "memory" / "memory.sqlite3").exists()
    b = App(root, load_settings(settings))  # another App: another session, same namespace
    try:
        rec = call_method(b, "codesynapse/memory/recall", {"query": "RetryPolicyNeo"})
        assert [e["name"] for e in rec["entries"]] == ["RetryPolicyNeo"]
    finally:
        b.close()
