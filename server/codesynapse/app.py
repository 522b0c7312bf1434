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
from codesynapse.index.runner import RETRY_FIRST_S, RETRY_MAX_S, IndexRunner  # noqa: F401 (re-exported)
from codesynapse.index.state import IndexState, short_reason  # noqa: F401 (re-exported)
from codesynapse.services import Services
from codesynapse.settings import Settings, load_settings
from codesynapse.store.graph import GraphStore
from codesynapse.store.sqlite.graph import open_sqlite_graph
from codesynapse.sysmem import trim
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
        from codesynapse.store.team import open_team_store, supports_team

        # as on Neo4j: the shared base of HEAD + the checkout's own local overlay (docs/TEAM.md)
        team = open_team_store(settings, ws, notices) if supports_team(settings) else None
        if team is not None:
            return team

        return HugeGraphStore(settings.hugegraph_url, ws.graph_id, graph=settings.hugegraph_graph,
                              user=settings.hugegraph_user, password=settings.hugegraph_password)
    store, notice = open_sqlite_graph(ws.db_path, ws.graph_id, settings.memory_budget_mb)
    if notice and notices is not None:
        notices.append(notice)
    return store


CLOSE_WAIT_S = 10.0  # how long close() waits for an index in progress


class UnavailableGraphStore:
    """Stands in for a graph store that could not be opened: every use raises
    StoreUnavailable naming the cause, so each request gets a clear error; the App opens the
    real store again before its next index (``App.index``)."""

    # a real store's optional capabilities (a team graph's, store/team.py) are absent here, so
    # that ``getattr(store, name, None)`` says so instead of returning a call that raises
    prepare_index = None
    team_freshness = None

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
        # the index's state, policy included: read by the indexer, the live updater and requests
        self.index_state = IndexState(*load_policy_for(self.workspace.root))
        # what the user must be told (window/showMessage and the log): (level, message)
        self.notices: list[tuple[str, str]] = []
        self._store_lock = threading.Lock()
        self.store = self._open_store()
        # every service a request reaches, built once here (services.py); the indexer tells
        # its memory staleness hook about each update
        self.services = Services(self)
        self.indexer = self._make_indexer()
        # the asking connection's own unsaved buffers while it reads (shared daemon: the index may
        # hold, or be about to hold, another connection's; an answer names only the asker's)
        self.asking = threading.local()
        self.last_update: float | None = None
        self._closing = threading.Event()  # set by close(): ends the runner's retries
        self.runner = IndexRunner(self.index_state, self._index_once, self._closing)
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

    @property
    def policy(self):
        """The repository policy in force (``index_state.policy``; set there, under its lock)."""
        return self.index_state.policy

    @policy.setter
    def policy(self, policy) -> None:
        self.index_state.policy = policy

    @property
    def open_buffers(self) -> set[str]:
        """Relpaths with unsaved overlays in the index (a copy; ``index_state`` owns them)."""
        return self.index_state.open_buffers

    @open_buffers.setter
    def open_buffers(self, paths) -> None:
        self.index_state.open_buffers = paths

    @property
    def policy_diagnostics(self) -> list:
        return self.index_state.policy_diagnostics

    @policy_diagnostics.setter
    def policy_diagnostics(self, diagnostics: list) -> None:
        self.index_state.policy_diagnostics = diagnostics

    # -- the graph store -------------------------------------------------------------------
    def _make_indexer(self) -> Indexer:
        ix = Indexer(self.workspace.root, self.store, workers=self.settings.workers,
                     keep_dir=self.workspace.data_dir / "kept", state=self.index_state,
                     memory_budget_mb=self.settings.memory_budget_mb)
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
        """Bring the index in line with the tree (``index.runner.IndexRunner.run``). When it
        fails (nothing committed: the last committed index keeps answering), the state says
        ``failed`` with the reason and the error is raised; ``retry_index`` tries again."""
        report = self.runner.run(progress)
        trim()  # a full index or catch-up frees far more than the daemon then holds
        if self.symbol_vectors is not None:
            self.symbol_vectors.sync()  # in the background, once started
        return report

    def _index_once(self, progress: Progress | None) -> IndexReport:
        """The full-index step the runner runs: the store (opened again when it could not
        be), the tree indexed, the meta stamped."""
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
        except BaseException:
            self._stats_cache = None
            raise
        self.last_update = time.time()
        self._head = None  # the freshness stamp reads HEAD again (a HEAD move ran this index)
        return report

    def retry_index(self, progress: Progress | None = None) -> IndexReport | None:
        """After a failed index: index again after a growing pause until an index succeeds
        (its report) or the App closes (None); see ``IndexRunner.retry``."""
        return self.runner.retry(progress, run=self.index)

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
        return self.open_buffers if own is None else set(own)

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
