"""Return hints through incremental updates, on every backend (issue 18 #4): a receiver typed
by the result another file's function declares (``c = connect(); c.putheader()``) follows
that declaration when only the other file changes — its annotation, the class it names, an
import that rebinds that name — and the updated graph equals a full re-index of the same
tree on the same backend and what SQLite holds for it."""

from __future__ import annotations

from pathlib import Path

from codesynapse.index.indexer import Indexer
from codesynapse.store.sqlite.graph import SqliteGraphStore

CONN = '''
class Connection:
    def putheader(self, k, v):
        pass


class Other:
    def putheader(self, k, v):
        pass


def connect(host) -> {result}:
    return Connection()
'''

USE = '''
from pkg.conn import connect


def send():
    c = connect("h")
    c.putheader("a", "b")
'''

IMPL = '''
class Connection:
    def putheader(self, k, v):
        pass
'''

CONN_IMPORTED = '''
from pkg.impl import Connection


def connect(host) -> Connection:
    return Connection()
'''


def _index(store, root: Path) -> None:
    Indexer(root, store, workers=1).index_tree()


def _target(store) -> tuple[str, str]:
    rows = [(c.target, c.resolution) for c in store.all_calls() if c.callee == "c.putheader"]
    assert len(rows) == 1
    return rows[0]


def _same_as_full(store, make_graph_store, root: Path, tmp: Path, n: int) -> None:
    full = make_graph_store()
    _index(full, root)
    assert store.dump() == full.dump()
    ref = SqliteGraphStore(tmp / f"ref{n}.sqlite3", "reference")
    try:
        _index(ref, root)
        assert store.dump() == ref.dump()
    finally:
        ref.close()


def test_a_declared_result_changing_elsewhere_moves_the_call(make_graph_store, tmp_path):
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "conn.py").write_text(CONN.format(result="Connection"))
    (root / "pkg" / "use.py").write_text(USE)
    store = make_graph_store()
    _index(store, root)
    assert _target(store) == ("pkg.conn.Connection.putheader", "inferred")

    # 1. only conn.py's annotation changes: use.py is not re-extracted, its call moves
    (root / "pkg" / "conn.py").write_text(CONN.format(result="Other"))
    _index(store, root)
    assert _target(store) == ("pkg.conn.Other.putheader", "inferred")
    _same_as_full(store, make_graph_store, root, tmp_path, 1)

    # 2. no class of that name any more: the call is unresolved, never kept on a stale target
    (root / "pkg" / "conn.py").write_text(CONN.format(result="Other").replace("class Other:", "class Renamed:"))
    _index(store, root)
    assert _target(store) == ("", "unresolved")
    _same_as_full(store, make_graph_store, root, tmp_path, 2)

    # 3. the declared name now comes from an import of a third file
    (root / "pkg" / "impl.py").write_text(IMPL)
    (root / "pkg" / "conn.py").write_text(CONN_IMPORTED)
    _index(store, root)
    assert _target(store) == ("pkg.impl.Connection.putheader", "inferred")
    _same_as_full(store, make_graph_store, root, tmp_path, 3)

    # 4. the imported class loses the method: unresolved again
    (root / "pkg" / "impl.py").write_text(IMPL.replace("putheader", "other_name"))
    _index(store, root)
    assert _target(store) == ("", "unresolved")
    _same_as_full(store, make_graph_store, root, tmp_path, 4)


# Unannotated results (issue 18 #4): what every ``return`` builds, read from the body.
CONN_BODY = '''
class Connection:
    def putheader(self, k, v):
        pass


class Other:
    def putheader(self, k, v):
        pass


def connect(host):
    {body}
'''


def test_an_unannotated_result_changing_elsewhere_moves_the_call(make_graph_store, tmp_path):
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "conn.py").write_text(CONN_BODY.format(body="return Connection()"))
    (root / "pkg" / "use.py").write_text(USE)
    store = make_graph_store()
    _index(store, root)
    assert _target(store) == ("pkg.conn.Connection.putheader", "inferred")

    # 1. only the body of connect changes: use.py is not re-extracted, its call moves
    (root / "pkg" / "conn.py").write_text(CONN_BODY.format(body="c = Other()\n    return c"))
    _index(store, root)
    assert _target(store) == ("pkg.conn.Other.putheader", "inferred")
    _same_as_full(store, make_graph_store, root, tmp_path, 7)

    # 2. it returns something else too: nothing is inferred, the call is unresolved
    (root / "pkg" / "conn.py").write_text(CONN_BODY.format(body="if host:\n        return host\n    return Other()"))
    _index(store, root)
    assert _target(store) == ("", "unresolved")
    _same_as_full(store, make_graph_store, root, tmp_path, 8)

    # 3. one class again
    (root / "pkg" / "conn.py").write_text(CONN_BODY.format(body="return Connection()"))
    _index(store, root)
    assert _target(store) == ("pkg.conn.Connection.putheader", "inferred")
    _same_as_full(store, make_graph_store, root, tmp_path, 9)


# Go struct field types (issue 18 #4): ``c.snapshot.View()`` with ``c`` of a struct declared in
# another file follows the field's declared type when only the struct's file changes.
GO_CACHE = """package cache

type Snapshot struct{}

func (s *Snapshot) View() int { return 0 }

type Other struct{}

func (o *Other) View() int { return 0 }
"""

GO_TYPES = """package server

import "example.com/g/cache"

type completer struct {
	snapshot *cache.%s
}
"""

GO_USE = """package server

func (c *completer) run() {
	c.snapshot.View()
}
"""


def test_a_struct_field_type_changing_elsewhere_moves_the_call(make_graph_store, tmp_path):
    root = tmp_path / "repo"
    (root / "cache").mkdir(parents=True)
    (root / "server").mkdir()
    (root / "go.mod").write_text("module example.com/g\n")
    (root / "cache" / "cache.go").write_text(GO_CACHE)
    (root / "server" / "types.go").write_text(GO_TYPES % "Snapshot")
    (root / "server" / "use.go").write_text(GO_USE)
    store = make_graph_store()

    def target() -> tuple[str, str]:
        rows = [(c.target, c.resolution) for c in store.all_calls() if c.callee == "c.snapshot.View"]
        assert len(rows) == 1
        return rows[0]

    _index(store, root)
    assert target() == ("example.com/g/cache.Snapshot.View", "inferred")
    # only types.go changes: use.go is not re-extracted, its call moves with the field's type
    (root / "server" / "types.go").write_text(GO_TYPES % "Other")
    _index(store, root)
    assert target() == ("example.com/g/cache.Other.View", "inferred")
    _same_as_full(store, make_graph_store, root, tmp_path, 5)
    # the type loses the method: unresolved, never kept on a stale target
    (root / "cache" / "cache.go").write_text(GO_CACHE.replace("(o *Other) View", "(o *Other) Gone"))
    _index(store, root)
    assert target() == ("", "unresolved")
    _same_as_full(store, make_graph_store, root, tmp_path, 6)
