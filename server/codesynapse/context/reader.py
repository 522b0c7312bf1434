"""The read helper every context answer shares (``ContextReader``): selectors resolved to
symbols, symbol refs and cards with their relations (batch reads), the provenance stamp and the
closing of an answer (``rawTokens``); and the small rules of how answers write call sites."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote, urlparse

from codesynapse.context.budget import Packer, tokens_for
from codesynapse.context.deps import card_findings
from codesynapse.context.models import Position, check_selector
from codesynapse.context.retrieval import LIBRARY, row_role, test_support_of
from codesynapse.errors import BudgetError, InvalidParams
from codesynapse.graph.confidence import CONFIDENCE as DEFAULT_CONFIDENCE
from codesynapse.graph.model import CallRow, SymbolRow

DEFAULT_CONTEXT = 20_000
TOP_N = 5
WALK_CAP = 100_000  # call rows read per unit when walking a call graph (every caller is reachable by pages)
CANDIDATES = 10
ROLE_POOL = 51  # a bare name is decided by role only when all the symbols it names were read
ALTERNATIVES = "alternatives"  # omitted: other symbols of a bare name (tests, docs...) the answer is not for
ALTERNATIVES_HINT = "other symbols of that name, not library code; ask with a qualified name for one of them"
UNREAD = "files not searched for the phrase (time budget)"
# a call site's resolution is given unless it was bound through an import, the usual case;
# DESIGN calls heuristic what is "matched by name rather than by import" (docs/PROTOCOL.md)
DEFAULT_RESOLUTION = "import"
# an edge's confidence is given only when it is not its resolution's usual one (docs/PROTOCOL.md):
# DEFAULT_CONFIDENCE is the resolver's table (graph/confidence.py)
UNREAD_HINT = "pass paths, or name the symbol"


def answer_freshness(f: dict[str, Any]) -> dict[str, Any]:
    """Index freshness as every context answer carries it: the state, plus only those facts
    that differ from their default: the indexed commit, uncommitted changes, open buffers,
    pending changes, and when the index last changed (to the second) while the answer may lag
    the workspace (state not ``ready``, or changes pending) — when the index is ready with
    nothing pending, the answer reflects every change the daemon was told of. ``indexStatus``
    carries every field in full, the policy fingerprint too: that is one per index (DESIGN
    "recorded in every index and every benchmark result"), not news in every answer, and a
    policy change is seen in ``indexStatus`` and as a re-index (state). (The full stamp cost
    ~80 tokens an answer, a fifth of a small answer, mostly digits that told nothing.)"""
    out: dict[str, Any] = {"state": f.get("state", "")}
    if f.get("error"):  # state failed: why (the last committed index is what answers)
        out["error"] = f["error"]
    if f.get("indexedCommit"):
        out["indexedCommit"] = f["indexedCommit"]
    if f.get("dirty"):
        out["dirty"] = True
    if "baseCommit" in f:  # a team graph (docs/TEAM.md): the shared base and the checkout's own files
        out["baseCommit"] = f["baseCommit"]
        out["overlayFiles"] = f.get("overlayFiles", 0)
    if f.get("openBuffers"):
        out["openBuffers"] = f["openBuffers"]
    if f.get("pending"):
        out["pending"] = f["pending"]
    if f.get("state", "") == "ready" and not f.get("pending"):
        return out
    last = f.get("lastUpdate") or ""
    if last:
        try:
            import datetime as dt

            last = dt.datetime.fromisoformat(last).astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            pass
    out["lastUpdate"] = last
    return out


def uri_to_path(uri: str, field: str = "selector.uri") -> str:
    p = urlparse(uri)
    if p.scheme and p.scheme != "file":
        raise InvalidParams(field, "only file: URIs are supported")
    return unquote(p.path) if p.scheme else uri


class ContextReader:
    """What every context answer reads and writes alike, over the App's current store."""

    def __init__(self, app):
        self.app = app
        self.store = app.store

    def rel(self, path_or_uri: str, field: str) -> str:
        path = uri_to_path(path_or_uri, field) if "://" in path_or_uri else path_or_uri
        rel = self.app.workspace.relpath(path)
        if rel is None:
            raise InvalidParams(field, "is outside the workspace")
        return rel
    def provenance(self, legs: list[str]) -> dict[str, Any]:
        return {"legs": legs, "freshness": answer_freshness(self.app.freshness())}
    def annotations(self, s: SymbolRow) -> list[str]:
        pol = self.app.policy
        if pol is None or not hasattr(pol, "annotations_for"):
            return []
        return list(pol.annotations_for(s.path, s.qname))
    def ref(self, s: SymbolRow, include_ids: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {"qualifiedName": s.qname, "kind": s.kind, "path": s.path,
                             "range": [s.start_line, s.end_line]}
        if include_ids:
            d["id"] = f"{self.store.graph_id}:{s.id}"
        return d
    def call_ref(self, c: CallRow, side: str) -> dict[str, Any]:
        """A call site in a card: a caller with the file and line of its call; a callee with
        the line only (its call is written in the card's own file). ``resolution``
        ``unresolved``/``external`` marks a callee the graph did not bind."""
        d: dict[str, Any] = {"qualifiedName": c.caller if side == "caller" else c.target or c.callee}
        if side == "caller":
            d["path"] = c.path
        d["line"] = c.line
        return with_resolution(d, c.resolution, c.confidence)
    def resolve_selector(self, sel, include_suggestions: bool = True) -> tuple[SymbolRow | None, dict[str, Any]]:
        """(symbol, extra): extra holds ``candidates`` (ambiguous) or ``suggestions`` (no match)."""
        check_selector(sel)
        store = self.store
        if isinstance(sel, Position):
            rel = self.rel(sel.uri, "selector.uri")
            s = store.symbol_at(rel, sel.line + 1)
            if s is None:
                syms = [x for x in store.symbols_in_file(rel) if x.kind == "module"]
                s = syms[0] if syms else None
            if s is None:
                return None, {"suggestions": [], "hint": f"nothing is indexed at {rel}:{sel.line + 1}"}
            return s, {}
        text = sel.strip()
        rows = store.symbols_by_qname(text)
        extra: dict[str, Any] = {}
        if not rows and ("." in text or "::" in text):
            # a re-exported or aliased path (os.path.join → posixpath.join)
            target = self.app.indexer.resolve_alias(text)
            if target and target != text:
                rows = store.symbols_by_qname(target)
                if rows:
                    extra = {"resolvedFrom": text}
        if not rows:
            rows = store.symbols_by_name(text, limit=ROLE_POOL)
        if not rows and ("." in text or "::" in text):
            last = re.split(r"\.|::", text)[-1]
            rows = [r for r in store.symbols_by_name(last, limit=500)
                    if r.qname.endswith("." + text) or r.qname.endswith("::" + text)][:ROLE_POOL]
        if len(rows) == 1:
            return rows[0], extra
        if len(rows) > 1:
            # a definition and its re-definitions under one qname: take the first, say so
            if len({r.qname for r in rows}) == 1:
                return rows[0], {"alsoDefinedAt": [f"{r.path}:{r.start_line}" for r in rows[1:CANDIDATES]]}
            # one library symbol among tests, examples, docs, config (context/retrieval.py
            # role_of): the library one is meant; the others are listed as alternatives
            # (the test suite's harness outside test folders counts as tests: test_support_of)
            harness = test_support_of(self.app, store)
            library = [r for r in rows if row_role(r) == LIBRARY and r.path not in harness]
            if len(library) == 1 and len(rows) < ROLE_POOL:
                return library[0], {**extra, "alternatives": [self.ref(r) for r in rows
                                                              if r is not library[0]][:CANDIDATES]}
            cands = [self.ref(r) for r in rows[:CANDIDATES]]
            return None, {"ambiguous": True, "candidates": cands,
                          "hint": "several symbols match; ask again with a qualified name"}
        # a suggestion is a name to ask for next, not a location: its card has the rest
        sugg = [{"qualifiedName": r.qname, "kind": r.kind} for r, _ in store.search(text, 5)] \
            if include_suggestions else []
        return None, {"suggestions": sugg, "hint": "no symbol matches; try codesynapse/search or a suggestion"}
    def relations(self, s: SymbolRow) -> dict[str, Any]:
        return self.relations_many([s])[s.qname]
    def relations_many(self, subjects: list[SymbolRow]) -> dict[str, dict[str, Any]]:
        """Each subject's callers (production first), callees, implementations and the tests
        among its callers, by qualified name: a fixed number of store calls for any number of
        subjects and callers (batch reads)."""
        store = self.store
        qs = list(dict.fromkeys(s.qname for s in subjects))
        callers_of = store.callers_many(qs, limit=400)
        callees_of = store.callees_many(qs, limit=200)
        impls_of = store.subtypes_many(qs, limit=50)
        callers = {q: production_first(callers_of.get(q, []))[:200] for q in qs}
        units = store.symbols_by_qnames({c.caller for q in qs for c in callers[q]})
        out: dict[str, dict[str, Any]] = {}
        for q in qs:
            tests = []
            seen_tests: set[str] = set()
            for c in callers[q]:
                if c.caller in seen_tests:
                    continue
                for row in units.get(c.caller, []):
                    if row.is_test or row.kind == "test":
                        tests.append(row)
                        seen_tests.add(c.caller)
                        break
            out[q] = {"callers": callers[q], "callees": callees_of.get(q, []), "impls": impls_of.get(q, []),
                      "tests": tests}
        return out
    def card_counts(self, subjects: list[SymbolRow]) -> dict[str, tuple[int, int, int]]:
        """(callers, callees, unresolved candidates) of each subject by qualified name, in
        three store calls for any number of subjects."""
        store = self.store
        qs = [s.qname for s in subjects]
        n_callers, n_callees, n_unresolved = store.relation_counts(
            qs, {s.name for s in subjects if s.kind != "module"})
        return {s.qname: (n_callers.get(s.qname, 0), n_callees.get(s.qname, 0),
                          n_unresolved.get(s.name, 0) if s.kind != "module" else 0) for s in subjects}
    def card(self, s: SymbolRow, rel: dict[str, Any] | None = None, top: int = TOP_N,
             include_ids: bool = False, counts: tuple[int, int, int] | None = None,
             findings: int | None = None) -> dict[str, Any]:
        rel = rel if rel is not None else self.relations(s)
        store = self.store
        n_callers, n_callees, unresolved_callers = counts if counts is not None else self.card_counts([s])[s.qname]
        card: dict[str, Any] = {"qualifiedName": s.qname}
        if not names_itself(s.qname, s.name):
            card["name"] = s.name
        card["kind"] = s.kind
        if s.signature:
            card["signature"] = s.signature
        card["path"] = s.path
        card["range"] = [s.start_line, s.end_line]  # [start, end] like every other answer
        if s.summary:
            card["summary"] = s.summary
        ann = self.annotations(s)
        if ann:
            card["annotations"] = ann
        # a count that is 0 is left out (docs/PROTOCOL.md): callers and callees always stay
        counts = {"callers": n_callers, "callees": n_callees, "implementations": len(rel["impls"]),
                  "tests": len(rel["tests"]), "unresolvedCallers": unresolved_callers}
        card["counts"] = {k: v for k, v in counts.items() if v or k in ("callers", "callees")}
        # counts are call sites; the top lists name each caller / callee once
        if rel["callers"] and top:
            card["callers"] = _first_per(rel["callers"], lambda c: c.caller, top, lambda c: self.call_ref(c, "caller"))
        # unresolved calls named like it, after the resolved callers: where, and from which unit
        # (a name match, not a proof; docs/PROTOCOL.md) — "unresolved" is never shown as none
        if unresolved_callers and top and getattr(self.app.settings, "unresolved_candidates", True):
            card["unresolved"] = [{"path": c.path, "line": c.line, "name": c.callee, "from": c.caller}
                                  for c in store.unresolved_named(s.name, limit=top)]
        if rel["callees"] and top:
            card["callees"] = _first_per(rel["callees"], lambda c: c.target or c.callee, top,
                                         lambda c: self.call_ref(c, "callee"))
        if rel["impls"] and top:
            card["implementations"] = [{"qualifiedName": i.child, "path": i.path, "line": i.line}
                                       for i in rel["impls"][:top]]
        if rel["tests"] and top:
            card["tests"] = [{"qualifiedName": t.qname, "path": t.path, "line": t.start_line}
                             for t in rel["tests"][:top]]
        card_findings(store, card, s, top, findings)  # counts.findings and the top findings (context/deps.py)
        if s.kind == "module" and top:
            imps = store.imports(s.path)
            if imps:
                card["imports"] = [{"module": i.module, "name": i.name, "alias": i.alias, "line": i.line,
                                    "target": i.target} for i in imps[:20]]
                card["counts"]["imports"] = len(imps)
        if include_ids:
            card["id"] = f"{store.graph_id}:{s.id}"
        return card
    def not_found(self, extra: dict[str, Any], max_tokens: int, legs: list[str], echo: bool) -> dict[str, Any]:
        answer: dict[str, Any] = {"found": False, "maxTokens": max_tokens, "provenance": self.provenance(legs)}
        answer.update(extra)
        p = Packer(answer={k: v for k, v in answer.items() if k not in ("candidates", "suggestions")},
                   max_tokens=max_tokens, echo_budget=echo)
        for key in ("candidates", "suggestions"):
            for item in extra.get(key, []):
                p.add(key, item, key, "ask with a qualified name")
            if key in extra:
                p.answer.setdefault(key, [])
        return self.done(p)
    def done(self, p: Packer) -> dict[str, Any]:
        """Close the answer, with ``rawTokens``: what reading the files it names would cost
        (ceil(bytes/4) of each file as indexed) — the meter's comparison figure."""
        paths: set[str] = set()

        def walk(v: Any) -> None:
            if isinstance(v, dict):
                pth = v.get("path")
                if isinstance(pth, str):
                    paths.add(pth)
                for x in v.values():
                    if isinstance(x, (dict, list)):
                        walk(x)
            elif isinstance(v, list):
                for x in v:
                    walk(x)

        walk(p.answer)
        raw = sum(tokens_for(f.size) for f in self.store.files_by_paths(sorted(paths)[:500]).values())
        p.answer["rawTokens"] = raw
        return p.done()
    def pack_card(self, answer: dict[str, Any], s: SymbolRow, rel: dict[str, Any], max_tokens: int,
                   include_ids: bool, spare: int = 0, echo: bool = True) -> Packer:
        """The card with its top relations; when that is over budget (or leaves less than
        ``spare`` tokens for what follows and the notes of what is left out), the card with
        counts only (the lists are listed as omitted); a budget error only when even that
        won't fit."""
        try:
            p = Packer(answer={**answer, "card": self.card(s, rel, include_ids=include_ids)}, max_tokens=max_tokens,
                       echo_budget=echo)
            if p.room() < spare:
                raise BudgetError(max_tokens - p.room() + spare, max_tokens)
            return p
        except BudgetError:
            card = self.card(s, rel, top=0, include_ids=include_ids)
            p = Packer(answer={**answer, "card": card}, max_tokens=max_tokens, echo_budget=echo)
            n = sum(min(TOP_N, card["counts"].get(k, 0))
                    for k in ("callers", "callees", "implementations", "tests", "unresolvedCallers"))
            p.omit("card relations", n, "raise maxTokens or ask codesynapse/callGraph")
            p.omit("card findings", min(TOP_N, card["counts"].get("findings", 0)), "raise maxTokens")
            return p


_TEST_PATH = re.compile(r"(^|/)(tests?|testing|testdata|__tests__|spec)(/|$)|(^|/)test_[^/]*$|_test\.\w+$"
                        r"|\.(test|spec)\.\w+$|Tests?\.\w+$")


def with_alternatives(p: Packer, alternatives: list[dict[str, Any]]) -> Packer:
    """List the other symbols of an ambiguous bare name that the answer is not for (tests,
    docs... beside the one library symbol) in ``omitted``, as ``alternatives``."""
    if alternatives:
        p.omit(ALTERNATIVES, len(alternatives), ALTERNATIVES_HINT, items=alternatives)
    return p


def names_itself(qname: str, name: str) -> bool:
    """True when the qualified name ends with the name (``a.b.name``, ``a::name``,
    ``pkg/name``): the name is left out of compact items, it would only repeat."""
    return qname == name or any(qname.endswith(sep + name) for sep in (".", "::", "/"))


def with_resolution(d: dict[str, Any], resolution: str, confidence: float) -> dict[str, Any]:
    """Add a call site's ``resolution`` unless it is DEFAULT_RESOLUTION, and its confidence
    when that is not its resolution's usual one."""
    if resolution != DEFAULT_RESOLUTION:
        d["resolution"] = resolution
    return with_confidence(d, resolution, confidence)


def with_confidence(d: dict[str, Any], resolution: str, confidence: float) -> dict[str, Any]:
    """Add ``confidence`` to an edge or call site only when it is not its resolution's usual
    one (DEFAULT_CONFIDENCE, listed in docs/PROTOCOL.md)."""
    if DEFAULT_CONFIDENCE.get(resolution) != confidence:
        d["confidence"] = confidence
    return d


def production_first(calls: list[CallRow]) -> list[CallRow]:
    """Callers in production code before callers in tests (stable otherwise): when a list
    is capped, the evidence an agent needs most is kept."""
    return sorted(calls, key=lambda c: bool(_TEST_PATH.search(c.path)))


def _first_per(rows, key, n, render):
    out, seen = [], set()
    for r in rows:
        k = key(r)
        if k in seen:
            continue
        seen.add(k)
        out.append(render(r))
        if len(out) >= n:
            break
    return out
