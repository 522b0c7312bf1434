"""Sample answers for ``codesynapse demo``: a few requests an agent would make."""

from __future__ import annotations

from typing import Any

from codesynapse.methods import call_method


def sample_answers(app) -> list[tuple[str, Any]]:
    store = app.store
    # the most-called function or method of the repository makes a telling example
    best = None
    best_n = -1
    for s in store.all_symbols():
        if s.kind in ("function", "method") and not s.is_test:
            n = store.count_callers(s.qname)
            if n > best_n:
                best, best_n = s, n
    out: list[tuple[str, Any]] = []
    if best is None:
        return out
    out.append((f"codesynapse/symbolCard {best.qname}",
                call_method(app, "codesynapse/symbolCard", {"selector": best.qname, "maxTokens": 600})))
    out.append((f"codesynapse/callGraph callers of {best.qname}",
                call_method(app, "codesynapse/callGraph",
                            {"selector": best.qname, "direction": "callers", "limit": 5, "maxTokens": 800})))
    out.append((f"codesynapse/search {best.name!r} (compact)",
                call_method(app, "codesynapse/search", {"query": best.name, "mode": "compact", "limit": 5})))
    out.append((f"codesynapse/minimalContext 'how does {best.name} work'",
                call_method(app, "codesynapse/minimalContext", {"task": f"how does {best.name} work"})))
    return out
