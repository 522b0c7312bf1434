"""A checkout's view of a team graph: the shared base graph of its commit (read-only, on the
server) with the checkout's own overlay (uncommitted and unpushed changes, unsaved buffers) in
an embedded SQLite file that no other checkout reads (docs/TEAM.md).

``CompositeGraphStore`` implements the GraphStore port, so the indexer and the services need
no change:

- a path the overlay holds (a changed, new or deleted file: ``shadow``) is answered from the
  overlay only; every other path from the base;
- writes go to the overlay; deleting a base file leaves a tombstone in the overlay;
- a re-resolution of a base row (an edge elsewhere whose target moved because of a change in
  the overlay) is kept in the overlay as an override of that row and applied on every read;
- row ids: base rows keep theirs, overlay rows are offset by the base's ``id_ceiling`` (an
  exclusive bound of its row ids: ``OVERLAY_IDS`` unless the store declares one, as
  HugeGraph's 63-bit ids do; a composite's is its offset plus its overlay's), so no two
  levels collide whatever the backends (a base may be a composite itself); writes by id are
  routed by it;
- the base never changes (a published base is immutable), so the overlay's transaction and
  snapshot are the composite's.

What the base holds about a shadowed path (its rows, their number) is read once per overlay
version (``_Shadow``): limits and counts stay exact with one extra read per key set.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import msgspec

from codesynapse.extract.model import CallSite, FileExtraction
from codesynapse.graph.model import (
    CallRow,
    FileRow,
    GraphStats,
    ImportRow,
    InheritRow,
    Resolution,
    SymbolRow,
)
from codesynapse.store.graph import REDACTION_META, VALUE_REFS_META, GraphStore, StoreCapabilities
from codesynapse.store.text import fold_tokens, name_terms, query_terms

OVERLAY_IDS = 1 << 40  # the default id ceiling of a store: SQLite's and Neo4j's row ids stay below it
GENERATION = "index_generation"  # the indexer's meta key (index/indexer.py)
COUNT_SEARCH_SCAN = 1000  # base search hits count_search looks through for shadowed ones
SEARCH_POOL = 50  # at least this many hits of each store are re-scored together (search)
_TOMBSTONES = "team.tombstones"
_CALL_OVERRIDES = "team.call_overrides"
_INHERIT_OVERRIDES = "team.inherit_overrides"
_IMPORT_OVERRIDES = "team.import_overrides"
BASE_COMMIT = "team.base_commit"
BASE_STATS = "team.base_stats"  # meta of a published base: the GraphStats of its readable view (JSON)


def _sym_key(s: SymbolRow) -> tuple:
    return (s.qname, s.path, s.start_line)


def _call_key(c: CallRow) -> tuple:
    return (c.path, c.line, c.col, c.callee)


def _inh_key(r: InheritRow) -> tuple:
    return (r.path, r.line, r.child, r.base)


_FIELD_WEIGHTS = (4.0, 2.0, 1.0)  # name, qname, name terms: both stores' column weights (store/neo4j/graph.py)
_K1 = 1.2
_DF_CACHE = 10_000  # terms whose base document frequency is kept (per base)


def _fields(s: SymbolRow) -> tuple[list[str], list[str], list[str]]:
    """The tokens of a symbol's three searchable fields, as both stores index them."""
    return (fold_tokens(s.name).split(), fold_tokens(s.qname).split(),
            fold_tokens(name_terms(s.name, s.qname)).split())


def _reid(row, offset: int = OVERLAY_IDS):
    return msgspec.structs.replace(row, id=row.id + offset)


def id_ceiling(store) -> int:
    """An exclusive upper bound of ``store``'s row ids (a store may declare ``id_ceiling``)."""
    return getattr(store, "id_ceiling", OVERLAY_IDS)


class _Shadow:
    """The overlay's paths and what the base holds for them, for one overlay version."""

    def __init__(self, paths: frozenset[str], tombstones: frozenset[str], base: GraphStore):
        self.paths = paths | tombstones
        self.tombstones = tombstones
        ps = sorted(self.paths)
        self.base_files = base.files_by_paths(ps) if ps else {}
        syms = base.symbols_in_files(ps) if ps else {}
        self.base_symbols = [s for rows in syms.values() for s in rows]
        self.base_calls = base.calls_in_files(ps) if ps else []
        self.base_imports = base.imports_touching(ps, ()) if ps else []
        self.base_inherits = base.inherits_touching(ps, ()) if ps else []


class CompositeGraphStore:
    """Base graph (read-only) + this checkout's overlay (written), behind the GraphStore port."""

    def __init__(self, base: GraphStore, overlay: GraphStore, *, base_commit: str = "",
                 clean: dict[str, tuple[int, int]] | None = None, frozen: bool = False):
        self.base = base
        self.overlay = overlay
        # a base may itself be a composite (a delta base over its parent's: store/team.py): each
        # level's rows get an id range of their own
        self.id_levels = getattr(base, "id_levels", 1) + 1
        self.offset = id_ceiling(base)
        self.id_ceiling = self.offset + id_ceiling(overlay)
        self.graph_id = overlay.graph_id
        self.base_commit = base_commit
        # base paths the checkout holds unchanged: path -> (size, mtime_ns) of the local file,
        # shown for the base row so the indexer's plan finds them unchanged
        self.clean = dict(clean or {})
        self._lock = threading.RLock()
        # frozen: the overlay never changes (a published delta base): its bookkeeping is read once
        self.frozen = frozen
        self._frozen_meta: dict[str, Any] = {}
        self._shadow_cache: tuple[Any, _Shadow] | None = None
        # (base, its GraphStats, term -> base document frequency): the base never changes, so
        # its counts (stats, search's statistics) are read once per base
        self._base_stats: tuple[Any, GraphStats, dict[str, int]] | None = None
        # base rows handed out to a writer inside its transaction (an override keeps the row as
        # the base has it); forgotten when the transaction ends, so they never pile up
        self._tl = threading.local()
        self._seen_calls: dict[int, CallRow] = {}
        self._seen_inherits: dict[int, InheritRow] = {}
        self._seen_imports: dict[int, ImportRow] = {}

    @property
    def capabilities(self) -> StoreCapabilities:
        return self.overlay.capabilities

    # -- the overlay's bookkeeping ------------------------------------------------------------
    def _json(self, key: str, default):
        if self.frozen and key in self._frozen_meta:
            return self._frozen_meta[key]
        raw = self.overlay.get_meta(key)
        value = json.loads(raw) if raw else default
        if self.frozen:
            self._frozen_meta[key] = value
        return value

    def _tombstones(self) -> frozenset[str]:
        return frozenset(self._json(_TOMBSTONES, []))

    def _shadow(self) -> _Shadow:
        # every write through this store invalidates; another process writing the overlay
        # (a CLI run on the same checkout) stamps a new GENERATION
        if self.frozen and self._shadow_cache is not None:
            return self._shadow_cache[1]
        gen = (self.overlay.get_meta(GENERATION), self.overlay.get_meta(_TOMBSTONES))
        with self._lock:
            cached = self._shadow_cache
            if cached is not None and cached[0] == gen:
                return cached[1]
        sh = _Shadow(frozenset(f.path for f in self.overlay.files()), self._tombstones(), self.base)
        with self._lock:
            self._shadow_cache = (gen, sh)
        return sh

    def _invalidate(self) -> None:
        with self._lock:
            self._shadow_cache = None

    def _overrides(self, key: str, cls) -> dict[int, tuple[Any, Any]]:
        """base row id -> (row as stored in the base, row as the overlay re-resolved it)."""
        if self.frozen and ("rows", key) in self._frozen_meta:
            return self._frozen_meta[("rows", key)]
        raw = self._json(key, {})
        out = {int(k): (msgspec.convert(v[0], cls), msgspec.convert(v[1], cls)) for k, v in raw.items()}
        if self.frozen:
            self._frozen_meta[("rows", key)] = out
        return out

    def _call_overrides(self, sh: _Shadow) -> dict[int, tuple[CallRow, CallRow]]:
        return {k: v for k, v in self._overrides(_CALL_OVERRIDES, CallRow).items() if v[0].path not in sh.paths}

    def _inherit_overrides(self, sh: _Shadow) -> dict[int, tuple[InheritRow, InheritRow]]:
        return {k: v for k, v in self._overrides(_INHERIT_OVERRIDES, InheritRow).items()
                if v[0].path not in sh.paths}

    def _import_overrides(self, sh: _Shadow) -> dict[int, tuple[ImportRow, ImportRow]]:
        return {k: v for k, v in self._overrides(_IMPORT_OVERRIDES, ImportRow).items()
                if v[0].path not in sh.paths}

    def overlay_files(self) -> int:
        """How many paths the overlay holds (changed, new or deleted files)."""
        return len(self._shadow().paths)

    def team_freshness(self) -> dict[str, Any]:
        return {"baseCommit": self.base_commit, "overlayFiles": self.overlay_files()}

    def symbol_table(self):
        """The resolver's table of this view (``Indexer.load``; store/symtable.py): the base's,
        kept with the base, under this level's own rows (a frozen delta base's kept table, or
        the checkout's overlay read as rows), its tombstones and re-resolved inherit rows."""
        from codesynapse.store import symtable

        below = symtable.table_of(self.base)
        level = symtable.stored_level(self.overlay) if self.frozen else None
        if level is None:
            level = symtable.read_level(self.overlay)
        overrides = self._overrides(_INHERIT_OVERRIDES, InheritRow).values()
        return symtable.compose(below, level, self._tombstones(), overrides)

    # -- lifecycle / meta ---------------------------------------------------------------------
    def close(self) -> None:
        self.overlay.close()
        self.base.close()

    def get_meta(self, key: str) -> str | None:
        raw = self.overlay.get_meta(key)
        if key in (VALUE_REFS_META, REDACTION_META) and not raw:
            # the counts the base's own pass kept: the view's until this checkout's first pass
            # (which applies its files' changes to them and keeps the result in the overlay;
            # a move to another base clears it) — instead of a scan of every call of the base;
            # and the redaction the base's text was extracted under, until the checkout
            # extracts the tree again under its own (index/indexer.py)
            raw = self.base.get_meta(key)
        return raw

    def set_meta(self, values: dict[str, str]) -> None:
        self.overlay.set_meta(values)
        if GENERATION in values:
            self._invalidate()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        depth = getattr(self._tl, "depth", 0)
        self._tl.depth = depth + 1
        try:
            with self.overlay.transaction():
                yield
        finally:
            self._tl.depth = depth
            if depth == 0:
                self._forget_seen()

    def _writing(self) -> bool:
        return getattr(self._tl, "depth", 0) > 0

    def _forget_seen(self) -> None:
        self._seen_calls.clear()
        self._seen_inherits.clear()
        self._seen_imports.clear()

    def snapshot(self) -> AbstractContextManager[None]:
        return self.overlay.snapshot()

    # -- writes (all to the overlay) ------------------------------------------------------------
    def _untomb(self, paths: Iterable[str]) -> None:
        tomb = self._tombstones()
        keep = tomb - set(paths)
        if keep != tomb:
            self.overlay.set_meta({_TOMBSTONES: json.dumps(sorted(keep))})

    def write_files(self, extractions: Sequence[tuple[FileExtraction, int]], skipped: Sequence[FileRow] = (),
                    call_targets: dict[tuple[str, int], Resolution] | None = None,
                    inherit_targets: dict[tuple[str, int], Resolution] | None = None,
                    import_targets: dict[tuple[str, int], str] | None = None,
                    with_calls: bool = True) -> None:
        self.overlay.write_files(extractions, skipped, call_targets, inherit_targets, import_targets, with_calls)
        self._untomb([fx.path for fx, _ in extractions] + [s.path for s in skipped])
        self._invalidate()

    def insert_calls(self, items: Sequence[tuple[str, CallSite, Resolution]]) -> None:
        self.overlay.insert_calls(items)
        self._invalidate()

    def restamp_files(self, stamps: Sequence[tuple[str, str, int]]) -> None:
        """A path the overlay holds is restamped there. A base path whose base row holds the
        hash is clean (the checkout has it as committed): it joins ``clean`` with the new
        stamp, and nothing is written to the overlay (which holds only what differs)."""
        sh = self._shadow()
        mine = [s for s in stamps if s[0] in sh.paths]
        if mine:
            self.overlay.restamp_files(mine)
        theirs = {p: (h, m) for p, h, m in stamps if p not in sh.paths}
        for p, f in self.base.files_by_paths(list(theirs)).items() if theirs else ():
            h, m = theirs[p]
            if h and f.hash == h:
                self.clean[p] = (f.size, int(m))

    def delete_files(self, paths: Iterable[str]) -> None:
        paths = list(paths)
        self.overlay.delete_files(paths)
        in_base = set(self.base.files_by_paths(paths))
        if in_base:
            tomb = self._tombstones() | in_base
            self.overlay.set_meta({_TOMBSTONES: json.dumps(sorted(tomb))})
        self._invalidate()

    def _override(self, key: str, updates: list[tuple[int, Any]], seen: dict[int, Any],
                  change: Callable[[Any, Any], Any]) -> None:
        if not updates:
            return
        raw = self._json(key, {})
        for i, value in updates:
            prev = raw.get(str(i))
            old = msgspec.convert(prev[0], type(seen[i])) if prev else seen.get(i)
            if old is None:
                continue  # a row never read through this store: nothing to re-resolve
            raw[str(i)] = [msgspec.to_builtins(old), msgspec.to_builtins(change(old, value))]
        self.overlay.set_meta({key: json.dumps(raw)})
        self._invalidate()

    def update_call_targets(self, updates: Sequence[tuple[int, Resolution]]) -> None:
        mine = [(i - self.offset, r) for i, r in updates if i >= self.offset]
        if mine:
            self.overlay.update_call_targets(mine)
        self._override(_CALL_OVERRIDES, [(i, r) for i, r in updates if i < self.offset], self._seen_calls,
                       lambda old, r: msgspec.structs.replace(old, target=r.target, resolution=r.resolution,
                                                              confidence=float(r.confidence)))

    def update_inherit_targets(self, updates: Sequence[tuple[int, Resolution]]) -> None:
        mine = [(i - self.offset, r) for i, r in updates if i >= self.offset]
        if mine:
            self.overlay.update_inherit_targets(mine)
        self._override(_INHERIT_OVERRIDES, [(i, r) for i, r in updates if i < self.offset], self._seen_inherits,
                       lambda old, r: msgspec.structs.replace(old, target=r.target, resolution=r.resolution,
                                                              confidence=float(r.confidence)))

    def update_import_targets(self, updates: Sequence[tuple[int, str]]) -> None:
        mine = [(i - self.offset, t) for i, t in updates if i >= self.offset]
        if mine:
            self.overlay.update_import_targets(mine)
        self._override(_IMPORT_OVERRIDES, [(i, t) for i, t in updates if i < self.offset], self._seen_imports,
                       lambda old, t: msgspec.structs.replace(old, target=t))

    def reset_overlay(self, base: GraphStore, base_commit: str, clean: dict[str, tuple[int, int]]) -> None:
        """Move to another base: the overlay, relative to the old one, is emptied (the next
        index fills it with what differs from the new base)."""
        import uuid

        with self.overlay.transaction():
            paths = [f.path for f in self.overlay.files()]
            if paths:
                self.overlay.delete_files(paths)
            self.overlay.set_meta({_TOMBSTONES: "[]", _CALL_OVERRIDES: "{}", _INHERIT_OVERRIDES: "{}",
                                   _IMPORT_OVERRIDES: "{}", BASE_COMMIT: base_commit, VALUE_REFS_META: "",
                                   REDACTION_META: "",
                                   GENERATION: uuid.uuid4().hex})
        old = self.base
        self.base, self.base_commit, self.clean = base, base_commit, dict(clean)
        # the overlay is empty now: its ids move above the new base's (a delta base has one
        # more level than a full one; a HugeGraph base's ids reach 2**63)
        self.id_levels = getattr(base, "id_levels", 1) + 1
        self.offset = id_ceiling(base)
        self.id_ceiling = self.offset + id_ceiling(self.overlay)
        self._forget_seen()
        self._invalidate()
        if old is not base:
            old.close()

    # -- row plumbing ---------------------------------------------------------------------------
    def _reid(self, row):
        return _reid(row, self.offset)

    def _file_row(self, f: FileRow) -> FileRow:
        c = self.clean.get(f.path)
        return msgspec.structs.replace(f, mtime_ns=c[1]) if c is not None and c[0] == f.size else f

    def _syms(self, base_rows: Iterable[SymbolRow], overlay_rows: Iterable[SymbolRow], sh: _Shadow
              ) -> list[SymbolRow]:
        out = [s for s in base_rows if s.path not in sh.paths]
        out += [self._reid(s) for s in overlay_rows]
        out.sort(key=_sym_key)
        return out

    def _base_calls(self, rows: Iterable[CallRow], sh: _Shadow, ov: dict[int, tuple[CallRow, CallRow]],
                    pred: Callable[[CallRow], bool] | None) -> dict[int, CallRow]:
        out: dict[int, CallRow] = {}
        writing = self._writing()
        for r in rows:
            if r.path in sh.paths:
                continue
            if writing:
                self._seen_calls[r.id] = r
            r2 = ov[r.id][1] if r.id in ov else r
            if pred is None or pred(r2):
                out[r.id] = r2
        if pred is not None:
            for i, (_, new) in ov.items():
                if pred(new):
                    out[i] = new
        return out

    def _calls(self, base_rows: Iterable[CallRow], overlay_rows: Iterable[CallRow], sh: _Shadow,
               pred: Callable[[CallRow], bool] | None, limit: int | None = None) -> list[CallRow]:
        ov = self._call_overrides(sh)
        out = list(self._base_calls(base_rows, sh, ov, pred).values())
        out += [self._reid(c) for c in overlay_rows]
        out.sort(key=_call_key)
        return out if limit is None else out[:limit]

    def _slack(self, sh: _Shadow, rows: Sequence[Any], pred: Callable[[Any], bool]) -> int:
        """How many more rows to ask the base for: those it may answer that the composite drops."""
        return sum(1 for r in rows if pred(r))

    # -- reads: files and symbols --------------------------------------------------------------
    def files(self) -> list[FileRow]:
        sh = self._shadow()
        out = [self._file_row(f) for f in self.base.files() if f.path not in sh.paths]
        out += self.overlay.files()
        out.sort(key=lambda f: f.path)
        return out

    def file(self, path: str) -> FileRow | None:
        sh = self._shadow()
        if path in sh.paths:
            return self.overlay.file(path)
        f = self.base.file(path)
        return self._file_row(f) if f is not None else None

    def files_by_paths(self, paths: Iterable[str]) -> dict[str, FileRow]:
        sh = self._shadow()
        paths = list(paths)
        mine = [p for p in paths if p in sh.paths]
        out = {p: self._file_row(f) for p, f in self.base.files_by_paths([p for p in paths if p not in sh.paths]).items()}
        out.update(self.overlay.files_by_paths(mine) if mine else {})
        return out

    def symbols_in_file(self, path: str) -> list[SymbolRow]:
        sh = self._shadow()
        if path in sh.paths:
            return [self._reid(s) for s in self.overlay.symbols_in_file(path)]
        return self.base.symbols_in_file(path)

    def symbols_in_files(self, paths: Iterable[str]) -> dict[str, list[SymbolRow]]:
        sh = self._shadow()
        paths = list(paths)
        mine = [p for p in paths if p in sh.paths]
        out = self.base.symbols_in_files([p for p in paths if p not in sh.paths])
        for p, rows in (self.overlay.symbols_in_files(mine) if mine else {}).items():
            out[p] = [self._reid(s) for s in rows]
        return out

    def all_symbols(self) -> Iterator[SymbolRow]:
        sh = self._shadow()
        for s in self.base.all_symbols():
            if s.path not in sh.paths:
                yield s
        for s in self.overlay.all_symbols():
            yield self._reid(s)

    def symbols_by_qname(self, qname: str) -> list[SymbolRow]:
        return self._syms(self.base.symbols_by_qname(qname), self.overlay.symbols_by_qname(qname), self._shadow())

    def symbols_by_qnames(self, qnames: Iterable[str]) -> dict[str, list[SymbolRow]]:
        qnames = list(qnames)
        sh = self._shadow()
        b, o = self.base.symbols_by_qnames(qnames), self.overlay.symbols_by_qnames(qnames)
        out = {}
        for q in qnames:
            rows = self._syms(b.get(q, ()), o.get(q, ()), sh)
            if rows:
                out[q] = rows
        return out

    def symbols_by_name(self, name: str, limit: int = 50) -> list[SymbolRow]:
        sh = self._shadow()
        k = self._slack(sh, sh.base_symbols, lambda s: s.name == name)
        rows = self._syms(self.base.symbols_by_name(name, limit + k), self.overlay.symbols_by_name(name, limit), sh)
        return rows[:limit]

    def symbol_by_id(self, symbol_id: int) -> SymbolRow | None:
        if symbol_id >= self.offset:
            s = self.overlay.symbol_by_id(symbol_id - self.offset)
            return self._reid(s) if s is not None else None
        s = self.base.symbol_by_id(symbol_id)
        return s if s is not None and s.path not in self._shadow().paths else None

    def symbol_at(self, path: str, line: int) -> SymbolRow | None:
        if path in self._shadow().paths:
            s = self.overlay.symbol_at(path, line)
            return self._reid(s) if s is not None else None
        return self.base.symbol_at(path, line)

    def search(self, text: str, limit: int, offset: int = 0) -> list[tuple[SymbolRow, float]]:
        """Both stores' hits for ``text``. When both have some, their BM25 scores are on two
        scales (each store's own statistics: a small overlay's IDF is near zero), so the
        union is scored again with one set of statistics (``_rescore``); otherwise the one
        store's order stands."""
        sh = self._shadow()
        want = limit + offset
        pool = max(want, SEARCH_POOL)  # each store's own top, re-scored together
        k = min(len(sh.base_symbols), 1000)
        base = [(s, sc) for s, sc in self.base.search(text, pool + k) if s.path not in sh.paths]
        mine = [(self._reid(s), sc) for s, sc in self.overlay.search(text, pool)]
        hits = self._rescore(text, base + mine, sh) if base and mine else (base or mine)
        return hits[offset:offset + limit]

    def _rescore(self, text: str, hits: list[tuple[SymbolRow, float]], sh: _Shadow) -> list[tuple[SymbolRow, float]]:
        """BM25 of each hit with the statistics of this view: N its symbols, a term's document
        frequency its symbols matching the term (the base's, less those shadowed, plus the
        overlay's), over the three fields both stores index with their weights (name 4,
        qualified name 2, name terms 1; store/text.py tokens). No length normalization (b = 0):
        the fields are identifiers of similar length, and the average lengths of a whole base
        are not at hand. Ties by (qname, path, start line)."""
        terms = query_terms(text)
        if not terms:
            return sorted(hits, key=lambda h: _sym_key(h[0]))
        gone = [_fields(s) for s in sh.base_symbols]
        n_docs = max(1, self._base_count() - len(sh.base_symbols) + self.overlay.stats().symbols)
        idf = {}
        for t in terms:
            df = self._base_df(t) - sum(1 for f in gone if any(t in toks for toks in f))
            df = min(max(df + self.overlay.count_search(t), 1), n_docs)
            idf[t] = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
        scored = []
        for s, _ in hits:
            fields = _fields(s)
            score = 0.0
            for t in terms:
                for w, toks in zip(_FIELD_WEIGHTS, fields):
                    tf = toks.count(t)
                    if tf:
                        score += idf[t] * w * tf * (_K1 + 1) / (tf + _K1)
            scored.append((s, score))
        scored.sort(key=lambda h: (-h[1], _sym_key(h[0])))
        return scored

    def _base_graph_stats(self) -> GraphStats:
        """The base's counts (it never changes: read once per base)."""
        with self._lock:
            cached = self._base_stats
            base = self.base
        if cached is None or cached[0] is not base:
            raw = base.get_meta(BASE_STATS)  # a published base keeps its counts (store/team.py)
            cached = (base, msgspec.json.decode(raw, type=GraphStats) if raw else base.stats(), {})
            with self._lock:
                self._base_stats = cached
        return cached[1]

    def _base_count(self) -> int:
        return self._base_graph_stats().symbols

    def _base_df(self, term: str) -> int:
        self._base_graph_stats()
        cache = self._base_stats[2]
        n = cache.get(term)
        if n is None:
            n = self.base.count_search(term)
            with self._lock:
                if len(cache) >= _DF_CACHE:
                    cache.clear()
                cache[term] = n
        return n

    def count_search(self, text: str) -> int:
        sh = self._shadow()
        in_base = self.base.count_search(text)
        n = in_base + self.overlay.count_search(text)
        if sh.base_symbols and in_base:
            # the base's hits in shadowed files are not answers; looked for among its first
            # COUNT_SEARCH_SCAN hits (exact when the base has no more, else a close estimate)
            n -= sum(1 for s, _ in self.base.search(text, min(in_base, COUNT_SEARCH_SCAN)) if s.path in sh.paths)
        return max(n, 0)

    # -- reads: calls ---------------------------------------------------------------------------
    def _count(self, base_n: int, overlay_n: int, sh: _Shadow, pred: Callable[[CallRow], bool]) -> int:
        ov = self._call_overrides(sh)
        n = base_n + overlay_n - sum(1 for c in sh.base_calls if pred(c))
        n -= sum(1 for old, _ in ov.values() if pred(old))
        n += sum(1 for _, new in ov.values() if pred(new))
        return n

    def _call_slack(self, sh: _Shadow, pred: Callable[[CallRow], bool]) -> int:
        return self._slack(sh, sh.base_calls, pred) + len(self._call_overrides(sh))

    def callers(self, qname: str, limit: int = 1000) -> list[CallRow]:
        sh = self._shadow()
        pred = lambda c: c.target == qname
        k = self._call_slack(sh, pred)
        return self._calls(self.base.callers(qname, limit + k), self.overlay.callers(qname, limit), sh, pred, limit)

    def count_callers(self, qname: str) -> int:
        sh = self._shadow()
        return self._count(self.base.count_callers(qname), self.overlay.count_callers(qname), sh,
                           lambda c: c.target == qname)

    def callees(self, caller: str, limit: int = 1000) -> list[CallRow]:
        sh = self._shadow()
        pred = lambda c: c.caller == caller
        k = self._call_slack(sh, pred)
        return self._calls(self.base.callees(caller, limit + k), self.overlay.callees(caller, limit), sh, pred, limit)

    def count_callees(self, caller: str) -> int:
        sh = self._shadow()
        return self._count(self.base.count_callees(caller), self.overlay.count_callees(caller), sh,
                           lambda c: c.caller == caller)

    def unresolved_named(self, name: str, limit: int = 100) -> list[CallRow]:
        sh = self._shadow()
        pred = lambda c: c.name == name and not c.target
        k = self._call_slack(sh, pred)
        return self._calls(self.base.unresolved_named(name, limit + k), self.overlay.unresolved_named(name, limit),
                           sh, pred, limit)

    def count_unresolved_named(self, name: str) -> int:
        sh = self._shadow()
        return self._count(self.base.count_unresolved_named(name), self.overlay.count_unresolved_named(name), sh,
                           lambda c: c.name == name and not c.target)

    def calls_in_files(self, paths: Iterable[str]) -> list[CallRow]:
        sh = self._shadow()
        paths = list(paths)
        mine = [p for p in paths if p in sh.paths]
        theirs = [p for p in paths if p not in sh.paths]
        return self._calls(self.base.calls_in_files(theirs) if theirs else [],
                           self.overlay.calls_in_files(mine) if mine else [], sh, None)

    def calls_touching(self, names: Iterable[str]) -> list[CallRow]:
        names = list(names)
        return self._calls(self.base.calls_touching(names), self.overlay.calls_touching(names), self._shadow(), None)

    def calls_by_hint_name(self, names: Iterable[str]) -> list[CallRow]:
        names = list(names)
        return self._calls(self.base.calls_by_hint_name(names), self.overlay.calls_by_hint_name(names),
                           self._shadow(), None)

    def all_calls(self) -> Iterator[CallRow]:
        sh = self._shadow()
        ov = self._call_overrides(sh)
        writing = self._writing()
        for c in self.base.all_calls():
            if c.path not in sh.paths:
                if writing:
                    self._seen_calls[c.id] = c
                yield ov[c.id][1] if c.id in ov else c
        for c in self.overlay.all_calls():
            yield self._reid(c)

    def _many(self, keys: list[str], base: dict[str, list[CallRow]], overlay: dict[str, list[CallRow]],
              sh: _Shadow, pred_of: Callable[[str], Callable[[CallRow], bool]], limit: int) -> dict[str, list[CallRow]]:
        out = {}
        for q in keys:
            rows = self._calls(base.get(q, ()), overlay.get(q, ()), sh, pred_of(q), limit)
            if rows:
                out[q] = rows
        return out

    def callers_many(self, qnames: Iterable[str], limit: int = 1000) -> dict[str, list[CallRow]]:
        qnames = list(qnames)
        sh = self._shadow()
        k = len(sh.base_calls) + len(self._call_overrides(sh))
        return self._many(qnames, self.base.callers_many(qnames, limit + k), self.overlay.callers_many(qnames, limit),
                          sh, lambda q: (lambda c: c.target == q), limit)

    def callees_many(self, callers: Iterable[str], limit: int = 1000) -> dict[str, list[CallRow]]:
        callers = list(callers)
        sh = self._shadow()
        k = len(sh.base_calls) + len(self._call_overrides(sh))
        return self._many(callers, self.base.callees_many(callers, limit + k),
                          self.overlay.callees_many(callers, limit), sh, lambda q: (lambda c: c.caller == q), limit)

    def relation_counts(self, qnames: Iterable[str], names: Iterable[str] = ()
                        ) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
        qnames, names = list(qnames), list(names)
        sh = self._shadow()
        b = self.base.relation_counts(qnames, names)
        o = self.overlay.relation_counts(qnames, names)
        callers = {q: self._count(b[0].get(q, 0), o[0].get(q, 0), sh, lambda c, q=q: c.target == q) for q in qnames}
        callees = {q: self._count(b[1].get(q, 0), o[1].get(q, 0), sh, lambda c, q=q: c.caller == q) for q in qnames}
        unres = {n: self._count(b[2].get(n, 0), o[2].get(n, 0), sh, lambda c, n=n: c.name == n and not c.target)
                 for n in names}
        return callers, callees, unres

    # -- reads: imports and inherits ------------------------------------------------------------
    def _id_rows(self, base_rows: Iterable[tuple[int, Any]], overlay_rows: Iterable[tuple[int, Any]], sh: _Shadow,
                 ov: dict[int, tuple[Any, Any]], seen: dict[int, Any]) -> list[tuple[int, Any]]:
        out = []
        writing = self._writing()
        for i, r in base_rows:
            if r.path in sh.paths:
                continue
            if writing:
                seen[i] = r
            out.append((i, ov[i][1] if i in ov else r))
        out += [(i + self.offset, r) for i, r in overlay_rows]
        return out

    def all_imports(self) -> Iterator[tuple[int, ImportRow]]:
        sh = self._shadow()
        yield from self._id_rows(self.base.all_imports(), self.overlay.all_imports(), sh,
                                 self._import_overrides(sh), self._seen_imports)

    def imports(self, path: str | None = None) -> list[ImportRow]:
        sh = self._shadow()
        if path is not None:
            if path in sh.paths:
                return self.overlay.imports(path)
            ov = self._import_overrides(sh)
            return [ov[i][1] if i in ov else r for i, r in self.base.imports_touching([path], ())]
        rows = [r for _, r in self.all_imports()]
        rows.sort(key=lambda r: (r.path, r.line))
        return rows

    def imports_touching(self, paths: Iterable[str], names: Iterable[str],
                         modules: Iterable[str] = ()) -> list[tuple[int, ImportRow]]:
        paths, names, modules = list(paths), list(names), list(modules)
        sh = self._shadow()
        return self._id_rows(self.base.imports_touching(paths, names, modules),
                             self.overlay.imports_touching(paths, names, modules), sh,
                             self._import_overrides(sh), self._seen_imports)

    def all_inherits(self) -> Iterator[tuple[int, InheritRow]]:
        sh = self._shadow()
        yield from self._id_rows(self.base.all_inherits(), self.overlay.all_inherits(), sh,
                                 self._inherit_overrides(sh), self._seen_inherits)

    def inherits(self, path: str | None = None) -> list[InheritRow]:
        sh = self._shadow()
        if path is not None:
            if path in sh.paths:
                return self.overlay.inherits(path)
            ov = self._inherit_overrides(sh)
            return [ov[i][1] if i in ov else r for i, r in self.base.inherits_touching([path], ())]
        rows = [r for _, r in self.all_inherits()]
        rows.sort(key=_inh_key)
        return rows

    def inherits_touching(self, paths: Iterable[str], names: Iterable[str]) -> list[tuple[int, InheritRow]]:
        paths, names = list(paths), list(names)
        sh = self._shadow()
        return self._id_rows(self.base.inherits_touching(paths, names), self.overlay.inherits_touching(paths, names),
                             sh, self._inherit_overrides(sh), self._seen_inherits)

    def _subtypes(self, qname: str, base_rows: Iterable[InheritRow], overlay_rows: Iterable[InheritRow],
                  sh: _Shadow, limit: int) -> list[InheritRow]:
        ov = self._inherit_overrides(sh)
        moved = {old for old, _ in ov.values()}
        out = [r for r in base_rows if r.path not in sh.paths and r not in moved]
        out += [new for _, new in ov.values() if new.target == qname]
        out += list(overlay_rows)
        out.sort(key=_inh_key)
        return out[:limit]

    def subtypes(self, qname: str, limit: int = 100) -> list[InheritRow]:
        sh = self._shadow()
        k = len(sh.base_inherits) + len(self._inherit_overrides(sh))
        return self._subtypes(qname, self.base.subtypes(qname, limit + k), self.overlay.subtypes(qname, limit),
                              sh, limit)

    def subtypes_many(self, qnames: Iterable[str], limit: int = 100) -> dict[str, list[InheritRow]]:
        qnames = list(qnames)
        sh = self._shadow()
        k = len(sh.base_inherits) + len(self._inherit_overrides(sh))
        b, o = self.base.subtypes_many(qnames, limit + k), self.overlay.subtypes_many(qnames, limit)
        out = {}
        for q in qnames:
            rows = self._subtypes(q, b.get(q, ()), o.get(q, ()), sh, limit)
            if rows:
                out[q] = rows
        return out

    # -- whole graph ----------------------------------------------------------------------------
    def stats(self) -> GraphStats:
        sh = self._shadow()
        b, o = self._base_graph_stats(), self.overlay.stats()
        gone_files = list(sh.base_files.values())
        languages = dict(b.languages)
        kinds = dict(b.kinds)
        for f in gone_files:
            if f.status != "skipped" and f.language:
                languages[f.language] = languages.get(f.language, 0) - 1
        for s in sh.base_symbols:
            kinds[s.kind] = kinds.get(s.kind, 0) - 1
        for src, dst in ((o.languages, languages), (o.kinds, kinds)):
            for k, v in src.items():
                dst[k] = dst.get(k, 0) + v
        ov = self._call_overrides(sh)
        resolved = (b.resolved_calls + o.resolved_calls - sum(1 for c in sh.base_calls if c.target)
                    - sum(1 for old, _ in ov.values() if old.target) + sum(1 for _, new in ov.values() if new.target))
        return GraphStats(
            files=b.files + o.files - sum(1 for f in gone_files if f.status != "skipped"),
            skipped=b.skipped + o.skipped - sum(1 for f in gone_files if f.status == "skipped"),
            symbols=b.symbols + o.symbols - len(sh.base_symbols),
            calls=b.calls + o.calls - len(sh.base_calls),
            resolved_calls=resolved,
            imports=b.imports + o.imports - len(sh.base_imports),
            inherits=b.inherits + o.inherits - len(sh.base_inherits),
            languages={k: v for k, v in sorted(languages.items()) if v > 0},
            kinds={k: v for k, v in sorted(kinds.items()) if v > 0},
        )

    def dump(self) -> dict[str, list[tuple]]:
        """The composite graph as sorted tuples (the port's ``dump`` shape, from the reads)."""
        def strip(row, *drop: str) -> tuple:
            d = msgspec.structs.asdict(row)
            return tuple(v for k, v in d.items() if k not in drop)

        return {
            "files": sorted(strip(f, "mtime_ns", "indexed_at") for f in self.files()),
            "symbols": sorted(strip(s, "id") for s in self.all_symbols()),
            "calls": sorted((c.path, c.caller, c.callee, c.name, c.hint, c.line, c.col, c.kind, c.target,
                             c.resolution, c.confidence) for c in self.all_calls()),
            "imports": sorted(strip(r) for _, r in self.all_imports()),
            "inherits": sorted(strip(r) for _, r in self.all_inherits()),
        }

    # -- dependency manifests and findings: the checkout's own (overlay) --------------------------
    def manifests(self):
        return self.overlay.manifests()

    def write_manifests(self, items, deleted=()):
        return self.overlay.write_manifests(items, deleted)

    def requirements(self, keys=None):
        return self.overlay.requirements(keys)

    def module_keys(self, text="", ecosystem="", offset=0, limit=100):
        return self.overlay.module_keys(text, ecosystem, offset, limit)

    def count_modules(self, text="", ecosystem=""):
        return self.overlay.count_modules(text, ecosystem)

    def imports_under(self, prefixes: Iterable[str]) -> list[ImportRow]:
        prefixes = list(prefixes)
        sh = self._shadow()
        rows = [r for r in self.base.imports_under(prefixes) if r.path not in sh.paths]
        rows += self.overlay.imports_under(prefixes)
        rows.sort(key=lambda r: (r.path, r.line))
        return rows

    def external_imports(self, limit: int = 1000):
        seen: dict[tuple[str, str], int] = {}
        for rows in (self.base.external_imports(limit), self.overlay.external_imports(limit)):
            for a, b, n in rows:
                seen[(a, b)] = seen.get((a, b), 0) + n
        return sorted(((a, b, n) for (a, b), n in seen.items()), key=lambda t: (-t[2], t[0], t[1]))[:limit]

    def replace_findings(self, runs, rows):
        return self.overlay.replace_findings(runs, rows)

    def delete_findings_from(self, source: str) -> int:
        return self.overlay.delete_findings_from(source)

    def finding_runs(self):
        return self.overlay.finding_runs()

    def findings(self, path=None, start=0, end=0, limit=1000):
        return self.overlay.findings(path, start, end, limit)

    def findings_in_ranges(self, spans, limit=1000):
        return self.overlay.findings_in_ranges(spans, limit)

    def count_findings_many(self, spans):
        return self.overlay.count_findings_many(spans)

    def count_findings(self, path=None, start=0, end=0):
        return self.overlay.count_findings(path, start, end)
