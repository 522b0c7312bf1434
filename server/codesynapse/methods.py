"""One static table for every custom request, shared by the LSP server and
``codesynapse query``: both return exactly the same JSON.

Each row maps a method name to the msgspec Struct its params decode into and the service
call that answers it through the App's typed services (``app.services``, services.py), with
the request's Scope passed in. Nothing registers itself by being imported: the table below
is the whole list. ``call_method`` answers each graph request inside one read snapshot of the graph
store, so an answer built from several queries describes one version of the tree even while
an update commits; memory requests read the memory store of a Scope instead.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

import msgspec

from codesynapse import metrics
from codesynapse.codec import decode
from codesynapse.context import models as cm
from codesynapse.context.budget import MIN_TOKENS, dumps, finalize, normalize_max_tokens, tokens_for
from codesynapse.context.deps import ModulesParams, modules_answer
from codesynapse.context.service import DEFAULT_CONTEXT, DEFAULT_MINIMAL
from codesynapse.errors import BudgetError, CodeSynapseError, DeadlineExceeded, InvalidParams
from codesynapse.ledger import LedgerParams
from codesynapse.memory import models as mm
from codesynapse.memory.anchors import answer_symbols, context_memory
from codesynapse.policy.effects import PolicyEffectsParams, effects_answer
from codesynapse.scope import Scope

log = logging.getLogger(__name__)

CONTEXT_HOW_MEMORY = "codesynapse/memory/recall with an entry's name gives all of it"


class Method(NamedTuple):
    params: type[Any]  # the msgspec Struct the request's params decode into
    call: Callable[[Any, Scope, Any], dict[str, Any]]  # (app, scope, decoded params) → JSON-ready answer
    reads: Literal["graph", "memory", "session"] = "graph"  # graph: one read snapshot of the graph store;
    # session: about the session itself (its ledger), not counted in it
    check: Callable[[Any], Any] | None = None  # validation beyond the Struct's types


def _context(method: str) -> Callable[[Any, Scope, Any], dict[str, Any]]:
    def run(app, scope: Scope, prm: Any) -> dict[str, Any]:
        return getattr(app.services.context, method)(prm)

    run.__name__ = method
    return run


def _with_memory(method: str, default_tokens: int) -> Callable[[Any, Scope, Any], dict[str, Any]]:
    """A context answer with the memory anchored to the symbols it returns (issue 25 #4):
    ``memory`` = {count, entries (the top ones that fit), notice, omitted, howToGetMore},
    only when the scope can read some. The section fits the answer's budget: when even its
    count, notice and first entry do not fit, the code part is answered again with that
    much less room."""
    ctx = _context(method)

    def run(app, scope: Scope, prm: Any) -> dict[str, Any]:
        answer = ctx(app, scope, prm)
        try:
            store = app.services.anchors.store()
            if store is None:
                return answer
            count, items = context_memory(store, scope, answer_symbols(answer), mm.MEMORY_NOTICE)
        except CodeSynapseError:  # memory unreadable: the code answer stands alone
            log.warning("memory of a context answer not read", exc_info=True)
            return answer
        if not count:
            return answer
        budget = normalize_max_tokens(getattr(prm, "max_tokens", None), default_tokens)

        def section(k: int) -> dict[str, Any]:
            sec: dict[str, Any] = {"count": count, "entries": items[:k], "notice": mm.MEMORY_NOTICE}
            if count > k:
                sec.update(omitted=count - k, howToGetMore=CONTEXT_HOW_MEMORY)
            return sec

        def fitted(base: dict[str, Any]) -> dict[str, Any] | None:
            for k in range(len(items), -1, -1):
                out = finalize({**base, "memory": section(k)})
                if out["tokens"] <= budget:
                    return out
            return None

        out = fitted(answer)
        if out is not None and (out["memory"]["entries"] or not items):
            return out
        need = tokens_for(len(dumps({"memory": section(min(1, len(items)))}))) + 2
        if budget - need >= MIN_TOKENS and hasattr(prm, "max_tokens"):
            smaller = ctx(app, scope, msgspec.structs.replace(prm, max_tokens=budget - need))
            if "maxTokens" in smaller:
                smaller["maxTokens"] = budget
            again = fitted(smaller)
            if again is not None:
                return again
        return out if out is not None else answer

    run.__name__ = method
    return run


def _memory(method: str) -> Callable[[Any, Scope, Any], dict[str, Any]]:
    def run(app, scope: Scope, prm: Any) -> dict[str, Any]:
        return msgspec.to_builtins(getattr(app.services.memory(scope), method)(prm))

    run.__name__ = method
    return run


METHODS: dict[str, Method] = {
    "codesynapse/indexStatus": Method(cm.StatusParams, lambda app, scope, prm: finalize(_status(app, scope))),
    "codesynapse/symbolCard": Method(cm.SymbolParams, _with_memory("symbol_card", DEFAULT_CONTEXT)),
    "codesynapse/symbolContext": Method(cm.SymbolParams, _with_memory("symbol_context", DEFAULT_CONTEXT)),
    "codesynapse/callGraph": Method(cm.CallGraphParams, _context("call_graph")),
    "codesynapse/minimalContext": Method(cm.MinimalContextParams, _with_memory("minimal_context", DEFAULT_MINIMAL)),
    "codesynapse/prContext": Method(cm.PrContextParams, _with_memory("pr_context", DEFAULT_CONTEXT)),
    "codesynapse/search": Method(cm.SearchParams, _context("search")),
    "codesynapse/snippet": Method(cm.SnippetParams, _context("snippet")),
    "codesynapse/modules": Method(ModulesParams, lambda app, scope, prm: modules_answer(app.services.context, prm)),
    "codesynapse/memory/remember": Method(mm.RememberParams, _memory("remember"), "memory", mm.validate_remember),
    "codesynapse/memory/recall": Method(mm.RecallParams, _memory("recall"), "memory", mm.validate_recall),
    "codesynapse/memory/forget": Method(mm.ForgetParams, _memory("forget"), "memory", mm.validate_forget),
    "codesynapse/memory/list": Method(mm.ListParams, _memory("list"), "memory", mm.validate_list),
    "codesynapse/policyEffects": Method(PolicyEffectsParams, lambda app, scope, prm: effects_answer(app)),
    "codesynapse/ledger": Method(LedgerParams, lambda app, scope, prm: finalize(app.services.ledger.answer(scope, prm.last)),
                                 "session"),
}


def _status(app, scope: Scope | None) -> dict[str, Any]:
    """app.status(), and over LSP the connected clients (name, version, session age; the
    asking one marked ``self``; no session ids), from the server's ``Services.clients``."""
    out = dict(app.status())
    clients = app.services.clients
    if clients is not None and scope is not None:
        out["clients"] = clients(scope)
    return out


def call_method(app, method: str, params: Any, scope: Scope | None = None) -> dict[str, Any]:
    """Answer ``method`` and count the answer in the ledger of its session. ``scope`` is the
    LSP connection's; without one the App's own (``Services.own_scope``: one session per CLI
    process)."""
    m = METHODS.get(method)
    if m is None:
        raise InvalidParams("method", f"unknown method {method!r}; known: {', '.join(sorted(METHODS))}")
    scope = scope if scope is not None else app.services.own_scope
    if m.reads == "session":
        return m.call(app, scope, decode(params, m.params))
    book = app.services.ledger  # every answer is counted in the session's ledger (codesynapse/ledger.py)
    book.begin()
    t0 = time.perf_counter()
    try:
        answer = _answer(app, method, m, params, scope)
    except CodeSynapseError as e:
        book.record_error(scope, method)
        metrics.request_done(method, time.perf_counter() - t0, e)
        raise
    except Exception as e:
        metrics.request_done(method, time.perf_counter() - t0, e)
        raise
    finally:
        book.end()
    metrics.request_done(method, time.perf_counter() - t0)
    try:
        book.record(scope, method, params, answer)
    except Exception:  # counting must never cost the answer
        log.warning("ledger: %s answer not counted", method, exc_info=True)
    return answer


def _answer(app, method: str, m: Method, params: Any, scope: Scope) -> dict[str, Any]:
    prm = decode(params, m.params)
    if m.check is not None:
        m.check(prm)
    if m.reads == "memory":  # the memory store, not the graph
        return m.call(app, scope, prm)
    # a turn on the cores first (context/service.py CPU_TURNS), then one committed version of the
    # graph for every read of the answer
    with app.services.turn(method), app.services.snapshot():
        return m.call(app, scope, prm)


def error_payload(e: CodeSynapseError) -> dict[str, Any]:
    kind = ("InvalidParams" if isinstance(e, InvalidParams) else "BudgetError" if isinstance(e, BudgetError)
            else "DeadlineExceeded" if isinstance(e, DeadlineExceeded) else "RequestFailed")
    d: dict[str, Any] = {"error": {"kind": kind, "message": str(e)}}
    if isinstance(e, InvalidParams):
        d["error"]["field"] = e.field
    return d
