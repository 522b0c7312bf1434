"""The scale-out backend: the code graph in Neo4j 5.26 (Community or Enterprise) over Bolt.

Model (labels and relationship types are constants; every value is a ``$parameter``):

- ``(:CsFile {graph_id, path, language, hash, size, mtime_ns, lines, module, status,
  reason, indexed_at})`` — unique on ``(graph_id, path)``;
- ``(:CsFile)-[:CONTAINS]->(:CsSymbol {graph_id, id, path, qname, name, kind, …,
  ft_name, ft_qname, ft_terms})`` — unique on ``(graph_id, id)``;
- ``(:CsCall {graph_id, id, path, caller, callee, name, head, hint, hint_name, line, col,
  kind, target, resolution, confidence})``: a call *site* is a node, not a relationship,
  because its target may be unresolved or outside the graph (no endpoint to attach to), a
  qualified name may name several symbols (one per path), and resolution rewrites targets
  incrementally: a CALLS relationship would have to be re-wired on every re-resolution.
  Callers/callees are index seeks on ``(graph_id, target)`` / ``(graph_id, caller)``;
- ``(:CsImport {graph_id, id, path, module, name, alias, line, target})``,
  ``(:CsInherit {graph_id, id, path, child, base, kind, line, target, resolution,
  confidence})``, ``(:CsMeta {graph_id, key, value})``;
- ``(:CsCounter {graph_id, name})`` hands out the integer row ids that the protocol uses
  (``symbol_by_id``, ``update_call_targets``); ids are opaque and differ from SQLite's.

Every root binds ``graph_id`` (``{graph_id: $g, …}``, backed by composite indexes), and
the one expansion (``CONTAINS``) binds it on both ends. Writes are batched
``UNWIND $rows … MERGE/CREATE`` in one managed transaction per protocol call (retried by
the driver on transient errors; the work is idempotent because it starts by deleting the
paths it rewrites). Name search uses a Lucene full-text index over pre-tokenized,
case- and accent-folded fields; its BM25 scores differ from SQLite FTS5's (see
``docs/BACKENDS.md``). Driver errors become ``StoreUnavailable`` (server unreachable, timed
out, transient) or ``StoreError`` (everything else), always ``from e``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from codesynapse.errors import StoreError
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
from codesynapse.store.graph import (
    SCHEMA_VERSION,
    SERVER_CAPABILITIES,
    base_keys,
    module_keys,
)
from codesynapse.store.neo4j.deps import DEPS_LABELS, DEPS_SCHEMA, Neo4jDepsMixin
from codesynapse.store.neo4j.driver import (
    check_uri,
    driver_errors,
    ensure_schema,
    translate_error,
)
from codesynapse.store.text import callee_head, fold_tokens, name_terms, query_terms

log = logging.getLogger(__name__)

CHUNK = 5_000  # rows per UNWIND statement
TOUCH_CHUNK = 1_000  # names per calls_touching query
BATCH_KEYS = 1_000  # keys per batch read (symbols_by_qnames, callers_many, …)
CALLS_PER_TX = 10_000  # call sites per insert_calls transaction (Neo4j bounds transaction memory)
PAGE = 5_000  # rows per page of the all_* iterators (each page is its own short transaction)
FULLTEXT_INDEX = "cs_symbol_text"
NO_LIMIT = 2**62

_SCHEMA = (
    "CREATE CONSTRAINT cs_file_key IF NOT EXISTS FOR (n:CsFile) REQUIRE (n.graph_id, n.path) IS UNIQUE",
    "CREATE CONSTRAINT cs_symbol_key IF NOT EXISTS FOR (n:CsSymbol) REQUIRE (n.graph_id, n.id) IS UNIQUE",
    "CREATE CONSTRAINT cs_call_key IF NOT EXISTS FOR (n:CsCall) REQUIRE (n.graph_id, n.id) IS UNIQUE",
    "CREATE CONSTRAINT cs_import_key IF NOT EXISTS FOR (n:CsImport) REQUIRE (n.graph_id, n.id) IS UNIQUE",
    "CREATE CONSTRAINT cs_inherit_key IF NOT EXISTS FOR (n:CsInherit) REQUIRE (n.graph_id, n.id) IS UNIQUE",
    "CREATE CONSTRAINT cs_meta_key IF NOT EXISTS FOR (n:CsMeta) REQUIRE (n.graph_id, n.key) IS UNIQUE",
    "CREATE CONSTRAINT cs_counter_key IF NOT EXISTS FOR (n:CsCounter) REQUIRE (n.graph_id, n.name) IS UNIQUE",
    "CREATE INDEX cs_symbol_qname IF NOT EXISTS FOR (n:CsSymbol) ON (n.graph_id, n.qname)",
    "CREATE INDEX cs_symbol_name IF NOT EXISTS FOR (n:CsSymbol) ON (n.graph_id, n.name)",
    "CREATE INDEX cs_symbol_path IF NOT EXISTS FOR (n:CsSymbol) ON (n.graph_id, n.path)",
    "CREATE INDEX cs_call_target IF NOT EXISTS FOR (n:CsCall) ON (n.graph_id, n.target)",
    "CREATE INDEX cs_call_caller IF NOT EXISTS FOR (n:CsCall) ON (n.graph_id, n.caller)",
    # unresolved calls of a name (cards, call graphs): a seek, not a filter over every call of
    # the name ("get" has thousands) — as SQLite's calls_name index covers it. It serves the
    # calls of a name too (calls_touching: trailing IS NOT NULL predicates let the planner seek
    # on the prefix), so no (graph_id, name) index is written for every call site as well
    "CREATE INDEX cs_call_unresolved IF NOT EXISTS FOR (n:CsCall) ON (n.graph_id, n.name, n.target, n.resolution)",
    "CREATE INDEX cs_call_head IF NOT EXISTS FOR (n:CsCall) ON (n.graph_id, n.head)",
    "CREATE INDEX cs_call_hint IF NOT EXISTS FOR (n:CsCall) ON (n.graph_id, n.hint_name)",
    "CREATE INDEX cs_call_path IF NOT EXISTS FOR (n:CsCall) ON (n.graph_id, n.path)",
    "CREATE INDEX cs_import_path IF NOT EXISTS FOR (n:CsImport) ON (n.graph_id, n.path)",
    *(f"CREATE INDEX cs_import_{k} IF NOT EXISTS FOR (n:CsImport) ON (n.graph_id, n.{k})"
      for k in ("module", "name", "alias", "mod_head", "mod_last")),
    "CREATE INDEX cs_inherit_path IF NOT EXISTS FOR (n:CsInherit) ON (n.graph_id, n.path)",
    "CREATE INDEX cs_inherit_target IF NOT EXISTS FOR (n:CsInherit) ON (n.graph_id, n.target)",
    "CREATE INDEX cs_inherit_child IF NOT EXISTS FOR (n:CsInherit) ON (n.graph_id, n.child)",
    "CREATE INDEX cs_inherit_base_name IF NOT EXISTS FOR (n:CsInherit) ON (n.graph_id, n.base_name)",
    "CREATE INDEX cs_inherit_base_head IF NOT EXISTS FOR (n:CsInherit) ON (n.graph_id, n.base_head)",
    # whitespace analyzer: the fields hold tokens this module already split and folded,
    # so Lucene tokenizes exactly like the query side (see store/text.py fold_tokens)
    "CREATE FULLTEXT INDEX cs_symbol_text IF NOT EXISTS FOR (n:CsSymbol) "
    "ON EACH [n.ft_name, n.ft_qname, n.ft_terms] "
    "OPTIONS {indexConfig: {`fulltext.analyzer`: 'whitespace', `fulltext.eventually_consistent`: false}}",
)

# Deleting what a path owns, one label at a time (each an index seek on (graph_id, path)).
_DELETE_BY_PATH = {
    label: f"UNWIND $paths AS p MATCH (n:{label} {{graph_id: $g, path: p}}) DETACH DELETE n"
    for label in ("CsSymbol", "CsCall", "CsImport", "CsInherit", "CsFile")
}

# Property order of the rows sent by the writers (each row ends with its id).
_FILE_PROPS = ("path", "language", "hash", "size", "mtime_ns", "lines", "module", "status", "reason", "indexed_at")
_SYMBOL_PROPS = ("path", "qname", "name", "kind", "signature", "start_line", "end_line", "start_col", "end_col",
                 "hash", "summary", "parent", "is_test", "exported", "language", "ft_name", "ft_qname", "ft_terms",
                 "id")
_CALL_PROPS = ("path", "caller", "callee", "name", "head", "hint", "hint_name", "line", "col", "kind", "target",
               "resolution", "confidence", "args", "id")
_IMPORT_PROPS = ("path", "module", "name", "alias", "line", "target", "mod_head", "mod_last", "id")
_INHERIT_PROPS = ("path", "child", "base", "kind", "line", "target", "resolution", "confidence", "base_name",
                  "base_head", "id")


def _props(names: Sequence[str]) -> str:
    return ", ".join(f"{k}: r[{i}]" for i, k in enumerate(names))


_RESTAMP_FILES = ("UNWIND $rows AS r MATCH (f:CsFile {graph_id: $g, path: r[0]}) "
                  "WHERE f.hash = r[1] SET f.mtime_ns = r[2]")
_MERGE_FILES = ("UNWIND $rows AS r MERGE (f:CsFile {graph_id: $g, path: r[0]}) SET "
                + ", ".join(f"f.{k} = r[{i}]" for i, k in enumerate(_FILE_PROPS) if k != "path"))
_INSERT_SYMBOLS = ("UNWIND $rows AS r MATCH (f:CsFile {graph_id: $g, path: r[0]}) "
                   f"CREATE (f)-[:CONTAINS]->(:CsSymbol {{graph_id: $g, {_props(_SYMBOL_PROPS)}}})")
_INSERT = {label: f"UNWIND $rows AS r CREATE (:{label} {{graph_id: $g, {_props(props)}}})"
           for label, props in (("CsCall", _CALL_PROPS), ("CsImport", _IMPORT_PROPS),
                                ("CsInherit", _INHERIT_PROPS))}

_SYM_ORDER = " ORDER BY s.qname, s.path, s.start_line, s.id"
_CALL_ORDER = " ORDER BY c.path, c.line, c.col, c.callee, c.id"


# ---- search terms -------------------------------------------------------------------------

def lucene_query(text: str) -> str:
    """A Lucene query over the three fields with FTS5's column weights (4, 2, 1). Terms are
    \\w+ only, so quoting them is enough; the whole string travels as a parameter."""
    clauses: list[str] = []
    for t in query_terms(text):
        clauses += [f'ft_name:"{t}"^4', f'ft_qname:"{t}"^2', f'ft_terms:"{t}"']
    return " OR ".join(clauses)


# ---- the store ----------------------------------------------------------------------------

class Neo4jGraphStore(Neo4jDepsMixin):
    """GraphStore on a Neo4j database. Thread-safe: the driver pools connections and every
    call opens its own short session."""

    capabilities = SERVER_CAPABILITIES  # docs/BACKENDS.md, "Transactions"

    def __init__(self, uri: str, graph_id: str, *, user: str = "neo4j", password: str = "",
                 database: str | None = None, connect_timeout: float = 5.0,
                 read_timeout: float = 10.0, write_timeout: float = 300.0):
        check_uri(uri)
        from neo4j import GraphDatabase
        from neo4j.exceptions import ConfigurationError

        self.uri = uri
        self.graph_id = graph_id
        self.database = database
        self.read_timeout = read_timeout
        self.write_timeout = write_timeout
        self._tx_lock = threading.RLock()
        self._local = threading.local()  # the session of a thread's snapshot() block
        self._errors = driver_errors()
        auth = (user, password) if password else None
        try:
            self._driver = GraphDatabase.driver(
                uri, auth=auth, connection_timeout=connect_timeout,
                connection_acquisition_timeout=max(connect_timeout, 10.0),
                max_transaction_retry_time=15.0, notifications_min_severity="OFF")
        except (ValueError, ConfigurationError) as e:
            raise StoreError(f"invalid neo4j URI {uri!r}: {e}") from e
        self._bookmarks = GraphDatabase.bookmark_manager()
        try:
            self._driver.verify_connectivity()
            self._ensure_schema()
            version = self.get_meta("schema_version")
            if version is not None and version != str(SCHEMA_VERSION):
                # the graph is derived data: rebuild it rather than refuse to start (as SQLite
                # does; here only this graph id is dropped, not the whole database)
                log.warning("graph %s has schema version %s != %s: dropping it to rebuild", graph_id, version,
                            SCHEMA_VERSION)
                self.delete_graph()
                version = None
            if version is None:
                self.set_meta({"schema_version": str(SCHEMA_VERSION)})
        except self._errors as e:
            self._driver.close()
            raise translate_error(e, f"connect to {uri}") from e
        except BaseException:
            self._driver.close()
            raise

    # -- transactions (docs/BACKENDS.md, "Transactions": weaker than SQLite's) ------------------
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Serializes this process' writers of this store (a thread lock held for the block).
        The writes inside are not one transaction together: each protocol call stays its own
        Neo4j transaction (insert_calls: one per 10,000 sites).
        Writers in other processes are not excluded (Neo4j offers no lock that this
        store could hold across protocol calls)."""
        with self._tx_lock:
            yield

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """No read snapshot (each read is its own auto-commit transaction and sees the
        latest commit), but the reads of this thread inside the block share one session: one
        connection taken from the pool once per request, not once per read."""
        if getattr(self._local, "session", None) is not None:
            yield
            return
        session = self._session()
        self._local.session = session
        try:
            yield
        finally:
            self._local.session = None
            try:
                session.close()
            except self._errors:
                log.debug("closing a neo4j read session failed", exc_info=True)

    # -- plumbing ------------------------------------------------------------------------
    def _ensure_schema(self) -> None:
        ensure_schema(self._driver, self.database, _SCHEMA + DEPS_SCHEMA)  # modules, findings: neo4j_deps.py

    def _session(self):
        return self._driver.session(database=self.database, bookmark_manager=self._bookmarks)

    def _read(self, what: str, fn: Callable[..., Any], *args: Any, timeout: float | None = None) -> Any:
        from neo4j import unit_of_work

        try:
            with self._session() as s:
                return s.execute_read(unit_of_work(timeout=timeout or self.read_timeout)(fn), *args)
        except self._errors as e:
            raise translate_error(e, what) from e

    def _write(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        from neo4j import unit_of_work

        try:
            with self._session() as s:
                return s.execute_write(unit_of_work(timeout=self.write_timeout)(fn), *args)
        except self._errors as e:
            raise translate_error(e, what) from e

    def _rows(self, what: str, query: str, **params: Any) -> list[Any]:
        """Run one read query as an auto-commit transaction (one round trip fewer than a
        managed one: single-query reads have nothing to retry as a unit); every record's
        single value (map projections or scalars)."""
        from neo4j import Query

        params.setdefault("g", self.graph_id)
        shared = getattr(self._local, "session", None)
        try:
            if shared is not None:
                return [rec.values()[0] for rec in shared.run(Query(query, timeout=self.read_timeout), params)]
            with self._session() as s:
                return [rec.values()[0] for rec in s.run(Query(query, timeout=self.read_timeout), params)]
        except self._errors as e:
            raise translate_error(e, what) from e

    def _scalar(self, what: str, query: str, **params: Any) -> Any:
        rows = self._rows(what, query, **params)
        return rows[0] if rows else None

    def close(self) -> None:
        try:
            self._driver.close()
        except self._errors:  # closing must not fail a shutdown
            log.debug("closing the neo4j driver failed", exc_info=True)

    # -- meta ----------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        return self._scalar("get_meta", "MATCH (m:CsMeta {graph_id: $g, key: $key}) RETURN m.value", key=key)

    def set_meta(self, values: dict[str, str]) -> None:
        rows = [{"key": k, "value": str(v)} for k, v in values.items()]
        g = self.graph_id

        def work(tx):
            tx.run("UNWIND $rows AS r MERGE (m:CsMeta {graph_id: $g, key: r.key}) SET m.value = r.value",
                   rows=rows, g=g).consume()

        self._write("set_meta", work)

    # -- writes --------------------------------------------------------------------------
    @staticmethod
    def _alloc(tx, g: str, n: int) -> int:
        """Reserve ``n`` row ids in this graph; returns the id before the first."""
        if n <= 0:
            return 0
        rec = tx.run(
            "MERGE (c:CsCounter {graph_id: $g, name: 'rows'}) ON CREATE SET c.next = 0 "
            "SET c.next = c.next + $n RETURN c.next - $n AS base", g=g, n=n).single()
        return int(rec["base"])

    @staticmethod
    def _send(tx, query: str, rows: Sequence[Sequence[Any]], **params: Any) -> None:
        """Run ``query`` over ``rows`` in chunks of CHUNK (``UNWIND $rows AS r``)."""
        for i in range(0, len(rows), CHUNK):
            tx.run(query, rows=rows[i:i + CHUNK], **params).consume()

    def _delete_paths_tx(self, tx, paths: Sequence[str]) -> None:
        if not paths:
            return
        for i in range(0, len(paths), CHUNK):
            part = list(paths[i:i + CHUNK])
            for stmt in _DELETE_BY_PATH.values():
                tx.run(stmt, paths=part, g=self.graph_id).consume()

    @staticmethod
    def _call_row(path: str, c: CallSite, r: Resolution) -> list[Any]:
        """A call site in ``_CALL_PROPS`` order (without its id, appended later)."""
        return [path, c.caller, c.callee, c.name, callee_head(c.callee), c.receiver_hint,
                c.receiver_hint.rsplit(".", 1)[-1] if c.receiver_hint else "", c.line, c.col, c.kind,
                r.target, r.resolution, float(r.confidence), c.args]

    def _insert_tx(self, tx, symbols: list[list], calls: list[list], imports: list[list],
                   inherits: list[list]) -> None:
        base = self._alloc(tx, self.graph_id, len(symbols) + len(calls) + len(imports) + len(inherits))
        for rows in (symbols, calls, imports, inherits):
            for r in rows:
                base += 1
                r.append(base)
        g = self.graph_id
        self._send(tx, _INSERT_SYMBOLS, symbols, g=g)
        self._send(tx, _INSERT["CsCall"], calls, g=g)
        self._send(tx, _INSERT["CsImport"], imports, g=g)
        self._send(tx, _INSERT["CsInherit"], inherits, g=g)

    def write_files(
        self,
        extractions: Sequence[tuple[FileExtraction, int]],
        skipped: Sequence[FileRow] = (),
        call_targets: dict[tuple[str, int], Resolution] | None = None,
        inherit_targets: dict[tuple[str, int], Resolution] | None = None,
        import_targets: dict[tuple[str, int], str] | None = None,
        with_calls: bool = True,
    ) -> None:
        g = self.graph_id
        call_targets = call_targets or {}
        inherit_targets = inherit_targets or {}
        import_targets = import_targets or {}
        now = time.time()
        unresolved = Resolution("", "unresolved", 0.0)
        # Rows go over the wire as lists in the order of the _*_PROPS tuples (half the
        # packing work of maps); they are read back by property name.
        files: list[list[Any]] = []
        syms: list[list[Any]] = []
        calls: list[list[Any]] = []
        imps: list[list[Any]] = []
        inhs: list[list[Any]] = []
        for fx, mtime in extractions:
            files.append([fx.path, fx.language, fx.hash, fx.size, mtime, fx.lines, fx.module,
                          "partial" if fx.partial else "indexed",
                          fx.error or ("syntax errors; partial extraction" if fx.partial else ""), now])
            for s in fx.symbols:
                terms = name_terms(s.name, s.qname)
                syms.append([fx.path, s.qname, s.name, s.kind, s.signature, s.start_line, s.end_line, s.start_col,
                             s.end_col, s.hash, s.summary, s.parent, bool(s.is_test), bool(s.exported), fx.language,
                             fold_tokens(s.name), fold_tokens(s.qname), fold_tokens(terms)])
            for i, c in enumerate(fx.calls if with_calls else ()):
                calls.append(self._call_row(fx.path, c, call_targets.get((fx.path, i), unresolved)))
            for i, im in enumerate(fx.imports):
                imps.append([fx.path, im.module, im.name, im.alias, im.line, import_targets.get((fx.path, i), ""),
                             *module_keys(im.module)])
            for i, ih in enumerate(fx.inherits):
                r = inherit_targets.get((fx.path, i), unresolved)
                inhs.append([fx.path, ih.child, ih.base, ih.kind, ih.line, r.target, r.resolution,
                             float(r.confidence), *base_keys(ih.base)])
        for s in skipped:
            files.append([s.path, s.language, s.hash, s.size, s.mtime_ns, s.lines, s.module, "skipped", s.reason,
                          now])
        paths = list(dict.fromkeys([fx.path for fx, _ in extractions] + [s.path for s in skipped]))

        def work(tx):
            self._delete_paths_tx(tx, paths)
            self._send(tx, _MERGE_FILES, files, g=g)
            self._insert_tx(tx, syms, calls, imps, inhs)

        self._write("write_files", work)

    def insert_calls(self, items: Sequence[tuple[str, CallSite, Resolution]]) -> None:
        """Add call sites (with their resolution) for files written with ``with_calls=False``.

        Unlike SQLite, one transaction per ``CALLS_PER_TX`` call sites: Neo4j bounds the
        memory of one transaction (``db.memory.transaction.total.max``), and the indexer
        already hands over call sites in chunks and re-resolves after a crash."""
        rows = [self._call_row(path, c, r) for path, c, r in items]
        for i in range(0, len(rows), CALLS_PER_TX):
            part = rows[i:i + CALLS_PER_TX]
            self._write("insert_calls", lambda tx, part=part: self._insert_tx(tx, [], part, [], []))

    def restamp_files(self, stamps: Sequence[tuple[str, str, int]]) -> None:
        """GraphStore.restamp_files: the mtime of rows that still hold the given hash."""
        rows = [[p, h, int(m)] for p, h, m in stamps if h]
        if rows:
            self._write("restamp_files", lambda tx: self._send(tx, _RESTAMP_FILES, rows, g=self.graph_id))

    def delete_files(self, paths: Iterable[str]) -> None:
        paths = list(dict.fromkeys(paths))
        if paths:
            self._write("delete_files", lambda tx: self._delete_paths_tx(tx, paths))

    def _update(self, what: str, label: str, sets: str, rows: list[list[Any]]) -> None:
        if not rows:
            return
        query = f"UNWIND $rows AS r MATCH (n:{label} {{graph_id: $g, id: r[0]}}) SET {sets}"
        self._write(what, lambda tx: self._send(tx, query, rows, g=self.graph_id))

    def update_call_targets(self, updates: Sequence[tuple[int, Resolution]]) -> None:
        self._update("update_call_targets", "CsCall",
                     "n.target = r[1], n.resolution = r[2], n.confidence = r[3]",
                     [[i, r.target, r.resolution, float(r.confidence)] for i, r in updates])

    def update_inherit_targets(self, updates: Sequence[tuple[int, Resolution]]) -> None:
        self._update("update_inherit_targets", "CsInherit",
                     "n.target = r[1], n.resolution = r[2], n.confidence = r[3]",
                     [[i, r.target, r.resolution, float(r.confidence)] for i, r in updates])

    def update_import_targets(self, updates: Sequence[tuple[int, str]]) -> None:
        self._update("update_import_targets", "CsImport", "n.target = r[1]", [[i, t] for i, t in updates])

    def delete_graph(self) -> int:
        """Remove every node of this graph id (files, symbols, calls, imports, inherits, meta,
        counter), in batches. Not part of the protocol: for tests, benchmarks and rebuilds."""
        total = 0
        for label in ("CsSymbol", "CsCall", "CsImport", "CsInherit", "CsFile", "CsMeta", "CsCounter", *DEPS_LABELS):
            query = (f"MATCH (n:{label} {{graph_id: $g}}) WITH n LIMIT 20000 "
                     "DETACH DELETE n RETURN count(*) AS n")
            while True:
                n = self._write("delete_graph", lambda tx, q=query: tx.run(q, g=self.graph_id).single()["n"])
                total += n
                if n == 0:
                    break
        return total

    # -- row conversion ------------------------------------------------------------------
    @staticmethod
    def _file(r: dict[str, Any]) -> FileRow:
        return FileRow(path=r["path"], language=r.get("language") or "", hash=r.get("hash") or "",
                       size=r.get("size") or 0, mtime_ns=r.get("mtime_ns") or 0, lines=r.get("lines") or 0,
                       module=r.get("module") or "", status=r["status"], reason=r.get("reason") or "",
                       indexed_at=r.get("indexed_at") or 0.0)

    @staticmethod
    def _sym(r: dict[str, Any]) -> SymbolRow:
        return SymbolRow(id=r["id"], path=r["path"], qname=r["qname"], name=r["name"], kind=r["kind"],
                         signature=r.get("signature") or "", start_line=r["start_line"], end_line=r["end_line"],
                         start_col=r["start_col"], end_col=r["end_col"], hash=r.get("hash") or "",
                         summary=r.get("summary") or "", parent=r.get("parent") or "",
                         is_test=bool(r.get("is_test")), exported=bool(r.get("exported")),
                         language=r.get("language") or "")

    @staticmethod
    def _call(r: dict[str, Any]) -> CallRow:
        return CallRow(id=r["id"], path=r["path"], caller=r["caller"], callee=r["callee"], name=r["name"],
                       line=r["line"], col=r["col"], kind=r["kind"], hint=r["hint"], target=r["target"],
                       resolution=r["resolution"], confidence=r["confidence"], args=r.get("args") or "")

    @staticmethod
    def _imp(r: dict[str, Any]) -> ImportRow:
        return ImportRow(path=r["path"], module=r["module"], name=r["name"], alias=r["alias"], line=r["line"],
                         target=r["target"])

    @staticmethod
    def _inh(r: dict[str, Any]) -> InheritRow:
        return InheritRow(path=r["path"], child=r["child"], base=r["base"], kind=r["kind"], line=r["line"],
                          target=r["target"], resolution=r["resolution"], confidence=r["confidence"])

    # Properties read back (the full-text fields stay in the database).
    _SYM = "s {.id, .path, .qname, .name, .kind, .signature, .start_line, .end_line, .start_col, .end_col, " \
           ".hash, .summary, .parent, .is_test, .exported, .language}"

    def _paged(self, what: str, first: str, rest: str, key: Callable[[dict[str, Any]], Any]) -> Iterator[dict]:
        """Keyset pagination: each page is one short read transaction, so a slow consumer
        never holds a transaction open past the read timeout."""
        rows = self._rows(what, first, n=PAGE)
        while rows:
            yield from rows
            if len(rows) < PAGE:
                return
            rows = self._rows(what, rest, n=PAGE, after=key(rows[-1]))

    # -- reads ---------------------------------------------------------------------------
    def files(self) -> list[FileRow]:
        return [self._file(r) for r in self._rows("files", "MATCH (f:CsFile {graph_id: $g}) RETURN f {.*} "
                                                           "ORDER BY f.path")]

    def file(self, path: str) -> FileRow | None:
        r = self._scalar("file", "MATCH (f:CsFile {graph_id: $g, path: $p}) RETURN f {.*}", p=path)
        return self._file(r) if r else None

    def symbols_in_file(self, path: str) -> list[SymbolRow]:
        return [self._sym(r) for r in self._rows(
            "symbols_in_file",
            "MATCH (f:CsFile {graph_id: $g, path: $p})-[:CONTAINS]->(s:CsSymbol {graph_id: $g}) "
            f"RETURN {self._SYM} ORDER BY s.start_line, s.start_col, s.qname, s.id", p=path)]

    def all_symbols(self) -> Iterable[SymbolRow]:
        head = f"MATCH (s:CsSymbol {{graph_id: $g}}) "
        tail = f"RETURN {self._SYM}" + _SYM_ORDER + " LIMIT $n"
        rows = self._paged("all_symbols", head + tail,
                           head + "WHERE [s.qname, s.path, s.start_line, s.id] > $after " + tail,
                           lambda r: [r["qname"], r["path"], r["start_line"], r["id"]])
        return (self._sym(r) for r in rows)

    def symbols_by_qname(self, qname: str) -> list[SymbolRow]:
        return [self._sym(r) for r in self._rows(
            "symbols_by_qname", f"MATCH (s:CsSymbol {{graph_id: $g, qname: $q}}) RETURN {self._SYM}" + _SYM_ORDER,
            q=qname)]

    def symbols_by_name(self, name: str, limit: int = 50) -> list[SymbolRow]:
        return [self._sym(r) for r in self._rows(
            "symbols_by_name",
            f"MATCH (s:CsSymbol {{graph_id: $g, name: $q}}) RETURN {self._SYM}" + _SYM_ORDER + " LIMIT $lim",
            q=name, lim=_lim(limit))]

    def symbol_by_id(self, symbol_id: int) -> SymbolRow | None:
        r = self._scalar("symbol_by_id", f"MATCH (s:CsSymbol {{graph_id: $g, id: $id}}) RETURN {self._SYM}",
                         id=int(symbol_id))
        return self._sym(r) if r else None

    def symbol_at(self, path: str, line: int) -> SymbolRow | None:
        r = self._scalar(
            "symbol_at",
            "MATCH (s:CsSymbol {graph_id: $g, path: $p}) "
            "WHERE s.start_line <= $line AND s.end_line >= $line AND s.kind <> 'module' "
            f"RETURN {self._SYM} ORDER BY s.end_line - s.start_line, s.start_line DESC, s.id LIMIT 1",
            p=path, line=line)
        return self._sym(r) if r else None

    def search(self, text: str, limit: int, offset: int = 0) -> list[tuple[SymbolRow, float]]:
        q = lucene_query(text)
        if not q or limit <= 0:
            return []

        def work(tx):
            return [(rec["s"], rec["score"]) for rec in tx.run(
                f"CALL db.index.fulltext.queryNodes('{FULLTEXT_INDEX}', $q) YIELD node AS s, score "
                f"WHERE s.graph_id = $g RETURN {self._SYM} AS s, score "
                "ORDER BY score DESC, s.qname, s.path, s.start_line, s.id SKIP $off LIMIT $lim",
                q=q, g=self.graph_id, off=max(0, offset), lim=_lim(limit))]

        return [(self._sym(r), float(score)) for r, score in self._read("search", work)]

    def count_search(self, text: str) -> int:
        q = lucene_query(text)
        if not q:
            return 0
        return self._scalar("count_search",
                            f"CALL db.index.fulltext.queryNodes('{FULLTEXT_INDEX}', $q) YIELD node "
                            "WHERE node.graph_id = $g RETURN count(node)", q=q)

    def _calls(self, what: str, where: str, limit: int | None = None, **params: Any) -> list[CallRow]:
        query = f"MATCH (c:CsCall {{graph_id: $g, {where}}}) RETURN c {{.*}}" + _CALL_ORDER
        if limit is not None:
            query += " LIMIT $lim"
            params["lim"] = _lim(limit)
        return [self._call(r) for r in self._rows(what, query, **params)]

    def callers(self, qname: str, limit: int = 1000) -> list[CallRow]:
        return self._calls("callers", "target: $q", limit, q=qname)

    def count_callers(self, qname: str) -> int:
        return self._scalar("count_callers", "MATCH (c:CsCall {graph_id: $g, target: $q}) RETURN count(c)", q=qname)

    def callees(self, caller: str, limit: int = 1000) -> list[CallRow]:
        return self._calls("callees", "caller: $q", limit, q=caller)

    def count_callees(self, caller: str) -> int:
        return self._scalar("count_callees", "MATCH (c:CsCall {graph_id: $g, caller: $q}) RETURN count(c)",
                            q=caller)

    def unresolved_named(self, name: str, limit: int = 100) -> list[CallRow]:
        return self._calls("unresolved_named", "name: $q, target: '', resolution: 'unresolved'", limit, q=name)

    def count_unresolved_named(self, name: str) -> int:
        return self._scalar("count_unresolved_named",
                            "MATCH (c:CsCall {graph_id: $g, name: $q, target: '', resolution: 'unresolved'}) "
                            "RETURN count(c)", q=name)

    def calls_in_files(self, paths: Iterable[str]) -> list[CallRow]:
        paths = list(paths)
        if not paths:
            return []
        rows = self._rows("calls_in_files",
                          "UNWIND range(0, size($paths) - 1) AS i "
                          "MATCH (c:CsCall {graph_id: $g, path: $paths[i]}) "
                          "RETURN c {.*, _i: i} ORDER BY i, c.line, c.col, c.callee, c.id", paths=paths)
        return [self._call(r) for r in rows]

    def calls_touching(self, names: Iterable[str]) -> list[CallRow]:
        names = sorted(set(names))
        out: dict[int, CallRow] = {}
        for i in range(0, len(names), TOUCH_CHUNK):
            chunk = names[i:i + TOUCH_CHUNK]
            for r in self._rows(
                    "calls_touching",
                    "CALL { "
                    "UNWIND $names AS x MATCH (c:CsCall {graph_id: $g, name: x}) "
                    "WHERE c.target IS NOT NULL AND c.resolution IS NOT NULL RETURN c "
                    "UNION UNWIND $names AS x MATCH (c:CsCall {graph_id: $g, head: x}) RETURN c "
                    "UNION UNWIND $names AS x MATCH (c:CsCall {graph_id: $g, hint_name: x}) RETURN c } "
                    "RETURN c {.*}", names=chunk):
                out[r["id"]] = self._call(r)
        return [out[k] for k in sorted(out)]

    def calls_by_hint_name(self, names: Iterable[str]) -> list[CallRow]:
        names = sorted(set(names))
        out: dict[int, CallRow] = {}
        for i in range(0, len(names), TOUCH_CHUNK):
            for r in self._rows("calls_by_hint_name",
                                "UNWIND $names AS x MATCH (c:CsCall {graph_id: $g, hint_name: x}) RETURN c {.*}",
                                names=names[i:i + TOUCH_CHUNK]):
                out[r["id"]] = self._call(r)
        return [out[k] for k in sorted(out)]

    def all_calls(self) -> Iterable[CallRow]:
        return (self._call(r) for r in self._by_id("all_calls", "CsCall"))

    def _by_id(self, what: str, label: str) -> Iterator[dict[str, Any]]:
        head = f"MATCH (n:{label} {{graph_id: $g}}) "
        tail = "RETURN n {.*} ORDER BY n.id LIMIT $n"
        return self._paged(what, head + tail, head + "WHERE n.id > $after " + tail, lambda r: r["id"])

    def imports(self, path: str | None = None) -> list[ImportRow]:
        if path is None:
            rows = self._rows("imports", "MATCH (i:CsImport {graph_id: $g}) RETURN i {.*} "
                                         "ORDER BY i.path, i.line, i.module, i.name, i.id")
        else:
            rows = self._rows("imports", "MATCH (i:CsImport {graph_id: $g, path: $p}) RETURN i {.*} "
                                         "ORDER BY i.line, i.module, i.name, i.id", p=path)
        return [self._imp(r) for r in rows]

    def all_imports(self) -> Iterable[tuple[int, ImportRow]]:
        return ((r["id"], self._imp(r)) for r in self._by_id("all_imports", "CsImport"))

    def _touching(self, what: str, label: str, keys: Sequence[tuple[str, Iterable[str]]]) -> list[dict[str, Any]]:
        """Rows of ``label`` whose property ``k`` holds one of its values, for each (k,
        values) pair (an index seek each); each row once, in id order. Labels and property
        names are constants of this module; values are parameters."""
        lists = [(k, sorted(set(values))) for k, values in keys]
        lists = [(k, vals) for k, vals in lists if vals]
        out: dict[int, dict[str, Any]] = {}
        # one query per chunk for every key (a UNION of index seeks: each row sent once)
        for i in range(0, max((len(v) for _, v in lists), default=0), TOUCH_CHUNK):
            part = [(j, k, vals[i:i + TOUCH_CHUNK]) for j, (k, vals) in enumerate(lists) if vals[i:i + TOUCH_CHUNK]]
            query = "CALL { " + " UNION ".join(
                f"UNWIND $v{j} AS x MATCH (n:{label} {{graph_id: $g, {k}: x}}) RETURN n" for j, k, _ in part) + \
                " } RETURN n {.*}"
            for r in self._rows(what, query, **{f"v{j}": vals for j, _, vals in part}):
                out[r["id"]] = r
        return [out[i] for i in sorted(out)]

    def imports_touching(self, paths: Iterable[str], names: Iterable[str],
                         modules: Iterable[str] = ()) -> list[tuple[int, ImportRow]]:
        names = list(names)
        rows = self._touching("imports_touching", "CsImport",
                              (("path", paths), ("name", names), ("alias", names), ("mod_head", names),
                               ("mod_last", names), ("module", modules)))
        return [(r["id"], self._imp(r)) for r in rows]

    def inherits_touching(self, paths: Iterable[str], names: Iterable[str]) -> list[tuple[int, InheritRow]]:
        names = list(names)
        rows = self._touching("inherits_touching", "CsInherit",
                              (("path", paths), ("base_name", names), ("base_head", names)))
        return [(r["id"], self._inh(r)) for r in rows]

    def inherits(self, path: str | None = None) -> list[InheritRow]:
        if path is None:
            rows = self._rows("inherits", "MATCH (i:CsInherit {graph_id: $g}) RETURN i {.*} "
                                          "ORDER BY i.path, i.line, i.child, i.base, i.id")
        else:
            rows = self._rows("inherits", "MATCH (i:CsInherit {graph_id: $g, path: $p}) RETURN i {.*} "
                                          "ORDER BY i.line, i.child, i.base, i.id", p=path)
        return [self._inh(r) for r in rows]

    def all_inherits(self) -> Iterable[tuple[int, InheritRow]]:
        return ((r["id"], self._inh(r)) for r in self._by_id("all_inherits", "CsInherit"))

    def subtypes(self, qname: str, limit: int = 100) -> list[InheritRow]:
        return [self._inh(r) for r in self._rows(
            "subtypes", "MATCH (i:CsInherit {graph_id: $g, target: $q}) RETURN i {.*} "
                        "ORDER BY i.child, i.path, i.id LIMIT $lim", q=qname, lim=_lim(limit))]

    # -- batch reads: one round trip per BATCH_KEYS keys ---------------------------------------
    def _keyed(self, what: str, query: str, keys: Iterable[str], **params: Any) -> list[Any]:
        """``query`` (over ``$keys``) run for the distinct ``keys``, BATCH_KEYS at a time."""
        ks = list(dict.fromkeys(keys))
        out: list[Any] = []
        for i in range(0, len(ks), BATCH_KEYS):
            out.extend(self._rows(what, query, keys=ks[i:i + BATCH_KEYS], **params))
        return out

    def symbols_by_qnames(self, qnames: Iterable[str]) -> dict[str, list[SymbolRow]]:
        out: dict[str, list[SymbolRow]] = {}
        for r in self._keyed("symbols_by_qnames", "UNWIND $keys AS q MATCH (s:CsSymbol {graph_id: $g, qname: q}) "
                                                  f"RETURN {self._SYM}" + _SYM_ORDER, qnames):
            out.setdefault(r["qname"], []).append(self._sym(r))
        return out

    def files_by_paths(self, paths: Iterable[str]) -> dict[str, FileRow]:
        return {r["path"]: self._file(r) for r in self._keyed(
            "files_by_paths", "UNWIND $keys AS p MATCH (f:CsFile {graph_id: $g, path: p}) RETURN f {.*}", paths)}

    def symbols_in_files(self, paths: Iterable[str]) -> dict[str, list[SymbolRow]]:
        out: dict[str, list[SymbolRow]] = {}
        for r in self._keyed("symbols_in_files",
                             "UNWIND $keys AS p MATCH (f:CsFile {graph_id: $g, path: p})-[:CONTAINS]->"
                             f"(s:CsSymbol {{graph_id: $g}}) RETURN {self._SYM}", paths):
            out.setdefault(r["path"], []).append(self._sym(r))
        return {p: sorted(rows, key=lambda s: (s.start_line, s.start_col, s.qname, s.id)) for p, rows in out.items()}

    def _calls_many(self, what: str, prop: str, keys: Iterable[str], limit: int) -> dict[str, list[CallRow]]:
        out: dict[str, list[CallRow]] = {}
        for r in self._keyed(what, "UNWIND $keys AS q CALL { WITH q "
                                   f"MATCH (c:CsCall {{graph_id: $g, {prop}: q}}) RETURN c" + _CALL_ORDER
                                   + " LIMIT $lim } RETURN c {.*}", keys, lim=_lim(limit)):
            out.setdefault(r[prop], []).append(self._call(r))
        for rows in out.values():
            rows.sort(key=lambda c: (c.path, c.line, c.col, c.callee, c.id))
        return out

    def callers_many(self, qnames: Iterable[str], limit: int = 1000) -> dict[str, list[CallRow]]:
        return self._calls_many("callers_many", "target", qnames, limit)

    def callees_many(self, callers: Iterable[str], limit: int = 1000) -> dict[str, list[CallRow]]:
        return self._calls_many("callees_many", "caller", callers, limit)

    def subtypes_many(self, qnames: Iterable[str], limit: int = 100) -> dict[str, list[InheritRow]]:
        out: dict[str, list[tuple[int, InheritRow]]] = {}
        for r in self._keyed("subtypes_many", "UNWIND $keys AS q CALL { WITH q "
                                              "MATCH (i:CsInherit {graph_id: $g, target: q}) RETURN i "
                                              "ORDER BY i.child, i.path, i.id LIMIT $lim } RETURN i {.*}",
                             qnames, lim=_lim(limit)):
            out.setdefault(r["target"], []).append((r["id"], self._inh(r)))
        return {q: [x for _, x in sorted(rows, key=lambda t: (t[1].child, t[1].path, t[0]))]
                for q, rows in out.items()}

    def relation_counts(self, qnames: Iterable[str], names: Iterable[str] = ()
                        ) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
        qs, ns = list(dict.fromkeys(qnames)), list(dict.fromkeys(names))
        callers: dict[str, int] = dict.fromkeys(qs, 0)
        callees: dict[str, int] = dict.fromkeys(qs, 0)
        unresolved: dict[str, int] = dict.fromkeys(ns, 0)
        for i in range(0, max(len(qs), len(ns)), BATCH_KEYS):
            for kind, key, a, b in self._rows(
                    "relation_counts",
                    "CALL { UNWIND $qs AS q RETURN ['q', q, COUNT { MATCH (c:CsCall {graph_id: $g, target: q}) }, "
                    "COUNT { MATCH (c:CsCall {graph_id: $g, caller: q}) }] AS r "
                    "UNION ALL UNWIND $ns AS n RETURN ['n', n, COUNT { MATCH (c:CsCall {graph_id: $g, name: n, "
                    "target: '', resolution: 'unresolved'}) }, 0] AS r } RETURN r",
                    qs=qs[i:i + BATCH_KEYS], ns=ns[i:i + BATCH_KEYS]):
                if kind == "q":
                    callers[key], callees[key] = int(a), int(b)
                else:
                    unresolved[key] = int(a)
        return callers, callees, unresolved

    def stats(self) -> GraphStats:
        g = self.graph_id

        def work(tx):
            files = [r.data() for r in tx.run(
                "MATCH (f:CsFile {graph_id: $g}) RETURN f.status = 'skipped' AS skipped, f.language AS language, "
                "count(*) AS n ORDER BY language", g=g)]
            kinds = [r.data() for r in tx.run(
                "MATCH (s:CsSymbol {graph_id: $g}) RETURN s.kind AS kind, count(*) AS n ORDER BY kind", g=g)]
            calls = tx.run("MATCH (c:CsCall {graph_id: $g}) "
                           "RETURN count(c) AS n, count(CASE WHEN c.target <> '' THEN 1 END) AS resolved",
                           g=g).single().data()
            imports = tx.run("MATCH (i:CsImport {graph_id: $g}) RETURN count(i) AS n", g=g).single()["n"]
            inherits = tx.run("MATCH (i:CsInherit {graph_id: $g}) RETURN count(i) AS n", g=g).single()["n"]
            return files, kinds, calls, imports, inherits

        files, kinds, calls, imports, inherits = self._read("stats", work)
        langs: dict[str, int] = {}
        for r in files:
            if not r["skipped"]:
                langs[r["language"]] = langs.get(r["language"], 0) + r["n"]
        return GraphStats(
            files=sum(r["n"] for r in files if not r["skipped"]),
            skipped=sum(r["n"] for r in files if r["skipped"]),
            symbols=sum(r["n"] for r in kinds),
            calls=calls["n"],
            resolved_calls=calls["resolved"],
            imports=imports,
            inherits=inherits,
            languages=langs,
            kinds={r["kind"]: r["n"] for r in kinds},
        )

    def dump(self) -> dict[str, list[tuple]]:
        """The same tuples, in the same order, as ``SqliteGraphStore.dump`` (booleans as 0/1)."""
        g = self.graph_id

        def work(tx):
            def rows(query: str) -> list[tuple]:
                return sorted(tuple(rec.values()) for rec in tx.run(query, g=g))

            return {
                "files": rows("MATCH (f:CsFile {graph_id: $g}) RETURN f.path, f.language, f.hash, f.size, f.lines, "
                              "f.module, f.status, f.reason"),
                "symbols": rows(
                    "MATCH (s:CsSymbol {graph_id: $g}) RETURN s.path, s.qname, s.name, s.kind, s.signature, "
                    "s.start_line, s.end_line, s.start_col, s.end_col, s.hash, s.summary, s.parent, "
                    "CASE WHEN s.is_test THEN 1 ELSE 0 END, CASE WHEN s.exported THEN 1 ELSE 0 END, s.language"),
                "calls": rows("MATCH (c:CsCall {graph_id: $g}) RETURN c.path, c.caller, c.callee, c.name, c.hint, "
                              "c.line, c.col, c.kind, c.target, c.resolution, c.confidence"),
                "imports": rows("MATCH (i:CsImport {graph_id: $g}) RETURN i.path, i.module, i.name, i.alias, "
                                "i.line, i.target"),
                "inherits": rows("MATCH (i:CsInherit {graph_id: $g}) RETURN i.path, i.child, i.base, i.kind, "
                                 "i.line, i.target, i.resolution, i.confidence"),
            }

        return self._read("dump", work, timeout=self.write_timeout)


def _lim(limit: int) -> int:
    """SQLite reads a negative LIMIT as "no limit"; Cypher rejects it. Same meaning here."""
    return NO_LIMIT if limit < 0 else int(limit)
