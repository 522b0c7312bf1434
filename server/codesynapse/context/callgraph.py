"""callGraph: the units on one or both sides of a symbol to a depth, paged per direction."""

from __future__ import annotations

from typing import Any

from codesynapse.context import paging
from codesynapse.context.budget import Deadline, Packer, normalize_max_tokens
from codesynapse.context.models import CallGraphParams
from codesynapse.context.reader import (
    ALTERNATIVES,
    DEFAULT_CONTEXT,
    WALK_CAP,
    ContextReader,
    production_first,
    with_alternatives,
    with_resolution,
)
from codesynapse.errors import InvalidParams
from codesynapse.graph.model import CallRow, SymbolRow

MAX_DEPTH = 3
MAX_LIMIT = 200


class CallGraphAnswers:
    """The call graph answer."""

    def __init__(self, reader: ContextReader):
        self.r = reader

    def call_graph(self, prm: CallGraphParams) -> dict[str, Any]:
        dl = Deadline()
        max_tokens = normalize_max_tokens(prm.max_tokens, DEFAULT_CONTEXT)
        depth = max(1, min(MAX_DEPTH, prm.depth))
        limit = max(1, min(MAX_LIMIT, prm.limit))
        if prm.cursor is not None and prm.direction == "both":
            raise InvalidParams("cursor", "pages one direction; ask with direction callers or callees and the "
                                          "cursor of that section")
        s, extra = self.r.resolve_selector(prm.selector)
        if s is None:
            return self.r.not_found(extra, max_tokens, ["exact"], prm.max_tokens is not None)
        dirs = ["callers", "callees"] if prm.direction == "both" else [prm.direction]
        keys = {d: paging.key_of("callGraph", s.qname, s.path, d, depth) for d in dirs}
        offset = paging.decode(self.r.app, prm.cursor, keys[dirs[0]]) if prm.cursor is not None else 0
        # the request is not repeated: the sections present say the direction; depth and limit
        # are given only when they were clamped, with what was asked
        answer: dict[str, Any] = {"found": True, "root": self.r.ref(s, prm.include_ids)}
        if depth != prm.depth:
            answer.update({"depth": depth, "depthRequested": prm.depth})
        if limit != prm.limit:
            answer.update({"limit": limit, "limitRequested": prm.limit})
        answer.update({"maxTokens": max_tokens, "provenance": self.r.provenance(["exact", "graph"])})
        alternatives = extra.pop(ALTERNATIVES, [])
        answer.update(extra)
        p = with_alternatives(Packer(answer=answer, max_tokens=max_tokens, echo_budget=prm.max_tokens is not None),
                               alternatives)
        show_unresolved = getattr(self.r.app.settings, "unresolved_candidates", True)
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
            units = self.r.store.symbols_by_qnames(x for k, x in items[start:stop] if k == "node")
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
                section["cursor"] = paging.encode(self.r.app, keys[d], shown)
        return self.r.done(p)
    def _walk(self, s: SymbolRow, d: str, depth: int, dl: Deadline
              ) -> tuple[dict[str, int], dict[str, list[CallRow]], list[CallRow], int]:
        """Every unit on one side of ``s`` to ``depth`` (qname → level, in a total order: BFS,
        callers production first, each unit's rows by (path, line, col, callee)), the call
        sites on each far end, the unresolved candidate sites (callers: unbound calls of
        that name; callees: unbound calls made by ``s``) and their count."""
        store = self.r.store
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
