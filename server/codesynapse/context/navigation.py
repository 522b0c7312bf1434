"""The standard LSP features' reads, as a service over the same store reads as the custom
requests: workspace and document symbols, the symbol a position names, references, hover
cards, call hierarchy and the findings published as diagnostics. It speaks in graph rows
(1-based lines, byte columns); the LSP layer (lsp/navigation.py, lsp/findings.py) converts
positions with the negotiated ``position_codec``, builds the protocol types and reads nothing
from the store itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from codesynapse.context.deps import finding_stale
from codesynapse.context.service import ContextService
from codesynapse.graph.depmodel import FindingRow
from codesynapse.graph.deps import supported
from codesynapse.graph.model import CallRow, SymbolRow

# call rows one references / call hierarchy answer reads: past it the answer says so (the LSP
# layer logs it and shows it with window/showMessage), never silently
SAFETY_CAP = 100_000
WORKSPACE_SYMBOLS = 100  # workspace/symbol answers at most this many symbols
HOVER_TOP = 3  # callers / callees a hover card lists


class Calls(NamedTuple):
    """Call sites of an answer, and the total when the answer is cut at ``SAFETY_CAP``."""

    rows: list[CallRow]
    total: int | None  # None: every site is in ``rows``


class Group(NamedTuple):
    """The call sites of one symbol on the other end of a call hierarchy edge."""

    symbol: SymbolRow
    rows: list[CallRow]
    unresolved: bool  # name matches, not calls bound to the subject


class NavigationService:
    """Built once by ``Services`` (``app.services.navigation``); ``context`` gives the App's
    current ContextService (hover cards are its cards)."""

    def __init__(self, app, context: Callable[[], ContextService]):
        self.app = app
        self._context = context

    @property
    def store(self):
        return self.app.store  # the App's current store (it may be reopened)

    # -- symbols ---------------------------------------------------------------------------------
    def workspace_symbols(self, query: str) -> list[SymbolRow]:
        """Exact qualified name, then exact name, then BM25 matches; no modules; at most
        ``WORKSPACE_SYMBOLS``."""
        q = query.strip()
        if not q:
            return []
        store = self.store
        rows = store.symbols_by_qname(q) + store.symbols_by_name(q, 50)
        seen = {r.id for r in rows}
        rows += [r for r, _ in store.search(q, WORKSPACE_SYMBOLS) if r.id not in seen]
        return [r for r in rows[:WORKSPACE_SYMBOLS] if r.kind != "module"]

    def document_symbols(self, rel: str) -> list[SymbolRow]:
        """The file's symbols by position, without its module symbol."""
        return [r for r in self.store.symbols_in_file(rel) if r.kind != "module"]

    def symbol(self, qname: str) -> SymbolRow | None:
        rows = self.store.symbols_by_qname(qname)
        return rows[0] if rows else None

    def target_at(self, rel: str, line1: int, word: str) -> SymbolRow | None:
        """The symbol ``word`` at line ``line1`` of ``rel`` refers to: the definition named
        there, a resolved call at that spot, a symbol of that name in the file, or the only
        symbol with that name."""
        store = self.store
        here = store.symbol_at(rel, line1)
        if here is not None and here.name == word and here.start_line == line1:
            return here
        if here is not None:
            for c in store.callees(here.qname, limit=2000):
                if c.line == line1 and c.name == word and c.target:
                    rows = store.symbols_by_qname(c.target)
                    if rows:
                        return rows[0]
        for s in store.symbols_in_file(rel):
            if s.name == word and s.kind != "module":
                return s
        rows = store.symbols_by_name(word, limit=2)
        return rows[0] if len(rows) == 1 else None

    # -- references and call hierarchy -------------------------------------------------------------
    def unresolved_of(self, s: SymbolRow) -> list[CallRow]:
        """Unresolved call sites named like ``s`` (``[]`` when the setting
        unresolvedCandidates is off, or for a module)."""
        if s.kind == "module" or not getattr(self.app.settings, "unresolved_candidates", True):
            return []
        return self.store.unresolved_named(s.name, limit=SAFETY_CAP)

    def _capped(self, rows: list[CallRow], count: Callable[[], int]) -> Calls:
        return Calls(rows, count() if len(rows) >= SAFETY_CAP else None)

    def references(self, s: SymbolRow) -> Calls:
        """The resolved call sites of ``s``, then the unresolved ones named like it (a name
        match is not a proof, but hiding it would show "no references" where there may be
        some); ``total`` counts the resolved ones when they were cut at the cap."""
        calls = self._capped(self.store.callers(s.qname, limit=SAFETY_CAP), lambda: self.store.count_callers(s.qname))
        return Calls(calls.rows + self.unresolved_of(s), calls.total)

    def _grouped(self, calls: list[CallRow], key: Callable[[CallRow], str], unresolved: bool) -> list[Group]:
        """Call rows grouped by the symbol on the other end, in first-seen order (one batch
        read for the symbols)."""
        groups: dict[str, list[CallRow]] = {}
        for c in calls:
            k = key(c)
            if k:
                groups.setdefault(k, []).append(c)
        units = self.store.symbols_by_qnames(groups)
        return [Group(units[q][0], rows, unresolved) for q, rows in groups.items() if q in units]

    def incoming(self, qname: str) -> tuple[list[Group], int | None]:
        """Callers of ``qname`` grouped by caller; then the callers of unresolved calls named
        like it, each once, marked ``unresolved``. With the total when cut at the cap."""
        store = self.store
        calls = self._capped(store.callers(qname, limit=SAFETY_CAP), lambda: store.count_callers(qname))
        out = self._grouped(calls.rows, lambda c: c.caller, False)
        target = self.symbol(qname)
        if target is not None:
            out += self._grouped(self.unresolved_of(target), lambda c: c.caller, True)
        return out, calls.total

    def outgoing(self, qname: str) -> tuple[list[Group], int | None]:
        """Callees of ``qname`` (resolved calls) grouped by target."""
        store = self.store
        calls = self._capped(store.callees(qname, limit=SAFETY_CAP), lambda: store.count_callees(qname))
        return self._grouped(calls.rows, lambda c: c.target, False), calls.total

    # -- hover ---------------------------------------------------------------------------------------
    def card(self, s: SymbolRow) -> dict[str, Any]:
        """The symbol card hover shows (``HOVER_TOP`` of each list)."""
        return self._context().card(s, top=HOVER_TOP)

    # -- findings ------------------------------------------------------------------------------------
    def keeps_findings(self) -> bool:
        """Whether the graph store keeps findings (SARIF results)."""
        return supported(self.store)

    def findings(self, rel: str, limit: int) -> list[tuple[FindingRow, bool]]:
        """The findings of ``rel`` (at most ``limit``, most severe first), each with whether
        it is stale (the file changed since the scan), read in one snapshot."""
        store = self.store
        hashes: dict[str, str | None] = {}
        with store.snapshot():
            return [(f, finding_stale(store, f, hashes)) for f in store.findings(rel, limit=limit)]
