"""Secrets at rest: the secrets corpus indexed and memory written from it, then every string
every store keeps is read back and searched for every planted value (issue 17, "one
redaction gate").

* SQLite: every text and blob value of every column of every table (virtual full-text
  tables included) of every SQLite file in the data folder (graph, memory), read through
  SQLite, so that what is still in the WAL counts;
* every byte of every file of the data folder (milvus-lite data, kept extractions
  decompressed), as ``test_security.py`` does;
* Neo4j and HugeGraph (servers started by the test harness, ``tests/conftest.py``): every
  label, type, id and string property of every node and relationship.

The search ignores case: full-text indexes keep terms lower-cased. The corpus is
``fixtures/secrets`` with the planted values of ``tests/unit/test_redact.py`` (``PLANTED``)
and ``test_security.py`` (prose, the policy's own patterns, memory), and the repository's
remote URL holds a token (a clone made with one).
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from codesynapse.app import App
from codesynapse.methods import call_method
from codesynapse.settings import load_settings

from tests.reliability.test_security import (
    FIXTURES,
    POLICY,
    SECRETS,
    corpus_lines,
    remember_params,
)

# the token of the clone's remote URL (https://deploy:<token>@github.com/…)
REMOTE_TOKEN = "ghp_4kT9wQ2zL7xN5cV8bM3jH6fD1sA0pR2yU4iO"
PLANTED_AT_REST = sorted({*SECRETS, REMOTE_TOKEN}, key=len, reverse=True)
LOWER_RE = re.compile("|".join(re.escape(s.lower()) for s in PLANTED_AT_REST))
BY_LOWER = {s.lower(): s for s in PLANTED_AT_REST}


SHAPED_RE = re.compile(r"(?:AKIA|ASIA|gh[pousr]_|xox[bp]|sk_live_|rk_test_|npm_|hf_|ACME)[A-Za-z0-9_]+$")


def planted_in(text: str) -> list[str]:
    return sorted({BY_LOWER[m.group(0)] for m in LOWER_RE.finditer(text.lower())})


def sqlite_strings(db: Path) -> Iterator[tuple[str, str]]:
    """(table.column, value) for every text or blob value of every table of ``db``."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for t in tables:
            cols = [r[1] for r in con.execute(f'PRAGMA table_xinfo("{t}")')]
            for c in cols:
                try:
                    rows = con.execute(f'SELECT "{c}" FROM "{t}" WHERE typeof("{c}") IN (\'text\', \'blob\')')
                    for (v,) in rows:
                        yield f"{t}.{c}", v if isinstance(v, str) else bytes(v).decode("utf-8", "replace")
                except sqlite3.OperationalError as e:  # a hidden column of a virtual table
                    if "no such column" not in str(e):
                        raise
    finally:
        con.close()


def data_folder_leaks(data: Path) -> dict[str, list[str]]:
    """Planted values in the data folder: in every SQLite value, and in every file's bytes."""
    found: dict[str, set[str]] = {}
    n_sqlite = 0
    for p in sorted(data.rglob("*")):
        if not p.is_file() or p.is_symlink():
            continue
        raw = p.read_bytes()
        if raw.startswith(b"SQLite format 3\x00"):
            n_sqlite += 1
            for where, value in sqlite_strings(p):
                for s in planted_in(value):
                    found.setdefault(f"{p.relative_to(data)}:{where}", set()).add(s)
        if p.suffix == ".kept":
            raw = zlib.decompress(raw)
        for s in planted_in(raw.decode("utf-8", "replace")):
            found.setdefault(str(p.relative_to(data)), set()).add(s)
    assert n_sqlite >= 2, "the graph and memory SQLite files were not found"
    return {k: sorted(v) for k, v in found.items()}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """The secrets corpus as a clone whose remote URL holds a token."""
    root = tmp_path_factory.mktemp("at-rest") / "secrets_repo"
    shutil.copytree(FIXTURES / "secrets", root)
    (root / ".codesynapse.yaml").write_text(POLICY)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin",
                    f"https://deploy:{REMOTE_TOKEN}@github.com/acme/secrets-corpus.git"], check=True)
    return root


def index_and_remember(root: Path, settings: dict) -> App:
    """Index the corpus and write memory made of it: the remember params of
    fixtures/secrets/memory, and every corpus line that holds a planted value as entity
    names, aliases, types, fact endpoints, predicates and sources."""
    app = App(root, load_settings(settings))
    try:
        app.index()
        call_method(app, "codesynapse/memory/remember", remember_params())
        lines = corpus_lines()
        # planted values that say what they are by their shape alone (a bare random word does
        # not) and fit a type or a predicate
        words = {w for ln in lines for w in re.findall(r"[A-Za-z][A-Za-z0-9_]{3,63}", ln)}
        shaped = sorted(w for w in words if planted_in(w) and SHAPED_RE.match(w))
        assert len(shaped) >= 10
        for i in range(0, len(lines), 4):
            part = lines[i:i + 4]
            call_method(app, "codesynapse/memory/remember", {
                "entities": [{"name": ln, "aliases": [lines[(i + j + 1) % len(lines)]],
                              "type": shaped[(i + j) % len(shaped)], "durable": True} for j, ln in enumerate(part)],
                "facts": [{"subject": f"service {j}", "predicate": shaped[(i + j + 1) % len(shaped)], "object": ln,
                           "sourceClient": ln[:128], "durable": bool(j % 2)} for j, ln in enumerate(part)]})
    except BaseException:
        app.close()
        raise
    return app


def test_the_corpus_plants_what_the_stores_are_searched_for(corpus):
    raw = b"".join(p.read_bytes() for p in corpus.rglob("*") if p.is_file() and ".git" not in p.parts)
    assert set(planted_in(raw.decode("utf-8", "replace"))) == set(SECRETS)
    assert REMOTE_TOKEN in (corpus / ".git" / "config").read_text()


def test_no_planted_value_in_any_sqlite_value_or_file(corpus, tmp_path):
    data = tmp_path / "data"
    app = index_and_remember(corpus, {"data_dir": str(data), "watch": False})
    try:
        # the stores are not empty: the redacted headings, keys and memory are there
        con = sqlite3.connect(f"file:{data / 'graph.db'}?mode=ro", uri=True)
        names = {r[0] for r in con.execute("SELECT name FROM symbols")}
        qnames = {r[0] for r in con.execute("SELECT qname FROM symbols")}
        con.close()
        assert "Admin password [REDACTED:password]" in names
        assert "Deploy token [REDACTED:github_token]" in names
        assert "credential_keys.yaml#access_keys.[REDACTED:aws_access_key]" in qnames
        assert "credential_keys.toml#keys.[REDACTED:aws_access_key]" in qnames
        assert "policy/licences.md#Licences (FAKE values planted for redaction tests) > Site licence [REDACTED:custom]" \
            in qnames
        assert "headings.md#Release runbook (FAKE credentials planted for redaction tests) > " \
               "Admin password [REDACTED:password] > Rotation steps" in qnames
        listed = call_method(app, "codesynapse/memory/list", {"limit": 200})["entries"]
        assert {"upload job", "licence server"} <= {e["name"] for e in listed}
        types = {e.get("type", "") for e in listed}
        assert {"[REDACTED:aws_access_key]", "[REDACTED:custom]"} <= types
    finally:
        app.close()
    assert data_folder_leaks(data) == {}


def _neo4j_strings(uri: str) -> str:
    from neo4j import GraphDatabase

    out: list[str] = []
    with GraphDatabase.driver(uri, auth=None) as driver, driver.session() as s:
        for rec in s.run("MATCH (n) RETURN labels(n) AS l, properties(n) AS p"):
            out.append(json.dumps([rec["l"], rec["p"]], default=str))
        for rec in s.run("MATCH ()-[r]->() RETURN type(r) AS t, properties(r) AS p"):
            out.append(json.dumps([rec["t"], rec["p"]], default=str))
    assert len(out) > 100, "the graph is empty"
    return "\n".join(out)


def _hugegraph_strings(url: str) -> str:
    from codesynapse.store.hugegraph.graph import GremlinClient

    client = GremlinClient(url, timeout=120.0)
    out: list[str] = []
    try:
        for what, script in (("vertices", "g.V().valueMap(true).toList()"),
                             ("edges", "g.E().valueMap(true).toList()"),
                             ("edge ids", "g.E().id().toList()")):
            got = client.submit(what, script)
            out.append(json.dumps(got, default=str))
    finally:
        client.close()
    assert len(out[0]) > 10_000, "the graph is empty"
    return "\n".join(out)


@pytest.mark.parametrize("backend", [pytest.param("neo4j", marks=pytest.mark.neo4j),
                                     pytest.param("hugegraph", marks=pytest.mark.hugegraph)])
def test_no_planted_value_in_any_graph_server_property(backend, corpus, tmp_path, request):
    settings = {"data_dir": str(tmp_path / "data"), "watch": False, "backend": backend, "embedder": "none"}
    if backend == "neo4j":
        settings["neo4j_uri"] = uri = request.getfixturevalue("neo4j_server").uri
    else:
        settings["hugegraph_url"] = uri = request.getfixturevalue("hugegraph_server").uri
    app = index_and_remember(corpus, settings)
    app.close()
    every = _neo4j_strings(uri) if backend == "neo4j" else _hugegraph_strings(uri)
    assert "[REDACTED:" in every
    assert planted_in(every) == []
    assert data_folder_leaks_files_only(tmp_path / "data") == {}


def data_folder_leaks_files_only(data: Path) -> dict[str, list[str]]:
    """The data folder of a server backend (no memory SQLite file): every file's bytes."""
    found: dict[str, list[str]] = {}
    for p in sorted(data.rglob("*")):
        if p.is_file() and not p.is_symlink():
            raw = p.read_bytes()
            if p.suffix == ".kept":
                raw = zlib.decompress(raw)
            hits = planted_in(raw.decode("utf-8", "replace"))
            if hits:
                found[str(p.relative_to(data))] = hits
    return found
