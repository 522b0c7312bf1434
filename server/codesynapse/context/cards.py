"""symbolCard, symbolContext (the card, the rest of its lists by cursor, related cards) and snippet."""

from __future__ import annotations

import os
from typing import Any

from codesynapse.context import paging
from codesynapse.context.budget import Deadline, Packer, normalize_max_tokens
from codesynapse.context.deps import count_card_findings
from codesynapse.context.models import SnippetParams, SymbolParams
from codesynapse.context.reader import (
    ALTERNATIVES,
    DEFAULT_CONTEXT,
    TOP_N,
    WALK_CAP,
    ContextReader,
    production_first,
    with_alternatives,
)
from codesynapse.errors import InvalidParams
from codesynapse.extract.redact import redact
from codesynapse.graph.model import CallRow, SymbolRow

CONTEXT_PAGE = 100  # items per symbolContext page after the card (cursor)
RELATED_ROOM = 96  # symbolContext keeps the card's lists only with this much room left for related cards


class CardAnswers:
    """Answers about one symbol: its card, its context, its source."""

    def __init__(self, reader: ContextReader):
        self.r = reader

    def symbol_card(self, prm: SymbolParams) -> dict[str, Any]:
        max_tokens = normalize_max_tokens(prm.max_tokens, DEFAULT_CONTEXT)
        s, extra = self.r.resolve_selector(prm.selector)
        legs = ["exact"]
        if s is None:
            return self.r.not_found(extra, max_tokens, legs, prm.max_tokens is not None)
        alternatives = extra.pop(ALTERNATIVES, [])
        answer = {"found": True, "maxTokens": max_tokens, "provenance": self.r.provenance(legs), **extra}
        p = self.r.pack_card(answer, s, self.r.relations(s), max_tokens, prm.include_ids, echo=prm.max_tokens is not None)
        return self.r.done(with_alternatives(p, alternatives))
    def symbol_context(self, prm: SymbolParams) -> dict[str, Any]:
        dl = Deadline()
        max_tokens = normalize_max_tokens(prm.max_tokens, DEFAULT_CONTEXT)
        s, extra = self.r.resolve_selector(prm.selector)
        if s is None:
            return self.r.not_found(extra, max_tokens, ["exact"], prm.max_tokens is not None)
        rel = self.r.relations(s)
        if prm.cursor is not None:
            return self._relations_page(prm, s, rel, max_tokens)
        alternatives = extra.pop(ALTERNATIVES, [])
        p = self.r.pack_card({"found": True, "maxTokens": max_tokens, "provenance": self.r.provenance(["exact", "graph"]),
                             **extra}, s, rel, max_tokens, prm.include_ids, spare=RELATED_ROOM,
                            echo=prm.max_tokens is not None)
        with_alternatives(p, alternatives)
        answer = p.answer
        # the rest is what the full card's lists leave (a card packed without its lists under a
        # small budget counts those in ``omitted``: "card relations")
        card = answer.get("card", {})
        rest = self._relations_rest(s, rel, card if "callers" in card or "callees" in card else self.r.card(s, rel))
        if rest:  # the card's lists go on: the cursor pages the rest of them
            p.set("cursor", paging.encode(self.r.app, paging.key_of("symbolContext", s.qname, s.path), 0))
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
        units = self.r.store.symbols_by_qnames(q for _, q in shown)
        carded = [units[q][0] for role, q in shown if q in units and role not in ("caller", "test")]
        rels = self.r.relations_many(carded) if carded else {}
        counts = self.r.card_counts(carded) if carded else {}
        n_findings = count_card_findings(self.r.store, carded) or {}
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
                item = {"role": role, **self.r.ref(r, prm.include_ids)}
            else:
                item = {"role": role, **self.r.card(r, rels[r.qname], top=0, include_ids=prm.include_ids,
                                                  counts=counts[r.qname], findings=n_findings.get(r.qname))}
            p.add("related", item, f"related {role}s", "raise maxTokens or ask for that symbol's card")
        return self.r.done(p)
    def _relations_rest(self, s: SymbolRow, rel: dict[str, Any], card: dict[str, Any]) -> list[tuple[str, CallRow]]:
        """What the card's lists leave out, in a total order: every other caller unit
        (production first, by path, line, col), every other callee, then every other
        unresolved candidate site — one call row each."""
        store = self.r.store
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
        if s.kind != "module" and getattr(self.r.app.settings, "unresolved_candidates", True):
            shown = {(p_, ln) for _, p_, ln in listed["unresolved"]}
            out += [("unresolved", c) for c in store.unresolved_named(s.name, limit=WALK_CAP)
                    if (c.path, c.line) not in shown]
        return out
    def _relations_page(self, prm: SymbolParams, s: SymbolRow, rel: dict[str, Any], max_tokens: int) -> dict[str, Any]:
        """symbolContext with a cursor: the next page of what the card's caller / callee /
        unresolved lists left out (``CONTEXT_PAGE`` items, or what the budget holds), with a
        cursor while more remain and exact counts of what remains."""
        key = paging.key_of("symbolContext", s.qname, s.path)
        offset = paging.decode(self.r.app, prm.cursor, key)
        rest = self._relations_rest(s, rel, self.r.card(s, rel))
        answer: dict[str, Any] = {"found": True, "subject": self.r.ref(s, prm.include_ids), "maxTokens": max_tokens,
                                  "provenance": self.r.provenance(["exact", "graph"])}
        p = Packer(answer=answer, max_tokens=max_tokens, echo_budget=prm.max_tokens is not None)
        p.take({"cursor": "x" * 40})
        shown = offset
        for kind, c in rest[offset:offset + CONTEXT_PAGE]:
            if kind == "unresolved":
                item = {"path": c.path, "line": c.line, "name": c.callee, "from": c.caller}
            else:
                item = self.r.call_ref(c, "caller" if kind == "callers" else "callee")
                if kind == "callees":
                    item["path"] = c.path
            if not p.take(item):
                break
            answer.setdefault(kind, []).append(item)
            shown += 1
        for k in ("callers", "callees", "unresolved"):
            p.omit(f"{k} after this page", sum(1 for x, _ in rest[shown:] if x == k), "ask again with cursor")
        if shown < len(rest):
            answer["cursor"] = paging.encode(self.r.app, key, shown)
        return self.r.done(p)
    def snippet(self, prm: SnippetParams) -> dict[str, Any]:
        max_tokens = normalize_max_tokens(prm.max_tokens, DEFAULT_CONTEXT)
        s, extra = self.r.resolve_selector(prm.selector)
        if s is None:
            return self.r.not_found(extra, max_tokens, ["exact"], prm.max_tokens is not None)
        alternatives = extra.pop(ALTERNATIVES, [])
        path = os.path.join(self.r.app.workspace.root, s.path)
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except OSError as e:
            raise InvalidParams("selector", f"the file of {s.qname} cannot be read ({e.__class__.__name__})") from e
        mode = prm.mode
        omitted_lines = 0
        extra = self.r.app.policy.redact_patterns if self.r.app.policy is not None else ()
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
                  "provenance": self.r.provenance(["exact", "disk"])}
        p = with_alternatives(Packer(answer=answer, max_tokens=max_tokens, echo_budget=prm.max_tokens is not None),
                               alternatives)
        if not p.set("text", text, "snippet text", "use mode head_tail or signature, or raise maxTokens"):
            # shrink to what fits, by lines
            lines2 = text.splitlines()
            while lines2 and not p.fits({"text": "\n".join(lines2)}):
                lines2 = lines2[: max(0, len(lines2) * 3 // 4)]
            p.set("text", "\n".join(lines2))
        return self.r.done(p)
