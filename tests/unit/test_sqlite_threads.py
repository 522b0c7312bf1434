"""A thread's SQLite connection ends with the thread.

The daemon reads the graph from short-lived threads too (findings published after didOpen,
the warm-up of opened documents, the test-support refresh, each full index). Each opened a
connection of its own that outlived it: two descriptors and up to 32 MB of page cache per
thread ever started, until the process ran out of descriptors.
"""

from __future__ import annotations

import gc
import os
import threading

from codesynapse.store.sqlite.graph import open_sqlite_graph


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_connections_of_ended_threads_are_closed(tmp_path):
    store, _ = open_sqlite_graph(tmp_path / "graph.db", "g1")
    try:
        store.files()
        gc.collect()
        before = _fds()
        for _ in range(60):
            t = threading.Thread(target=store.files)
            t.start()
            t.join()
        gc.collect()
        # a connection holds the database and its write-ahead log open: 120 more without the fix
        assert _fds() - before <= 4
        # the store still answers, from this thread and from new ones, and still writes
        assert store.files() == []
        store.set_meta({"k": "v"})
        got = []
        t = threading.Thread(target=lambda: got.append(store.get_meta("k")))
        t.start()
        t.join()
        assert got == ["v"]
    finally:
        store.close()


def test_close_after_threads_ended_and_a_live_thread_reading(tmp_path):
    store, _ = open_sqlite_graph(tmp_path / "graph.db", "g1")
    store.set_meta({"k": "v"})
    for _ in range(5):
        t = threading.Thread(target=store.files)
        t.start()
        t.join()
    ready, done = threading.Event(), threading.Event()
    seen = []

    def reader():
        seen.append(store.get_meta("k"))
        ready.set()
        done.wait(10)

    t = threading.Thread(target=reader)
    t.start()
    ready.wait(10)
    store.close()  # closes every connection, the live thread's too, without an error
    done.set()
    t.join()
    gc.collect()
    assert seen == ["v"]
