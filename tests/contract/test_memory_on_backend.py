"""Memory follows the configured backend: with `backend = neo4j` (or hugegraph) entities and
facts live in that server (no SQLite memory file is created), and durable memory written by
one session is recalled by another App on the same graph."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codesynapse.app import App
from codesynapse.methods import call_method
from codesynapse.settings import load_settings

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "python_repo"


@pytest.mark.parametrize("backend", ["neo4j", "hugegraph"])
def test_memory_follows_the_backend(backend, request, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    settings = {"data_dir": str(tmp_path / "data"), "backend": backend, "embedder": "none"}
    if backend == "neo4j":
        settings["neo4j_uri"] = request.getfixturevalue("neo4j_server").uri
    else:
        settings["hugegraph_url"] = request.getfixturevalue("hugegraph_server").uri
    a = App(root, load_settings(settings))
    try:
        a.index()
        r = call_method(a, "codesynapse/memory/remember", {
            "entities": [{"name": f"RetryPolicy{backend}", "aliases": [f"backoff-{backend}"], "type": "concept", "durable": True}]})
        assert r["tokens"] >= 1
    finally:
        a.close()
    assert not (tmp_path / "data" / "memory" / "memory.sqlite3").exists()
    b = App(root, load_settings(settings))  # another App: another session, same namespace
    try:
        rec = call_method(b, "codesynapse/memory/recall", {"query": f"RetryPolicy{backend}"})
        assert [e["name"] for e in rec["entries"]] == [f"RetryPolicy{backend}"]
    finally:
        b.close()
