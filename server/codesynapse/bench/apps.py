"""Open an App over a corpus with the benchmark's policy and a data folder of our choosing."""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)


def _construct(root: Path, settings):
    from codesynapse.app import App

    try:
        from codesynapse.policy import load_policy  # noqa: F401
    except ImportError:
        # The policy loader is not in this build yet: open the App without a repository
        # policy; the benchmark's own policy object is installed right after.
        import codesynapse.app as appmod

        log.warning("codesynapse.policy.load_policy is missing: opening the App without a repository policy")
        original = appmod.load_policy_for
        appmod.load_policy_for = lambda root, previous=None: (None, [])
        try:
            return App(root, settings)
        finally:
            appmod.load_policy_for = original
    return App(root, settings)


def open_app(root: Path | str, data_dir: Path | str, exclude: tuple[str, ...] = (), include: tuple[str, ...] = (),
             **overrides):
    """An App on ``root`` whose index lives in ``data_dir`` and whose policy is the default
    policy plus ``exclude``/``include`` (the same object for walk, live updates and the
    recorded fingerprint)."""
    from codesynapse.bench.corpora import make_policy
    from codesynapse.settings import load_settings

    settings = load_settings({"data_dir": str(data_dir), **overrides})
    app = _construct(Path(root), settings)
    policy = make_policy(exclude, include)
    app.policy = policy
    app.indexer.policy = policy
    return app


def what_if_analyze(app) -> bool:
    """``CODESYNAPSE_BENCH_ANALYZE=1``: run SQLite ``ANALYZE`` on the index after indexing.

    A what-if, not the product: without statistics SQLite answers ``graph_id = ? AND qname
    = ?`` (and the FTS join) through the path index and scans every symbol, because every
    row has the same graph id. Results say when this ran."""
    import os
    import sqlite3

    if os.environ.get("CODESYNAPSE_BENCH_ANALYZE") != "1" or getattr(app.settings, "backend", "sqlite") != "sqlite":
        return False
    conn = sqlite3.connect(str(app.workspace.db_path), timeout=60)
    try:
        conn.execute("ANALYZE")
    finally:
        conn.close()
    log.warning("what-if: ANALYZE was run on the index (CODESYNAPSE_BENCH_ANALYZE=1)")
    return True


def settle(app, orphans, timeout: float = 120.0) -> int:
    """Before closing an App: interrupt the SQLite statements of requests that overran their
    deadline and are still running, and wait for their threads (closing a connection under
    a running statement crashes SQLite). ``orphans``: threads, or futures of a pool. Returns
    how many were still alive at the end."""
    import time
    from concurrent.futures import Future, wait

    def running(t) -> bool:
        return not t.done() if isinstance(t, Future) else t.is_alive()

    alive = [t for t in orphans if running(t)]
    if not alive:
        return 0
    for conn in list(getattr(app.store, "_conns", []) or []):
        try:
            conn.interrupt()
        except Exception:  # a closed or foreign connection: nothing to interrupt
            pass
    end = time.monotonic() + timeout
    for t in alive:
        left = max(0.0, end - time.monotonic())
        if isinstance(t, Future):
            wait([t], left)
        else:
            t.join(left)
    return sum(1 for t in alive if running(t))
