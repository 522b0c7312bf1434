"""The memory side of an App: its memory settings and the builders of its memory service
per Scope and of its staleness hook. ``codesynapse.services.Services`` calls them (once each,
and keeps what they build); the requests themselves are rows of the method table in
``codesynapse.methods``. The memory factory is imported when a service is opened, not at
start: it loads numpy and the embedder (a quarter of a second), which a CLI run that never
asks memory does not need.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from codesynapse.memory.anchors import CodeView, StalenessHook
from codesynapse.memory.service import MemoryService
from codesynapse.scope import Scope, make_scope

log = logging.getLogger(__name__)


def memory_settings(app: Any) -> dict[str, Any]:
    """Memory settings derived from the App's typed settings."""
    s = app.settings
    out: dict[str, Any] = {"native_hybrid": bool(getattr(s, "native_hybrid", False))}
    uri = getattr(s, "milvus_uri", "")
    if uri:
        out.update(vectors="server", milvus_uri=uri)
    embedder = getattr(s, "embedder", "minilm-int8")
    if embedder in ("none", "off", ""):
        out["embedder"] = "off"
    elif embedder != "minilm-int8":
        log.warning("embedder %r is not known; using the bundled minilm-int8", embedder)
    if getattr(s, "backend", "sqlite") == "neo4j":  # memory lives beside the code graph
        out.update(graph_store="neo4j", neo4j_uri=s.neo4j_uri, neo4j_user=s.neo4j_user,
                   neo4j_password=s.neo4j_password)
    elif getattr(s, "backend", "sqlite") == "hugegraph":
        out.update(graph_store="hugegraph", hugegraph_url=s.hugegraph_url, hugegraph_graph=s.hugegraph_graph,
                   hugegraph_user=s.hugegraph_user, hugegraph_password=s.hugegraph_password)
    patterns = getattr(getattr(app, "policy", None), "redact_patterns", None)
    if patterns:
        out["redact_patterns"] = tuple(p.pattern for p in patterns)  # the setting holds their text
    return out


def _policy_patterns(app: Any) -> Callable[[], tuple]:
    """The App's current policy's redaction patterns (the policy can change while a session
    runs)."""
    return lambda: tuple(getattr(getattr(app, "policy", None), "redact_patterns", None) or ())


def open_memory_service(app: Any, scope: Scope) -> MemoryService:
    """A new MemoryService of ``scope`` on the App's data folder, following its policy's
    redaction patterns and reading its code graph (``Services.memory`` keeps one per session)."""
    from codesynapse.memory.factory import open_memory

    svc = open_memory(app.workspace.data_dir / "memory", scope, memory_settings(app))
    svc.follow_redact_patterns(_policy_patterns(app))
    svc.attach_code(code_view(app))
    return svc


def make_scope_for_app(app: Any) -> Scope:
    """A fresh scope for requests that come without a connection (the CLI): the App's tenant
    and namespace and a new session (``Services.own_scope`` keeps one per App)."""
    return make_scope(app.settings.tenant, app.workspace.identity, getattr(app.settings, "session_label", ""))


def code_view(app: Any) -> CodeView:
    """The App's code side as memory sees it: its graph store (read at call time: the App
    may reopen it) and its workspace root."""
    return CodeView(lambda: app.store, app.workspace.root)


def open_anchor_hook(app: Any) -> StalenessHook:
    """The App's staleness hook (``Services.anchors`` keeps the one); its memory store is
    opened on first use."""
    return StalenessHook(lambda: _open_anchor_store(app), lambda: _namespace_scope(app),
                         lambda: app.store, app.workspace.root, lambda: app.indexer.last_overlays)


def _namespace_scope(app: Any) -> Scope:
    """The App's tenant and namespace (its session is never used: the staleness pass covers
    every session of the namespace, and binds tenant and namespace)."""
    return make_scope(app.settings.tenant, app.workspace.identity)


def _open_anchor_store(app: Any) -> Any:
    """The memory store, or None while a SQLite workspace has none yet (nothing anchored)."""
    from codesynapse.memory.factory import STORE_FILE, open_store
    from codesynapse.memory.service import settings_from_dict

    s = settings_from_dict(memory_settings(app))
    data = app.workspace.data_dir / "memory"
    if s.graph_store == "sqlite" and not (data / STORE_FILE).exists():
        return None
    return open_store(s, data)
