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


def test_session_memory_ends_with_its_session(tmp_path):
    """Session memory is visible only to its session (a fresh one per connection or CLI run):
    when the App closes, the session's entities, aliases and facts are deleted from the store;
    durable memory stays and another session recalls it."""
    import sqlite3

    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    settings = load_settings({"data_dir": str(tmp_path / "data"), "embedder": "none"})
    a = App(root, settings)
    try:
        call_method(a, "codesynapse/memory/remember", {
            "entities": [{"name": "ScratchNote", "aliases": ["scratch-alias"], "durable": False},
                         {"name": "RetryPolicy", "aliases": ["backoff"], "durable": True}],
            "facts": [{"subject": "ScratchNote", "predicate": "mentions", "object": "RetryPolicy", "durable": False}]})
        rec = call_method(a, "codesynapse/memory/recall", {"query": "ScratchNote"})
        assert "ScratchNote" in [e["name"] for e in rec["entries"]]
    finally:
        a.close()
    [db] = (tmp_path / "data").rglob("memory.sqlite3")
    with sqlite3.connect(db) as c:
        names = sorted(r[0] for r in c.execute("SELECT name FROM memory_entities"))
        aliases = sorted(r[0] for r in c.execute("SELECT alias FROM memory_aliases"))
        facts = c.execute("SELECT count(*) FROM memory_facts").fetchone()[0]
    assert names == ["RetryPolicy"]
    assert "scratch-alias" not in aliases and facts == 0
    b = App(root, settings)
    try:
        rec = call_method(b, "codesynapse/memory/recall", {"query": "RetryPolicy ScratchNote"})
        assert [e["name"] for e in rec["entries"]] == ["RetryPolicy"]
    finally:
        b.close()
