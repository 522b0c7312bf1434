"""One client connection's session: its Scope, its session memory, its client info.

A ``Session`` is made on ``initialize`` (``lsp.lifecycle``), once the connection's immutable
Scope exists, in the one-process mode and on the shared daemon alike, and closed when the
connection ends (EOF, ``exit``, or the daemon stopping). Closing it

1. runs the callbacks registered with ``on_close`` (newest first: sub-sessions close before
   their parent's memory goes), then
2. ends it in the App's services (``Services.end_session``): its ledger counts go to the
   workspace totals, its session memory is deleted and its memory service closed.

Durable memory stays. A session never hands out another session's id: ``client_entry``
describes a client by name, version and age only.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from codesynapse.scope import Scope

log = logging.getLogger(__name__)

NAME_MAX = 64  # characters of a client's name / version shown in indexStatus


class Session:
    def __init__(self, app: Any, scope: Scope, client_name: str = "", client_version: str = ""):
        self.app = app
        self.scope = scope
        self.client_name = (client_name or "")[:NAME_MAX]
        self.client_version = (client_version or "")[:NAME_MAX]
        self.started = time.monotonic()
        self.children: list[Any] = []  # sub-sessions (codesynapse/session/child) may keep theirs here
        self._on_close: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self.closed = False

    def on_close(self, fn: Callable[[], None]) -> None:
        """Call ``fn()`` when this session closes (before its memory is deleted)."""
        with self._lock:
            if not self.closed:
                self._on_close.append(fn)
                return
        fn()

    def client_entry(self, asking: Scope | None = None) -> dict[str, Any]:
        """What indexStatus shows of this client: no session id."""
        entry: dict[str, Any] = {"name": self.client_name, "version": self.client_version,
                                 "sessionAgeSeconds": round(time.monotonic() - self.started, 1)}
        if asking is not None:
            entry["self"] = asking.session == self.scope.session
        return entry

    def close(self) -> None:
        """End the session: callbacks, then its session memory. Idempotent; never raises."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            callbacks, self._on_close = self._on_close[::-1], []
        for fn in callbacks:
            try:
                fn()
            except Exception:
                log.exception("closing a session: a close callback failed")
        # its ledger counts go to the workspace totals; its session memory is deleted
        self.app.services.end_session(self.scope)
