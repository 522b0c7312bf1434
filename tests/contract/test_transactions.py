"""GraphStore.transaction() and GraphStore.snapshot(): each backend is held to what it
declares in ``capabilities`` (docs/BACKENDS.md, "Transactions"); tests are selected by
capability (``requires`` / ``lacks``, tests/contract/conftest.py), never by backend name.
SQLite declares atomic transactions, read snapshots and a writer lock across processes (flock
on ``<file>.lock``). Neo4j and HugeGraph declare none: a transaction only serializes the
process' writers (each write stays its own server transaction) and reads see the latest."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from codesynapse.graph.integrity import check_graph
from codesynapse.store.graph import GraphStore, StoreCapabilities
from codesynapse.store.sqlite.graph import SqliteGraphStore

from tests.contract.graphdata import A, B


def paths(store) -> list[str]:
    return [f.path for f in store.files()]


def test_every_store_declares_its_capabilities(graph_store):
    assert isinstance(graph_store, GraphStore)
    assert isinstance(graph_store.capabilities, StoreCapabilities)
    assert set(graph_store.capabilities.names()) <= {"atomic_transactions", "read_snapshots",
                                                     "cross_process_writer_lock"}


def test_a_transaction_commits_its_writes_together(graph_store):
    with graph_store.transaction():
        graph_store.write_files([(A, 1)])
        graph_store.write_files([(B, 2)])
        graph_store.set_meta({"k": "v"})
        assert paths(graph_store) == ["pkg/a.py", "pkg/b.py"]  # a writer reads its own writes
    assert paths(graph_store) == ["pkg/a.py", "pkg/b.py"]
    assert graph_store.get_meta("k") == "v"


def _fail_after_writing_a(store) -> None:
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.write_files([(A, 1)])
            store.set_meta({"k": "v"})
            raise RuntimeError("the update failed half way")


@pytest.mark.requires("atomic_transactions")
def test_a_transaction_that_raises_leaves_nothing(graph_store):
    _fail_after_writing_a(graph_store)
    assert paths(graph_store) == []
    assert graph_store.get_meta("k") is None
    assert graph_store.symbols_by_qname("pkg.a.Base") == []


@pytest.mark.lacks("atomic_transactions")
def test_without_atomic_transactions_each_write_committed_alone(graph_store):
    _fail_after_writing_a(graph_store)
    assert paths(graph_store) == ["pkg/a.py"]
    assert graph_store.get_meta("k") == "v"
    assert [s.path for s in graph_store.symbols_by_qname("pkg.a.Base")] == ["pkg/a.py"]  # the write was whole


@pytest.mark.requires("atomic_transactions")
def test_transactions_nest_into_the_outer_one(graph_store):
    with pytest.raises(RuntimeError):
        with graph_store.transaction():
            with graph_store.transaction():
                graph_store.write_files([(A, 1)])
            assert paths(graph_store) == ["pkg/a.py"]
            raise RuntimeError("after the inner block ended")
    assert paths(graph_store) == []  # the inner block's write went with the outer one
    with graph_store.transaction():
        with graph_store.transaction():
            graph_store.write_files([(B, 2)])
    assert paths(graph_store) == ["pkg/b.py"]


@pytest.mark.lacks("atomic_transactions")
def test_without_atomic_transactions_nested_blocks_serialize_and_keep_each_write(graph_store):
    with pytest.raises(RuntimeError):
        with graph_store.transaction():
            with graph_store.transaction():  # the same thread re-enters its own lock
                graph_store.write_files([(A, 1)])
            raise RuntimeError("after the inner block ended")
    with graph_store.transaction():
        with graph_store.transaction():
            graph_store.write_files([(B, 2)])
    assert paths(graph_store) == ["pkg/a.py", "pkg/b.py"]


@pytest.mark.requires("atomic_transactions")
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_failed_write_inside_a_transaction_does_not_end_it(graph_store):
    """A store write that fails is undone alone (SQLite: its savepoint); the caller may go on.
    (The failing statement is SQLite's own.)"""
    from codesynapse.errors import StoreError

    with graph_store.transaction():
        graph_store.write_files([(A, 1)])
        with pytest.raises(StoreError):
            graph_store._update("INSERT INTO no_such_table VALUES (?)", [(1,)])
        graph_store.write_files([(B, 2)])
    assert paths(graph_store) == ["pkg/a.py", "pkg/b.py"]


def _snapshot_while_another_thread_writes(store) -> list[list[str]]:
    """What a snapshot opened with pkg/a.py written sees after another thread wrote pkg/b.py:
    at once, in a nested snapshot, and at its end."""
    store.write_files([(A, 1)])
    wrote = threading.Event()

    def writer() -> None:
        store.write_files([(B, 2)])
        wrote.set()

    with store.snapshot():
        first = paths(store)
        t = threading.Thread(target=writer)
        t.start()
        t.join(60)
        assert wrote.is_set(), "a writer waited for a reader's snapshot"
        assert first == ["pkg/a.py"]
        seen = [paths(store)]
        with store.snapshot():  # nested: the same snapshot
            seen.append(paths(store))
        seen.append(paths(store))
    assert paths(store) == ["pkg/a.py", "pkg/b.py"]
    return seen


@pytest.mark.requires("read_snapshots")
def test_a_snapshot_reads_one_version_while_another_thread_writes(graph_store):
    assert _snapshot_while_another_thread_writes(graph_store) == [["pkg/a.py"]] * 3


@pytest.mark.lacks("read_snapshots")
def test_without_read_snapshots_reads_see_the_latest_write(graph_store):
    assert _snapshot_while_another_thread_writes(graph_store) == [["pkg/a.py", "pkg/b.py"]] * 3


def _read_during_an_open_transaction(store) -> list[str]:
    """A writer holds its transaction open (mid-update); a reader's snapshot answers meanwhile."""
    store.write_files([(A, 1)])
    inside, release = threading.Event(), threading.Event()

    def writer() -> None:
        with store.transaction():
            store.write_files([(B, 2)])
            inside.set()
            release.wait(60)

    t = threading.Thread(target=writer)
    t.start()
    try:
        assert inside.wait(60)
        with store.snapshot():
            seen = paths(store)
    finally:
        release.set()
        t.join(60)
    assert paths(store) == ["pkg/a.py", "pkg/b.py"]
    return seen


@pytest.mark.requires("atomic_transactions", "read_snapshots")
def test_a_reader_does_not_wait_for_an_open_transaction(graph_store):
    """... and sees the last committed version."""
    assert _read_during_an_open_transaction(graph_store) == ["pkg/a.py"]


@pytest.mark.lacks("atomic_transactions")
def test_without_atomic_transactions_a_reader_sees_the_writes_already_made(graph_store):
    assert _read_during_an_open_transaction(graph_store) == ["pkg/a.py", "pkg/b.py"]


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
from codesynapse.store.sqlite.graph import SqliteGraphStore
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
