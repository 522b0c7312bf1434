"""JavaScript call resolution on fixtures/js_repo, through the real indexer and SQLite store:
named, aliased and namespace imports, default exports, re-exports through an index module,
CommonJS require + module.exports, this./super., constructor-inferred receivers, inherited
methods, globals as external, and what stays unresolved."""

from __future__ import annotations

from pathlib import Path

import pytest
from codesynapse.index.indexer import Indexer
from codesynapse.store.sqlite.graph import SqliteGraphStore

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "js_repo"
T1 = 'notes/test/service.test."NoteService"."adds and finds a note"'
T2 = 'notes/test/service.test."NoteService"."keeps legacy ids"'


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = SqliteGraphStore(tmp_path_factory.mktemp("js") / "g.db", "g")
    Indexer(ROOT, s, None, workers=1).index_tree()
    yield s
    s.close()


def edges(store):
    return sorted((c.caller, c.callee, c.target, c.resolution) for c in store.all_calls())


def test_every_call_edge(store):
    assert edges(store) == sorted([
        ("notes/legacy.legacyAdd", "util.slugify", "notes/util.slugify", "module"),  # const util = require(...)
        ("notes/service.NoteService.constructor", "Store", "notes/store.Store", "import"),  # default import
        ("notes/service.NoteService.add", "slug", "notes/util.slugify", "import"),  # alias, re-exported by src/index.js
        ("notes/service.NoteService.add", "this.store.put", "notes/store.Store.put", "inferred"),
        ("notes/service.NoteService.add", "this.touch", "notes/service.NoteService.touch", "self"),
        ("notes/service.NoteService.find", "this.store.get", "notes/store.Store.get", "inferred"),
        ("notes/service.NoteService.find", "util.slugify", "notes/util.slugify", "module"),  # import * as util
        ("notes/service.NoteService.touch", "console.log", "", "external"),
        ("notes/service.NoteService.touch", "notify", "", "unresolved"),
        ("notes/service.audited", "LoggedStore", "notes/store.LoggedStore", "import"),
        ("notes/service.audited", "store.put", "notes/store.LoggedStore.put", "inferred"),
        ("notes/service.audited", "store.validate", "notes/store.Store.validate", "inferred"),  # through the base
        ("notes/service.audited", "note.toString", "", "unresolved"),  # unknown receiver
        ("notes/store.Store.constructor", "Map", "", "external"),
        ("notes/store.Store.get", "this.items.get", "", "external"),
        ("notes/store.Store.put", "this.validate", "notes/store.Store.validate", "self"),
        ("notes/store.Store.put", "this.items.set", "", "external"),
        ("notes/store.Store.validate", "slugify", "notes/util.slugify", "import"),
        ("notes/store.Store.validate", "Error", "", "external"),
        ("notes/store.LoggedStore.put", "super().put", "notes/store.Store.put", "super"),
        ("notes/store.LoggedStore.put", "this.log.push", "", "unresolved"),
        ("notes/util.slugify", "clamp", "notes/util.clamp", "local"),
        ("notes/util.slugify", "title.toLowerCase().replace", "", "unresolved"),
        ("notes/util.slugify", "title.toLowerCase", "", "unresolved"),
        ("notes/util.clamp", "slug.slice", "", "unresolved"),
        (T1, "NoteService", "notes/service.NoteService", "import"),
        (T1, "svc.add", "notes/service.NoteService.add", "inferred"),
        (T1, "expect().toBe", "", "external"),  # a method of what the global expect() returns
        (T1, "expect", "", "external"),
        (T1, "svc.find", "notes/service.NoteService.find", "inferred"),
        (T2, "expect().toBe", "", "external"),
        (T2, "expect", "", "external"),
        (T2, "legacyAdd", "notes/legacy.legacyAdd", "import"),  # require() of a module.exports = fn
        (T2, "audited", "notes/service.audited", "import"),
    ])


def test_callers_and_unresolved_counts(store):
    assert sorted(c.caller for c in store.callers("notes/util.slugify")) == [
        "notes/legacy.legacyAdd", "notes/service.NoteService.add", "notes/service.NoteService.find",
        "notes/store.Store.validate"]
    assert sorted(c.caller for c in store.callers("notes/store.Store.put")) == [
        "notes/service.NoteService.add", "notes/store.LoggedStore.put"]
    assert [c.caller for c in store.callers("notes/service.NoteService.add")] == [T1]
    assert store.count_unresolved_named("notify") == 1


def test_bases_and_import_targets(store):
    assert [(i.child, i.base, i.target) for i in store.inherits()] == [
        ("notes/store.LoggedStore", "Store", "notes/store.Store")]
    assert sorted((i.path, i.module, i.name, i.alias, i.target) for i in store.imports()) == [
        ("src/index.js", "notes/store", "LoggedStore", "", "notes/store.LoggedStore"),
        ("src/index.js", "notes/store", "default", "Store", "notes/store.Store"),
        ("src/index.js", "notes/util", "slugify", "", "notes/util.slugify"),
        ("src/legacy.js", "notes/legacy", "legacyAdd", "default", "notes/legacy.legacyAdd"),
        ("src/legacy.js", "notes/util", "", "util", "notes/util"),
        ("src/service.js", "notes", "LoggedStore", "", "notes/store.LoggedStore"),
        ("src/service.js", "notes", "slugify", "slug", "notes/util.slugify"),
        ("src/service.js", "notes/store", "default", "Store", "notes/store.Store"),
        ("src/service.js", "notes/util", "", "util", "notes/util"),
        ("src/store.js", "notes/store", "Store", "default", "notes/store.Store"),
        ("src/store.js", "notes/util", "slugify", "", "notes/util.slugify"),
        ("test/service.test.js", "notes/legacy", "", "legacyAdd", "notes/legacy"),
        ("test/service.test.js", "notes/service", "NoteService", "", "notes/service.NoteService"),
        ("test/service.test.js", "notes/service", "audited", "", "notes/service.audited"),
    ]


def test_package_json_keys_are_indexed_without_values(store):
    keys = [s.qname for s in store.symbols_in_file("package.json")]
    assert keys == [
        "package.json#name", "package.json#version", "package.json#type", "package.json#main",
        "package.json#scripts", "package.json#scripts.test", "package.json#devDependencies",
        "package.json#devDependencies.jest",
    ]
    stored = " ".join(f"{s.signature} {s.summary}" for s in store.symbols_in_file("package.json"))
    assert "notes" not in stored and "1.2.0" not in stored and "^29.7.0" not in stored
