"""TypeScript call resolution on fixtures/ts_repo (TS + TSX + spec), through the real indexer:
interface methods through typed parameters, constructor parameter properties and field
annotations, `import * as`, this. on abstract classes, bases across files."""

from __future__ import annotations

from pathlib import Path

import pytest
from codesynapse.index.indexer import Indexer
from codesynapse.store.sqlite.graph import SqliteGraphStore

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "ts_repo"
T = 'test/registry.spec."Registry"."sums areas"'


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = SqliteGraphStore(tmp_path_factory.mktemp("ts") / "g.db", "g")
    Indexer(ROOT, s, None, workers=1).index_tree()
    yield s
    s.close()


def test_every_call_edge(store):
    assert sorted((c.caller, c.callee, c.target, c.resolution) for c in store.all_calls()) == sorted([
        ("src/registry.Logger.info", "console.log", "", "external"),
        ("src/registry.Registry.constructor", "Counter", "src/registry.Counter", "local"),
        ("src/registry.Registry.add", "this.items.push", "", "unresolved"),
        ("src/registry.Registry.add", "this.log.info", "src/registry.Logger.info", "inferred"),
        ("src/registry.Registry.add", "s.name", "src/models.Shape.name", "inferred"),  # interface method
        ("src/registry.Registry.add", "this.counter.bump", "src/registry.Counter.bump", "inferred"),
        ("src/registry.Registry.total", "this.items.reduce", "", "unresolved"),
        ("src/registry.Registry.total", "s.area", "", "unresolved"),
        ("src/registry.Registry.demo", "Registry", "src/registry.Registry", "local"),
        ("src/registry.Registry.demo", "Logger", "src/registry.Logger", "local"),
        ("src/registry.Registry.demo", "r.add", "src/registry.Registry.add", "inferred"),
        ("src/registry.Registry.demo", "shapes.Circle", "src/shapes.Circle", "module"),  # import * as shapes
        ("src/shapes.round", "Math.round", "", "external"),
        ("src/shapes.Base.describe", "this.name", "src/shapes.Base.name", "self"),
        ("src/shapes.Base.describe", "round", "src/shapes.round", "local"),
        ("src/shapes.Base.describe", "this.area", "src/shapes.Base.area", "self"),  # abstract signature
        ("src/view.formatTotal", "n.toFixed", "", "unresolved"),
        ("src/view.Summary", "registry.total", "src/registry.Registry.total", "inferred"),
        ("src/view.Summary", "formatTotal", "src/view.formatTotal", "local"),
        (T, "Registry", "src/registry.Registry", "import"),
        (T, "Logger", "src/registry.Logger", "import"),
        (T, "reg.add", "src/registry.Registry.add", "inferred"),
        (T, "Circle", "src/shapes.Circle", "import"),
        (T, "expect().toBeCloseTo", "", "external"),  # a method of what the global expect() returns
        (T, "expect", "", "external"),
        (T, "reg.total", "src/registry.Registry.total", "inferred"),
    ])


def test_bases_and_subtypes(store):
    assert sorted((i.child, i.base, i.kind, i.target) for i in store.inherits()) == [
        ("src/shapes.Base", "Shape", "implements", "src/models.Shape"),
        ("src/shapes.Circle", "Base", "inherits", "src/shapes.Base"),
    ]
    assert [i.child for i in store.subtypes("src/models.Shape")] == ["src/shapes.Base"]


def test_languages_and_tests(store):
    langs = {f.path: f.language for f in store.files() if f.status != "skipped"}
    assert langs == {
        "src/models.ts": "typescript", "src/registry.ts": "typescript", "src/shapes.ts": "typescript",
        "src/view.tsx": "tsx", "test/registry.spec.ts": "typescript", "tsconfig.json": "json",
    }
    assert sorted(s.qname for s in store.all_symbols() if s.is_test) == [
        'test/registry.spec."Registry"', T]


def test_methods_of_an_exported_object(tmp_path):
    """`export const intervalProvider = { setInterval(…) {…} }` (rxjs's provider shape): the
    object's methods are symbols qualified by it, and a call through the imported object binds
    to them."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "provider.ts").write_text(
        "export const intervalProvider = {\n"
        "  setInterval(handler: () => void, timeout?: number) {\n"
        "    return setInterval(handler, timeout);\n"
        "  },\n"
        "  delegate: undefined,\n"
        "};\n")
    (tmp_path / "src" / "action.ts").write_text(
        "import { intervalProvider } from './provider';\n\n"
        "export class Action {\n"
        "  request(delay: number) {\n"
        "    return intervalProvider.setInterval(() => {}, delay);\n"
        "  }\n"
        "}\n")
    s = SqliteGraphStore(tmp_path / "g.db", "g")
    Indexer(tmp_path, s, None, workers=1).index_tree()
    assert [(r.qname, r.kind, r.start_line, r.end_line, r.signature) for r in s.symbols_in_file("src/provider.ts")] == [
        ("src/provider", "module", 1, 6, ""),
        ("src/provider.intervalProvider", "constant", 1, 6, "const intervalProvider"),
        ("src/provider.intervalProvider.setInterval", "method", 2, 4,
         "setInterval(handler: () => void, timeout?: number)"),
    ]
    assert sorted((c.caller, c.callee, c.target) for c in s.all_calls()) == [
        ("src/action.Action.request", "intervalProvider.setInterval", "src/provider.intervalProvider.setInterval"),
        ("src/provider.intervalProvider.setInterval", "setInterval", ""),
    ]
    s.close()
