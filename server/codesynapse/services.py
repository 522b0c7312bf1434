"""The App's services, typed and built in one place: the one path of every request.

``Services`` is made once by the App (``App.services``) and holds every service a request
reaches: the context service (cards, call graphs, contexts), the navigation service (the
standard LSP features' reads), the ledger, one memory service per session, the memory
staleness hook, the shared daemon's sub-session registry and the connected clients. Each is
built on first use (under a lock) and closed by ``close`` with the App. Nobody else stores
services on the App: the method table (``codesynapse.methods``) and the LSP handlers ask this
object, and the scope of a request is passed to it (``memory(scope)``), never read from it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from codesynapse.context.navigation import NavigationService
from codesynapse.context.service import CPU_BOUND_ON_SERVER, CPU_TURNS, ContextService
from codesynapse.daemon.children import Children
from codesynapse.ledger import LedgerBook
from codesynapse.memory.anchors import StalenessHook
from codesynapse.memory.methods import make_scope_for_app, open_anchor_hook, open_memory_service
from codesynapse.memory.service import MemoryService
from codesynapse.scope import Scope

log = logging.getLogger(__name__)

# indexStatus' clients: (the asking scope) -> the connected clients (lsp/server.py, daemon/host.py)
Clients = Callable[[Scope | None], list[dict[str, Any]]]


@dataclass(slots=True, eq=False, repr=False)
class Services:
    app: Any  # the App (codesynapse.app.App) whose stores and settings the services read
    #: indexStatus' ``clients`` (set by the LSP server or the shared daemon; None in the CLI)
    clients: Clients | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    # opening a memory service may take seconds (a Neo4j connect, milvus-lite): under a lock
    # of its own, so that it never holds up the code requests
    _memory_lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _context: ContextService | None = field(default=None, init=False)
    _context_store: Any = field(default=None, init=False)  # the graph store _context was built on
    _navigation: NavigationService | None = field(default=None, init=False)
    _ledger: LedgerBook | None = field(default=None, init=False)
    _memory: dict[str, MemoryService] = field(default_factory=dict, init=False)  # session id → service
    _anchors: StalenessHook | None = field(default=None, init=False)
    _own_scope: Scope | None = field(default=None, init=False)
    _subsessions: Children | None = field(default=None, init=False)

    # -- the code graph ------------------------------------------------------------------------
    @property
    def context(self) -> ContextService:
        """The context service over the App's current graph store (built again when the App
        reopened its store: a service binds the store it was built on)."""
        store = self.app.store
        with self._lock:
            if self._context is None or self._context_store is not store:
                self._context, self._context_store = ContextService(self.app), store
            return self._context

    @property
    def navigation(self) -> NavigationService:
        """The standard LSP features' reads (hover cards through ``context``)."""
        with self._lock:
            if self._navigation is None:
                self._navigation = NavigationService(self.app, lambda: self.context)
            return self._navigation

    def turn(self, method: str) -> AbstractContextManager[Any]:
        """The wait for a place on the cores a graph request answers in (``CPU_TURNS``): every
        graph request on the embedded SQLite store; on a server backend, whose requests mostly
        wait on the network, only the CPU-bound ranking of minimalContext."""
        if self.app.settings.backend == "sqlite" or method in CPU_BOUND_ON_SERVER:
            return CPU_TURNS
        return nullcontext()

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read snapshot of the graph store: every read inside sees one committed version."""
        with self.app.store.snapshot():
            yield

    # -- the ledger ----------------------------------------------------------------------------
    @property
    def ledger(self) -> LedgerBook:
        with self._lock:
            if self._ledger is None:
                self._ledger = LedgerBook(self.app)
            return self._ledger

    # -- memory --------------------------------------------------------------------------------
    def memory(self, scope: Scope) -> MemoryService:
        """The MemoryService of ``scope``'s session, opened on its first request and closed
        with its session (``end_session``) or the App."""
        with self._memory_lock:
            svc = self._memory.get(scope.session)
            if svc is None:
                svc = self._memory[scope.session] = open_memory_service(self.app, scope)
            return svc

    @property
    def anchors(self) -> StalenessHook:
        """The App's one staleness hook (memory/anchors.py): told by the indexer after each
        committed update; it also lends its memory store to the memory sections of context
        answers (every read binds the request's scope)."""
        with self._lock:
            if self._anchors is None:
                self._anchors = open_anchor_hook(self.app)
            return self._anchors

    def open_memory_sections(self) -> None:
        """Open the memory store that context answers read their memory section from (the
        staleness hook's), before requests are let in: on a server backend that is a
        connection and a schema check (seconds on a busy server), which the first card would
        otherwise pay inside its deadline. A store that cannot be opened is logged; answers
        then carry no memory section until it can be."""
        try:
            self.anchors.store()
        except Exception:
            log.warning("memory: the store of context answers' memory sections cannot be opened", exc_info=True)

    @property
    def own_scope(self) -> Scope:
        """The scope of requests that come without a connection (the CLI, benches): one fresh
        session per App. An LSP connection passes its own instead."""
        with self._lock:
            if self._own_scope is None:
                self._own_scope = make_scope_for_app(self.app)
            return self._own_scope

    # -- the shared daemon -----------------------------------------------------------------------
    @property
    def subsessions(self) -> Children:
        """The sub-session registry (``codesynapse/session/child``), one per App."""
        with self._lock:
            if self._subsessions is None:
                self._subsessions = Children()
            return self._subsessions

    # -- ending ----------------------------------------------------------------------------------
    def end_session(self, scope: Scope) -> None:
        """A connection's session ended: its ledger counts go to the workspace totals and its
        session memory is deleted (durable memory stays). Never raises."""
        with self._lock:
            ledger = self._ledger
        with self._memory_lock:
            svc = self._memory.pop(scope.session, None)
        if ledger is not None:
            try:
                ledger.end_session(scope)
            except Exception:
                log.exception("ending the session's ledger")
        if svc is not None:
            _end_memory(svc)

    def close(self) -> None:
        """Close every service built (the App closes its graph store after this). Session
        memory is visible only to its session, a fresh one per connection (or per CLI run):
        once the session ends nothing can reach it again, so it is deleted. A daemon killed
        before it closes leaves it unreachable (purged at the next start, memory/owner.py)."""
        with self._lock:
            ledger, self._ledger = self._ledger, None
            anchors, self._anchors = self._anchors, None
        with self._memory_lock:
            memories = list(self._memory.values())
            self._memory.clear()
        if ledger is not None:  # first: its last raw estimates read the graph (and context)
            try:
                ledger.close()
            except Exception:  # closing must not mask the shutdown
                log.exception("closing the ledger")
        for svc in memories:
            _end_memory(svc)
        if anchors is not None:  # its memory store
            try:
                anchors.close()
            except Exception:
                log.exception("closing the memory staleness hook")


def _end_memory(svc: MemoryService) -> None:
    try:
        n = svc.end_session()
        if n:
            log.info("memory: %d session entities deleted with their session", n)
    except Exception:  # closing must not mask the shutdown
        log.exception("ending the memory session")
    try:
        svc.close()
    except Exception:
        log.exception("closing the memory service of a session")
