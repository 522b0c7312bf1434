"""Memory that knows the code: anchors from memory entities to code symbols.

An anchor is written by ``remember`` (``entities[i].anchors``: qualified names, or LSP
positions resolved to the innermost symbol defined around them), validated against this
workspace's code graph at write time — an anchor that names no symbol is InvalidParams
naming it, never a dangling row — and stored by stable symbol identity: qualified name +
file + the content hash the graph keeps per symbol (the SHA-1 of its definition's bytes),
under the entity's own tenant/namespace/session.

A fact may name code the same way (``facts[i].anchors``, InvalidParams naming
``facts[i].anchors[j]``): its anchors are stored in the same rows with the fact's id as their
owner and the fact's visibility, read only while the fact is live, and go through the same
staleness pass. Recall hydrates each anchor (of an entry or of a fact) into where the symbol
is now and a one-line card; context answers list the entities and facts anchored to the
symbols they return.

Staleness (``reconcile``): after every index update (live didChange/didSave and full
index), the anchors in the files it touched are compared with the graph:

- same qualified name in the same file, same hash: current (its line follows the code);
- same qualified name in the same file, other hash: ``changed``;
- gone from there, but a symbol with the same content hash exists (a file rename or move, a
  rename of its class or module — the definition's bytes are unchanged): re-anchored to it,
  ``moved``, with ``previous`` saying where it was;
- gone from there, and a symbol of the same kind in the same file is the same definition under
  a new name (its bytes, read back from the indexed file and checked against its hash, with
  its own name written back as the old one — the first occurrence, or all of them for a
  recursive function renamed with its calls — hash to the anchor's hash): renamed in place,
  re-anchored the same way (``moved``, ``previous``; the anchor takes the new symbol's hash);
- otherwise ``removed`` (a rename with any other change in the definition among them: a
  renamed and edited symbol cannot be told from a deleted one and a new one) (kept, and checked again when a symbol of its name appears: a move
  across two live saves re-anchors it then).

Nothing is deleted: only ``forget`` removes a memory.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from codesynapse.errors import InvalidParams, StoreError
from codesynapse.memory.models import MAX_ANCHORS, AnchorOut, AnchorPosition
from codesynapse.scope import Scope
from codesynapse.store.memory import AnchorRecord, AnchorSpec, MemoryStore

log = logging.getLogger(__name__)

MAX_CANDIDATES = 5  # symbols named in an "ambiguous anchor" error
CARD_MAX_CHARS = 160


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class CodeView:
    """What memory needs of the code side: the graph store (read at call time: an App may
    reopen it) and the workspace root (to turn a position's ``uri`` into a path)."""

    def __init__(self, graph: Callable[[], Any], root: Path | str):
        self._graph = graph
        self.root = Path(root)

    @property
    def graph(self) -> Any:
        return self._graph()

    def relpath(self, uri: str, field: str) -> str:
        from urllib.parse import unquote, urlparse

        if uri.startswith("file:"):
            path = Path(unquote(urlparse(uri).path))
        else:
            path = Path(uri)
        if not path.is_absolute():
            path = self.root / path
        try:
            rel = path.resolve().relative_to(self.root.resolve())
        except ValueError as e:
            raise InvalidParams(field, "the position's uri is outside this workspace") from e
        return rel.as_posix()


def spec_of(sym: Any) -> AnchorSpec:
    return AnchorSpec(qname=sym.qname, name=sym.name, path=sym.path, hash=sym.hash, kind=sym.kind,
                      line=sym.start_line)


def resolve_anchors(code: CodeView | None, anchors: Sequence[Any], field: str) -> list[AnchorSpec]:
    """Validate and resolve the anchors of one entity against the graph (InvalidParams naming
    ``field[j]`` for one that names no symbol, or names several)."""
    if len(anchors) > MAX_ANCHORS:
        raise InvalidParams(field, f"has {len(anchors)} anchors; the limit is {MAX_ANCHORS}")
    if not anchors:
        return []
    if code is None:
        raise InvalidParams(field, "anchors need this workspace's code index, which this memory "
                                   "service has no access to")
    graph = code.graph
    out: dict[tuple[str, str], AnchorSpec] = {}
    for j, a in enumerate(anchors):
        f = f"{field}[{j}]"
        try:
            if isinstance(a, AnchorPosition):
                rel = code.relpath(a.uri, f + ".uri")
                sym = graph.symbol_at(rel, a.line + 1)
                if sym is None:
                    mods = [s for s in graph.symbols_in_file(rel) if s.kind == "module"]
                    if not mods:
                        raise InvalidParams(f, f"no indexed symbol at {rel}:{a.line + 1}")
                    sym = mods[0]
            else:
                name = a.strip()
                found = graph.symbols_by_qname(name)
                if not found:
                    raise InvalidParams(f, f"{name!r} names no symbol in this workspace's index "
                                           "(give a qualified name as symbolCard shows it, or a position)")
                if len(found) > 1:
                    where = ", ".join(f"{s.path}:{s.start_line}" for s in found[:MAX_CANDIDATES])
                    raise InvalidParams(f, f"{name!r} names {len(found)} symbols ({where}); "
                                           "anchor one by its position")
                sym = found[0]
        except StoreError as e:
            raise StoreError(f"{f}: the code index cannot be read: {e}") from e
        spec = spec_of(sym)
        out.setdefault((spec.qname, spec.path), spec)
    return list(out.values())


def one_line(sym: Any) -> str:
    """``kind qname(signature) — summary``, at most CARD_MAX_CHARS characters."""
    sig = sym.signature or ""
    head = f"{sym.kind} {sig}" if sig and sym.name in sig else f"{sym.kind} {sym.qname}{(' ' + sig) if sig else ''}"
    text = head if not sym.summary else f"{head} — {sym.summary}"
    text = " ".join(text.split())
    return text if len(text) <= CARD_MAX_CHARS else text[:CARD_MAX_CHARS - 1] + "…"


def hydrate(code: CodeView | None, anchors: Sequence[AnchorRecord]) -> list[AnchorOut]:
    """Where each anchored symbol is now, with its one-line card; a ``removed`` anchor (or
    one whose symbol the graph no longer has) says where it was."""
    out: list[AnchorOut] = []
    graph = code.graph if code is not None else None
    for a in anchors:
        sym = None
        if graph is not None and a.status != "removed":
            try:
                sym = next((s for s in graph.symbols_by_qname(a.qname) if s.path == a.path), None)
            except StoreError:
                sym = None
        if sym is None:
            status = a.status if a.status == "removed" or graph is None else "removed"
            card = f"{a.kind} {a.qname} (not in the index now)" if graph is not None else f"{a.kind} {a.qname}"
            out.append(AnchorOut(qualified_name=a.qname, path=a.path, line=a.line, card=card,
                                 status=status, status_at=a.status_at, previous=a.previous))
            continue
        status = a.status
        if sym.hash != a.hash and status in ("", "moved"):
            status = "changed"  # seen before the staleness pass wrote it
        out.append(AnchorOut(qualified_name=sym.qname, path=sym.path, line=sym.start_line, card=one_line(sym),
                             status=status, status_at=a.status_at, previous=a.previous))
    return out


def definition_bytes(sym: Any, src: bytes) -> bytes | None:
    """The bytes of ``sym``'s definition in ``src`` (the file as the graph indexed it), found
    from its start/end line and column and checked against the content hash the graph keeps
    (the SHA-1 of those bytes): None when ``src`` is not what was indexed (an unsaved buffer,
    a later edit)."""
    lines = src.splitlines(keepends=True)
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln))
    if sym.start_line < 1 or sym.start_line > len(lines):
        return None
    start = offsets[sym.start_line - 1] + sym.start_col
    # the extractor's end_line is the node's end row + 1, or its end row when the node ends
    # at column 0 of a later line (C #define): try both, the hash says which
    for row in {sym.end_line - 1, sym.end_line}:
        if 0 <= row < len(offsets):
            end = offsets[row] + sym.end_col
            if end >= start and hashlib.sha1(src[start:end]).hexdigest() == sym.hash:
                return src[start:end]
    return None


def renamed_from(sym: Any, a: AnchorRecord, read: Callable[[str], list[bytes]]) -> bool:
    """True when ``sym`` is the anchored definition under a new name only: its definition with
    its own name (the first occurrence, or every occurrence as a whole identifier: a recursive
    function renamed with its calls) written back as the anchor's name has the anchor's hash.
    A rename with any other change does not match (the anchor is then ``removed``)."""
    if not sym.name or not a.name:
        return False
    body = next((b for b in (definition_bytes(sym, src) for src in read(sym.path)) if b is not None), None)
    if body is None:
        return False
    pat = re.compile(rb"(?<![\w$])" + re.escape(sym.name.encode()) + rb"(?![\w$])")
    old = a.name.encode()
    for count in (1, 0):
        if hashlib.sha1(pat.sub(lambda _m: old, body, count=count)).hexdigest() == a.hash:
            return True
    return False


def file_reader(root: Path | str, overlays: Callable[[], dict[str, bytes]] | None = None
                ) -> Callable[[str], list[bytes]]:
    """The versions of a workspace file (by relative path) the index may hold: the unsaved
    buffer the last update indexed (``overlays``), then the disk. ``definition_bytes``
    keeps the one whose bytes match the graph's hash."""
    base = Path(root)

    def read(rel: str) -> list[bytes]:
        out: list[bytes] = []
        if overlays is not None:
            try:
                buf = overlays().get(rel)
            except AttributeError:  # no indexer (yet): the disk only
                buf = None
            if buf is not None:
                out.append(buf)
        try:
            out.append((base / rel).read_bytes())
        except OSError:
            pass
        return out

    return read


def reconcile(store: MemoryStore, scope: Scope, graph: Any, paths: Iterable[str],
              names: Iterable[str], now: Callable[[], str] = _now,
              read: Callable[[str], list[bytes]] | None = None) -> dict[str, int]:
    """Bring the anchors in ``paths`` (and the removed anchors named ``names``) in line with
    the graph after an update. Returns counts by what was written. ``read`` (a file's bytes by
    its relative path, see ``file_reader``) lets a symbol renamed in place be re-anchored
    (``renamed_from``)."""
    anchors = store.anchors_to_check(scope, sorted(set(paths)), sorted(set(names)))
    if not anchors:
        return {}
    stamp = now()
    by_file: dict[str, list[Any]] = {}
    by_name: dict[str, list[Any]] = {}

    def in_file(path: str) -> list[Any]:
        if path not in by_file:
            by_file[path] = graph.symbols_in_file(path)
        return by_file[path]

    def named(name: str) -> list[Any]:
        if name not in by_name:
            by_name[name] = graph.symbols_by_name(name, limit=200)
        return by_name[name]

    changes: list[AnchorRecord] = []
    counts: dict[str, int] = {}
    import msgspec

    for a in anchors:
        here = next((s for s in in_file(a.path) if s.qname == a.qname), None)
        new: AnchorRecord | None = None
        if here is not None:
            if here.hash == a.hash:
                if a.status in ("changed", "removed") or here.start_line != a.line:
                    # back as remembered (an undo), or only its line moved
                    new = msgspec.structs.replace(
                        a, line=here.start_line, kind=here.kind,
                        status="" if a.status in ("changed", "removed") else a.status,
                        status_at=stamp if a.status in ("changed", "removed") else a.status_at)
            elif a.status != "changed" or here.start_line != a.line:
                new = msgspec.structs.replace(a, line=here.start_line, kind=here.kind, status="changed",
                                              status_at=stamp if a.status != "changed" else a.status_at)
        else:
            same = [s for s in named(a.name) if s.hash == a.hash]
            if not same and read is not None:
                # renamed in place: a symbol of the same kind in the same file whose definition,
                # with its own name written back as the anchor's, hashes to the anchor's hash
                same = [s for s in in_file(a.path) if s.kind == a.kind and s.name != a.name
                        and renamed_from(s, a, read)]
            if len(same) == 1:
                s = same[0]
                new = msgspec.structs.replace(
                    a, qname=s.qname, name=s.name, path=s.path, hash=s.hash, kind=s.kind, line=s.start_line, status="moved",
                    status_at=stamp, previous=f"{a.qname} @ {a.path}:{a.line}")
            elif a.status != "removed":
                new = msgspec.structs.replace(a, status="removed", status_at=stamp)
        if new is not None and new != a:
            changes.append(new)
            counts[new.status or "current"] = counts.get(new.status or "current", 0) + 1
    if changes:
        store.update_anchors(scope, changes)
    return counts


class StalenessHook:
    """Called by the indexer after each committed update: re-checks the anchors of the
    namespace (every session) in the files the update touched. The memory store is opened
    lazily (and not at all while no memory store exists for a SQLite workspace)."""

    def __init__(self, open_store: Callable[[], MemoryStore | None], scope: Callable[[], Scope],
                 graph: Callable[[], Any], root: Path | str | None = None,
                 overlays: Callable[[], dict[str, bytes]] | None = None):
        self._open = open_store
        self._read = file_reader(root, overlays) if root is not None else None
        self._scope = scope
        self._graph = graph
        self._store: MemoryStore | None = None
        self._lock = threading.Lock()
        self.last_ms: float = 0.0
        self.last_counts: dict[str, int] = {}

    def store(self) -> MemoryStore | None:
        """The memory store (opened on first use), or None while there is none."""
        with self._lock:
            if self._store is None:
                self._store = self._open()
            return self._store

    def __call__(self, paths: set[str], names: set[str]) -> None:
        if not paths and not names:
            return
        t0 = time.perf_counter()
        try:
            if self.store() is None:
                return
            self.last_counts = reconcile(self._store, self._scope(), self._graph(), paths, names, read=self._read)
            if self.last_counts:
                log.info("memory anchors after the update: %s", self.last_counts)
        except Exception:  # an update must never fail because memory could not be marked
            log.warning("memory: anchors not checked after this update", exc_info=True)
        finally:
            self.last_ms = (time.perf_counter() - t0) * 1000

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                try:
                    self._store.close()
                finally:
                    self._store = None


# ---- memory in context answers -----------------------------------------------------------

CONTEXT_TOP = 5  # entries shown in a context answer's memory section (the count says how many)
CONTEXT_FACTS = 2  # facts shown per entry


def answer_symbols(answer: dict[str, Any]) -> list[tuple[str, str]]:
    """(qualified name, path) of the symbols a context answer returns, in answer order:
    the card (symbolCard/symbolContext), its related cards, a relations page's subject,
    minimalContext's cards and prContext's changed symbols."""
    out: list[tuple[str, str]] = []
    items: list[Any] = []
    for key in ("card", "subject"):
        if isinstance(answer.get(key), dict):
            items.append(answer[key])
    for key in ("related", "cards", "changed"):
        if isinstance(answer.get(key), list):
            items.extend(answer[key])
    for it in items:
        if isinstance(it, dict) and isinstance(it.get("qualifiedName"), str):
            out.append((it["qualifiedName"], it.get("path") or ""))
    return list(dict.fromkeys(out))


def context_memory(store: MemoryStore, scope: Scope, symbols: Sequence[tuple[str, str]],
                   notice: str) -> tuple[int, list[dict[str, Any]]]:
    """(how many visible entities and facts are anchored to ``symbols``, the top CONTEXT_TOP
    of them as answer items, in the order of the symbols; for one symbol its entities first,
    newest first, then its facts, newest first). An entity's item has ``name``, a fact's
    ``fact`` ("subject predicate object")."""
    if not symbols:
        return 0, []
    wanted = {q: p for q, p in symbols}
    rows = [a for a in store.anchored_to(scope, list(wanted), limit=500)
            if not wanted[a.qname] or a.path == wanted[a.qname]]
    fact_rows = []
    if getattr(store, "supports_fact_anchors", False):
        fact_rows = [(a, f) for a, f in store.facts_anchored_to(scope, list(wanted), limit=500)
                     if not wanted[a.qname] or a.path == wanted[a.qname]]
    if not rows and not fact_rows:
        return 0, []
    order = {q: i for i, (q, _) in enumerate(symbols)}
    keyed = sorted([(order[a.qname], 0, ("e", a.entity_id), a, None) for a in rows]
                   + [(order[a.qname], 1, ("f", f.id), a, f) for a, f in fact_rows],
                   key=lambda r: (r[0], r[1]))  # stable: newest first within a symbol
    first: dict[tuple[str, str], tuple[AnchorRecord, Any]] = {}
    for _, _, key, a, f in keyed:
        first.setdefault(key, (a, f))
    keys = list(first)
    top = keys[:CONTEXT_TOP]
    top_ents = [k[1] for k in top if k[0] == "e"]
    ents = store.get_entities(scope, top_ents) if top_ents else {}
    facts = store.facts_touching(scope, top_ents, limit=CONTEXT_FACTS * len(top_ents) * 4) if top_ents else []
    items: list[dict[str, Any]] = []
    for kind, eid in top:
        a, fr = first[(kind, eid)]
        if kind == "f":
            item: dict[str, Any] = {"fact": f"{fr.subject_name} {fr.predicate} {fr.object_name}", "symbol": a.qname}
            if fr.durable:
                item["durable"] = True
            if a.status:
                item["anchor"] = a.status
                item["anchorAt"] = a.status_at
            items.append(item)
            continue
        e = ents.get(eid)
        if e is None:
            continue
        item = {"name": e.name, "symbol": a.qname}
        if e.type:
            item["type"] = e.type
        if e.durable:
            item["durable"] = True
        if a.status:
            item["anchor"] = a.status
            item["anchorAt"] = a.status_at
        mine = [f"{f.subject_name} {f.predicate} {f.object_name}" for f in facts
                if eid in (f.subject_id, f.object_id)][:CONTEXT_FACTS]
        if mine:
            item["facts"] = mine
        items.append(item)
    return len(keys), items
