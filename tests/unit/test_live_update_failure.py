"""A failed live update says so (reliability contract: indexStatus ``failed`` with the reason,
as a failed full index does): a debounced batch the store refuses sets the index state to
``failed`` with a one-line reason, the changes wait for a retry, and the next successful
update (or full index) brings it back to ``ready``. A real App on a copy of
fixtures/python_repo, the real live updater's worker thread, a real SQLite store that cannot
grow (``max_page_count``: SQLite's own "database or disk is full")."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from codesynapse.app import App
from codesynapse.errors import StoreError
from codesynapse.index.state import IndexState
from codesynapse.methods import call_method
from codesynapse.settings import load_settings
from codesynapse.watch.live import LiveUpdater

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "python_repo"
UNLIMITED = 1073741823


@pytest.fixture
def app(tmp_path: Path):
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    a = App(root, load_settings({"data_dir": str(tmp_path / "data"), "workers": 1, "debounce_ms": 0}))
    a.index()
    yield a
    a.close()


def _limit_pages(app: App, pages: int | None) -> None:
    """Every open connection of the store (the worker's too) may hold at most ``pages``
    pages (None: the database's current size, so any growth fails)."""
    store = app.store
    with store._conns_lock:
        conns = list(store._conns)
    for conn in conns:
        n = pages if pages is not None else conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count={n}")


def _until(probe, timeout: float = 60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = probe()
        if got:
            return got
        time.sleep(0.05)
    return probe()


def _status(app: App) -> dict:
    return call_method(app, "codesynapse/indexStatus", {})


def _big_module(n: int) -> str:
    return "".join(f"def grown_{j}(x):\n    return x + {j}\n\n" for j in range(n))


def test_a_failed_live_update_says_failed_then_ready_after_the_next_update(app: App) -> None:
    live = LiveUpdater(app)
    live.start(watch=False)
    try:
        root = app.workspace.root
        (root / "shop" / "first.py").write_text("def first(x):\n    return x\n")
        live.disk_changed("shop/first.py")  # the worker's own connection exists after this batch
        assert _until(lambda: live.wait_idle(1.0) and any(f.path == "shop/first.py" for f in app.store.files()))
        assert _status(app)["state"] == "ready"

        _limit_pages(app, None)  # a full disk, as SQLite sees it
        (root / "shop" / "grown.py").write_text(_big_module(800))
        live.disk_changed("shop/grown.py")
        st = _until(lambda: (s := _status(app))["state"] == "failed" and s)
        assert st and st["state"] == "failed", st
        assert "database or disk is full" in st["error"], st
        assert "\n" not in st["error"] and len(st["error"]) <= 300, st
        assert not any(f.path == "shop/grown.py" for f in app.store.files())  # nothing half-written

        _limit_pages(app, UNLIMITED)  # room again: the retried batch goes in
        st = _until(lambda: (s := _status(app))["state"] == "ready" and s)
        assert st and st["state"] == "ready" and "error" not in st, st
        assert any(f.path == "shop/grown.py" for f in app.store.files())
    finally:
        live.stop(join=10)


def test_a_full_index_clears_a_failed_live_update(app: App) -> None:
    live = LiveUpdater(app)
    (app.workspace.root / "shop" / "grown.py").write_text(_big_module(800))
    app.store._conn()
    _limit_pages(app, None)
    with pytest.raises(StoreError):
        live._apply({"shop/grown.py": "disk"})  # the batch as the worker applies it
    st = _status(app)
    assert st["state"] == "failed" and "database or disk is full" in st["error"], st
    _limit_pages(app, UNLIMITED)
    app.index()
    st = _status(app)
    assert st["state"] == "ready" and "error" not in st, st
    assert any(f.path == "shop/grown.py" for f in app.store.files())


def test_a_live_update_never_hides_a_failed_full_index() -> None:
    st = IndexState()
    st.failed("StoreError: the full index failed")
    st.update_failed("OSError: the update failed")  # the full index's reason stands
    assert st.snapshot()[:3] == ("failed", "StoreError: the full index failed", 1)
    st.update_succeeded()  # only a full index clears a failed full index
    assert st.snapshot()[:3] == ("failed", "StoreError: the full index failed", 1)
    st.succeeded()
    assert st.snapshot()[:3] == ("ready", "", 0)
    st.update_failed("OSError: disk full")
    assert st.snapshot()[:3] == ("failed", "OSError: disk full", 0)
    st.failed("StoreError: then the full index failed too")  # a full index's failure takes over
    st.update_succeeded()
    assert st.snapshot()[:2] == ("failed", "StoreError: then the full index failed too")
