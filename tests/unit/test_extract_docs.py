"""Documents and config files on fixtures/docs_repo: Markdown headings become sections
(heading paths, ranges up to the next heading of the same or a higher level, first-sentence
summaries, code blocks ignored, duplicate titles numbered); YAML/TOML/JSON keys become key
paths (lists as [i], depth capped at 6, comments above as redacted summaries) and values are
never stored — checked on the extraction and again in the SQLite store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from codesynapse.extract import extract_source
from codesynapse.extract.docs import MAX_KEYS
from codesynapse.index.indexer import Indexer
from codesynapse.store.sqlite.graph import SqliteGraphStore

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "docs_repo"
VALUES = ("hunter2", "8080", "notes:hunter2", "0 3 * * *", "/etc/notes", "sk_live_51Habcdefghijklmnopqrstuv",
          "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "0.0.0.0", "1048576", "fts5", "too deep", "postgres://")


def fx(rel: str, language: str, data: bytes | None = None):
    return extract_source(str(ROOT), rel, data if data is not None else (ROOT / rel).read_bytes(), language)


def rows(f):
    return [(s.qname, s.kind, s.start_line, s.end_line) for s in f.symbols]


def test_markdown_sections():
    f = fx("README.md", "markdown")
    assert f.module == "README.md"
    assert rows(f) == [
        ("README.md#Notes Service", "section", 1, 29),
        ("README.md#Notes Service > Install", "section", 5, 11),
        ("README.md#Notes Service > Install > From source", "section", 9, 11),
        ("README.md#Notes Service > Configuration", "section", 13, 20),  # the fenced `# …` is code
        ("README.md#Notes Service > Usage", "section", 22, 24),
        ("README.md#Notes Service > Setext heading", "section", 26, 29),
    ]
    by = {s.qname: s for s in f.symbols}
    s = by["README.md#Notes Service > Install"]
    assert (s.name, s.signature, s.summary, s.parent) == (
        "Install", "## Install", "Run pip install notes-service and then notes init.", "README.md#Notes Service")
    assert by["README.md#Notes Service"].summary == "A small service that stores notes."
    assert by["README.md#Notes Service > Configuration"].summary == "Settings live in config/settings.toml."


def test_markdown_duplicate_titles_are_numbered():
    f = fx("docs/architecture.md", "markdown")
    assert rows(f) == [
        ("docs/architecture.md#Architecture", "section", 1, 21),
        ("docs/architecture.md#Architecture > Storage", "section", 5, 7),
        ("docs/architecture.md#Architecture > API", "section", 9, 17),
        ("docs/architecture.md#Architecture > API > Routes", "section", 11, 13),
        ("docs/architecture.md#Architecture > API > Errors", "section", 15, 17),
        ("docs/architecture.md#Architecture > Storage (2)", "section", 19, 21),
    ]


def test_yaml_key_paths_lists_depth_and_redacted_comments():
    f = fx("deploy/app.yaml", "yaml")
    assert rows(f) == [
        ("deploy/app.yaml#service", "key", 2, 6),
        ("deploy/app.yaml#service.name", "key", 3, 3),
        ("deploy/app.yaml#service.port", "key", 5, 5),
        ("deploy/app.yaml#service.tls", "key", 6, 6),
        ("deploy/app.yaml#service.tls.cert", "key", 6, 6),
        ("deploy/app.yaml#service.tls.key", "key", 6, 6),
        ("deploy/app.yaml#database", "key", 7, 13),
        ("deploy/app.yaml#database.url", "key", 8, 8),
        ("deploy/app.yaml#database.password", "key", 10, 10),
        ("deploy/app.yaml#database.pool", "key", 11, 13),
        ("deploy/app.yaml#database.pool.size", "key", 12, 12),
        ("deploy/app.yaml#database.pool.timeout", "key", 13, 13),
        ("deploy/app.yaml#jobs", "key", 14, 18),
        ("deploy/app.yaml#jobs[0].name", "key", 15, 15),
        ("deploy/app.yaml#jobs[0].schedule", "key", 16, 16),
        ("deploy/app.yaml#jobs[1].name", "key", 17, 17),
        ("deploy/app.yaml#jobs[1].schedule", "key", 18, 18),
        ("deploy/app.yaml#a", "key", 19, 25),
        ("deploy/app.yaml#a.b", "key", 20, 25),
        ("deploy/app.yaml#a.b.c", "key", 21, 25),
        ("deploy/app.yaml#a.b.c.d", "key", 22, 25),
        ("deploy/app.yaml#a.b.c.d.e", "key", 23, 25),
        ("deploy/app.yaml#a.b.c.d.e.f", "key", 24, 25),  # depth 6; a.b.c.d.e.f.g is not kept
    ]
    by = {s.qname: s for s in f.symbols}
    assert by["deploy/app.yaml#service.port"].summary == "Port the HTTP server listens on."
    assert by["deploy/app.yaml#database.password"].summary == "rotated yearly; old token [REDACTED:github_token]"
    assert (by["deploy/app.yaml#jobs[1].name"].name, by["deploy/app.yaml#jobs[1].name"].parent) == (
        "name", "deploy/app.yaml#jobs")


def test_toml_tables_dotted_keys_inline_tables_and_array_tables():
    f = fx("config/settings.toml", "toml")
    assert rows(f) == [
        ("config/settings.toml#title", "key", 2, 2),
        ("config/settings.toml#owner", "key", 3, 3),
        ("config/settings.toml#owner.name", "key", 3, 3),
        ("config/settings.toml#server", "key", 5, 10),
        ("config/settings.toml#server.host", "key", 7, 7),
        ("config/settings.toml#server.port", "key", 8, 8),
        ("config/settings.toml#server.limits", "key", 9, 9),
        ("config/settings.toml#server.limits.body", "key", 9, 9),
        ("config/settings.toml#server.limits.timeout", "key", 9, 9),
        ("config/settings.toml#database", "key", 11, 13),
        ("config/settings.toml#database.primary", "key", 11, 13),
        ("config/settings.toml#database.primary.api_key", "key", 12, 12),
        ("config/settings.toml#plugins", "key", 14, 16),
        ("config/settings.toml#plugins[0].name", "key", 15, 15),
        ("config/settings.toml#plugins[1].name", "key", 18, 18),
    ]
    assert {s.qname: s.summary for s in f.symbols}["config/settings.toml#server.host"] == "Address to bind."


def test_json_objects_and_arrays():
    f = fx("config/features.json", "json")
    assert [s.qname for s in f.symbols] == [
        "config/features.json#search",
        "config/features.json#search.enabled",
        "config/features.json#search.backend",
        "config/features.json#export",
        "config/features.json#export.formats",
        "config/features.json#export.limits",
        "config/features.json#export.limits[0].maxNotes",
        "config/features.json#secret",
    ]


def test_key_cap():
    data = "".join(f"k{i}: {i}\n" for i in range(MAX_KEYS + 50)).encode()
    f = fx("big.yaml", "yaml", data)
    assert len(f.symbols) == MAX_KEYS == 2000
    assert f.symbols[-1].qname == "big.yaml#k1999"


def test_values_never_reach_the_store(tmp_path):
    store = SqliteGraphStore(tmp_path / "g.db", "g")
    Indexer(ROOT, store, None, workers=1).index_tree()
    langs = sorted((f.path, f.language) for f in store.files())
    assert langs == [
        ("README.md", "markdown"), ("config/features.json", "json"), ("config/settings.toml", "toml"),
        ("deploy/app.yaml", "yaml"), ("docs/architecture.md", "markdown"),
    ]
    assert store.stats().symbols == 6 + 6 + 23 + 15 + 8
    store.close()
    with sqlite3.connect(tmp_path / "g.db") as db:
        dump = "\n".join(str(r) for t in ("symbols", "files", "calls", "imports", "inherits")
                         for r in db.execute(f"SELECT * FROM {t}"))  # noqa: S608 - constant table names
    for value in VALUES:
        assert value not in dump, value


@pytest.mark.parametrize("language,data", [
    ("yaml", b"a: [1, 2\nb: {"), ("toml", b"[a\nb = "), ("json", b'{"a": {"b": '), ("markdown", b"# T\n```\n# x"),
])
def test_broken_documents_are_partial_not_errors(language, data):
    f = fx(f"broken.{language}", language, data)
    assert f.language == language


@pytest.mark.parametrize("rel, language, make", [
    ("many.json", "json", lambda n: "{\n" + ",\n".join(f'  "k{i}": {i}' for i in range(n)) + "\n}\n"),
    ("many.yaml", "yaml", lambda n: "".join(f"k{i}: {i}\n" for i in range(n))),
    ("many.toml", "toml", lambda n: "".join(f"k{i} = {i}\n" for i in range(n))),
    ("many.md", "markdown", lambda n: "".join(f"# Part {i}\n\nText {i}.\n\n" for i in range(n))),
])
def test_a_file_over_the_keys_limit_says_what_it_left_out(rel, language, make):
    from codesynapse.extract.docs import MAX_KEYS

    over = extract_source("/nonexistent", rel, make(MAX_KEYS + 25).encode(), language)
    keys = [s for s in over.symbols if s.kind in ("key", "section")]
    assert len(keys) == MAX_KEYS
    assert over.partial
    what = "sections" if language == "markdown" else "keys"
    assert over.error == (f"{what} limit (2,000 a file): {what} after line {keys[-1].start_line:,} left out")
    at = extract_source("/nonexistent", rel, make(MAX_KEYS).encode(), language)
    assert len([s for s in at.symbols if s.kind in ("key", "section")]) == MAX_KEYS
    assert (at.partial, at.error) == (False, "")
