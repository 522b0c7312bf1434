"""Sub-sessions (``codesynapse/session/child``): handles a session hands to a sub-agent.

A handle is an unguessable token (``csc_`` + 43 URL-safe characters, 256 bits) that names one
child Scope the daemon made from its parent's (``scope.child_scope``: the parent's tenant,
graph and namespace, a fresh session that reads the parent's session memory and writes its
own). The registry lives in the daemon process, one per App (``app.services.subsessions``),
in memory only: a handle works for connections to the same daemon while its parent is
connected, and means nothing anywhere else.

* A new connection becomes the child by passing the handle at ``initialize``
  (``initializationOptions.sessionHandle``). A handle is used by one connection: once used,
  or once its parent has ended, it is refused like an unknown one. Nothing in a request can
  name another scope: the handle is the only way in, and it never widens (the child's tenant,
  graph and namespace are its parent's, and the workspace it connects to must be the
  parent's).
* A child cannot open children of its own (its memory view is its parent's and its own).
* When the parent session closes (its connection ends), each of its children closes: its
  session memory is deleted and its connection's later requests fail (RequestFailed: the
  session has ended).

Only a digest of each handle is kept, and lookups compare digests.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
import threading
from typing import Any

import msgspec

from codesynapse.errors import CodeSynapseError, InvalidParams
from codesynapse.scope import Scope, child_scope

log = logging.getLogger(__name__)

HANDLE_PREFIX = "csc_"
HANDLE_RE = re.compile(r"^csc_[A-Za-z0-9_-]{43}$")
LABEL_MAX = 64  # characters of a child's label
MAX_CHILDREN = 64  # open children of one parent session
OPTION = "sessionHandle"  # the initializationOptions key a child connection passes


class ChildParams(msgspec.Struct, kw_only=True, rename="camel", frozen=True, forbid_unknown_fields=True):
    label: str = ""


class SessionEnded(CodeSynapseError):
    """A request on a session that has ended (a sub-session whose parent closed)."""


def _digest(handle: str) -> str:
    return hashlib.sha256(handle.encode()).hexdigest()


class _Child:
    __slots__ = ("scope", "label", "used", "session")

    def __init__(self, scope: Scope, label: str):
        self.scope = scope
        self.label = label
        self.used = False
        self.session: Any = None  # the child connection's daemon.session.Session, once attached


class Children:
    """The handles of one App's sub-sessions. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_digest: dict[str, _Child] = {}
        self._by_parent: dict[str, list[str]] = {}  # parent session id → digests of its children

    def open(self, parent: Any, label: str = "") -> dict[str, Any]:
        """A new child of the session ``parent`` (a ``daemon.session.Session``): its handle.
        The parent's close closes the child."""
        scope: Scope = parent.scope
        if scope.parent_session:
            raise InvalidParams("label", "a sub-session cannot open sub-sessions of its own; ask the parent session")
        if len(label) > LABEL_MAX:
            raise InvalidParams("label", f"is {len(label)} characters; the limit is {LABEL_MAX}")
        if any(ord(c) < 32 or ord(c) == 127 for c in label):
            raise InvalidParams("label", "must not hold control characters")
        handle = HANDLE_PREFIX + secrets.token_urlsafe(32)
        child = _Child(child_scope(scope, label), label)
        first = False
        with self._lock:
            mine = self._by_parent.get(scope.session)
            if mine is None:
                mine = self._by_parent[scope.session] = []
                first = True
            if len(mine) >= MAX_CHILDREN:
                raise InvalidParams("label", f"this session has {len(mine)} open sub-sessions; the limit is "
                                             f"{MAX_CHILDREN}")
            d = _digest(handle)
            self._by_digest[d] = child
            mine.append(d)
        if first:  # once per parent: its close closes every child it opened
            parent.on_close(lambda: self.end_parent(scope.session))
        out: dict[str, Any] = {"handle": handle}
        if label:
            out["label"] = label
        return out

    def attach(self, handle: Any, base: Scope) -> Scope:
        """The child Scope of ``handle`` for a new connection whose own scope would be
        ``base``; InvalidParams (naming the option) when the handle is not an open, unused
        child handle of this daemon for the same tenant, graph and namespace."""
        field = f"initializationOptions.{OPTION}"
        if not isinstance(handle, str) or not HANDLE_RE.match(handle):
            raise InvalidParams(field, "is not a sub-session handle (csc_ and 43 characters, from "
                                       "codesynapse/session/child)")
        with self._lock:
            child = self._by_digest.get(_digest(handle))
            if child is None or child.used:
                raise InvalidParams(field, "is not an open sub-session handle of this daemon (unknown, already "
                                           "used, or its parent session has ended)")
            s = child.scope
            if (s.tenant, s.graph_id, s.namespace) != (base.tenant, base.graph_id, base.namespace):
                raise InvalidParams(field, "belongs to another tenant or workspace; a sub-session keeps its "
                                           "parent's scope")
            child.used = True
        return s

    def bind(self, scope: Scope, session: Any) -> None:
        """The child connection's Session: closed when the parent closes; its own close
        forgets the handle."""
        with self._lock:
            for c in self._by_digest.values():
                if c.scope.session == scope.session:
                    c.session = session
                    break
        session.on_close(lambda: self._forget(scope.session))

    def _forget(self, child_session: str) -> None:
        with self._lock:
            for d, c in list(self._by_digest.items()):
                if c.scope.session == child_session:
                    del self._by_digest[d]
                    kids = self._by_parent.get(c.scope.parent_session)
                    if kids is not None and d in kids:
                        kids.remove(d)

    def end_parent(self, parent_session: str) -> int:
        """Close every child of ``parent_session`` (their memory is deleted with them)."""
        with self._lock:
            digests = self._by_parent.pop(parent_session, [])
            children = [self._by_digest.pop(d) for d in digests if d in self._by_digest]
        for c in children:
            if c.session is not None:
                try:
                    c.session.close()
                except Exception:
                    log.exception("closing a sub-session")
        if children:
            log.info("sessions: %d sub-session(s) closed with their parent", len(children))
        return len(children)

    def open_count(self, parent_session: str) -> int:
        with self._lock:
            return len(self._by_parent.get(parent_session, ()))
