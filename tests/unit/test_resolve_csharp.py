"""C# call resolution on fixtures/csharp_repo through the real indexer: same-namespace types
across files, `using` a namespace, interface methods through a field, implicit-this calls to
an inherited method, BCL types as external."""

from __future__ import annotations

from pathlib import Path

import pytest
from codesynapse.index.indexer import Indexer
from codesynapse.store.sqlite.graph import SqliteGraphStore

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "csharp_repo"
CORE = "Library.Core"
T = "Library.Tests.CatalogueTests.RegisterStoresTheBook"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = SqliteGraphStore(tmp_path_factory.mktemp("cs") / "g.db", "g")
    Indexer(ROOT, s, None, workers=1).index_tree()
    yield s
    s.close()


def test_every_call_edge(store):
    assert sorted((c.caller, c.callee, c.target, c.resolution) for c in store.all_calls()) == sorted([
        (f"{CORE}.Catalogue", "AuditLog", f"{CORE}.AuditLog", "local"),
        (f"{CORE}.Catalogue.Register", "Book", f"{CORE}.Book", "local"),  # another file, same namespace
        (f"{CORE}.Catalogue.Register", "Validate", f"{CORE}.Catalogue.Validate", "self"),
        (f"{CORE}.Catalogue.Register", "_repository.Add", f"{CORE}.IBookRepository.Add", "inferred"),
        (f"{CORE}.Catalogue.Register", "this._audit.Record", f"{CORE}.AuditLog.Record", "inferred"),
        (f"{CORE}.Catalogue.Register", "book.Label", f"{CORE}.Book.Label", "inferred"),
        (f"{CORE}.Catalogue.Register", "book.Label", f"{CORE}.Book.Label", "inferred"),
        (f"{CORE}.Catalogue.Validate", "string.IsNullOrEmpty", "", "external"),
        (f"{CORE}.Catalogue.Validate", "ArgumentException", "", "external"),
        (f"{CORE}.AuditLog.Record", "Console.WriteLine", "", "external"),
        (f"{CORE}.InMemoryBookRepository.Add", "Touch", f"{CORE}.RepositoryBase.Touch", "self"),  # inherited
        (f"{CORE}.InMemoryBookRepository.Find", "_books.GetValueOrDefault", "", "external"),
        (T, "InMemoryBookRepository", f"{CORE}.InMemoryBookRepository", "import"),  # using Library.Core
        (T, "Catalogue", f"{CORE}.Catalogue", "import"),
        (T, "catalogue.Register", f"{CORE}.Catalogue.Register", "inferred"),
        (T, "Assert.NotNull", "", "unresolved"),  # from `using Xunit`: not in the graph
        (T, "repo.Find", f"{CORE}.InMemoryBookRepository.Find", "inferred"),
    ])


def test_bases(store):
    assert sorted((i.child, i.base, i.kind, i.target) for i in store.inherits()) == [
        (f"{CORE}.InMemoryBookRepository", "IBookRepository", "implements", f"{CORE}.IBookRepository"),
        (f"{CORE}.InMemoryBookRepository", "RepositoryBase", "inherits", f"{CORE}.RepositoryBase"),
    ]
