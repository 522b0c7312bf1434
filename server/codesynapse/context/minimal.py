"""minimalContext: the few symbol cards a task needs, and the candidates left out, named."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from codesynapse.context.budget import (
    Deadline,
    Packer,
    dumps,
    normalize_max_tokens,
    tokens_for,
)
from codesynapse.context.models import (
    PATHS_MAX,
    TASK_MAX,
    MinimalContextParams,
    check_len,
)
from codesynapse.context.reader import UNREAD, UNREAD_HINT, ContextReader
from codesynapse.context.retrieval import TYPE_KINDS, Retriever, method_key, supertypes
from codesynapse.errors import InvalidParams
from codesynapse.graph.model import SymbolRow

DEFAULT_MINIMAL = 1_500
MINIMAL_CARDS = 8  # DESIGN "at most 8 entries kept after graph hydration"
NEAR_WITH_SURE = 3  # minimalContext shows this many approximate candidates beside the symbols the task names
WEAK_FRACTION = 0.25  # candidates the role prior set back scoring under this share of the best one are counted, not shown
ABSTRACT_KINDS = frozenset({"interface", "trait"})  # types whose methods declare what others implement
OMITTED_LISTED = 10  # minimalContext names at most this many of the candidates it leaves out


class MinimalContextAnswers:
    """The minimalContext answer."""

    def __init__(self, reader: ContextReader):
        self.r = reader

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
        rels = [self.r.rel(pth, f"paths[{i}]") for i, pth in enumerate(prm.paths)]
        store = self.r.store
        got = Retriever(self.r.app, store).rank(prm.task, dl, rels)
        rows = got.rows
        order = got.order
        # what is shown: the exact current matches, then the best approximate candidates —
        # all of them up to the card limit when the task names nothing, the NEAR_WITH_SURE
        # best when it does. Code the task did not ask about (a test, an example, a doc the
        # role prior set back) is counted, not shown, when far weaker than the best approximate
        # candidate; library code is not cut by score: the fused scores are reciprocal ranks,
        # so a candidate a quarter of the best is one that a single leg found (or the graph
        # stage one hop from a hit), and the card limit, not its score, bounds the answer
        sure = [i for i in order if i in got.sure]
        approx = [i for i in order if i not in got.sure and i not in got.set_back]
        best = got.score.get(approx[0], 0.0) if approx else 0.0
        approx = [i for i in approx if i not in got.role_back or got.score.get(i, 0.0) >= best * WEAK_FRACTION]
        if sure:
            approx = approx[:NEAR_WITH_SURE]
        strong = sure + approx
        # a module's card says less than a card of a symbol in it, which names the same file
        member_files = {rows[i].path for i in strong if rows[i].kind != "module"}
        strong = [i for i in strong if rows[i].kind != "module" or rows[i].path not in member_files]
        # what the request names (an identifier, a file of ``paths``) is shown as it ranks
        named = set(sure) | {i for i in strong if "path" in got.legs.get(i, ())}
        shown = distinct_cards(strong, rows, named, MINIMAL_CARDS, _siblings(store, rows, strong, named))
        answer: dict[str, Any] = {"maxTokens": max_tokens, "provenance": self.r.provenance(got.provenance)}
        p = Packer(answer=answer, max_tokens=max_tokens, echo_budget=prm.max_tokens is not None)
        p.omit(UNREAD, got.unread, UNREAD_HINT)
        answer["cards"] = []
        callers_of = store.callers_many((rows[i].qname for i in shown), limit=3)
        carded: set[int] = set()
        for i in shown:
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
        if len(strong) > len(shown):
            p.omit("candidate symbols", len(strong) - len(shown), "narrow the task or pass paths")
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
        return self.r.done(p)


def distinct_cards(order: list[int], rows: dict[int, SymbolRow], keep: set[int], limit: int,
                   siblings: Callable[[tuple[str, str], str, str], bool] | None = None) -> list[int]:
    """The candidates of ``order`` shown as cards, at most ``limit``, best first, chosen so that
    no card repeats what another card shown says (diversity in the card selection); ``keep``,
    what the request names, is always shown:

    - a qualified name is shown once, at its best place: the symbols sharing one (overloads,
      the bodies of an enum's constants overriding one method, a definition written twice)
      would fill the places with cards of the same name;
    - so is one method (name and parameter list, ``method_key``) implemented by sibling types
      (the decoders of one base, the implementations of one interface): each does the same
      work for its type, under the same signature. ``siblings(key, a, b)`` says whether types
      ``a`` and ``b`` are such siblings: an override beside the method it overrides is not a
      repeat (the subtype's does the work the base's names, or the reverse), nor is the same
      method of types unrelated by inheritance (a builder's setter and the one of the object
      it configures, which does the work);
    - a type is not shown beside a card of one of its own members, whose card names the type
      (its qualified name) and the file, as a symbol's card does its module's.

    The choice is made on the cards shown, so a candidate passed over gives its place to the
    next one; the candidates passed over are named among the omitted ones, in their own order."""
    passed: set[int] = set()
    while True:
        shown: list[int] = []
        names: set[str] = set()
        methods: dict[tuple[str, str], list[str]] = {}  # a method's key -> the types shown with it
        for i in order:
            if len(shown) >= limit:
                break
            if i in passed:
                continue
            if rows[i].qname in names and i not in keep:
                passed.add(i)
                continue
            key = method_key(rows[i])
            if key is not None and i not in keep and siblings is not None:
                parent = rows[i].parent
                if any(siblings(key, p, parent) for p in methods.get(key, ())):
                    passed.add(i)
                    continue
                methods.setdefault(key, []).append(parent)
            names.add(rows[i].qname)
            shown.append(i)
        parents = {(rows[i].parent, rows[i].path) for i in shown if rows[i].parent}
        types = {i for i in shown if i not in keep and rows[i].kind in TYPE_KINDS
                 and (rows[i].qname, rows[i].path) in parents}
        if not types:
            return shown
        passed |= types


def _siblings(store, rows: dict[int, SymbolRow], order: list[int], keep: set[int]
              ) -> Callable[[tuple[str, str], str, str], bool]:
    """``distinct_cards``' test of sibling types, for the types whose methods share a method key
    among the approximate candidates of ``order`` (nothing is read when none do): two types are
    siblings for a method when neither derives from the other and they share a supertype
    (``retrieval.supertypes``). An interface (a trait) with the same method among them is the
    base of the others, also where the language implements interfaces without naming them
    (Go), so the index has no edge to it."""
    by_key: dict[tuple[str, str], dict[str, str]] = {}
    for i in order:
        key = method_key(rows[i])
        if key is not None and i not in keep:
            by_key.setdefault(key, {}).setdefault(rows[i].parent, rows[i].path)
    by_key = {k: ts for k, ts in by_key.items() if len(ts) > 1}
    types = {t: pth for ts in by_key.values() for t, pth in ts.items()}
    sups = supertypes(store, types) if types else {}
    found = store.symbols_by_qnames(types) if types else {}
    abstract = {t for t in types if any(x.kind in ABSTRACT_KINDS for x in found.get(t, ()))}

    def up(key: tuple[str, str], t: str) -> set[str]:
        return sups.get(t, set()) | {b for b in abstract if b != t and b in by_key.get(key, {})}

    def siblings(key: tuple[str, str], a: str, b: str) -> bool:
        ua, ub = up(key, a), up(key, b)
        return a != b and a not in ub and b not in ua and bool(ua & ub)

    return siblings


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
