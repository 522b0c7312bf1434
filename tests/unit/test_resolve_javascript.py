"""JavaScript call resolution on fixtures/js_repo, through the real indexer and SQLite store:
named, aliased and namespace imports, default exports, re-exports through an index module,
CommonJS require + module.exports, this./super., constructor-inferred receivers, inherited
methods, globals as external, and what stays unresolved."""

from __future__ import annotations

from pathlib import Path

import pytest

from codesynapse.graph.indexer import Indexer
from codesynapse.graph.sqlite import SqliteGraphStore

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "js_repo"
T1 = 'test/service.test."NoteService"."adds and finds a note"'
T2 = 'test/service.test."NoteService"."keeps legacy ids"'


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
        ("src/legacy.legacyAdd", "util.slugify", "src/util.slugify", "module"),  # const util = require(...)
        ("src/service.NoteService.constructor", "Store", "src/store.Store", "import"),  # default import
        ("src/service.NoteService.add", "slug", "src/util.slugify", "import"),  # alias, re-exported by src/index.js
        ("src/service.NoteService.add", "this.store.put", "src/store.Store.put", "inferred"),
        ("src/service.NoteService.add", "this.touch", "src/service.NoteService.touch", "self"),
        ("src/service.NoteService.find", "this.store.get", "src/store.Store.get", "inferred"),
        ("src/service.NoteService.find", "util.slugify", "src/util.slugify", "module"),  # import * as util
        ("src/service.NoteService.touch", "console.log", "", "external"),
        ("src/service.NoteService.touch", "notify", "", "unresolved"),
        ("src/service.audited", "LoggedStore", "src/store.LoggedStore", "import"),
        ("src/service.audited", "store.put", "src/store.LoggedStore.put", "inferred"),
        ("src/service.audited", "store.validate", "src/store.Store.validate", "inferred"),  # through the base
        ("src/service.audited", "note.toString", "", "unresolved"),  # unknown receiver
        ("src/store.Store.constructor", "Map", "", "external"),
        ("src/store.Store.get", "this.items.get", "", "external"),
        ("src/store.Store.put", "this.validate", "src/store.Store.validate", "self"),
        ("src/store.Store.put", "this.items.set", "", "external"),
        ("src/store.Store.validate", "slugify", "src/util.slugify", "import"),
        ("src/store.Store.validate", "Error", "", "external"),
        ("src/store.LoggedStore.put", "super().put", "src/store.Store.put", "super"),
        ("src/store.LoggedStore.put", "this.log.push", "", "unresolved"),
        ("src/util.slugify", "clamp", "src/util.clamp", "local"),
        ("src/util.slugify", "title.toLowerCase().replace", "", "unresolved"),
        ("src/util.slugify", "title.toLowerCase", "", "unresolved"),
        ("src/util.clamp", "slug.slice", "", "unresolved"),
        (T1, "NoteService", "src/service.NoteService", "import"),
        (T1, "svc.add", "src/service.NoteService.add", "inferred"),
        (T1, "expect().toBe", "", "unresolved"),
        (T1, "expect", "", "external"),
        (T1, "svc.find", "src/service.NoteService.find", "inferred"),
        (T2, "expect().toBe", "", "unresolved"),
        (T2, "expect", "", "external"),
        (T2, "legacyAdd", "src/legacy.legacyAdd", "import"),  # require() of a module.exports = fn
        (T2, "audited", "src/service.audited", "import"),
    ])


def test_callers_and_unresolved_counts(store):
    assert sorted(c.caller for c in store.callers("src/util.slugify")) == [
        "src/legacy.legacyAdd", "src/service.NoteService.add", "src/service.NoteService.find",
        "src/store.Store.validate"]
    assert sorted(c.caller for c in store.callers("src/store.Store.put")) == [
        "src/service.NoteService.add", "src/store.LoggedStore.put"]
    assert [c.caller for c in store.callers("src/service.NoteService.add")] == [T1]
    assert store.count_unresolved_named("notify") == 1


def test_bases_and_import_targets(store):
    assert [(i.child, i.base, i.target) for i in store.inherits()] == [
        ("src/store.LoggedStore", "Store", "src/store.Store")]
    assert sorted((i.path, i.module, i.name, i.alias, i.target) for i in store.imports()) == [
        ("src/index.js", "src/store", "LoggedStore", "", "src/store.LoggedStore"),
        ("src/index.js", "src/store", "default", "Store", "src/store.Store"),
        ("src/index.js", "src/util", "slugify", "", "src/util.slugify"),
        ("src/legacy.js", "src/legacy", "legacyAdd", "default", "src/legacy.legacyAdd"),
        ("src/legacy.js", "src/util", "", "util", "src/util"),
        ("src/service.js", "src", "LoggedStore", "", "src/store.LoggedStore"),
        ("src/service.js", "src", "slugify", "slug", "src/util.slugify"),
        ("src/service.js", "src/store", "default", "Store", "src/store.Store"),
        ("src/service.js", "src/util", "", "util", "src/util"),
        ("src/store.js", "src/store", "Store", "default", "src/store.Store"),
        ("src/store.js", "src/util", "slugify", "", "src/util.slugify"),
        ("test/service.test.js", "src/legacy", "", "legacyAdd", "src/legacy"),
        ("test/service.test.js", "src/service", "NoteService", "", "src/service.NoteService"),
        ("test/service.test.js", "src/service", "audited", "", "src/service.audited"),
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
