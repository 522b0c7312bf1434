"""GraphStore.transaction() and GraphStore.snapshot(): what each backend promises
(docs/BACKENDS.md, "Transactions"). SQLite: a transaction is atomic and the index's one
writer across processes (flock on ``<file>.lock``); a snapshot reads one committed version.
Neo4j and HugeGraph: a transaction only serializes the process' writers (each write stays
its own server transaction) and a snapshot is no snapshot."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from codesynapse.graph.integrity import check_graph
from codesynapse.graph.sqlite import SqliteGraphStore
from tests.contract.graphdata import A, B

# what a transaction that raised after writing pkg/a.py leaves behind, per backend
LEFT_BY_FAILED_TRANSACTION = {"sqlite": [], "neo4j": ["pkg/a.py"], "hugegraph": ["pkg/a.py"]}
# what a snapshot opened before another thread wrote pkg/b.py sees, per backend
SEEN_IN_OLD_SNAPSHOT = {"sqlite": ["pkg/a.py"], "neo4j": ["pkg/a.py", "pkg/b.py"],
                        "hugegraph": ["pkg/a.py", "pkg/b.py"]}


def paths(store) -> list[str]:
    return [f.path for f in store.files()]


def test_a_transaction_commits_its_writes_together(graph_store):
    with graph_store.transaction():
        graph_store.write_files([(A, 1)])
        graph_store.write_files([(B, 2)])
        graph_store.set_meta({"k": "v"})
        assert paths(graph_store) == ["pkg/a.py", "pkg/b.py"]  # a writer reads its own writes
    assert paths(graph_store) == ["pkg/a.py", "pkg/b.py"]
    assert graph_store.get_meta("k") == "v"


def test_a_transaction_that_raises(graph_store, backend):
    with pytest.raises(RuntimeError):
        with graph_store.transaction():
            graph_store.write_files([(A, 1)])
            graph_store.set_meta({"k": "v"})
            raise RuntimeError("the update failed half way")
    assert paths(graph_store) == LEFT_BY_FAILED_TRANSACTION[backend]
    if backend == "sqlite":
        assert graph_store.get_meta("k") is None
        assert graph_store.symbols_by_qname("pkg.a.Base") == []


def test_transactions_nest_into_the_outer_one(graph_store, backend):
    with pytest.raises(RuntimeError):
        with graph_store.transaction():
            with graph_store.transaction():
                graph_store.write_files([(A, 1)])
            assert paths(graph_store) == ["pkg/a.py"]
            raise RuntimeError("after the inner block ended")
    assert paths(graph_store) == LEFT_BY_FAILED_TRANSACTION[backend]
    with graph_store.transaction():
        with graph_store.transaction():
            graph_store.write_files([(B, 2)])
    assert paths(graph_store) == (["pkg/b.py"] if backend == "sqlite" else ["pkg/a.py", "pkg/b.py"])


def test_a_failed_write_inside_a_transaction_does_not_end_it(graph_store, backend):
    """A store write that fails is undone alone (SQLite: its savepoint); the caller may go on."""
    if backend != "sqlite":
        pytest.skip("the failing statement below is SQLite's")
    from codesynapse.errors import StoreError

    with graph_store.transaction():
        graph_store.write_files([(A, 1)])
        with pytest.raises(StoreError):
            graph_store._update("INSERT INTO no_such_table VALUES (?)", [(1,)])
        graph_store.write_files([(B, 2)])
    assert paths(graph_store) == ["pkg/a.py", "pkg/b.py"]


def test_a_snapshot_reads_one_version_while_another_thread_writes(graph_store, backend):
    graph_store.write_files([(A, 1)])
    wrote = threading.Event()

    def writer() -> None:
        graph_store.write_files([(B, 2)])
        wrote.set()

    with graph_store.snapshot():
        first = paths(graph_store)
        t = threading.Thread(target=writer)
        t.start()
        t.join(60)
        assert wrote.is_set(), "a writer waited for a reader's snapshot"
        assert first == ["pkg/a.py"]
        assert paths(graph_store) == SEEN_IN_OLD_SNAPSHOT[backend]
        with graph_store.snapshot():  # nested: the same snapshot
            assert paths(graph_store) == SEEN_IN_OLD_SNAPSHOT[backend]
        assert paths(graph_store) == SEEN_IN_OLD_SNAPSHOT[backend]
    assert paths(graph_store) == ["pkg/a.py", "pkg/b.py"]


def test_a_reader_does_not_wait_for_an_open_transaction(graph_store, backend):
    """A writer holds its transaction open (mid-update); a reader's snapshot answers
    meanwhile from the last committed version."""
    graph_store.write_files([(A, 1)])
    inside, release = threading.Event(), threading.Event()

    def writer() -> None:
        with graph_store.transaction():
            graph_store.write_files([(B, 2)])
            inside.set()
            release.wait(60)

    t = threading.Thread(target=writer)
    t.start()
    try:
        assert inside.wait(60)
        with graph_store.snapshot():
            seen = paths(graph_store)
    finally:
        release.set()
        t.join(60)
    assert seen == SEEN_IN_OLD_SNAPSHOT[backend]
    assert paths(graph_store) == ["pkg/a.py", "pkg/b.py"]


def test_a_write_inside_a_snapshot_is_made_and_seen(graph_store):
    graph_store.write_files([(A, 1)])
    with graph_store.snapshot():
        assert paths(graph_store) == ["pkg/a.py"]
        graph_store.write_files([(B, 2)])
        assert paths(graph_store) == ["pkg/a.py", "pkg/b.py"]
    assert paths(graph_store) == ["pkg/a.py", "pkg/b.py"]


# ---- SQLite: one writer per index across processes -----------------------------------------------

_CHILD = """
import sys
from codesynapse.graph.sqlite import SqliteGraphStore
from tests.contract.graphdata import A
store = SqliteGraphStore(sys.argv[1], sys.argv[2])
with store.transaction():
    store.write_files([(A, 1)])
    store.set_meta({"who": "child"})
    print("inside", flush=True)
    sys.stdin.readline()
print("committed", flush=True)
"""


def _child(db: Path, gid: str) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", _CHILD, str(db), gid], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2])
    assert p.stdout.readline().strip() == "inside"
    return p


def _lock_is_free(db: Path) -> bool:
    import fcntl

    fd = os.open(str(db) + ".lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


@pytest.mark.parametrize("backend", ["sqlite"])
def test_writers_in_two_processes_take_turns(tmp_path, backend):
    db = tmp_path / "graph.db"
    store = SqliteGraphStore(db, "g1")
    try:
        child = _child(db, "g1")
        assert not _lock_is_free(db)  # the child holds the index's writer lock
        done = threading.Event()

        def parent_write() -> None:
            store.set_meta({"who": "parent"})
            done.set()

        t = threading.Thread(target=parent_write)
        t.start()
        assert not done.wait(0.5), "a second process wrote inside another one's transaction"
        assert paths(store) == []  # the child's writes are not committed yet
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "committed"
        assert child.wait(60) == 0
        t.join(60)
        assert done.is_set()
        assert store.get_meta("who") == "parent"  # after the child's transaction, not inside it
        assert paths(store) == ["pkg/a.py"]
        assert _lock_is_free(db)
    finally:
        store.close()


@pytest.mark.parametrize("backend", ["sqlite"])
def test_kill9_inside_a_transaction_leaves_the_last_version_and_frees_the_lock(tmp_path, backend):
    db = tmp_path / "graph.db"
    store = SqliteGraphStore(db, "g1")
    try:
        store.write_files([(B, 2)])
        child = _child(db, "g1")
        assert not _lock_is_free(db)
        child.send_signal(signal.SIGKILL)
        child.wait(60)
        assert _lock_is_free(db)
        assert paths(store) == ["pkg/b.py"]
        assert store.get_meta("who") is None
        store.write_files([(A, 1)])  # the next writer is not blocked
        assert paths(store) == ["pkg/a.py", "pkg/b.py"]
    finally:
        store.close()
    rep = check_graph(db)
    assert rep.ok, str(rep)
