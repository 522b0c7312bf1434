"""Context answers built from the graph store, each packed under a hard token budget."""

from __future__ import annotations

import os
import re
from collections import Counter
from typing import Any
from urllib.parse import unquote, urlparse

import msgspec

from codesynapse.context import literals, paging
from codesynapse.context.budget import Deadline, Packer, dumps, normalize_max_tokens, tokens_for
from codesynapse.context.deps import add_search_modules, card_findings, count_card_findings, pr_dependencies
from codesynapse.context.models import (
    DIFF_MAX,
    PATHS_MAX,
    TASK_MAX,
    CallGraphParams,
    MinimalContextParams,
    Position,
    PrContextParams,
    SearchParams,
    SnippetParams,
    SymbolParams,
    check_len,
    check_selector,
)
from codesynapse.context.retrieval import (
    LEG_LIMIT,
    LEG_POOL,
    LIBRARY,
    Retriever,
    asked_roles,
    prior,
    row_role,
)
from codesynapse.errors import BudgetError, InvalidParams
from codesynapse.extract.redact import redact
from codesynapse.graph.confidence import CONFIDENCE as DEFAULT_CONFIDENCE
from codesynapse.graph.model import CallRow, SymbolRow
from codesynapse.memory.rrf import RRF_K, rrf

DEFAULT_CONTEXT = 20_000
DEFAULT_MINIMAL = 1_500
TOP_N = 5
MAX_DEPTH = 3
MAX_LIMIT = 200
CONTEXT_PAGE = 100  # items per symbolContext page after the card (cursor)
WALK_CAP = 100_000  # call rows read per unit when walking a call graph (every caller is reachable by pages)
CANDIDATES = 10
ROLE_POOL = 51  # a bare name is decided by role only when all the symbols it names were read
ALTERNATIVES = "alternatives"  # omitted: other symbols of a bare name (tests, docs...) the answer is not for
ALTERNATIVES_HINT = "other symbols of that name, not library code; ask with a qualified name for one of them"
RELATED_ROOM = 96  # symbolContext keeps the card's lists only with this much room left for related cards
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[.:]{1,2}[A-Za-z_][A-Za-z0-9_]*)*")
MINIMAL_CARDS = 8  # DESIGN "at most 8 entries kept after graph hydration"
NEAR_WITH_SURE = 3  # minimalContext shows this many approximate candidates beside the symbols the task names
WEAK_FRACTION = 0.25  # approximate candidates scoring under this share of the best one are counted, not shown
OMITTED_LISTED = 10  # minimalContext names at most this many of the candidates it leaves out
UNREAD = "files not searched for the phrase (time budget)"
# a call site's resolution is given unless it was bound through an import, the usual case;
# DESIGN calls heuristic what is "matched by name rather than by import" (docs/PROTOCOL.md)
DEFAULT_RESOLUTION = "import"
# an edge's confidence is given only when it is not its resolution's usual one (docs/PROTOCOL.md):
# DEFAULT_CONFIDENCE is the resolver's table (graph/confidence.py)
UNREAD_HINT = "pass paths, or name the symbol"
NEAR = "approximate matches after the exact ones"


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


class ContextService:
    def __init__(self, app):
        self.app = app
        self.store = app.store

    # -- helpers ----------------------------------------------------------------------------
    def _rel(self, path_or_uri: str, field: str) -> str:
        path = uri_to_path(path_or_uri, field) if "://" in path_or_uri else path_or_uri
        rel = self.app.workspace.relpath(path)
        if rel is None:
            raise InvalidParams(field, "is outside the workspace")
        return rel

    def _provenance(self, legs: list[str]) -> dict[str, Any]:
        return {"legs": legs, "freshness": answer_freshness(self.app.freshness())}

    def _annotations(self, s: SymbolRow) -> list[str]:
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

    def _call_ref(self, c: CallRow, side: str) -> dict[str, Any]:
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
            rel = self._rel(sel.uri, "selector.uri")
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
            library = [r for r in rows if row_role(r) == LIBRARY]
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
        ann = self._annotations(s)
        if ann:
            card["annotations"] = ann
        # a count that is 0 is left out (docs/PROTOCOL.md): callers and callees always stay
        counts = {"callers": n_callers, "callees": n_callees, "implementations": len(rel["impls"]),
                  "tests": len(rel["tests"]), "unresolvedCallers": unresolved_callers}
        card["counts"] = {k: v for k, v in counts.items() if v or k in ("callers", "callees")}
        # counts are call sites; the top lists name each caller / callee once
        if rel["callers"] and top:
            card["callers"] = _first_per(rel["callers"], lambda c: c.caller, top, lambda c: self._call_ref(c, "caller"))
        # unresolved calls named like it, after the resolved callers: where, and from which unit
        # (a name match, not a proof; docs/PROTOCOL.md) — "unresolved" is never shown as none
        if unresolved_callers and top and getattr(self.app.settings, "unresolved_candidates", True):
            card["unresolved"] = [{"path": c.path, "line": c.line, "name": c.callee, "from": c.caller}
                                  for c in store.unresolved_named(s.name, limit=top)]
        if rel["callees"] and top:
            card["callees"] = _first_per(rel["callees"], lambda c: c.target or c.callee, top,
                                         lambda c: self._call_ref(c, "callee"))
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

    def _not_found(self, extra: dict[str, Any], max_tokens: int, legs: list[str], echo: bool) -> dict[str, Any]:
        answer: dict[str, Any] = {"found": False, "maxTokens": max_tokens, "provenance": self._provenance(legs)}
        answer.update(extra)
        p = Packer(answer={k: v for k, v in answer.items() if k not in ("candidates", "suggestions")},
                   max_tokens=max_tokens, echo_budget=echo)
        for key in ("candidates", "suggestions"):
            for item in extra.get(key, []):
                p.add(key, item, key, "ask with a qualified name")
            if key in extra:
                p.answer.setdefault(key, [])
        return self._done(p)

    def _done(self, p: Packer) -> dict[str, Any]:
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

    # -- methods ----------------------------------------------------------------------------
    def symbol_card(self, prm: SymbolParams) -> dict[str, Any]:
        max_tokens = normalize_max_tokens(prm.max_tokens, DEFAULT_CONTEXT)
        s, extra = self.resolve_selector(prm.selector)
        legs = ["exact"]
        if s is None:
            return self._not_found(extra, max_tokens, legs, prm.max_tokens is not None)
        alternatives = extra.pop(ALTERNATIVES, [])
        answer = {"found": True, "maxTokens": max_tokens, "provenance": self._provenance(legs), **extra}
        p = self._pack_card(answer, s, self.relations(s), max_tokens, prm.include_ids, echo=prm.max_tokens is not None)
        return self._done(_with_alternatives(p, alternatives))

    def _pack_card(self, answer: dict[str, Any], s: SymbolRow, rel: dict[str, Any], max_tokens: int,
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

    def symbol_context(self, prm: SymbolParams) -> dict[str, Any]:
        dl = Deadline()
        max_tokens = normalize_max_tokens(prm.max_tokens, DEFAULT_CONTEXT)
        s, extra = self.resolve_selector(prm.selector)
        if s is None:
            return self._not_found(extra, max_tokens, ["exact"], prm.max_tokens is not None)
        rel = self.relations(s)
        if prm.cursor is not None:
            return self._relations_page(prm, s, rel, max_tokens)
        alternatives = extra.pop(ALTERNATIVES, [])
        p = self._pack_card({"found": True, "maxTokens": max_tokens, "provenance": self._provenance(["exact", "graph"]),
                             **extra}, s, rel, max_tokens, prm.include_ids, spare=RELATED_ROOM,
                            echo=prm.max_tokens is not None)
        _with_alternatives(p, alternatives)
        answer = p.answer
        # the rest is what the full card's lists leave (a card packed without its lists under a
        # small budget counts those in ``omitted``: "card relations")
        card = answer.get("card", {})
        rest = self._relations_rest(s, rel, card if "callers" in card or "callees" in card else self.card(s, rel))
        if rest:  # the card's lists go on: the cursor pages the rest of them
            p.set("cursor", paging.encode(self.app, paging.key_of("symbolContext", s.qname, s.path), 0))
            for k in ("callers", "callees", "unresolved"):
                p.omit(f"card {k} after the top {TOP_N}", sum(1 for x, _ in rest if x == k),
                       "ask again with cursor for the rest")
        related: list[tuple[str, str]] = []
        for c in rel["callees"]:
            if c.target:
                related.append(("callee", c.target))
        for c in rel["callers"]:
            related.append(("caller", c.caller))
        for i in rel["impls"]:
            related.append(("implementation", i.child))
        for t in rel["tests"]:
            related.append(("test", t.qname))
        if s.kind in ("method",) and s.parent:
            related.insert(0, ("container", s.parent))
        # callers and tests the card lists (name, file, line of the call) are not said again
        card = answer.get("card", {})
        listed = {x["qualifiedName"] for key in ("callers", "tests") for x in card.get(key, [])}
        seen = {s.qname}
        answer["related"] = []
        order = {"container": 0, "callee": 1, "implementation": 2, "caller": 3, "test": 4}
        related.sort(key=lambda x: order[x[0]])
        shown: list[tuple[str, str]] = []
        for role, q in related:
            if q in seen or (role in ("caller", "test") and q in listed):
                continue
            seen.add(q)
            shown.append((role, q))
        # the related symbols, and what their cards need, read in a few batch calls
        units = self.store.symbols_by_qnames(q for _, q in shown)
        carded = [units[q][0] for role, q in shown if q in units and role not in ("caller", "test")]
        rels = self.relations_many(carded) if carded else {}
        counts = self.card_counts(carded) if carded else {}
        n_findings = count_card_findings(self.store, carded) or {}
        for role, q in shown:
            dl.check()
            rows = units.get(q)
            if not rows:
                continue
            r = rows[0]
            # a related card carries its counts, not its own caller/callee lists: those
            # repeat the subject and each other; the counts say how many a card request gets.
            # What the subject uses (container, callees, implementations) comes as a card with
            # signature and summary; who uses it (callers, tests) beyond those the card lists is
            # named with its kind, path and range: their own signature and summary describe
            # them, not the subject (their card has them)
            if role in ("caller", "test"):
                item = {"role": role, **self.ref(r, prm.include_ids)}
            else:
                item = {"role": role, **self.card(r, rels[r.qname], top=0, include_ids=prm.include_ids,
                                                  counts=counts[r.qname], findings=n_findings.get(r.qname))}
            p.add("related", item, f"related {role}s", "raise maxTokens or ask for that symbol's card")
        return self._done(p)

    def _relations_rest(self, s: SymbolRow, rel: dict[str, Any], card: dict[str, Any]) -> list[tuple[str, CallRow]]:
        """What the card's lists leave out, in a total order: every other caller unit
        (production first, by path, line, col), every other callee, then every other
        unresolved candidate site — one call row each."""
        store = self.store
        listed = {k: {(x.get("qualifiedName"), x.get("path"), x.get("line")) for x in card.get(k, [])}
                  for k in ("callers", "callees", "unresolved")}
        shown_callers = {q for q, _, _ in listed["callers"]}
        shown_callees = {q for q, _, _ in listed["callees"]}
        out: list[tuple[str, CallRow]] = []
        seen: set[str] = set()
        for c in production_first(store.callers(s.qname, limit=WALK_CAP)):
            if c.caller not in shown_callers and c.caller not in seen:
                seen.add(c.caller)
                out.append(("callers", c))
        seen = set()
        for c in store.callees(s.qname, limit=WALK_CAP):
            q = c.target or c.callee
            if q not in shown_callees and q not in seen:
                seen.add(q)
                out.append(("callees", c))
        if s.kind != "module" and getattr(self.app.settings, "unresolved_candidates", True):
            shown = {(p_, ln) for _, p_, ln in listed["unresolved"]}
            out += [("unresolved", c) for c in store.unresolved_named(s.name, limit=WALK_CAP)
                    if (c.path, c.line) not in shown]
        return out

    def _relations_page(self, prm: SymbolParams, s: SymbolRow, rel: dict[str, Any], max_tokens: int) -> dict[str, Any]:
        """symbolContext with a cursor: the next page of what the card's caller / callee /
        unresolved lists left out (``CONTEXT_PAGE`` items, or what the budget holds), with a
        cursor while more remain and exact counts of what remains."""
        key = paging.key_of("symbolContext", s.qname, s.path)
        offset = paging.decode(self.app, prm.cursor, key)
        rest = self._relations_rest(s, rel, self.card(s, rel))
        answer: dict[str, Any] = {"found": True, "subject": self.ref(s, prm.include_ids), "maxTokens": max_tokens,
                                  "provenance": self._provenance(["exact", "graph"])}
        p = Packer(answer=answer, max_tokens=max_tokens, echo_budget=prm.max_tokens is not None)
        p.take({"cursor": "x" * 40})
        shown = offset
        for kind, c in rest[offset:offset + CONTEXT_PAGE]:
            if kind == "unresolved":
                item = {"path": c.path, "line": c.line, "name": c.callee, "from": c.caller}
            else:
                item = self._call_ref(c, "caller" if kind == "callers" else "callee")
                if kind == "callees":
                    item["path"] = c.path
            if not p.take(item):
                break
            answer.setdefault(kind, []).append(item)
            shown += 1
        for k in ("callers", "callees", "unresolved"):
            p.omit(f"{k} after this page", sum(1 for x, _ in rest[shown:] if x == k), "ask again with cursor")
        if shown < len(rest):
            answer["cursor"] = paging.encode(self.app, key, shown)
        return self._done(p)

    def call_graph(self, prm: CallGraphParams) -> dict[str, Any]:
        dl = Deadline()
        max_tokens = normalize_max_tokens(prm.max_tokens, DEFAULT_CONTEXT)
        depth = max(1, min(MAX_DEPTH, prm.depth))
        limit = max(1, min(MAX_LIMIT, prm.limit))
        if prm.cursor is not None and prm.direction == "both":
            raise InvalidParams("cursor", "pages one direction; ask with direction callers or callees and the "
                                          "cursor of that section")
        s, extra = self.resolve_selector(prm.selector)
        if s is None:
            return self._not_found(extra, max_tokens, ["exact"], prm.max_tokens is not None)
        dirs = ["callers", "callees"] if prm.direction == "both" else [prm.direction]
        keys = {d: paging.key_of("callGraph", s.qname, s.path, d, depth) for d in dirs}
        offset = paging.decode(self.app, prm.cursor, keys[dirs[0]]) if prm.cursor is not None else 0
        # the request is not repeated: the sections present say the direction; depth and limit
        # are given only when they were clamped, with what was asked
        answer: dict[str, Any] = {"found": True, "root": self.ref(s, prm.include_ids)}
        if depth != prm.depth:
            answer.update({"depth": depth, "depthRequested": prm.depth})
        if limit != prm.limit:
            answer.update({"limit": limit, "limitRequested": prm.limit})
        answer.update({"maxTokens": max_tokens, "provenance": self._provenance(["exact", "graph"])})
        alternatives = extra.pop(ALTERNATIVES, [])
        answer.update(extra)
        p = _with_alternatives(Packer(answer=answer, max_tokens=max_tokens, echo_budget=prm.max_tokens is not None),
                               alternatives)
        show_unresolved = getattr(self.app.settings, "unresolved_candidates", True)
        for d in dirs:
            nodes, sites, unresolved_rows, n_unresolved = self._walk(s, d, depth, dl)
            # one ordered list per direction: the resolved units (BFS order, callers production
            # first, each level by (path, line, col)), then the unresolved candidate sites; a
            # page is ``limit`` items of it from the cursor's offset
            items: list[tuple[str, Any]] = [("node", q) for q in nodes] + \
                [("unresolved", r) for r in (unresolved_rows if show_unresolved else [])]
            section: dict[str, Any] = {"nodes": []}
            if n_unresolved:  # absent: 0
                section["unresolvedCandidates"] = n_unresolved
            answer[d] = section
            p.take({"cursor": "x" * 40, "omittedNodes": 999999, "omittedCallSites": 999999})  # room for the tail
            # each call site sits on its far end (the caller among callers, the callee among
            # callees); its near end is named only when it is not the root, and its file
            # only when it is not the caller's as the answer shows it
            near_key, near = ("to", lambda r: r.target) if d == "callers" else ("from", lambda r: r.caller)
            files = {s.qname: s.path}
            start = offset if d == dirs[0] else 0
            stop = min(len(items), start + limit)
            shown = start
            units = self.store.symbols_by_qnames(x for k, x in items[start:stop] if k == "node")
            for kind, x in items[start:stop]:
                dl.check()
                if kind == "node":
                    item = self._node_item(x, nodes[x], sites.get(x, []), s, near_key, near, files, units.get(x, []))
                    ok = p.take(item)
                    if ok:
                        section["nodes"].append(item)
                        if item.get("path"):
                            files[x] = item["path"]
                else:
                    item = {"path": x.path, "line": x.line, "name": x.callee}
                    if d == "callers":
                        item["from"] = x.caller
                    ok = p.take(item)
                    if ok:
                        section.setdefault("unresolved", []).append(item)
                if not ok:
                    break
                shown += 1
            # what this answer leaves for the next pages, counted exactly: resolved units and
            # their call sites, and unresolved candidate sites
            rest = items[shown:]
            left_nodes = [x for k, x in rest if k == "node"]
            left_sites = sum(len(sites.get(q, [])) for q in left_nodes)
            left_unresolved = sum(1 for k, _ in rest if k == "unresolved")
            if left_nodes:
                section["omittedNodes"] = len(left_nodes)
                section["omittedCallSites"] = left_sites
                p.omit(f"{d} nodes", len(left_nodes), "ask again with this section's cursor")
                p.omit(f"{d} call sites", left_sites, "ask again with this section's cursor")
            if left_unresolved:
                section["omittedUnresolved"] = left_unresolved
                p.omit(f"{d} unresolved candidate sites", left_unresolved, "ask again with this section's cursor")
            if rest:
                section["cursor"] = paging.encode(self.app, keys[d], shown)
        return self._done(p)

    def _walk(self, s: SymbolRow, d: str, depth: int, dl: Deadline
              ) -> tuple[dict[str, int], dict[str, list[CallRow]], list[CallRow], int]:
        """Every unit on one side of ``s`` to ``depth`` (qname → level, in a total order: BFS,
        callers production first, each unit's rows by (path, line, col, callee)), the call
        sites on each far end, the unresolved candidate sites (callers: unbound calls of
        that name; callees: unbound calls made by ``s``) and their count."""
        store = self.store
        nodes: dict[str, int] = {}
        sites: dict[str, list[CallRow]] = {}
        unresolved_rows: list[CallRow] = []
        n_unresolved = 0
        frontier = [s.qname]
        for level in range(1, depth + 1):
            nxt: list[str] = []
            dl.check()
            # the whole level in one batch read (each unit's rows capped as before)
            level_rows = store.callers_many(frontier, limit=WALK_CAP) if d == "callers" else \
                store.callees_many(frontier, limit=WALK_CAP)
            for q in frontier:
                dl.check()
                if d == "callers":
                    rows = production_first(level_rows.get(q, []))
                    if level == 1 and s.kind != "module":
                        name = q.rsplit(".", 1)[-1].rsplit("::", 1)[-1]
                        n_unresolved = store.count_unresolved_named(name)
                        unresolved_rows = store.unresolved_named(name, limit=WALK_CAP) if n_unresolved else []
                else:
                    rows = level_rows.get(q, [])
                    if level == 1:
                        unresolved_rows = [r for r in rows if not r.target and r.resolution == "unresolved"]
                        n_unresolved = sum(1 for r in rows if not r.target)
                    rows = [r for r in rows if r.target]
                for r in rows:
                    other = r.caller if d == "callers" else r.target
                    if other not in nodes:
                        nodes[other] = level
                        nxt.append(other)
                    sites.setdefault(other, []).append(r)
            frontier = nxt
        return nodes, sites, unresolved_rows, n_unresolved

    def _node_item(self, q: str, lvl: int, rows_: list[CallRow], s: SymbolRow, near_key: str, near,
                   files: dict[str, str], rows: list[SymbolRow]) -> dict[str, Any]:
        item: dict[str, Any] = {"qualifiedName": q}
        if lvl != 1:
            item["depth"] = lvl
        if rows:
            item.update({"kind": rows[0].kind, "path": rows[0].path, "range": [rows[0].start_line, rows[0].end_line]})
        caller_files = {**files, q: rows[0].path} if rows else files
        item["sites"] = []
        for r in rows_:
            site: dict[str, Any] = {}
            if near(r) != s.qname:
                site[near_key] = near(r)
            if caller_files.get(r.caller) != r.path:
                site["path"] = r.path
            site["line"] = r.line
            item["sites"].append(with_resolution(site, r.resolution, r.confidence))
        return item

    def search(self, prm: SearchParams) -> dict[str, Any]:
        check_len("query", prm.query, 4096)
        if not prm.query.strip():
            raise InvalidParams("query", "is empty; give a name or words to search for")
        # a cursor (the previous page's) stands for the offset it continues from
        cursor_key = paging.key_of("search", prm.query.strip(), prm.mode, prm.kind)
        if prm.cursor is not None:
            if prm.offset:
                raise InvalidParams("cursor", "and offset both given; pass the cursor alone")
            prm = msgspec.structs.replace(prm, offset=paging.decode(self.app, prm.cursor, cursor_key), cursor=None)
        max_tokens = normalize_max_tokens(prm.max_tokens, DEFAULT_CONTEXT)
        store = self.store
        q = prm.query.strip()
        retriever = Retriever(self.app, store)
        exact: list[SymbolRow] = []
        seen: set[int] = set()
        for r in store.symbols_by_qname(q) + store.symbols_by_name(q, limit=200):
            if r.id not in seen and (prm.kind is None or r.kind == prm.kind):
                exact.append(r)
                seen.add(r.id)
        need = prm.offset + prm.limit
        # the literal leg: a phrase (an error message) or an identifier no symbol is named
        # by is looked up where it is written; exact names first, then these, then BM25
        literal: list[tuple[SymbolRow, int]] = []
        unread = 0
        phrase = q.strip("'\"`")
        if len(exact) < need and len(phrase) >= literals.MIN_NEEDLE and \
                (not _IDENT.fullmatch(phrase) or not exact):
            needle = literals.Needle(phrase, word=bool(_IDENT.fullmatch(phrase)))
            found, unread = retriever.literal_rows([needle], Deadline())
            for _n, r, lines, _t in found:
                if r.id not in seen and (prm.kind is None or r.kind == prm.kind):
                    literal.append((r, lines[0]))
                    seen.add(r.id)
        # a phrase found verbatim is the answer; the approximate legs would only add words that
        # happen to match (README headings, package keys)
        verbatim = bool(literal) and not _IDENT.fullmatch(phrase)
        ranked, legs_of, leg_report, total_approx = [], {}, [], 0
        if not verbatim:
            ranked, legs_of, leg_report, total_approx = self._approximate(
                retriever, q, need + len(exact) + len(literal), seen, prm.kind, len(exact) + len(literal) < need)
        lines = {r.id: line for r, line in literal}
        combined = [(r, "exact") for r in exact] + [(r, "literal") for r, _ in literal] + \
            [(r, "approximate") for r in ranked]
        # the exact matches are among the lexical ones too: counted once
        total = max(len(exact) + len(literal) + max(0, total_approx - len(exact)), len(combined))
        # offset and limit are the request's own (paginationHint and omitted give the next offset)
        answer: dict[str, Any] = {"total": total, "maxTokens": max_tokens,
                                  "provenance": self._provenance(["exact"] + (["literal"] if literal else [])
                                                                 + leg_report)}
        if prm.mode == "summary":
            by_kind = Counter(r.kind for r, _ in combined)
            by_file = Counter(r.path for r, _ in combined)
            answer["byKind"] = dict(sorted(by_kind.items()))
            answer["byFileTop20"] = dict(by_file.most_common(20))
            answer["hasMore"] = False
            p = Packer(answer=answer, max_tokens=max_tokens, echo_budget=prm.max_tokens is not None)
            p.omit(UNREAD, unread, UNREAD_HINT)
            return self._done(p)
        page = combined[prm.offset:prm.offset + prm.limit]
        # a page that holds sure hits (exact names, phrases found verbatim) stops after them:
        # the approximate BM25 matches that would fill it are counted, with the offset that
        # shows them — they are near misses once the named symbol was found
        sure = len(exact) + len(literal)
        cut = 0 < sure - prm.offset < len(page)
        if cut:
            page = page[:sure - prm.offset]
        answer["hasMore"] = prm.offset + len(page) < total
        p = Packer(answer=answer, max_tokens=max_tokens, echo_budget=prm.max_tokens is not None)
        p.omit(UNREAD, unread, UNREAD_HINT)
        if cut:
            p.omit(NEAR, total - sure, f"ask again with offset {sure}")
        answer["results"] = []
        shown = 0
        for r, leg in page:
            item: dict[str, Any] = {"qualifiedName": r.qname, "kind": r.kind, "path": r.path,
                                    "range": [r.start_line, r.end_line], "match": leg}
            if leg == "literal":
                item["line"] = lines[r.id]  # where the phrase is written
            if prm.mode == "full" or not names_itself(r.qname, r.name):
                item["name"] = r.name
            if prm.mode == "full" and r.signature:
                item["signature"] = r.signature
                if r.summary:
                    item["summary"] = r.summary
            if leg == "approximate":
                item["legs"] = legs_of[r.id]
            if prm.include_ids:
                item["id"] = f"{store.graph_id}:{r.id}"
            if p.add("results", item, "results", "raise maxTokens or use a smaller limit"):
                shown += 1
        if (answer["hasMore"] and not (cut and shown == len(page))) or shown < len(page):
            nxt = prm.offset + shown
            answer["paginationHint"] = f"more results: ask again with offset {nxt}"
        if answer["hasMore"] or shown < len(page):
            p.set("cursor", paging.encode(self.app, cursor_key, prm.offset + shown), "cursor",
                  "ask again with offset")
        if prm.offset == 0 and prm.kind is None:  # modules whose name holds the query (context/deps.py)
            add_search_modules(self, p, q)
        return self._done(p)

    def _approximate(self, retriever: Retriever, q: str, need: int, seen: set[int], kind: str | None,
                     run: bool) -> tuple[list[SymbolRow], dict[int, list[str]], list[Any], int]:
        """The approximate part of a search: the lexical leg (BM25 over stemmed fields) and the
        dense leg fused by RRF (k = 60, at most 10 candidates each, role priors applied) for
        the first ranks, then the rest of the lexical ranking for further pages. Returns the
        rows (not in ``seen``, of ``kind``), each one's legs, the provenance entries and the
        approximate total. ``run`` False: only the count and provenance (the page is full)."""
        cfg = retriever.config
        report: list[Any] = ["lexical"] if cfg.lexical else []
        total = retriever.count_lexical(q) if cfg.lexical else 0
        if not run:
            return [], {}, report, total
        ok = lambda r: r.id not in seen and (kind is None or r.kind == kind)
        lex = [r for r, _ in retriever.lexical_search(q, min(need + LEG_LIMIT * LEG_POOL, 5000))] if cfg.lexical else []
        asked = asked_roles(q) if cfg.priors else set()
        pri = (lambda r: prior(row_role(r), asked)) if cfg.priors else (lambda r: 1.0)
        head = sorted(enumerate(lex[:LEG_LIMIT * LEG_POOL]), key=lambda x: (-pri(x[1]) / (RRF_K + x[0] + 1), x[0]))
        lex_ids = [r.id for _, r in head if ok(r)][:LEG_LIMIT]
        rows = {r.id: r for r in lex}
        dense_ids: list[int] = []
        if cfg.dense:
            dense_ids, entry = retriever.dense_leg(q, rows, Deadline())
            dense_ids = [i for i in dense_ids if ok(rows[i])]
            report.append(entry)
        fused = rrf([[str(i) for i in lex_ids], [str(i) for i in dense_ids]], RRF_K)
        order = sorted((int(k) for k, _ in fused),
                       key=lambda i: (-dict(fused)[str(i)] * pri(rows[i]), rows[i].qname, rows[i].path))
        legs_of = {i: sorted({"lexical"} if i in lex_ids else set()) + (["dense"] if i in dense_ids else [])
                   for i in order}
        tail = [r for r in lex if r.id not in legs_of and ok(r)]
        for r in tail:
            legs_of[r.id] = ["lexical"]
        out = [rows[i] for i in order] + tail
        for r in out:
            seen.add(r.id)
        total += sum(1 for i in dense_ids if i not in lex_ids and rows[i] not in lex)
        return out, legs_of, report, total

    def snippet(self, prm: SnippetParams) -> dict[str, Any]:
        max_tokens = normalize_max_tokens(prm.max_tokens, DEFAULT_CONTEXT)
        s, extra = self.resolve_selector(prm.selector)
        if s is None:
            return self._not_found(extra, max_tokens, ["exact"], prm.max_tokens is not None)
        alternatives = extra.pop(ALTERNATIVES, [])
        path = os.path.join(self.app.workspace.root, s.path)
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except OSError as e:
            raise InvalidParams("selector", f"the file of {s.qname} cannot be read ({e.__class__.__name__})") from e
        mode = prm.mode
        omitted_lines = 0
        extra = self.app.policy.redact_patterns if self.app.policy is not None else ()
        if mode == "signature":
            text = redact(s.signature, extra)
        else:
            # redact the whole range before cutting it: a cut inside a multi-line secret (a PEM
            # body, a YAML block value) would leave lines that no longer look like one
            body = redact("\n".join(lines[s.start_line - 1:s.end_line]), extra).splitlines()
            cap = prm.max_lines
            if len(body) > cap:
                head = max(1, int(cap * 0.6))
                tail = max(1, cap - head)
                omitted_lines = len(body) - head - tail
                body = body[:head] + [f"[... {omitted_lines} lines omitted ...]"] + body[-tail:]
                mode = "head_tail"
            text = "\n".join(body)
        answer = {"found": True, "qualifiedName": s.qname, "path": s.path,
                  "range": {"startLine": s.start_line, "endLine": s.end_line}, "mode": mode,
                  "omittedLines": omitted_lines, "maxTokens": max_tokens,
                  "provenance": self._provenance(["exact", "disk"])}
        p = _with_alternatives(Packer(answer=answer, max_tokens=max_tokens, echo_budget=prm.max_tokens is not None),
                               alternatives)
        if not p.set("text", text, "snippet text", "use mode head_tail or signature, or raise maxTokens"):
            # shrink to what fits, by lines
            lines2 = text.splitlines()
            while lines2 and not p.fits({"text": "\n".join(lines2)}):
                lines2 = lines2[: max(0, len(lines2) * 3 // 4)]
            p.set("text", "\n".join(lines2))
        return self._done(p)

    def minimal_context(self, prm: MinimalContextParams) -> dict[str, Any]:
        check_len("task", prm.task, TASK_MAX)
        if not prm.task.strip():
            raise InvalidParams("task", "is empty; describe the task in words or name a symbol")
        if len(prm.paths) > PATHS_MAX:
            raise InvalidParams("paths", f"has {len(prm.paths)} entries; the limit is {PATHS_MAX}")
        for i, pth in enumerate(prm.paths):
            check_len(f"paths[{i}]", pth, 4096)
        dl = Deadline()
        max_tokens = normalize_max_tokens(prm.max_tokens, DEFAULT_MINIMAL)
        rels = [self._rel(pth, f"paths[{i}]") for i, pth in enumerate(prm.paths)]
        store = self.store
        got = Retriever(self.app, store).rank(prm.task, dl, rels)
        rows = got.rows
        order = got.order
        # what is shown: the exact current matches, then the best approximate candidates —
        # all of them up to the card limit when the task names nothing, the NEAR_WITH_SURE
        # best when it does; candidates far weaker than the best approximate one (a word that
        # names many symbols, a test the role prior set back) are counted, not shown
        sure = [i for i in order if i in got.sure]
        approx = [i for i in order if i not in got.sure and i not in got.set_back]
        best = got.score.get(approx[0], 0.0) if approx else 0.0
        approx = [i for i in approx if got.score.get(i, 0.0) >= best * WEAK_FRACTION]
        if sure:
            approx = approx[:NEAR_WITH_SURE]
        strong = sure + approx
        # a module's card says less than a card of a symbol in it, which names the same file
        member_files = {rows[i].path for i in strong if rows[i].kind != "module"}
        strong = [i for i in strong if rows[i].kind != "module" or rows[i].path not in member_files]
        answer: dict[str, Any] = {"maxTokens": max_tokens, "provenance": self._provenance(got.provenance)}
        p = Packer(answer=answer, max_tokens=max_tokens, echo_budget=prm.max_tokens is not None)
        p.omit(UNREAD, got.unread, UNREAD_HINT)
        answer["cards"] = []
        callers_of = store.callers_many((rows[i].qname for i in strong[:MINIMAL_CARDS]), limit=3)
        carded: set[int] = set()
        for i in strong[:MINIMAL_CARDS]:
            dl.check()
            r = rows[i]
            card: dict[str, Any] = {"qualifiedName": r.qname, "kind": r.kind}
            if r.signature:
                card["signature"] = r.signature
            card.update({"path": r.path, "range": [r.start_line, r.end_line], "legs": sorted(got.legs.get(i, ()))})
            if i in got.lines:
                card["line"] = got.lines[i]  # where the quoted phrase / identifier is written
            if r.summary:
                card["summary"] = r.summary
            callers = callers_of.get(r.qname, [])
            if callers:
                card["callers"] = [c.caller for c in callers]
            if prm.include_ids:
                card["id"] = f"{store.graph_id}:{r.id}"
            if p.add("cards", card, "candidate symbols", "raise maxTokens or name the symbol"):
                carded.add(i)
        if len(strong) > MINIMAL_CARDS:
            p.omit("candidate symbols", len(strong) - MINIMAL_CARDS, "narrow the task or pass paths")
        if len(order) > len(strong):
            p.omit("weaker candidates", len(order) - len(strong), "name an identifier, or search the words")
        # the candidates left out are named (best first, at most OMITTED_LISTED, as many as the
        # budget holds after the cards), so that a client can show them and add one
        in_strong = set(strong)
        _list_candidates(p, rows, got.legs, [
            ("candidate symbols", [i for i in strong if i not in carded]),
            ("weaker candidates", [i for i in order if i not in in_strong])])
        if not order:
            answer["followUp"] = "no indexed symbol matches the task; name an identifier or pass paths"
        return self._done(p)

    def pr_context(self, prm: PrContextParams) -> dict[str, Any]:
        if prm.diff is not None:
            check_len("diff", prm.diff, DIFF_MAX)
        dl = Deadline()
        max_tokens = normalize_max_tokens(prm.max_tokens, DEFAULT_CONTEXT)
        diff = prm.diff
        if diff is None:
            if not prm.base:
                raise InvalidParams("diff", "give a unified diff or base (and optionally head) refs")
            diff = self._git_diff(prm.base, prm.head)
        changes = parse_unified_diff(diff)
        if len(changes) > 1000:
            raise InvalidParams("diff", f"touches {len(changes)} files; the limit is 1000")
        store = self.store
        changed: list[tuple[SymbolRow, str]] = []
        files_out = []
        in_files = store.symbols_in_files(path for path, _, status in changes if status != "deleted")
        for path, ranges, status in changes:
            dl.check()
            files_out.append({"path": path, "status": status, "hunks": len(ranges)})
            if status == "deleted":
                continue
            for s in in_files.get(path, []):
                if s.kind == "module":
                    continue
                if any(a <= s.end_line and s.start_line <= b for a, b in ranges):
                    changed.append((s, status))
        # keep innermost symbols only when a container also matched? keep both; containers first
        answer: dict[str, Any] = {"files": files_out[:100], "maxTokens": max_tokens,
                                  "provenance": self._provenance(["diff", "graph"])}
        p = Packer(answer=answer, max_tokens=max_tokens, echo_budget=prm.max_tokens is not None)
        if len(files_out) > 100:
            p.omit("files", len(files_out) - 100, "the file list is capped at 100")
        answer["changed"] = []
        checked = 0
        omitted_callers = 0
        # every changed symbol's callers, counts and caller units in a few batch reads
        qs = [s.qname for s, _ in changed]
        counts, _, unresolved_of = store.relation_counts(qs, (s.name for s, _ in changed))
        callers_of = {q: production_first(rows)[:25] for q, rows in store.callers_many(qs, limit=100).items()}
        units = store.symbols_by_qnames({c.caller for rows in callers_of.values() for c in rows})
        for s, status in changed:
            dl.check()
            n_callers = counts.get(s.qname, 0)
            callers = callers_of.get(s.qname, [])
            checked += len(callers)
            omitted_callers += max(0, n_callers - len(callers))
            tests = [c.caller for c in callers if any(r.is_test or r.kind == "test"
                                                      for r in units.get(c.caller, []))]
            item = {"qualifiedName": s.qname, "kind": s.kind, "path": s.path, "range": [s.start_line, s.end_line],
                    "signature": s.signature,
                    "callers": [with_resolution({"qualifiedName": c.caller, "path": c.path, "line": c.line},
                                                c.resolution, c.confidence) for c in callers[:10]],
                    "callerCount": n_callers}
            # no tests and no unresolved candidates are left out (absent = none, 0)
            if tests:
                item["tests"] = sorted(set(tests))[:10]
            unresolved = unresolved_of.get(s.name, 0)
            if unresolved:
                item["unresolvedCandidates"] = unresolved
            p.add("changed", item, "changed symbols", "raise maxTokens or split the diff")
        pr_dependencies(self, p, changes, diff, prm.base, prm.head)  # findings, modules (context/deps.py)
        answer["publicCallers"] = {"checked": checked}
        if omitted_callers:  # absent: 0
            answer["publicCallers"]["omitted"] = omitted_callers
        return self._done(p)

    def _git_diff(self, base: str, head: str | None) -> str:
        import subprocess

        for name, ref in (("base", base), ("head", head)):
            if ref is not None and not re.fullmatch(r"[A-Za-z0-9_./@^~{}-]{1,256}", ref) or (ref or "").startswith("-"):
                raise InvalidParams(name, "is not a valid git ref")
        args = ["git", "-C", str(self.app.workspace.root), "diff", "--no-color", "--unified=0", base]
        if head:
            args.append(head)
        try:
            out = subprocess.run(args, capture_output=True, timeout=8, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as e:
            raise InvalidParams("base", f"git diff failed ({e.__class__.__name__})") from e
        if out.returncode != 0:
            raise InvalidParams("base", "git diff failed: " + out.stderr.decode("utf-8", "replace")[:200])
        if len(out.stdout) > DIFF_MAX:
            raise InvalidParams("diff", f"the diff between the refs is over {DIFF_MAX} bytes")
        return out.stdout.decode("utf-8", "replace")


_TEST_PATH = re.compile(r"(^|/)(tests?|testing|testdata|__tests__|spec)(/|$)|(^|/)test_[^/]*$|_test\.\w+$"
                        r"|\.(test|spec)\.\w+$|Tests?\.\w+$")


def _list_candidates(p: Packer, rows: list[SymbolRow], legs: dict[int, Any],
                     groups: list[tuple[str, list[int]]]) -> None:
    """Name the candidates ``minimalContext`` left out in their ``omitted`` notes, under
    ``candidates``: ``{qualifiedName, kind, path, line, legs}`` (the legs that found it: why it
    is a candidate), at most OMITTED_LISTED over all notes, in rank order, only while they fit
    the budget (each note keeps its full count)."""
    n = 0
    for what, idxs in groups:
        listed: list[dict[str, Any]] = []
        for i in idxs:
            if n >= OMITTED_LISTED:
                break
            r = rows[i]
            item: dict[str, Any] = {"qualifiedName": r.qname, "kind": r.kind, "path": r.path, "line": r.start_line}
            found_by = sorted(legs.get(i, ()))
            if found_by:
                item["legs"] = found_by
            if tokens_for(len(dumps([*listed, item])) + len("candidates") + 4) > p.room():
                break
            listed.append(item)
            n += 1
        if listed:
            p.omit(what, 0, items=listed, key="candidates")


def _with_alternatives(p: Packer, alternatives: list[dict[str, Any]]) -> Packer:
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


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def parse_unified_diff(diff: str) -> list[tuple[str, list[tuple[int, int]], str]]:
    """[(path, [(start, end) new-side line ranges], status)] for each file in a unified diff."""
    out: list[tuple[str, list[tuple[int, int]], str]] = []
    cur: tuple[str, list[tuple[int, int]], str] | None = None
    old_path = ""
    for line in diff.splitlines():
        if line.startswith("--- "):
            old_path = line[4:].strip().split("\t")[0]
            continue
        if line.startswith("+++ "):
            new = line[4:].strip().split("\t")[0]
            status = "modified"
            if new == "/dev/null":
                new, status = old_path, "deleted"
            elif old_path == "/dev/null":
                status = "added"
            path = re.sub(r"^[ab]/", "", new)
            cur = (path, [], status)
            out.append(cur)
            continue
        m = _HUNK.match(line)
        if m and cur is not None:
            start = int(m.group(3))
            count = int(m.group(4)) if m.group(4) is not None else 1
            if cur[2] == "deleted":
                start = int(m.group(1))
                count = int(m.group(2)) if m.group(2) is not None else 1
            cur[1].append((start, start + max(count, 1) - 1))
    return out
