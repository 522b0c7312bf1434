"""Java call resolution on fixtures/java_repo through the real indexer: same-package classes
without imports, single and star imports, static imports of library methods (external),
implicit-this calls to own and inherited methods, fields/locals/parameters as receivers,
interface methods, `new` of the enclosing class, java.lang as external."""

from __future__ import annotations

from pathlib import Path

import pytest
from codesynapse.index.indexer import Indexer
from codesynapse.store.sqlite.graph import SqliteGraphStore

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "java_repo"
SVC = "com.acme.orders.service"
REPO = "com.acme.orders.repo"
MODEL = "com.acme.orders.model"
T = f"{SVC}.OrderServiceTest.placesAnOrder"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = SqliteGraphStore(tmp_path_factory.mktemp("java") / "g.db", "g")
    Indexer(ROOT, s, None, workers=1).index_tree()
    yield s
    s.close()


def test_every_call_edge(store):
    assert sorted((c.caller, c.callee, c.target, c.resolution) for c in store.all_calls()) == sorted([
        (f"{REPO}.InMemoryOrderRepository", "HashMap", "", "external"),
        (f"{REPO}.InMemoryOrderRepository.save", "touch", f"{REPO}.AbstractRepository.touch", "self"),  # inherited
        (f"{REPO}.InMemoryOrderRepository.save", "orders.put", "", "external"),  # java.util.Map
        (f"{REPO}.InMemoryOrderRepository.save", "order.getId", f"{MODEL}.Order.getId", "inferred"),
        (f"{REPO}.InMemoryOrderRepository.find", "orders.get", "", "external"),
        (f"{SVC}.Money.format", "String.format", "", "external"),
        (f"{SVC}.OrderService", "Audit", f"{SVC}.Audit", "local"),
        (f"{SVC}.OrderService.place", "Order", f"{MODEL}.Order", "import"),
        (f"{SVC}.OrderService.place", "validate", f"{SVC}.OrderService.validate", "self"),
        (f"{SVC}.OrderService.place", "repository.save", f"{REPO}.OrderRepository.save", "inferred"),  # star import
        (f"{SVC}.OrderService.place", "this.audit.record", f"{SVC}.Audit.record", "inferred"),
        (f"{SVC}.OrderService.place", "order.getId", f"{MODEL}.Order.getId", "inferred"),
        (f"{SVC}.OrderService.place", "Money.format", f"{SVC}.Money.format", "local"),  # same package, other file
        (f"{SVC}.OrderService.place", "order.getCents", f"{MODEL}.Order.getCents", "inferred"),
        (f"{SVC}.OrderService.validate", "order.getCents", f"{MODEL}.Order.getCents", "inferred"),
        (f"{SVC}.OrderService.validate", "IllegalArgumentException", "", "external"),
        (f"{SVC}.OrderService.inMemory", "OrderService", f"{SVC}.OrderService", "local"),  # the class, not its constructor
        (f"{SVC}.OrderService.inMemory", "InMemoryOrderRepository", f"{REPO}.InMemoryOrderRepository", "import"),
        (f"{SVC}.Audit.record", "System.out.println", "", "external"),
        (T, "InMemoryOrderRepository", f"{REPO}.InMemoryOrderRepository", "import"),
        (T, "OrderService", f"{SVC}.OrderService", "local"),
        (T, "assertEquals", "", "external"),  # static import from JUnit
        (T, "service.place", f"{SVC}.OrderService.place", "inferred"),
        (T, "assertEquals", "", "external"),
        (T, "repo.find", f"{REPO}.InMemoryOrderRepository.find", "inferred"),
        (T, "repo.find().getCents", "", "unresolved"),  # return types are not tracked
    ])


def test_hierarchy_and_tests(store):
    assert sorted((i.child, i.base, i.kind, i.target) for i in store.inherits()) == [
        (f"{REPO}.InMemoryOrderRepository", "AbstractRepository", "inherits", f"{REPO}.AbstractRepository"),
        (f"{REPO}.InMemoryOrderRepository", "OrderRepository", "implements", f"{REPO}.OrderRepository"),
    ]
    assert [i.child for i in store.subtypes(f"{REPO}.OrderRepository")] == [f"{REPO}.InMemoryOrderRepository"]
    assert sorted(c.caller for c in store.callers(f"{SVC}.OrderService.place")) == [T]
    assert [s.qname for s in store.all_symbols() if s.is_test] == [T]
