"""Module-style qualified names for TypeScript/JavaScript (issue 22 #10): the nearest named
package.json's name plus the path under the package's source root (``src/``), without the
extension and without ``/index``; imports — relative, and by the package's name from another
package of the same repository — resolve to those names through the real indexer and SQLite.
A file under no named package.json keeps its path-derived name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from codesynapse.extract import extract_source
from codesynapse.index.indexer import Indexer
from codesynapse.store.sqlite.graph import SqliteGraphStore

FILES = {
    "package.json": json.dumps({"private": True, "workspaces": ["packages/*"]}),  # no name: passed over
    "packages/core/package.json": json.dumps({"name": "@acme/core", "version": "1.0.0"}),
    "packages/core/src/index.ts": "export { Observer } from './observer'\n",
    "packages/core/src/observer.ts": (
        "import { hashKey } from './utils/hash'\n"
        "export class Observer {\n"
        "  fetch(key: string): string {\n"
        "    return hashKey(key)\n"
        "  }\n"
        "}\n"),
    "packages/core/src/utils/hash.ts": "export function hashKey(k: string): string {\n  return k\n}\n",
    "packages/core/test/observer.test.ts": (
        "import { Observer } from '../src'\n"
        "export function check(): string {\n"
        "  return new Observer().fetch('a')\n"
        "}\n"),
    "packages/react/package.json": json.dumps({"name": "@acme/react"}),
    "packages/react/src/useQuery.ts": (
        "import { Observer } from '@acme/core'\n"
        "export function useQuery(o: Observer): string {\n"
        "  return o.fetch('q')\n"
        "}\n"),
    "packages/react/lib/plain.js": "export function plain() { return 1 }\n",
    "scripts/build.ts": "export function build(): void {}\n",
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tsnames")
    for rel, body in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body)
    return root


@pytest.fixture(scope="module")
def store(repo):
    s = SqliteGraphStore(repo.parent / f"{repo.name}.db", "g")
    Indexer(repo, s, None, workers=1).index_tree()
    yield s
    s.close()


def _module(repo: Path, rel: str) -> str:
    lang = "javascript" if rel.endswith(".js") else "typescript"
    return extract_source(str(repo), rel, (repo / rel).read_bytes(), lang).module


@pytest.mark.parametrize("rel, module", [
    ("packages/core/src/index.ts", "@acme/core"),                 # index names the package
    ("packages/core/src/observer.ts", "@acme/core/observer"),     # src/ is the source root
    ("packages/core/src/utils/hash.ts", "@acme/core/utils/hash"),
    ("packages/core/test/observer.test.ts", "@acme/core/test/observer.test"),  # outside src/
    ("packages/react/src/useQuery.ts", "@acme/react/useQuery"),
    ("packages/react/lib/plain.js", "@acme/react/lib/plain"),
    ("scripts/build.ts", "scripts/build"),                        # no named package.json above
])
def test_module_names(repo, rel, module):
    assert _module(repo, rel) == module


def test_qualified_names_are_module_style(store):
    names = {s.qname for s in store.all_symbols()}
    assert {"@acme/core/observer.Observer.fetch", "@acme/core/utils/hash.hashKey",
            "@acme/react/useQuery.useQuery", "scripts/build.build"} <= names
    # only the package.json files' own keys (config symbols) keep their paths
    assert not any(n.startswith("packages/") and ".json#" not in n for n in names)


def test_imports_resolve_to_module_style_names(store):
    got = {(i.path, i.module, i.name, i.target) for i in store.imports()}
    assert ("packages/core/src/observer.ts", "@acme/core/utils/hash", "hashKey",
            "@acme/core/utils/hash.hashKey") in got                                   # relative
    assert ("packages/core/src/index.ts", "@acme/core/observer", "Observer",
            "@acme/core/observer.Observer") in got                                    # re-export
    assert ("packages/core/test/observer.test.ts", "@acme/core", "Observer",
            "@acme/core/observer.Observer") in got                                    # '../src', via index
    assert ("packages/react/src/useQuery.ts", "@acme/core", "Observer",
            "@acme/core/observer.Observer") in got                                    # by package name


def test_calls_resolve_across_relative_and_package_imports(store):
    edges = {(c.caller, c.callee, c.target) for c in store.all_calls()}
    assert ("@acme/core/observer.Observer.fetch", "hashKey", "@acme/core/utils/hash.hashKey") in edges
    assert ("@acme/react/useQuery.useQuery", "o.fetch", "@acme/core/observer.Observer.fetch") in edges
    assert ("@acme/core/test/observer.test.check", "Observer().fetch",
            "@acme/core/observer.Observer.fetch") in edges
