"""search: exact names, the literal leg (phrases where they are written), then the
matching legs of minimalContext (lexical BM25 and dense, fused by RRF), paged."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import msgspec

from codesynapse.context import literals, paging
from codesynapse.context.budget import Deadline, Packer, normalize_max_tokens
from codesynapse.context.deps import add_search_modules
from codesynapse.context.models import SearchParams, check_len
from codesynapse.context.reader import (
    DEFAULT_CONTEXT,
    UNREAD,
    UNREAD_HINT,
    ContextReader,
    names_itself,
)
from codesynapse.context.retrieval import (
    LEG_LIMIT,
    LEG_POOL,
    Retriever,
    asked_roles,
    fuse,
    prior,
)
from codesynapse.errors import InvalidParams
from codesynapse.graph.model import SymbolRow
from codesynapse.memory.rrf import RRF_K

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[.:]{1,2}[A-Za-z_][A-Za-z0-9_]*)*")
NEAR = "approximate matches after the exact ones"


class SearchAnswers:
    """The search answer."""

    def __init__(self, reader: ContextReader):
        self.r = reader

    def search(self, prm: SearchParams) -> dict[str, Any]:
        check_len("query", prm.query, 4096)
        if not prm.query.strip():
            raise InvalidParams("query", "is empty; give a name or words to search for")
        # a cursor (the previous page's) stands for the offset it continues from
        cursor_key = paging.key_of("search", prm.query.strip(), prm.mode, prm.kind)
        pinned = None  # the dense hits the first page of a cursor walk fused (paging.encode)
        if prm.cursor is not None:
            if prm.offset:
                raise InvalidParams("cursor", "and offset both given; pass the cursor alone")
            offset, pinned = paging.decode_full(self.r.app, prm.cursor, cursor_key)
            prm = msgspec.structs.replace(prm, offset=offset, cursor=None)
        max_tokens = normalize_max_tokens(prm.max_tokens, DEFAULT_CONTEXT)
        store = self.r.store
        q = prm.query.strip()
        retriever = Retriever(self.r.app, store)
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
            ranked, legs_of, leg_report, total_approx, pinned = self._approximate(
                retriever, q, need + len(exact) + len(literal), seen, prm.kind, len(exact) + len(literal) < need,
                pinned)
        lines = {r.id: line for r, line in literal}
        combined = [(r, "exact") for r in exact] + [(r, "literal") for r, _ in literal] + \
            [(r, "approximate") for r in ranked]
        # the exact matches are among the lexical ones too: counted once
        total = max(len(exact) + len(literal) + max(0, total_approx - len(exact)), len(combined))
        # offset and limit are the request's own (paginationHint and omitted give the next offset)
        answer: dict[str, Any] = {"total": total, "maxTokens": max_tokens,
                                  "provenance": self.r.provenance(["exact"] + (["literal"] if literal else [])
                                                                 + leg_report)}
        if prm.mode == "summary":
            by_kind = Counter(r.kind for r, _ in combined)
            by_file = Counter(r.path for r, _ in combined)
            answer["byKind"] = dict(sorted(by_kind.items()))
            answer["byFileTop20"] = dict(by_file.most_common(20))
            answer["hasMore"] = False
            p = Packer(answer=answer, max_tokens=max_tokens, echo_budget=prm.max_tokens is not None)
            p.omit(UNREAD, unread, UNREAD_HINT)
            return self.r.done(p)
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
            p.set("cursor", paging.encode(self.r.app, cursor_key, prm.offset + shown, pinned), "cursor",
                  "ask again with offset")
        if prm.offset == 0 and prm.kind is None:  # modules whose name holds the query (context/deps.py)
            add_search_modules(self.r, p, q)
        return self.r.done(p)
    def _approximate(self, retriever: Retriever, q: str, need: int, seen: set[int], kind: str | None,
                     run: bool, pinned: tuple[Any, ...] | None = None
                     ) -> tuple[list[SymbolRow], dict[int, list[str]], list[Any], int, tuple[Any, ...] | None]:
        """The approximate part of a search, through minimalContext's matching legs: the lexical
        leg (BM25 over stemmed fields, its pool ordered as there) and the dense leg, fused by RRF
        (k = 60, at most 10 candidates each; role priors applied) for the first ranks, then the
        rest of the lexical ranking for further pages. A search lists matches of its words: the
        legs that infer code the query does not match — the graph hop and the ``tested`` leg
        (what the tests in the pools call) — are minimalContext's only (a search for "cart
        total" must not put a function that only a cart test calls before ``Cart.total``).
        Returns the rows (not in ``seen``, of ``kind``), each one's legs, the provenance entries
        and the approximate total, and the dense hits to pin in the page's cursor. ``run``
        False: only the count and provenance (the page is full). ``pinned`` (from a cursor): the
        dense hits and state of the walk's first page, used instead of asking the dense leg
        again — its answer can change while the index does not (vectors still being embedded,
        a query that timed out), and a walk must not skip or repeat a result when it does."""
        cfg = retriever.config
        report: list[Any] = ["lexical"] if cfg.lexical else []
        total = retriever.count_lexical(q) if cfg.lexical else 0
        if not run:
            return [], {}, report, total, pinned
        ok = lambda r: r.id not in seen and (kind is None or r.kind == kind)
        got = retriever.lexical_search(q, min(need + LEG_LIMIT * LEG_POOL, 5000)) if cfg.lexical else []
        # the leg's pool in minimalContext's order (BM25 times the coordination factor), then the rest
        lex = [r for r, _ in retriever.lexical_pool(q, got[:LEG_LIMIT * LEG_POOL])] + \
            [r for r, _ in got[LEG_LIMIT * LEG_POOL:]]
        asked = asked_roles(q) if cfg.priors else set()
        pri = (lambda r: prior(retriever.role(r), asked)) if cfg.priors else (lambda r: 1.0)
        head = sorted(enumerate(lex[:LEG_LIMIT * LEG_POOL]), key=lambda x: (-pri(x[1]) / (RRF_K + x[0] + 1), x[0]))
        lex_ids = [r.id for _, r in head if ok(r)][:LEG_LIMIT]
        rows = {r.id: r for r in lex}
        dense_ids: list[int] = []
        if cfg.dense:
            if pinned is not None:
                ids, state = pinned[0], pinned[1]
                for i in ids:
                    if i not in rows and (r := retriever.store.symbol_by_id(i)) is not None:
                        rows[i] = r
                dense_ids = [i for i in ids if i in rows]
                entry: Any = "dense" if not state else {
                    "leg": "dense", "state": state, "reason": "as on the first page (the cursor keeps its dense hits)"}
            else:
                dense_ids, entry = retriever.dense_leg(q, rows, Deadline())
                pinned = (list(dense_ids), "" if entry == "dense" else str(entry.get("state", "unavailable"))[:16])
            dense_ids = [i for i in dense_ids if ok(rows[i])]
            report.append(entry)
        fused = fuse([lex_ids, dense_ids], [None, None])
        order = sorted(fused, key=lambda i: (-fused[i] * pri(rows[i]), rows[i].qname, rows[i].path))
        legs_of = {i: [leg for leg, ids in (("lexical", lex_ids), ("dense", dense_ids)) if i in ids] for i in order}
        tail = [r for r in lex if r.id not in legs_of and ok(r)]
        for r in tail:
            legs_of[r.id] = ["lexical"]
        out = [rows[i] for i in order] + tail
        for r in out:
            seen.add(r.id)
        lex_set = {r.id for r in lex}
        total += len({i for i in dense_ids if i not in lex_ids and i not in lex_set})
        return out, legs_of, report, total, pinned
