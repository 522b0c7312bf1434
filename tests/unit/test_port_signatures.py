"""Each store implements its port with the port's own parameters (issue 23 weak tests: the
contract suite's ``isinstance`` checks only that the method names exist). The check itself
is shown to catch a store that drops or renames a parameter or changes a default."""

from __future__ import annotations

from typing import Protocol

import pytest
from codesynapse.graph.depmodel import DependencyStore
from codesynapse.store.graph import GraphStore
from codesynapse.store.hugegraph.graph import HugeGraphStore
from codesynapse.store.hugegraph.memory import HugeGraphMemoryStore
from codesynapse.store.memory import MemoryStore
from codesynapse.store.neo4j.graph import Neo4jGraphStore
from codesynapse.store.neo4j.memory import Neo4jMemoryStore
from codesynapse.store.sqlite.graph import SqliteGraphStore
from codesynapse.store.sqlite.memory import SqliteMemoryStore

from tests.contract.support import signature_differences

CASES = [(GraphStore, s) for s in (SqliteGraphStore, Neo4jGraphStore, HugeGraphStore)] + \
        [(DependencyStore, s) for s in (SqliteGraphStore, Neo4jGraphStore, HugeGraphStore)] + \
        [(MemoryStore, s) for s in (SqliteMemoryStore, Neo4jMemoryStore, HugeGraphMemoryStore)]


@pytest.mark.parametrize(("port", "store"), CASES, ids=[f"{p.__name__}-{s.__name__}" for p, s in CASES])
def test_store_methods_take_the_ports_parameters(port, store):
    # an instance is not needed (nor a server): the methods are read from the class
    assert signature_differences(port, store.__new__(store)) == []


class Port(Protocol):
    def find(self, scope: str, terms: list[str], *, limit: int = 10) -> list[str]: ...

    def close(self) -> None: ...


class Good:
    def find(self, scope, terms, *, limit=10):
        return []

    def close(self):
        return None


class Drifted:
    def find(self, scope, names, *, limit=20):
        return []


def test_the_check_names_what_differs():
    assert signature_differences(Port, Good()) == []
    assert signature_differences(Port, Drifted()) == [
        "find: port (scope, terms, *, limit=10) != store (scope, names, *, limit=20)",
        "close: missing",
    ]
