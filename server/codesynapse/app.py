"""Composition root: settings → workspace → policy → stores → indexer → services.

The LSP server and the CLI both build one ``App`` and call the same services, so
``codesynapse query`` prints exactly what the daemon returns.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from codesynapse.context.retrieval import RetrievalConfig
from codesynapse.errors import CodeSynapseError, StoreError, StoreUnavailable
from codesynapse.extract import incremental
from codesynapse.graph.model import GraphStats
from codesynapse.index.indexer import Indexer, IndexReport, Progress
from codesynapse.services import Services
from codesynapse.settings import Settings, load_settings
from codesynapse.store.graph import GraphStore
from codesynapse.store.sqlite.graph import open_sqlite_graph
from codesynapse.workspace import Workspace, open_workspace

log = logging.getLogger(__name__)


def load_policy_for(root: Path, previous=None):
    """The repository policy (the default when there is no .codesynapse.yaml). An invalid
    policy comes back with diagnostics and the previous valid policy stays in force."""
    from codesynapse.policy import load_policy

    return load_policy(root, previous)


def open_graph_store(settings: Settings, ws: Workspace, notices: list[str] | None = None) -> GraphStore:
    """The workspace's graph store. A damaged SQLite file is moved aside and a fresh one
    created; what the user should know about that is appended to ``notices``."""
    if settings.backend == "neo4j":
        from codesynapse.store.neo4j.graph import Neo4jGraphStore
        from codesynapse.store.team import open_team_store, supports_team

        # a git checkout: the shared base of its HEAD + its own local overlay (docs/TEAM.md)
        team = open_team_store(settings, ws, notices) if supports_team(settings) else None
        if team is not None:
            return team

        return Neo4jGraphStore(settings.neo4j_uri, ws.graph_id, user=settings.neo4j_user,
                               password=settings.neo4j_password)
    if settings.backend == "hugegraph":
        from codesynapse.store.hugegraph.graph import HugeGraphStore

        return HugeGraphStore(settings.hugegraph_url, ws.graph_id, graph=settings.hugegraph_graph,
                              user=settings.hugegraph_user, password=settings.hugegraph_password)
    store, notice = open_sqlite_graph(ws.db_path, ws.graph_id)
    if notice and notices is not None:
        notices.append(notice)
    return store


RETRY_FIRST_S = 1.0  # pause before the first retry of a failed index; doubled after each failure
RETRY_MAX_S = 60.0  # ... up to this
CLOSE_WAIT_S = 10.0  # how long close() waits for an index in progress


def short_reason(e: BaseException) -> str:
    """One line for a user: our own errors by their message, others with their type; no
    traceback, at most 300 characters."""
    text = str(e) if isinstance(e, CodeSynapseError) else f"{e.__class__.__name__}: {e}"
    return " ".join(text.split())[:300]


class IndexState:
    """The index's state, owned here and read by requests, the watcher and the LSP layer
    under one lock: ``idle`` (not built by this process yet), ``indexing``, ``ready``, or
    ``failed`` with ``error`` (a short reason) while the last committed index keeps
    answering; ``failures`` counts full indexes failed in a row; ``pending`` is the number of
    changes the live updater holds. ``failed`` stands until a full index succeeds: a retry
    running meanwhile does not hide it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = "idle"
        self._error = ""
        self._failures = 0
        self._pending = 0

    def begin(self) -> None:
        with self._lock:
            if self._state != "failed":
                self._state = "indexing"

    def succeeded(self) -> None:
        with self._lock:
            self._state, self._error, self._failures = "ready", "", 0

    def failed(self, reason: str) -> int:
        """Record a failed index; returns how many have failed in a row."""
        with self._lock:
            self._state, self._error = "failed", reason
            self._failures += 1
            return self._failures

    @property
    def state(self) -> str:
        with self._lock:
            return self._state

    @property
    def error(self) -> str:
        with self._lock:
            return self._error

    @property
    def pending(self) -> int:
        with self._lock:
            return self._pending

    @pending.setter
    def pending(self, n: int) -> None:
        with self._lock:
            self._pending = n

    def snapshot(self) -> tuple[str, str, int, int]:
        """(state, error, failures, pending), read together."""
        with self._lock:
            return self._state, self._error, self._failures, self._pending


class UnavailableGraphStore:
    """Stands in for a graph store that could not be opened: every use raises
    StoreUnavailable naming the cause, so each request gets a clear error; the App opens the
    real store again before its next index (``App.index``)."""

    def __init__(self, reason: str):
        self.reason = reason

    def close(self) -> None:
        pass

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        yield  # nothing to hold: every read raises, and indexStatus still answers its state

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)

        def unavailable(*args: Any, **kwargs: Any) -> Any:
            raise StoreUnavailable(f"the code index is unavailable: {self.reason}")

        return unavailable


class App:
    def __init__(self, root: str | Path, settings: Settings | None = None):
        self.settings = settings or load_settings()
        self.workspace = open_workspace(root, self.settings.data_dir or None)
        self.policy, self.policy_diagnostics = load_policy_for(self.workspace.root)
        self.index_state = IndexState()
        # what the user must be told (window/showMessage and the log): (level, message)
        self.notices: list[tuple[str, str]] = []
        self._store_lock = threading.Lock()
        self.store = self._open_store()
        # every service a request reaches, built once here (services.py); the indexer tells
        # its memory staleness hook about each update
        self.services = Services(self)
        self.indexer = self._make_indexer()
        self.open_buffers: set[str] = set()  # relpaths with unsaved overlays in the index
        # the asking connection's own unsaved buffers while it reads (shared daemon: the index may
        # hold, or be about to hold, another connection's; an answer names only the asker's)
        self.asking = threading.local()
        self.last_update: float | None = None
        self._closing = threading.Event()
        self._head: tuple[float, str | None, bool | None] | None = None
        self.retrieval_config = RetrievalConfig()  # minimalContext / search legs (context/retrieval.py)
        from codesynapse.context.dense import for_app

        # the dense leg's symbol vectors (None when off); started by the daemon after its first
        # index (and `codesynapse index --vectors`), brought in line after every index and live update
        self.symbol_vectors = for_app(self)
        self._stats_cache = None

    @property
    def state(self) -> str:
        return self.index_state.state

    @property
    def pending(self) -> int:
        return self.index_state.pending

    @pending.setter
    def pending(self, n: int) -> None:
        self.index_state.pending = n

    # -- the graph store -------------------------------------------------------------------
    def _make_indexer(self) -> Indexer:
        ix = Indexer(self.workspace.root, self.store, self.policy, workers=self.settings.workers,
                     keep_dir=self.workspace.data_dir / "kept")
        ix.listeners.append(self.services.anchors)  # memory anchored to changed code is marked stale
        return ix

    def _open_store(self) -> GraphStore:
        """The graph store, or a stand-in naming why it cannot be opened (the daemon still
        starts: memory does not need it, and ``index`` tries again)."""
        notices: list[str] = []
        try:
            store = open_graph_store(self.settings, self.workspace, notices)
        except Exception as e:  # any backend, any cause: a clear error per request instead
            reason = short_reason(e)
            self.index_state.failed(f"the code index cannot be opened: {reason}")
            where = (str(self.workspace.data_dir) if self.settings.backend == "sqlite"
                     else f"the {self.settings.backend} server")
            msg = (f"CodeSynapse: the code index cannot be opened ({reason}). Code requests answer "
                   f"an error until it can be; memory requests do not need it. Check {where} (free disk space, "
                   f"make the folder writable, or set dataDir / CODESYNAPSE_DATA_DIR to another "
                   f"folder); the daemon tries again with a growing pause.")
            # logged where the notices are shown (the daemon); a CLI run reports the error itself
            log.debug("the graph store cannot be opened", exc_info=not isinstance(e, CodeSynapseError))
            self.notices.append(("error", msg))
            return UnavailableGraphStore(reason)
        self.notices.extend(("warning", n) for n in notices)
        return store

    def _reopen_store(self) -> None:
        """Open the store that could not be opened before (raises StoreError while it
        still cannot be); requests use it from then on."""
        with self._store_lock:
            if not isinstance(self.store, UnavailableGraphStore):
                return
            notices: list[str] = []
            try:
                store = open_graph_store(self.settings, self.workspace, notices)
            except CodeSynapseError:
                raise
            except Exception as e:
                raise StoreError(short_reason(e)) from e
            self.store = store
            self.indexer = self._make_indexer()  # (the context service follows the store: Services.context)
            self._stats_cache = None
            log.info("the code index is open again: %s", getattr(store, "path", self.settings.backend))

    # -- indexing --------------------------------------------------------------------------
    def index(self, progress: Progress | None = None) -> IndexReport:
        """Bring the index in line with the tree. When it fails (nothing committed: the
        last committed index keeps answering), the state says ``failed`` with the reason
        and the error is raised; ``retry_index`` tries again."""
        self.index_state.begin()
        try:
            if isinstance(self.store, UnavailableGraphStore):
                self._reopen_store()
            prepare = getattr(self.store, "prepare_index", None)
            if prepare is not None:  # a team graph moves to the base of the current HEAD first
                prepare(progress)
            report = self.indexer.index_tree(progress)
            self.store.set_meta({
                "policy_fingerprint": getattr(self.policy, "fingerprint", ""),
                "indexed_commit": self.workspace.git_head() or "",
                "updated_at": str(time.time()),
                "identity": self.workspace.identity,
            })
        except BaseException as e:
            self.index_state.failed(short_reason(e))
            self._stats_cache = None
            raise
        self.last_update = time.time()
        self.index_state.succeeded()
        if self.symbol_vectors is not None:
            self.symbol_vectors.sync()  # in the background, once started
        return report

    def retry_index(self, progress: Progress | None = None) -> IndexReport | None:
        """After a failed index: index again after RETRY_FIRST_S, then after twice as long
        each time (at most RETRY_MAX_S), until an index succeeds (its report) or the App
        closes (None). Each failure is logged in one line."""
        delay = RETRY_FIRST_S
        attempt = 1
        while self.index_state.state == "failed":
            if self._closing.wait(delay):
                return None
            attempt += 1
            try:
                report = self.index(progress)
            except Exception as e:
                delay = min(delay * 2, RETRY_MAX_S)
                log.warning("indexing failed again (attempt %d): %s; next attempt in %.0f s",
                            attempt, short_reason(e), delay)
                continue
            log.info("indexing succeeded at attempt %d", attempt)
            return report
        return None

    def touch(self) -> None:
        self.last_update = time.time()
        self._head = None

    # -- freshness -----------------------------------------------------------------------------
    def _git_state(self) -> tuple[str | None, bool | None]:
        now = time.monotonic()
        if self._head is None or now - self._head[0] > 2.0:
            self._head = (now, self.workspace.git_head(), self.workspace.git_dirty())
        return self._head[1], self._head[2]

    def _open_buffers_of_asker(self) -> set[str]:
        own = getattr(self.asking, "buffers", None)
        return set(self.open_buffers) if own is None else set(own)

    def freshness(self) -> dict[str, Any]:
        commit, dirty = self._git_state()
        state, error, failures, pending = self.index_state.snapshot()
        last = self.last_update
        if last is None:
            try:
                raw = self.store.get_meta("updated_at")
            except StoreError:
                raw = None  # the store cannot be read: the state says why
            last = float(raw) if raw else None
        out = {
            "state": state,
            "indexedCommit": commit or "",
            "dirty": bool(dirty) if dirty is not None else False,
            "openBuffers": sorted(self._open_buffers_of_asker()),
            "pending": pending,
            "lastUpdate": dt.datetime.fromtimestamp(last, dt.timezone.utc).isoformat() if last else "",
            "policyFingerprint": getattr(self.policy, "fingerprint", ""),
        }
        team = getattr(self.store, "team_freshness", None)
        if team is not None:  # which shared base answered, and how many files are this checkout's own
            out.update(team())
        if state == "failed":
            out["error"] = error
            out["failedAttempts"] = failures
        return out

    def _stats(self):
        """Graph counts, recomputed only after the graph changed (count(*) over a large
        graph costs more than every other part of a status answer)."""
        key = (self.last_update, self.state)
        cached = self._stats_cache
        if cached is None or cached[0] != key or self.state == "indexing":
            cached = self._stats_cache = (key, self.store.stats())
        return cached[1]

    def status(self) -> dict[str, Any]:
        try:
            st = self._stats()
        except StoreError:
            if self.state != "failed":
                raise
            # the store cannot be read (not opened): the state and error say why
            st = GraphStats(files=0, skipped=0, symbols=0, calls=0, resolved_calls=0, imports=0, inherits=0,
                            languages={}, kinds={})
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
            # the dense leg: {state: ready|pending|unavailable, embedded, total, reason?, model?}
            **({"symbolVectors": self.symbol_vectors.status()} if self.symbol_vectors is not None else {}),
        }

    def close(self) -> None:
        self._closing.set()  # ends retry_index
        # an index running now (the first, or a retry) writes through the store closed below:
        # wait a while for it to end, as the daemon does for a live batch
        if self.indexer.lock.acquire(timeout=CLOSE_WAIT_S):
            self.indexer.lock.release()
        else:
            log.warning("closing while an index is still running")
        if self.symbol_vectors is not None:  # its thread reads the store: stopped first
            self.symbol_vectors.close()
        incremental.flush()  # live updates' extractions not written yet (extract/incremental.py)
        self.services.close()  # session memory ended, ledger settled, memory stores closed
        self.store.close()
