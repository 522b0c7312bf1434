"""C++ call resolution on fixtures/cpp_repo through the real indexer: namespace-qualified
types and functions across files, methods declared in a header and defined in a source
file, inherited methods through a derived receiver, `this->`, std as external."""

from __future__ import annotations

from pathlib import Path

import pytest
from codesynapse.index.indexer import Indexer
from codesynapse.store.sqlite.graph import SqliteGraphStore

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "cpp_repo"
G = "(global)::geo"
T = "(global)::RegistryTest.SumsAreas"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = SqliteGraphStore(tmp_path_factory.mktemp("cpp") / "g.db", "g")
    Indexer(ROOT, s, None, workers=1).index_tree()
    yield s
    s.close()


def test_every_call_edge(store):
    assert sorted((c.caller, c.callee, c.target, c.resolution) for c in store.all_calls()) == sorted([
        ("(global)::main", "registry.add", f"{G}::Registry::add", "inferred"),
        ("(global)::main", "std::make_unique", "", "external"),
        ("(global)::main", "geo::Circle", f"{G}::Circle", "local"),
        ("(global)::main", "big.describe", f"{G}::Shape::describe", "inferred"),  # inherited by Circle
        ("(global)::main", "registry.total", f"{G}::Registry::total", "inferred"),
        (f"{G}::Registry::add", "shapes_.push_back", "", "unresolved"),  # the field is declared in the header
        (f"{G}::Registry::add", "std::move", "", "external"),
        (f"{G}::Registry::total", "s.area", "", "unresolved"),  # const auto& s
        (f"{G}::Circle::area", "square", f"{G}::square", "local"),
        (f"{G}::Shape::describe", "std::to_string", "", "external"),
        (f"{G}::Shape::describe", "this.area", f"{G}::Shape::area", "self"),
        (T, "registry.add", f"{G}::Registry::add", "inferred"),
        (T, "std::make_unique", "", "external"),
        (T, "EXPECT_NEAR", "", "unresolved"),
        (T, "registry.total", f"{G}::Registry::total", "inferred"),
        (T, "EXPECT_DOUBLE_EQ", "", "unresolved"),
        (T, "geo::square", f"{G}::square", "local"),
    ])


def test_declaration_and_definition_share_a_symbol(store):
    rows = sorted((s.path, s.start_line) for s in store.symbols_by_qname(f"{G}::Circle::area"))
    assert rows == [("include/shape.hpp", 19), ("src/shape.cpp", 12)]
    assert [(i.child, i.target) for i in store.inherits()] == [(f"{G}::Circle", f"{G}::Shape")]
    assert sorted(c.caller for c in store.callers(f"{G}::Registry::total")) == [T, "(global)::main"]
