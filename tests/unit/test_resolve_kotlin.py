"""Kotlin call resolution on fixtures/kotlin_repo through the real indexer: same-package
declarations across files (top-level functions, classes), aliased imports, companion calls
through the class, implicit-this calls, constructor-parameter and property receivers, the
Kotlin standard library as external."""

from __future__ import annotations

from pathlib import Path

import pytest
from codesynapse.index.indexer import Indexer
from codesynapse.store.sqlite.graph import SqliteGraphStore

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "kotlin_repo"
P = "com.acme.tasks"
T1 = f"{P}.BoardTest.finishesATask"
T2 = f"{P}.BoardTest.startsEmpty"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = SqliteGraphStore(tmp_path_factory.mktemp("kt") / "g.db", "g")
    Indexer(ROOT, s, None, workers=1).index_tree()
    yield s
    s.close()


def test_every_call_edge(store):
    assert sorted((c.caller, c.callee, c.target, c.resolution) for c in store.all_calls()) == sorted([
        (f"{P}.Board", "Log", f"{P}.Log", "local"),
        (f"{P}.Board.add", "Task", f"{P}.Task", "local"),  # Task.kt, same package
        (f"{P}.Board.add", "nextId", f"{P}.Board.nextId", "self"),
        (f"{P}.Board.add", "clip", f"{P}.clip", "local"),
        (f"{P}.Board.add", "store.save", f"{P}.store.Store.save", "inferred"),  # through the alias TaskStore
        (f"{P}.Board.add", "this.log.write", f"{P}.Log.write", "inferred"),
        (f"{P}.Board.finish", "store.load", f"{P}.store.Store.load", "inferred"),
        (f"{P}.Board.finish", "task.finish", f"{P}.Task.finish", "inferred"),
        (f"{P}.Board.nextId", "store.count", f"{P}.store.Store.count", "inferred"),
        (f"{P}.Board.inMemory", "Board", f"{P}.Board", "local"),
        (f"{P}.Board.inMemory", "TaskStore", f"{P}.store.Store", "import"),
        (f"{P}.Log.write", "println", "", "external"),
        (f"{P}.clip", "title.take", "", "external"),  # a String method
        (f"{P}.store.Store", "mutableMapOf", "", "external"),
        (T1, "Board", f"{P}.Board", "local"),
        (T1, "Store", f"{P}.store.Store", "import"),
        (T1, "board.add", f"{P}.Board.add", "inferred"),
        (T1, "board.finish", f"{P}.Board.finish", "inferred"),
        (T1, "assertTrue", "", "external"),
        (T1, "task.done", "", "unresolved"),  # the result of board.add: not tracked
        (T2, "Board.inMemory", f"{P}.Board.inMemory", "local"),  # companion member
        (T2, "assertTrue", "", "external"),
        (T2, "board.add", "", "unresolved"),
    ])


def test_bases_and_subtypes(store):
    assert sorted((i.child, i.base, i.kind, i.target) for i in store.inherits()) == [
        (f"{P}.RecurringTask", "Base", "inherits", f"{P}.Base"),
        (f"{P}.RecurringTask", "Doable", "implements", f"{P}.Doable"),
        (f"{P}.Task", "Doable", "implements", f"{P}.Doable"),
    ]
    assert sorted(i.child for i in store.subtypes(f"{P}.Doable")) == [f"{P}.RecurringTask", f"{P}.Task"]
