"""The immutable request scope.

A ``Scope`` is built by the server when a client initializes and never from request
parameters: tenant comes from server configuration, graph_id from the repository identity,
namespace from tenant + repository entry, session from a fresh per-connection identity.
Every store query binds the whole scope.
"""

from __future__ import annotations

import hashlib
import secrets

import msgspec

# Field names that identify a scope. A request that carries any of them is rejected with
# InvalidParams: a client can never choose or widen its scope.
SCOPE_FIELDS = frozenset(
    {"tenant", "tenantId", "tenant_id", "graphId", "graph_id", "namespace", "ns", "session",
     "sessionId", "session_id", "scope"}
)


class Scope(msgspec.Struct, frozen=True, kw_only=True):
    tenant: str
    graph_id: str
    namespace: str
    session: str
    session_label: str = ""
    # a sub-session's parent (``codesynapse/session/child``): the child reads the parent's
    # session memory as well as its own, and writes only its own; "" for a top-level session
    parent_session: str = ""

    @property
    def visible_sessions(self) -> tuple[str, ...]:
        """The session values a read may return: durable (""), this session's, and its
        parent's for a sub-session. Writes of session memory store ``session`` only."""
        if self.parent_session:
            return ("", self.session, self.parent_session)
        return ("", self.session)

    @property
    def own_only(self) -> "Scope":
        """This scope without its parent's memory: what a write that changes existing memory
        (forget) may reach — a sub-session reads its parent's memory but never changes it."""
        return msgspec.structs.replace(self, parent_session="") if self.parent_session else self

    @property
    def namespace_digest(self) -> str:
        """Hex digest of the namespace: the only form of it that may appear in a backend
        filter expression that cannot bind parameters (milvus-lite)."""
        return hashlib.sha256(self.namespace.encode()).hexdigest()[:32]

    @property
    def tenant_digest(self) -> str:
        return hashlib.sha256(self.tenant.encode()).hexdigest()[:32]

    @property
    def session_digest(self) -> str:
        return hashlib.sha256(self.session.encode()).hexdigest()[:32]

    @property
    def parent_session_digest(self) -> str:
        return hashlib.sha256(self.parent_session.encode()).hexdigest()[:32] if self.parent_session else ""


def graph_id_for(identity: str) -> str:
    """The shared code graph id for a repository identity (remote URL or root path)."""
    return hashlib.sha256(identity.encode()).hexdigest()[:16]


def make_scope(tenant: str, repo_identity: str, session_label: str = "") -> Scope:
    graph_id = graph_id_for(repo_identity)
    return Scope(
        tenant=tenant,
        graph_id=graph_id,
        namespace=f"{tenant}|{graph_id}",
        session=secrets.token_hex(16),
        session_label=session_label[:64],
    )


def child_scope(parent: Scope, label: str = "") -> Scope:
    """A sub-session of ``parent``: the same tenant, graph and namespace (never others), a
    fresh session id, and ``parent`` as the session whose memory it also reads."""
    return Scope(tenant=parent.tenant, graph_id=parent.graph_id, namespace=parent.namespace,
                 session=secrets.token_hex(16), session_label=label[:64], parent_session=parent.session)
