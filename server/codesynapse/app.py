"""Composition root: settings → workspace → policy → stores → indexer → services.

The LSP server and the CLI both build one ``App`` and call the same services, so
``codesynapse query`` prints exactly what the daemon returns.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from pathlib import Path
from typing import Any

from codesynapse.context.retrieval import RetrievalConfig
from codesynapse.extract import incremental
from codesynapse.graph.indexer import IndexReport, Indexer, Progress
from codesynapse.graph.sqlite import SqliteGraphStore
from codesynapse.graph.store import GraphStore
from codesynapse.settings import Settings, load_settings
from codesynapse.workspace import Workspace, open_workspace

log = logging.getLogger(__name__)


def load_policy_for(root: Path, previous=None):
    """The repository policy (the default when there is no .codesynapse.yaml). An invalid
    policy comes back with diagnostics and the previous valid policy stays in force."""
    from codesynapse.policy import load_policy

    return load_policy(root, previous)


def open_graph_store(settings: Settings, ws: Workspace) -> GraphStore:
    if settings.backend == "neo4j":
        from codesynapse.graph.neo4j import Neo4jGraphStore

        return Neo4jGraphStore(settings.neo4j_uri, ws.graph_id, user=settings.neo4j_user,
                               password=settings.neo4j_password)
    if settings.backend == "hugegraph":
        from codesynapse.graph.hugegraph import HugeGraphStore

        return HugeGraphStore(settings.hugegraph_url, ws.graph_id, graph=settings.hugegraph_graph,
                              user=settings.hugegraph_user, password=settings.hugegraph_password)
    return SqliteGraphStore(ws.db_path, ws.graph_id)


class App:
    def __init__(self, root: str | Path, settings: Settings | None = None):
        self.settings = settings or load_settings()
        self.workspace = open_workspace(root, self.settings.data_dir or None)
        self.policy, self.policy_diagnostics = load_policy_for(self.workspace.root)
        self.store = open_graph_store(self.settings, self.workspace)
        self.indexer = Indexer(self.workspace.root, self.store, self.policy, workers=self.settings.workers,
                               keep_dir=self.workspace.data_dir / "kept")
        self.state = "idle"
        self.pending = 0
        self.open_buffers: set[str] = set()  # relpaths with unsaved overlays in the index
        self.last_update: float | None = None
        self._state_lock = threading.Lock()
        self._head: tuple[float, str | None, bool | None] | None = None
        self.services: dict[str, Any] = {}
        self.retrieval_config = RetrievalConfig()  # minimalContext / search legs (context/retrieval.py)
        from codesynapse.context.dense import for_app

        # the dense leg's symbol vectors (None when off); started by the daemon's live updater
        # and `codesynapse index`, brought in line after every index and live update
        self.symbol_vectors = for_app(self)
        self._stats_cache = None

    # -- indexing --------------------------------------------------------------------------
    def index(self, progress: Progress | None = None) -> IndexReport:
        self.state = "indexing"
        try:
            report = self.indexer.index_tree(progress)
            self.store.set_meta({
                "policy_fingerprint": getattr(self.policy, "fingerprint", ""),
                "indexed_commit": self.workspace.git_head() or "",
                "updated_at": str(time.time()),
                "identity": self.workspace.identity,
            })
            self.last_update = time.time()
            if self.symbol_vectors is not None:
                self.symbol_vectors.sync()  # in the background, once started
            return report
        finally:
            self.state = "ready"

    def touch(self) -> None:
        self.last_update = time.time()
        self._head = None

    # -- freshness -----------------------------------------------------------------------------
    def _git_state(self) -> tuple[str | None, bool | None]:
        now = time.monotonic()
        if self._head is None or now - self._head[0] > 2.0:
            self._head = (now, self.workspace.git_head(), self.workspace.git_dirty())
        return self._head[1], self._head[2]

    def freshness(self) -> dict[str, Any]:
        commit, dirty = self._git_state()
        last = self.last_update
        if last is None:
            raw = self.store.get_meta("updated_at")
            last = float(raw) if raw else None
        return {
            "state": self.state,
            "indexedCommit": commit or "",
            "dirty": bool(dirty) if dirty is not None else False,
            "openBuffers": sorted(self.open_buffers),
            "pending": self.pending,
            "lastUpdate": dt.datetime.fromtimestamp(last, dt.timezone.utc).isoformat() if last else "",
            "policyFingerprint": getattr(self.policy, "fingerprint", ""),
        }

    def _stats(self):
        """Graph counts, recomputed only after the graph changed (count(*) over a large
        graph costs more than every other part of a status answer)."""
        key = (self.last_update, self.state)
        cached = self._stats_cache
        if cached is None or cached[0] != key or self.state == "indexing":
            cached = self._stats_cache = (key, self.store.stats())
        return cached[1]

    def status(self) -> dict[str, Any]:
        st = self._stats()
        return {
            "root": str(self.workspace.root),
            "graphId": self.workspace.graph_id,
            "backend": self.settings.backend,
            "files": st.files,
            "skipped": st.skipped,
            "symbols": st.symbols,
            "edges": st.resolved_calls + st.imports + st.inherits,
            "calls": st.calls,
            "resolvedCalls": st.resolved_calls,
            "imports": st.imports,
            "inherits": st.inherits,
            "languages": st.languages,
            "kinds": st.kinds,
            **self.freshness(),
        }

    def close(self) -> None:
        if self.symbol_vectors is not None:  # its thread reads the store: stopped first
            self.symbol_vectors.close()
        incremental.flush()  # live updates' extractions not written yet (extract/incremental.py)
        for key, svc in self.services.items():
            # session memory is visible only to its session, a fresh one per connection (or per
            # CLI run): once the session ends nothing can reach it again, so it is deleted
            # (durable memory stays). A daemon killed before it closes leaves it unreachable.
            if key.startswith("memory:") and hasattr(svc, "end_session"):
                try:
                    n = svc.end_session()
                    if n:
                        log.info("memory: %d session entities deleted with their session", n)
                except Exception:  # closing must not mask the shutdown
                    log.exception("ending the memory session")
        for svc in self.services.values():
            close = getattr(svc, "close", None)
            if close:
                try:
                    close()
                except Exception:  # closing must not mask the shutdown
                    log.exception("closing %s", svc)
        self.store.close()
