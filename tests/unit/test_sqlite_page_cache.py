"""SQLite's page caches come from index.memoryBudget (issue 24 #2).

Every connection — one per thread that reads: up to 8 pygls workers, the live worker,
short-lived threads — took a 32 MB page cache, up to ~300 MB of a daemon whose budget is
1 GB. Now the writing connection takes 1/32 of the budget for its transaction and the
readers share another 1/32, 1/128 each while the share has room, never less than SQLite's
default 2 MB. A store built without a budget (tests, tools) keeps 32 MB a connection.
"""

from __future__ import annotations

import gc
import threading

from codesynapse.app import open_graph_store
from codesynapse.settings import Settings
from codesynapse.store.sqlite.graph import open_sqlite_graph
from codesynapse.workspace import open_workspace


def _cache_kib(store) -> int:
    """This thread's connection's page cache, in KiB (PRAGMA cache_size -N is N KiB)."""
    size = store._conn().execute("PRAGMA cache_size").fetchone()[0]
    assert size < 0
    return -size


def _in_threads(n: int, fn) -> list:
    """``fn()`` in ``n`` threads alive at once (each keeps its connection until all have run)."""
    out: list = []
    lock = threading.Lock()
    barrier = threading.Barrier(n)

    def run():
        v = fn()
        with lock:
            out.append(v)
        barrier.wait(10)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gc.collect()
    return out


def _write(store):
    with store.transaction():
        store.set_meta({"k": "v"})
        during = _cache_kib(store)
    return during, _cache_kib(store)


def test_without_a_budget_every_connection_keeps_32_mb(tmp_path):
    store, _ = open_sqlite_graph(tmp_path / "graph.db", "g1")
    try:
        assert _cache_kib(store) == 32000
        assert _in_threads(3, lambda: _cache_kib(store)) == [32000] * 3
        assert _write(store) == (32000, 32000)
    finally:
        store.close()


def test_the_page_caches_of_all_connections_come_from_the_memory_budget(tmp_path):
    store, _ = open_sqlite_graph(tmp_path / "graph.db", "g1", memory_budget_mb=1024)
    try:
        # the readers share 32 MB: this thread's connection (the store's first) takes 8 MB
        assert _cache_kib(store) == 8192
        # five threads reading at once: 8 MB each while the share has room, then 2 MB
        assert sorted(_in_threads(5, lambda: _cache_kib(store))) == [2048, 2048, 8192, 8192, 8192]
        # the ended threads' caches went back to the share
        assert _in_threads(1, lambda: _cache_kib(store)) == [8192]
        # a write takes the writer's 32 MB for its transaction, the reader's 8 MB after it
        assert _in_threads(1, lambda: _write(store)) == [(32768, 8192)]
        assert _write(store) == (32768, 8192)
        assert store.get_meta("k") == "v"
    finally:
        store.close()


def test_the_app_opens_its_sqlite_store_with_the_settings_budget(tmp_path):
    (tmp_path / "repo").mkdir()
    ws = open_workspace(tmp_path / "repo", str(tmp_path / "data"))
    store = open_graph_store(Settings(data_dir=str(tmp_path / "data"), memory_budget_mb=256), ws)
    try:
        # 256 MB: the readers share 8 MB, 2 MB each; the writer 8 MB
        assert _cache_kib(store) == 2048
        assert _in_threads(1, lambda: _write(store)) == [(8192, 2048)]
    finally:
        store.close()
