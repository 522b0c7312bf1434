"""Context answers built from the graph store, each packed under a hard token budget.

``ContextService`` is the read helper every answer shares (``context.reader.ContextReader``:
selectors, refs, cards and relations in batch reads, provenance, rawTokens) and the one entry
of the context requests, each answered by its own unit:

- ``context.cards`` — symbolCard, symbolContext, snippet;
- ``context.callgraph`` — callGraph;
- ``context.search`` — search;
- ``context.minimal`` — minimalContext;
- ``context.prcontext`` — prContext (and the unified-diff parser).
"""

from __future__ import annotations

import os
import threading
from collections import deque
from typing import Any

from codesynapse.context.callgraph import CallGraphAnswers
from codesynapse.context.cards import CardAnswers
from codesynapse.context.minimal import (
    DEFAULT_MINIMAL,
    OMITTED_LISTED,
    MinimalContextAnswers,
    _list_candidates,
)
from codesynapse.context.models import (
    CallGraphParams,
    MinimalContextParams,
    PrContextParams,
    SearchParams,
    SnippetParams,
    SymbolParams,
)
from codesynapse.context.prcontext import PrContextAnswers, parse_unified_diff
from codesynapse.context.reader import (
    DEFAULT_CONFIDENCE,
    DEFAULT_CONTEXT,
    ContextReader,
    answer_freshness,
    names_itself,
    production_first,
    uri_to_path,
    with_confidence,
    with_resolution,
)
from codesynapse.context.search import SearchAnswers

__all__ = ["DEFAULT_CONFIDENCE", "DEFAULT_CONTEXT", "DEFAULT_MINIMAL", "OMITTED_LISTED", "ContextService",
           "_list_candidates", "answer_freshness", "names_itself", "parse_unified_diff", "production_first",
           "uri_to_path", "with_confidence", "with_resolution"]


# A graph request on the embedded store is CPU-bound Python (SQLite's reads are short, in
# process): requests beyond the cores do not run sooner side by side, they slow each other (the
# GIL changes hands at each of their SQLite reads, and a 2 ms card waits behind every other
# request's slices). At most as many answer at once as there are cores; the others wait their
# turn, in the order they came (``methods._answer`` takes the turn, outside the read snapshot).
# minimalContext, stdlib, 100 tasks at concurrency 8 (issue 16 #6: p95 <= 400 ms), p50 / p95:
# all at once 372 / 580 ms; a semaphore of 2 places 309 / 418 (it wakes waiters in no set order,
# and a request arriving later can take a freed place first); turns in order, 2 places,
# 251-316 / 329-397 ms; 1 place 324-331 / 388-396 ms. On a server backend (Neo4j, HugeGraph) a
# request mostly waits on the network, so only minimalContext takes a turn there
# (``CPU_BOUND_ON_SERVER``).
class _Turns:
    """At most ``n`` holders at once; the others are served in the order they came (a place
    is handed to the next waiter, so a request arriving later cannot take it first). A thread
    that holds a place and enters again keeps it (no deadlock on one core)."""

    def __init__(self, n: int) -> None:
        self._lock = threading.Lock()
        self._free = n
        self._waiting: deque[threading.Event] = deque()
        self._held = threading.local()  # this thread's depth of entries

    def __enter__(self) -> _Turns:
        depth = getattr(self._held, "depth", 0)
        self._held.depth = depth + 1
        if depth:
            return self
        with self._lock:
            if self._free and not self._waiting:
                self._free -= 1
                return self
            turn = threading.Event()
            self._waiting.append(turn)
        turn.wait()
        return self

    def __exit__(self, *exc: object) -> None:
        self._held.depth -= 1
        if self._held.depth:
            return
        with self._lock:
            if self._waiting:
                self._waiting.popleft().set()
            else:
                self._free += 1


CPU_TURNS = _Turns(max(1, os.cpu_count() or 1))
CPU_BOUND_ON_SERVER = frozenset({"codesynapse/minimalContext"})


class ContextService(ContextReader):
    """The context requests of one App (its store at construction: ``Services`` builds a new
    one when the store is reopened)."""

    def __init__(self, app):
        super().__init__(app)
        self._cards = CardAnswers(self)
        self._call_graph = CallGraphAnswers(self)
        self._search = SearchAnswers(self)
        self._minimal = MinimalContextAnswers(self)
        self._pr = PrContextAnswers(self)

    def symbol_card(self, prm: SymbolParams) -> dict[str, Any]:
        return self._cards.symbol_card(prm)

    def symbol_context(self, prm: SymbolParams) -> dict[str, Any]:
        return self._cards.symbol_context(prm)

    def snippet(self, prm: SnippetParams) -> dict[str, Any]:
        return self._cards.snippet(prm)

    def call_graph(self, prm: CallGraphParams) -> dict[str, Any]:
        return self._call_graph.call_graph(prm)

    def search(self, prm: SearchParams) -> dict[str, Any]:
        return self._search.search(prm)

    def minimal_context(self, prm: MinimalContextParams) -> dict[str, Any]:
        return self._minimal.minimal_context(prm)

    def pr_context(self, prm: PrContextParams) -> dict[str, Any]:
        return self._pr.pr_context(prm)
