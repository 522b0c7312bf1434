"""One dispatch table for every custom request, shared by the LSP server and
``codesynapse query``: both return exactly the same JSON. ``call_method`` answers each graph
request inside one read snapshot of the graph store, so an answer built from several
queries describes one version of the tree even while an update commits."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from codesynapse.codec import decode
from codesynapse.context import models as cm
from codesynapse.context.budget import finalize
from codesynapse.context.deps import ModulesParams, modules_answer
from codesynapse.context.service import ContextService
from codesynapse.errors import BudgetError, CodeSynapseError, DeadlineExceeded, InvalidParams

log = logging.getLogger(__name__)


def _ctx(app) -> ContextService:
    svc = app.services.get("context")
    if svc is None:
        svc = app.services["context"] = ContextService(app)
    return svc


def index_status(app, params: Any) -> dict[str, Any]:
    decode(params, cm.StatusParams)
    return finalize(dict(app.status()))


def _context(method: str, typ: type) -> Callable[[Any, Any], dict[str, Any]]:
    def run(app, params: Any) -> dict[str, Any]:
        prm = decode(params, typ)
        return getattr(_ctx(app), method)(prm)

    run.__name__ = method
    return run


METHODS: dict[str, Callable[[Any, Any], dict[str, Any]]] = {
    "codesynapse/indexStatus": index_status,
    "codesynapse/symbolCard": _context("symbol_card", cm.SymbolParams),
    "codesynapse/symbolContext": _context("symbol_context", cm.SymbolParams),
    "codesynapse/callGraph": _context("call_graph", cm.CallGraphParams),
    "codesynapse/minimalContext": _context("minimal_context", cm.MinimalContextParams),
    "codesynapse/prContext": _context("pr_context", cm.PrContextParams),
    "codesynapse/search": _context("search", cm.SearchParams),
    "codesynapse/snippet": _context("snippet", cm.SnippetParams),
    "codesynapse/modules": lambda app, params: modules_answer(_ctx(app), decode(params, ModulesParams)),
}


def register_method(name: str, fn: Callable[[Any, Any], dict[str, Any]]) -> None:
    """Other packages (memory) add their requests here so the CLI and LSP see them."""
    METHODS[name] = fn


def _load_optional() -> None:
    try:
        from codesynapse.memory import methods as _mm  # noqa: F401  (registers memory requests)
    except ImportError as e:  # the memory package is optional at import time
        log.debug("memory methods unavailable: %s", e)


def call_method(app, method: str, params: Any) -> dict[str, Any]:
    if "codesynapse/memory/" in method:
        _load_optional()
    fn = METHODS.get(method)
    if fn is None:
        raise InvalidParams("method", f"unknown method {method!r}; known: {', '.join(sorted(METHODS))}")
    if method.startswith("codesynapse/memory/"):  # the memory store, not the graph
        return fn(app, params)
    with app.store.snapshot():  # every read of one answer sees one committed version of the graph
        return fn(app, params)


def error_payload(e: CodeSynapseError) -> dict[str, Any]:
    kind = ("InvalidParams" if isinstance(e, InvalidParams) else "BudgetError" if isinstance(e, BudgetError)
            else "DeadlineExceeded" if isinstance(e, DeadlineExceeded) else "RequestFailed")
    d: dict[str, Any] = {"error": {"kind": kind, "message": str(e)}}
    if isinstance(e, InvalidParams):
        d["error"]["field"] = e.field
    return d
