"""The embedded default backend: SQLite in WAL mode with FTS5 over symbol names.

One writer per index: ``transaction()`` holds a thread lock and, across processes sharing
the file (several daemons on one checkout, the CLI), ``fcntl.flock`` on ``<file>.lock``
beside it, and makes every write inside it one SQLite transaction (``BEGIN IMMEDIATE``; each
store write is a savepoint in it). Readers use their own per-thread connections and never
wait for a writer (WAL); ``snapshot()`` keeps one read transaction open on the thread's
connection, so every read of a request sees one committed version. Every query binds
``graph_id``.
"""

from __future__ import annotations

import logging
import os
import re
import sqlite3
import threading
import time
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: writers of one process still serialize on the thread lock
    fcntl = None  # type: ignore[assignment]

from codesynapse.context.lexical import FIELD_WEIGHTS, fts_query, symbol_fields
from codesynapse.context.lexical import words as lex_words
from codesynapse.errors import StoreError, StoreUnavailable
from codesynapse.store.threads import on_thread_end
from codesynapse.extract.model import CallSite, FileExtraction, ImportRef
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
    FULL_CAPABILITIES,
    SCHEMA_VERSION,
    base_keys,
    module_keys,
)
from codesynapse.store.sqlite.deps import DEPS_SCHEMA, SqliteDepsMixin
from codesynapse.store.text import CAMEL, callee_head, name_terms

log = logging.getLogger(__name__)

# meta and the dependency tables (deps.py) are keyed by the graph id; the code graph's tables
# (files, symbols, calls, imports, inherits), millions of rows in a large repository, by its
# small integer key in ``graphs`` (their column ``graph_id`` holds that key: 1-2 bytes instead
# of 16 in every row and every index entry). An index holds the columns its queries look up
# by: the few rows of one qname, name or caller are sorted after (the callers of a target, up
# to thousands, are read in order from calls_target, which leaves out unresolved calls: no
# target, most of C's calls). A call row's callee and head are empty when they are the call's
# name (most calls; all of C's plain calls: CallRow.callee is the name again), and
# calls_head and calls_hint leave out empty heads and hints (most calls; all of C's): the
# name's own lookup finds those calls (calls_touching). Lookups by those keys name their
# index (INDEXED BY): without statistics (a first index, before optimize()) the planner would
# rather walk an index in the ORDER BY's order over the whole graph than sort a few rows.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(
  graph_id TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY(graph_id, key));
CREATE TABLE IF NOT EXISTS graphs(key INTEGER PRIMARY KEY, graph_id TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS files(
  graph_id INTEGER NOT NULL, path TEXT NOT NULL, language TEXT, hash TEXT, size INTEGER,
  mtime_ns INTEGER, lines INTEGER, module TEXT, status TEXT NOT NULL, reason TEXT,
  indexed_at REAL, PRIMARY KEY(graph_id, path));
CREATE TABLE IF NOT EXISTS symbols(
  id INTEGER PRIMARY KEY, graph_id INTEGER NOT NULL, path TEXT NOT NULL, qname TEXT NOT NULL,
  name TEXT NOT NULL, kind TEXT NOT NULL, signature TEXT, start_line INTEGER, end_line INTEGER,
  start_col INTEGER, end_col INTEGER, hash TEXT, summary TEXT, parent TEXT, is_test INTEGER,
  exported INTEGER, language TEXT);
CREATE INDEX IF NOT EXISTS symbols_qname ON symbols(graph_id, qname);
CREATE INDEX IF NOT EXISTS symbols_name ON symbols(graph_id, name);
CREATE INDEX IF NOT EXISTS symbols_path ON symbols(graph_id, path, start_line);
CREATE VIRTUAL TABLE IF NOT EXISTS symbols_fts USING fts5(
  name, qname, terms, content='', tokenize="unicode61 tokenchars '_'");
CREATE VIRTUAL TABLE IF NOT EXISTS symbols_lex USING fts5(
  lex_name, lex_qname, lex_sig, lex_doc, lex_path, content='', tokenize='unicode61');
CREATE VIRTUAL TABLE IF NOT EXISTS lex_vocab USING fts5vocab(symbols_lex, 'row');
CREATE VIRTUAL TABLE IF NOT EXISTS fts_vocab USING fts5vocab(symbols_fts, 'row');
CREATE TABLE IF NOT EXISTS calls(
  id INTEGER PRIMARY KEY, graph_id INTEGER NOT NULL, path TEXT NOT NULL, caller TEXT NOT NULL,
  callee TEXT NOT NULL, name TEXT NOT NULL, head TEXT NOT NULL, hint TEXT NOT NULL,
  hint_name TEXT NOT NULL, line INTEGER, col INTEGER, kind TEXT, target TEXT NOT NULL,
  resolution TEXT NOT NULL, confidence REAL NOT NULL, args TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS calls_target ON calls(graph_id, target, path, line, col) WHERE target != '';
CREATE INDEX IF NOT EXISTS calls_caller ON calls(graph_id, caller);
CREATE INDEX IF NOT EXISTS calls_name ON calls(graph_id, name, target, resolution);
CREATE INDEX IF NOT EXISTS calls_head ON calls(graph_id, head) WHERE head != '';
CREATE INDEX IF NOT EXISTS calls_hint ON calls(graph_id, hint_name) WHERE hint_name != '';
CREATE INDEX IF NOT EXISTS calls_path ON calls(graph_id, path);
CREATE TABLE IF NOT EXISTS imports(
  id INTEGER PRIMARY KEY, graph_id INTEGER NOT NULL, path TEXT NOT NULL, module TEXT NOT NULL,
  name TEXT NOT NULL, alias TEXT NOT NULL, line INTEGER, target TEXT NOT NULL,
  mod_head TEXT NOT NULL, mod_last TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS imports_path ON imports(graph_id, path);
CREATE INDEX IF NOT EXISTS imports_module ON imports(graph_id, module);
CREATE INDEX IF NOT EXISTS imports_name ON imports(graph_id, name);
CREATE INDEX IF NOT EXISTS imports_alias ON imports(graph_id, alias);
CREATE INDEX IF NOT EXISTS imports_mod_head ON imports(graph_id, mod_head);
CREATE INDEX IF NOT EXISTS imports_mod_last ON imports(graph_id, mod_last);
CREATE TABLE IF NOT EXISTS inherits(
  id INTEGER PRIMARY KEY, graph_id INTEGER NOT NULL, path TEXT NOT NULL, child TEXT NOT NULL,
  base TEXT NOT NULL, kind TEXT NOT NULL, line INTEGER, target TEXT NOT NULL,
  resolution TEXT NOT NULL, confidence REAL NOT NULL, base_name TEXT NOT NULL, base_head TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS inherits_path ON inherits(graph_id, path);
CREATE INDEX IF NOT EXISTS inherits_base_name ON inherits(graph_id, base_name);
CREATE INDEX IF NOT EXISTS inherits_base_head ON inherits(graph_id, base_head);
CREATE INDEX IF NOT EXISTS inherits_target ON inherits(graph_id, target);
CREATE INDEX IF NOT EXISTS inherits_child ON inherits(graph_id, child);
"""

def _fts_query(text: str) -> str:
    """Turn free text into a safe FTS5 query: quoted tokens OR-ed (prefix on the last)."""
    return " OR ".join(_fts_terms(text)[0])


def _fts_key(term: str) -> str:
    """A quoted term as symbols_fts's vocabulary holds it (unicode61 folds case and
    diacritics)."""
    t = unicodedata.normalize("NFKD", term.strip('"').lower())
    return "".join(c for c in t if not unicodedata.combining(c))


def _fts_terms(text: str) -> tuple[list[str], list[str]]:
    """The quoted terms of ``text`` for symbols_fts (each token, and its camelCase /
    snake_case sub-words when it has several), and its words (the sub-words, or the token
    when it has none), each once."""
    toks = [t for t in re.split(r"[^\w]+", text) if t]
    terms: list[str] = []
    words: list[str] = []
    for t in toks[:32]:
        terms.append(f'"{t}"')
        low = [m.group(0).lower() for m in CAMEL.finditer(t)]
        if len(low) > 1:
            terms.extend(f'"{x}"' for x in low)
            words.extend(f'"{x}"' for x in low)
        else:
            words.append(f'"{t}"')
    return list(dict.fromkeys(terms)), list(dict.fromkeys(words))


# column order of the symbol and call rows write_files builds
# the lexical table's ranking function: bm25 with the fields' weights (context/lexical.py)
_BM25_RANK = f"bm25({', '.join(str(w) for w in FIELD_WEIGHTS)})"
_FTS_ALL = 1 << 30
# a name search (search) ranks every match of its words by BM25, which costs a row each: past
# this many matches it ranks those holding every word, then those of its rarest words
SEARCH_POOL = 4096
LEX_COMMON_SHARE = 0.1  # a lexical query term in more than this share of the symbols ...
LEX_COMMON_MIN = 1000  # ... and in more than this many is left out (_distinctive)
# ... and so is a term in more than this many symbols, whatever the share (a kernel-size tree:
# 10% of 2.58 M symbols kept terms with posting lists of 250,000 rows, all ranked by BM25 for a
# pool of 40; minimalContext p95 1,146 -> 253 ms there). Below 200,000 symbols the share is lower.
LEX_COMMON_MAX = 20_000
_SYMBOL_COLS = ("graph_id", "path", "qname", "name", "kind", "signature", "start_line", "end_line", "start_col",
                "end_col", "hash", "summary", "parent", "is_test", "exported", "language")
_CALL_COLS = ("graph_id", "path", "caller", "callee", "name", "head", "hint", "hint_name", "line", "col", "kind",
              "target", "resolution", "confidence", "args")


_UNRESOLVED = Resolution("", "unresolved", 0.0)

# The two full-text tables are contentless (content=''): the words they index are not kept a
# second time beside the symbol rows (on the Linux kernel, ~380 MB of a 3.5 GB index). An FTS5
# row of a contentless table is deleted by naming the words it was inserted with, so the store
# writes and deletes symbols only through _insert_symbols and delete_symbols, which make the
# words from the row's own columns (fts_values); LEX_FINGERPRINT, stored with the index,
# rebuilds an index whose words were made by other code (another version of those functions).
_FTS_INSERT = "INSERT INTO symbols_fts(rowid, name, qname, terms) VALUES (?,?,?,?)"
_LEX_INSERT = "INSERT INTO symbols_lex(rowid, lex_name, lex_qname, lex_sig, lex_doc, lex_path) VALUES (?,?,?,?,?,?)"
_FTS_DELETE = "INSERT INTO symbols_fts(symbols_fts, rowid, name, qname, terms) VALUES ('delete',?,?,?,?)"
_LEX_DELETE = ("INSERT INTO symbols_lex(symbols_lex, rowid, lex_name, lex_qname, lex_sig, lex_doc, lex_path) "
               "VALUES ('delete',?,?,?,?,?,?)")
_DELETE_CHUNK = 5000  # symbol rows deleted at a time (their words are held until then)


def fts_values(name: str, qname: str, signature: str | None, summary: str | None,
               path: str) -> tuple[tuple[str, str, str], tuple[str, ...]]:
    """The words of one symbol row in the two full-text tables: symbols_fts (name, qname,
    terms) and symbols_lex (the lexical leg's fields, context/lexical.py)."""
    return ((name, qname, name_terms(name, qname)),
            symbol_fields(name, qname, signature or "", summary or "", path))


def _lex_fingerprint() -> str:
    """What the full-text words are made with: the source of the modules that make them
    (context/lexical.py, store/text.py) and the stemmer's version. Any change to them
    changes it, so an index is never asked to delete words another version made."""
    import hashlib
    from importlib import metadata

    from codesynapse.context import lexical
    from codesynapse.store import text

    h = hashlib.sha256()
    for mod in (lexical, text):
        h.update(Path(mod.__file__).read_bytes())
    try:
        h.update(metadata.version("snowballstemmer").encode())
    except metadata.PackageNotFoundError:
        pass
    return h.hexdigest()[:16]


LEX_FINGERPRINT = _lex_fingerprint()
LEX_META = "lex_fingerprint"  # meta key: the LEX_FINGERPRINT of the code that made the index's words


def _insert_symbols(conn: sqlite3.Connection, rows: Sequence[tuple]) -> None:
    """Insert symbol rows (``_SYMBOL_COLS`` order) and their full-text entries. Ids are
    given here (after the largest): the writer holds the store's lock, so no other insert
    runs between reading it and using it."""
    if not rows:
        return
    first = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM symbols").fetchone()[0]
    conn.executemany(_INSERT_SYMBOLS_ID, [(first + i, *r) for i, r in enumerate(rows)])
    add_symbol_words(conn, [(first + i, r[3], r[2], r[5], r[11], r[1]) for i, r in enumerate(rows)])


def add_symbol_words(conn: sqlite3.Connection, rows: Iterable[tuple]) -> None:
    """Index the words of stored symbol rows, each given as (id, name, qname, signature,
    summary, path), in the two full-text tables."""
    fts, lex = [], []
    for i, name, qname, sig, summary, path in rows:
        a, b = fts_values(name, qname, sig, summary, path)
        fts.append((i, *a))
        lex.append((i, *b))
    conn.executemany(_FTS_INSERT, fts)
    conn.executemany(_LEX_INSERT, lex)


def delete_symbols(conn: sqlite3.Connection, where: str, params: Iterable[tuple]) -> None:
    """Delete the symbol rows ``where`` selects (once for each parameter tuple; the store's
    own calls bind the graph key) and their full-text entries: the only way a symbol row
    leaves the store."""
    cur = conn.cursor()
    cur.row_factory = None
    select = f"SELECT id, name, qname, signature, summary, path, graph_id FROM symbols WHERE {where}"
    ids: list[tuple] = []
    fts: list[tuple] = []
    lex: list[tuple] = []

    def flush() -> None:
        conn.executemany(_FTS_DELETE, fts)
        conn.executemany(_LEX_DELETE, lex)
        conn.executemany("DELETE FROM symbols WHERE graph_id=? AND id=?", ids)
        ids.clear()
        fts.clear()
        lex.clear()

    for p in params:
        for r in cur.execute(select, p).fetchall():
            a, b = fts_values(r[1], r[2], r[3], r[4], r[5])
            ids.append((r[6], r[0]))
            fts.append((r[0], *a))
            lex.append((r[0], *b))
            if len(ids) >= _DELETE_CHUNK:
                flush()
    if ids:
        flush()

_INSERT_SYMBOLS_ID = (f"INSERT INTO symbols(id, {', '.join(_SYMBOL_COLS)}) "
                      f"VALUES ({','.join('?' * (len(_SYMBOL_COLS) + 1))})")
_KEYS_PER_QUERY = 500  # keys bound in one batch read's IN list (SQLite allows 32,766 variables)
_COUNTS_KEPT = 50_000  # relation counts kept per connection and kind (_known_counts): a few MB at most
_INSERT_CALLS = f"INSERT INTO calls({', '.join(_CALL_COLS)}) VALUES ({','.join('?' * len(_CALL_COLS))})"
_INSERT_IMPORTS = ("INSERT INTO imports(graph_id, path, module, name, alias, line, target, mod_head, mod_last) "
                   "VALUES (?,?,?,?,?,?,?,?,?)")
_INSERT_INHERITS = ("INSERT INTO inherits(graph_id, path, child, base, kind, line, target, resolution, confidence, "
                    "base_name, base_head) VALUES (?,?,?,?,?,?,?,?,?,?,?)")


def _file_row(g: str, fx: FileExtraction, mtime: int, now: float) -> tuple:
    return (g, fx.path, fx.language, fx.hash, fx.size, mtime, fx.lines, fx.module,
            "partial" if fx.partial else "indexed",
            fx.error or ("syntax errors; partial extraction" if fx.partial else ""), now)


def _symbol_row(g: str, fx: FileExtraction, s) -> tuple:
    return (g, fx.path, s.qname, s.name, s.kind, s.signature, s.start_line, s.end_line, s.start_col, s.end_col,
            s.hash, s.summary, s.parent, int(s.is_test), int(s.exported), fx.language)


def _call_row(g: str, path: str, c: CallSite, r: Resolution) -> tuple:
    head = callee_head(c.callee)
    return (g, path, c.caller, "" if c.callee == c.name else c.callee, c.name, "" if head == c.name else head,
            c.receiver_hint, c.receiver_hint.rsplit(".", 1)[-1] if c.receiver_hint else "", c.line, c.col, c.kind,
            r.target, r.resolution, r.confidence, c.args)


def _import_row(g: str, path: str, im, target: str) -> tuple:
    return (g, path, im.module, im.name, im.alias, im.line, target, *module_keys(im.module))


def _inherit_row(g: str, path: str, ih, r: Resolution) -> tuple:
    return (g, path, ih.child, ih.base, ih.kind, ih.line, r.target, r.resolution, r.confidence, *base_keys(ih.base))


# SQLite's answers for a file that is not (or no longer) a database: it is moved aside and
# rebuilt (open_sqlite_graph). Other errors (disk full, an unwritable folder, a lock) are not
# the file's fault and leave it where it is.
_DAMAGED = frozenset({"SQLITE_NOTADB", "SQLITE_CORRUPT"})


class GraphStoreDamaged(StoreError):
    """The graph store's file is not a readable SQLite database (garbage, truncated, a
    directory where the file should be); ``reason`` is SQLite's word for it."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


def _statements(script: str) -> list[str]:
    """The statements of an SQL script (trigger bodies whole), to run one by one inside a
    transaction (``executescript`` commits first)."""
    out: list[str] = []
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out


def _close_connection(conn: sqlite3.Connection, conns: list[sqlite3.Connection], lock: threading.RLock,
                      caches: dict[sqlite3.Connection, int]) -> None:
    """Close the connection of a thread that ended (or of locals let go by ``close``); its
    page cache goes back to the readers' share."""
    with lock:
        caches.pop(conn, None)
        try:
            conns.remove(conn)
        except ValueError:  # close() took it already
            pass
    try:
        conn.close()
    except sqlite3.Error:
        pass


def open_sqlite_graph(path: Path | str, graph_id: str,
                      memory_budget_mb: int | None = None) -> tuple[SqliteGraphStore, str]:
    """Open the graph store at ``path``; when its file is damaged, move it aside (with its
    ``-wal`` and ``-shm``) as ``<name>.corrupt-<UTC timestamp>`` and create a fresh one: the
    index is derived data, rebuilt by the next full index. Returns the store and, when a file
    was moved, a message for the user saying what happened and what to do ("" otherwise).
    Raises StoreError when no store can be opened or created (the message names why).
    ``memory_budget_mb`` (index.memoryBudget) bounds its page caches (``PageCaches``)."""
    try:
        return SqliteGraphStore(path, graph_id, memory_budget_mb), ""
    except GraphStoreDamaged as e:
        damage = e.reason
    path = Path(path)
    lock = _open_writer_lock(path)
    try:
        if fcntl is not None and lock is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be moving it aside right now
        try:  # it may be a fresh store already: another process recovered it first
            return SqliteGraphStore(path, graph_id, memory_budget_mb), ""
        except GraphStoreDamaged:
            pass
        moved = _move_aside(path)
        store = SqliteGraphStore(path, graph_id, memory_budget_mb)
    finally:
        if lock is not None:
            os.close(lock)  # releases the flock
    msg = (f"CodeSynapse: the code index {path} could not be read ({damage}). It was moved aside "
           f"to {moved} and a new index is being built; memory is not affected. Nothing to do: "
           f"delete {moved.name} once the new index is ready, or keep it to report the problem.")
    log.warning("%s", msg)
    return store, msg


def _open_writer_lock(path: Path) -> int | None:
    try:
        return os.open(str(path) + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return None


def _move_aside(path: Path) -> Path:
    """Rename ``path`` (and its ``-wal``/``-shm``) to ``<name>.corrupt-<UTC timestamp>``."""
    import datetime as dt

    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while any(Path(str(target) + sfx).exists() for sfx in ("", "-wal", "-shm")):
        n += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    try:
        for sfx in ("-wal", "-shm", ""):  # the database last: a crash between leaves it found again
            src = Path(str(path) + sfx)
            if src.exists() or src.is_symlink():
                os.replace(src, Path(str(target) + sfx))
    except OSError as e:
        raise StoreError(f"cannot move the damaged graph store {path} aside: {e.strerror or e}") from e
    return target


WRITER_WAIT_S = 600.0  # how long a writer waits for another process' write of the same index
WAL_KEEP_BYTES = 64 << 20  # the WAL is cut back to this after a checkpoint (a full index is one transaction)

# SQLite's page caches (PRAGMA cache_size) over all of a store's connections hold at most
# 1/16 of index.memoryBudget (64 MB at the default 1 GB), in two halves. The writing thread's
# connection, for the length of its transaction, 1/32 (32 MB: the size every connection had;
# a full index is one transaction). The reading connections — one per thread: up to 8 pygls
# workers, the live worker, short-lived threads — share the other 1/32, each 1/128 (8 MB) while
# the share has room, else what is left of it, never less than SQLite's own default (2 MB):
# beyond the readers the share holds, each adds 2 MB. Before, every connection took 32 MB, up
# to ~300 MB in a daemon whose budget is 1 GB (issue 24 #2); on the kernel the symbol table
# alone takes ~680 MB of it, and the OS page cache keeps the file's pages anyway.
PAGE_CACHE_SHARE = 16
READER_CACHE_SHARE = 128
READER_CACHE_MIN_KIB = 2048  # SQLite's default cache_size (-2000) in whole MiB
UNBUDGETED_CACHE_KIB = 32000  # every connection of a store built without a budget (tests, tools)


@dataclass(frozen=True, slots=True)
class PageCaches:
    """The page caches of a store's connections, in KiB, from index.memoryBudget (MB)."""

    writer_kib: int  # the connection inside transaction()
    readers_kib: int  # all the others together, while each takes no more than reader_kib
    reader_kib: int

    @classmethod
    def of(cls, budget_mb: int) -> PageCaches:
        budget_kib = max(64, int(budget_mb)) << 10
        half = budget_kib // PAGE_CACHE_SHARE // 2
        return cls(writer_kib=max(READER_CACHE_MIN_KIB, half), readers_kib=half,
                   reader_kib=max(READER_CACHE_MIN_KIB, budget_kib // READER_CACHE_SHARE))


class SqliteGraphStore(SqliteDepsMixin):
    """GraphStore on one SQLite file. Thread-safe: per-thread connections, one writer."""

    capabilities = FULL_CAPABILITIES  # atomic transactions, read snapshots, a writer lock across processes

    def __init__(self, path: Path | str, graph_id: str, memory_budget_mb: int | None = None):
        self.path = str(path)
        self.graph_id = graph_id
        # page caches bounded by index.memoryBudget; None: UNBUDGETED_CACHE_KIB each
        self._caches = PageCaches.of(memory_budget_mb) if memory_budget_mb is not None else None
        self._cache_kib: dict[sqlite3.Connection, int] = {}  # a reading connection's page cache
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.RLock()  # (an ended thread's connection is closed under it)
        self._tx_lock = threading.RLock()  # one writing thread; held for a whole transaction()
        self._tx_owner: int | None = None  # the thread inside transaction(), if any
        try:
            conn = self._conn()
            with self._write_lock:
                # the version first: an older schema's tables lack columns that _SCHEMA indexes
                version = self._stored_version(conn)
                keyed = bool(conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='graphs'")
                             .fetchall())
                stale = version is not None and keyed and self._stale_words(conn)
                if version is not None and (version != str(SCHEMA_VERSION) or not keyed or stale):
                    # the index is derived data: rebuild it rather than refuse to start (tables
                    # without ``graphs`` hold the graph id where the key belongs; full-text
                    # words made by other code cannot be deleted: _insert_symbols)
                    log.warning("rebuilding the index: schema version %s%s%s (this version: %s)", version,
                                "" if keyed else ", rows by graph id",
                                ", full-text words made by another version" if stale else "", SCHEMA_VERSION)
                    self._rebuild(conn)
                conn.executescript(_SCHEMA + DEPS_SCHEMA)  # modules and findings: store/sqlite/deps.py
                if self.get_meta("schema_version") is None:
                    self._set_meta_locked(conn, {"schema_version": str(SCHEMA_VERSION)})
                if self.get_meta(LEX_META) is None:
                    self._set_meta_locked(conn, {LEX_META: LEX_FINGERPRINT})
                self._gk = self._graph_key(conn)
        except (sqlite3.Error, StoreError) as e:
            self.close()
            cause = e if isinstance(e, sqlite3.Error) else e.__cause__
            what = str(cause or e)
            if os.path.isdir(self.path) or getattr(cause, "sqlite_errorname", "") in _DAMAGED:
                if os.path.isdir(self.path):
                    what = "a directory is where the file should be"
                raise GraphStoreDamaged(f"cannot open graph store {self.path}: {what}", what) from e
            raise StoreError(f"cannot open graph store {self.path}: {what}") from e

    def _stored_version(self, conn: sqlite3.Connection) -> str | None:
        """The schema version of the file's tables: this graph's recorded version, else
        another graph's (the tables are shared); None in a new file (no meta table yet)."""
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchall():
            return None
        rows = conn.execute("SELECT value FROM meta WHERE key='schema_version' ORDER BY graph_id=? DESC, value",
                            (self.graph_id,)).fetchall()
        return rows[0]["value"] if rows else None

    @staticmethod
    def _stale_words(conn: sqlite3.Connection) -> bool:
        """The file's full-text words were made by other code: symbols of the old layout
        (the words stored in their rows) or another LEX_FINGERPRINT recorded by any graph."""
        cols = {r[1] for r in conn.execute("PRAGMA table_info(symbols)")}
        if "terms" in cols:
            return True
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchall():
            return False
        return bool(conn.execute("SELECT 1 FROM meta WHERE key=? AND value!=? LIMIT 1",
                                 (LEX_META, LEX_FINGERPRINT)).fetchall())

    def _graph_key(self, conn: sqlite3.Connection) -> int:
        """This graph's key in ``graphs`` (added on first open): the value of the code
        graph's tables' ``graph_id`` column."""
        conn.execute("INSERT OR IGNORE INTO graphs(graph_id) VALUES (?)", (self.graph_id,))
        return conn.execute("SELECT key FROM graphs WHERE graph_id=?", (self.graph_id,)).fetchone()[0]

    def _rebuild(self, conn: sqlite3.Connection) -> None:
        """Drop every table and create the current schema with its version, in one
        transaction: a kill -9 in between leaves the old tables whole (rebuilt at the next
        open), never some of them dropped with the version row gone, when the others, of
        the old layout and with their old rows, would pass for the current schema. Another
        process that rebuilt it first (its transaction ahead of this one) is left alone."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            if self._stored_version(conn) != str(SCHEMA_VERSION) or not conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE type='table' AND name='graphs'").fetchall() \
                    or self._stale_words(conn):
                self._drop_all(conn)
                for stmt in _statements(_SCHEMA + DEPS_SCHEMA):
                    conn.execute(stmt)
                self._set_meta_locked(conn, {"schema_version": str(SCHEMA_VERSION), LEX_META: LEX_FINGERPRINT})
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    @staticmethod
    def _drop_all(conn: sqlite3.Connection) -> None:
        rows = conn.execute("SELECT type, name FROM sqlite_master WHERE type IN ('table', 'trigger') "
                            "AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'symbols_fts_%' "
                            "AND name NOT LIKE 'symbols_lex_%'").fetchall()
        for kind, name in rows:
            if kind == "trigger":
                conn.execute(f'DROP TRIGGER IF EXISTS "{name}"')
        for kind, name in rows:
            if kind == "table":
                conn.execute(f'DROP TABLE IF EXISTS "{name}"')

    def optimize(self) -> None:
        """Refresh the planner's statistics after a bulk load (cheap; SQLite's own advice)."""
        with self.transaction():
            try:
                self._conn().execute("PRAGMA optimize=0x10002")
            except sqlite3.Error:
                log.debug("PRAGMA optimize failed", exc_info=True)

    # -- connections -------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30, check_same_thread=False, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute(f"PRAGMA journal_size_limit={WAL_KEEP_BYTES}")
            with self._conns_lock:
                kib = self._reader_cache_kib(conn)
                self._conns.append(conn)
            self._local.conn = conn
            self._local.cache_kib = kib
            on_thread_end(self._local, _close_connection, conn, self._conns, self._conns_lock, self._cache_kib)
            conn.execute(f"PRAGMA cache_size=-{kib}")
        return conn

    def _reader_cache_kib(self, conn: sqlite3.Connection) -> int:
        """The page cache of a new reading connection (under ``_conns_lock``): its part of the
        readers' share while the share has room (``PageCaches``)."""
        if self._caches is None:
            return UNBUDGETED_CACHE_KIB
        left = self._caches.readers_kib - sum(self._cache_kib.values())
        kib = self._cache_kib[conn] = max(READER_CACHE_MIN_KIB, min(self._caches.reader_kib, left))
        return kib

    def _set_cache(self, conn: sqlite3.Connection, kib: int) -> None:
        try:
            conn.execute(f"PRAGMA cache_size=-{kib}")  # a smaller one lets the pages beyond it go
        except sqlite3.Error:
            log.debug("PRAGMA cache_size failed", exc_info=True)

    def close(self) -> None:
        with self._conns_lock:
            for c in self._conns:
                try:
                    c.close()
                except sqlite3.Error:
                    pass
            self._conns.clear()
            self._cache_kib.clear()
        self._local = threading.local()

    # -- transactions ----------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic write (see the module docstring). Nested blocks join the outer one; a
        thread inside ``snapshot()`` ends its read transaction here and starts a new one
        after (a write cannot join a read snapshot)."""
        me = threading.get_ident()
        with self._tx_lock:
            if self._tx_owner == me:
                yield
                return
            conn = self._conn()
            reading = getattr(self._local, "snap", 0) > 0
            if reading:
                self._end_read(conn)
            writer_cache = self._caches is not None and self._caches.writer_kib != self._local.cache_kib
            if writer_cache:  # the writer's page cache for the transaction, the reader's again after it
                self._set_cache(conn, self._caches.writer_kib)
            try:
                with self._file_lock():
                    try:
                        conn.execute("BEGIN IMMEDIATE")
                    except sqlite3.Error as e:
                        raise StoreError(f"cannot start a graph write: {e}") from e
                    self._tx_owner = me
                    try:
                        yield
                    except BaseException:
                        self._tx_owner = None
                        self._rollback(conn)
                        raise
                    self._tx_owner = None
                    self._local.counts = None  # this connection's own commit: data_version stays
                    try:
                        conn.execute("COMMIT")
                    except sqlite3.Error as e:
                        self._rollback(conn)
                        raise StoreError(f"graph commit failed: {e}") from e
            finally:
                if writer_cache:
                    self._set_cache(conn, self._local.cache_kib)
                if reading:
                    self._begin_read(conn)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads of this thread inside the block see one committed version of the graph: one
        deferred read transaction (WAL: writers are not blocked, nor is this reader)."""
        if self._tx_owner == threading.get_ident():  # a writer reads its own transaction
            yield
            return
        depth = getattr(self._local, "snap", 0)
        self._local.snap = depth + 1
        try:
            if depth == 0:
                self._begin_read(self._conn())
            yield
        finally:
            self._local.snap = depth
            if depth == 0:
                self._end_read(self._conn())

    @staticmethod
    def _begin_read(conn: sqlite3.Connection) -> None:
        try:
            if not conn.in_transaction:
                conn.execute("BEGIN")
            conn.execute("SELECT 1 FROM meta LIMIT 1").fetchall()  # the snapshot starts at the first read
        except sqlite3.Error as e:
            SqliteGraphStore._rollback(conn)
            raise StoreError(f"cannot start a graph read: {e}") from e

    @staticmethod
    def _end_read(conn: sqlite3.Connection) -> None:
        try:
            if conn.in_transaction:
                conn.execute("COMMIT")
        except sqlite3.Error:
            SqliteGraphStore._rollback(conn)

    @staticmethod
    def _rollback(conn: sqlite3.Connection) -> None:
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        except sqlite3.Error:  # SQLite may have rolled back already (disk full, I/O error)
            log.warning("graph rollback failed", exc_info=True)

    @contextmanager
    def _savepoint(self, what: str) -> Iterator[sqlite3.Connection]:
        """One store write: a savepoint inside the update's transaction, rolled back (and a
        ``StoreError`` naming ``what`` for an SQLite error) when it fails."""
        with self.transaction():
            conn = self._conn()
            try:
                conn.execute("SAVEPOINT write")
                yield conn
                conn.execute("RELEASE write")
            except BaseException as e:
                self._undo(conn)
                if isinstance(e, sqlite3.Error):
                    raise StoreError(f"graph {what} failed: {e}") from e
                raise

    @staticmethod
    def _undo(conn: sqlite3.Connection) -> None:
        """Roll back one store write (its savepoint) inside the enclosing transaction."""
        try:
            conn.execute("ROLLBACK TO write")
            conn.execute("RELEASE write")
        except sqlite3.Error:  # the whole transaction is gone already; transaction() ends it
            log.debug("graph savepoint rollback failed", exc_info=True)

    @contextmanager
    def _file_lock(self) -> Iterator[None]:
        """The index's writer lock across processes: an exclusive ``flock`` on
        ``<file>.lock``, waited for up to WRITER_WAIT_S. The kernel drops it when its holder
        dies, even by kill -9, so a crashed writer never blocks the next one."""
        if fcntl is None or self.path == ":memory:" or self.path.startswith("file:"):
            yield
            return
        lock_path = self.path + ".lock"
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise StoreError(f"cannot open the index writer lock {lock_path}: {e}") from e
        try:
            end = time.monotonic() + WRITER_WAIT_S
            pause = 0.002
            told = False
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    pass
                except OSError as e:
                    raise StoreError(f"cannot lock the index writer lock {lock_path}: {e}") from e
                left = end - time.monotonic()
                if left <= 0:
                    raise StoreUnavailable(f"another process has been writing the index {self.path} for more "
                                           f"than {WRITER_WAIT_S:.0f} s (writer lock {lock_path})")
                if not told and left < WRITER_WAIT_S - 5:
                    log.info("waiting for another process writing the index %s", self.path)
                    told = True
                time.sleep(min(pause, left))
                pause = min(pause * 2, 0.1)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _q(self, sql: str, params: Sequence = ()) -> list[sqlite3.Row]:
        try:
            return self._conn().execute(sql, params).fetchall()
        except sqlite3.Error as e:
            raise StoreError(f"graph query failed: {e}") from e

    # -- meta --------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        rows = self._q("SELECT value FROM meta WHERE graph_id=? AND key=?", (self.graph_id, key))
        return rows[0]["value"] if rows else None

    def set_meta(self, values: dict[str, str]) -> None:
        with self.transaction():
            self._set_meta_locked(self._conn(), values)

    def _set_meta_locked(self, conn: sqlite3.Connection, values: dict[str, str]) -> None:
        conn.executemany(
            "INSERT INTO meta(graph_id, key, value) VALUES (?,?,?) "
            "ON CONFLICT(graph_id, key) DO UPDATE SET value=excluded.value",
            [(self.graph_id, k, str(v)) for k, v in values.items()],
        )

    # -- writes ------------------------------------------------------------------------
    def _delete_paths(self, conn: sqlite3.Connection, paths: Sequence[str], keep: Sequence[str] = ()) -> None:
        g = self._gk
        for table in ("symbols", "calls", "imports", "inherits", "files"):
            if table in keep:
                continue
            if table == "symbols":
                delete_symbols(conn, "graph_id=? AND path=?", [(g, p) for p in paths])
            else:
                conn.executemany(f"DELETE FROM {table} WHERE graph_id=? AND path=?", [(g, p) for p in paths])

    def _sync_rows(self, conn: sqlite3.Connection, table: str, cols: Sequence[str], paths: Sequence[str],
                   rows: list[tuple]) -> None:
        """Make ``paths``' rows of ``table`` exactly ``rows`` (tuples in ``cols`` order, graph
        id and path first): rows already stored as they are stay (their ids, their FTS
        entries), the others are deleted or inserted. A one-line edit of a large file then
        writes a few rows instead of all of them."""
        g = self._gk
        spare: dict[tuple, list[int]] = {}
        select = f"SELECT id, {', '.join(cols[1:])} FROM {table} WHERE graph_id=? AND path=?"
        cur = conn.cursor()
        cur.row_factory = None  # plain tuples: the row minus its id is the key
        for p in paths:
            for r in cur.execute(select, (g, p)):
                spare.setdefault(r[1:], []).append(r[0])
        if spare:
            new = []
            for row in rows:
                ids = spare.get(row[1:])
                if ids:
                    ids.pop()
                else:
                    new.append(row)
            gone = [(g, i) for ids in spare.values() for i in ids]
            if table == "symbols":
                delete_symbols(conn, "graph_id=? AND id=?", gone)
            else:
                conn.executemany(f"DELETE FROM {table} WHERE graph_id=? AND id=?", gone)
            rows = new
        if table == "symbols":
            _insert_symbols(conn, rows)
        else:
            conn.executemany(f"INSERT INTO {table}({', '.join(cols)}) VALUES ({','.join('?' * len(cols))})", rows)

    def write_files(
        self,
        extractions: Sequence[tuple[FileExtraction, int]],
        skipped: Sequence[FileRow] = (),
        call_targets: dict[tuple[str, int], Resolution] | None = None,
        inherit_targets: dict[tuple[str, int], Resolution] | None = None,
        import_targets: dict[tuple[str, int], str] | None = None,
        with_calls: bool = True,
    ) -> None:
        g = self._gk
        call_targets = call_targets or {}
        inherit_targets = inherit_targets or {}
        import_targets = import_targets or {}
        now = time.time()
        with self._savepoint("write") as conn:
            written = [fx.path for fx, _ in extractions]
            self._delete_paths(conn, [s.path for s in skipped])
            self._delete_paths(conn, written, keep=("symbols", "calls") if with_calls else ("symbols",))
            file_rows = []
            sym_rows = []
            call_rows = []
            imp_rows = []
            inh_rows = []
            for fx, mtime in extractions:
                p = fx.path
                file_rows.append(_file_row(g, fx, mtime, now))
                sym_rows.extend(_symbol_row(g, fx, s) for s in fx.symbols)
                call_rows.extend(_call_row(g, p, c, call_targets.get((p, i), _UNRESOLVED))
                                 for i, c in enumerate(fx.calls if with_calls else ()))
                imp_rows.extend(_import_row(g, p, im, import_targets.get((p, i), ""))
                                for i, im in enumerate(fx.imports))
                inh_rows.extend(_inherit_row(g, p, ih, inherit_targets.get((p, i), _UNRESOLVED))
                                for i, ih in enumerate(fx.inherits))
            for s in skipped:
                file_rows.append((g, s.path, s.language, s.hash, s.size, s.mtime_ns, s.lines, s.module,
                                  "skipped", s.reason, now))
            conn.executemany("INSERT INTO files VALUES (?,?,?,?,?,?,?,?,?,?,?)", file_rows)
            self._sync_rows(conn, "symbols", _SYMBOL_COLS, written, sym_rows)
            self._sync_rows(conn, "calls", _CALL_COLS, written if with_calls else [], call_rows)
            conn.executemany(_INSERT_IMPORTS, imp_rows)
            conn.executemany(_INSERT_INHERITS, inh_rows)

    def write_delta(self, fx: FileExtraction, mtime: int, call_targets: dict[int, Resolution],
                    inherit_targets: dict[int, Resolution], import_targets: dict[int, str],
                    replaced: list[CallRow] | None = None) -> bool:
        """Store ``fx`` by its ``delta`` (an incremental extraction): only the definitions and
        call sites of the lines it replaced are deleted and inserted, those after them move
        by its shift, the stored rows before them stay. ``call_targets`` resolve the delta's
        own calls (by index in ``fx.delta.calls``); imports and bases are written whole, as
        write_files does. False (nothing written) unless the stored file is the delta's base
        version, indexed: the caller then writes the file whole. ``replaced``: gets the call
        rows of the replaced lines as they were stored (read by the delete itself)."""
        d = fx.delta
        if d is None:
            return False
        g, path = self._gk, fx.path
        with self._savepoint("write") as conn:
            row = conn.execute("SELECT hash, status FROM files WHERE graph_id=? AND path=?", (g, path)).fetchone()
            if row is None or row[0] != d.base_hash or row[1] != "indexed":
                return False
            a, b = d.first_line, d.last_line
            # the file's own module symbol (its qname is the file's module: a changed module is
            # extracted whole) is written anew; other module-kind rows (C++ namespaces) are lines
            delete_symbols(conn, "graph_id=? AND path=? AND ((kind='module' AND qname=?) OR start_line BETWEEN ? AND ?)",
                            [(g, path, fx.module, a, b)])
            gone = "DELETE FROM calls WHERE graph_id=? AND path=? AND line BETWEEN ? AND ?"
            if replaced is None:
                conn.execute(gone, (g, path, a, b))
            else:
                replaced.extend(self._call(r) for r in conn.execute(gone + " RETURNING *", (g, path, a, b)))
            if d.shift:
                conn.execute("UPDATE symbols SET start_line=start_line+?, end_line=end_line+? "
                             "WHERE graph_id=? AND path=? AND start_line>?", (d.shift, d.shift, g, path, b))
                conn.execute("UPDATE calls SET line=line+? WHERE graph_id=? AND path=? AND line>?",
                             (d.shift, g, path, b))
            self._delete_paths(conn, [path], keep=("symbols", "calls"))
            conn.execute("INSERT INTO files VALUES (?,?,?,?,?,?,?,?,?,?,?)", _file_row(g, fx, mtime, time.time()))
            syms = [fx.symbols[0], *d.symbols] if fx.symbols and fx.symbols[0].kind == "module" else d.symbols
            _insert_symbols(conn, [_symbol_row(g, fx, s) for s in syms])
            conn.executemany(_INSERT_CALLS, [_call_row(g, path, c, call_targets.get(i, _UNRESOLVED))
                                             for i, c in enumerate(d.calls)])
            conn.executemany(_INSERT_IMPORTS, [_import_row(g, path, im, import_targets.get(i, ""))
                                               for i, im in enumerate(fx.imports)])
            conn.executemany(_INSERT_INHERITS, [_inherit_row(g, path, ih, inherit_targets.get(i, _UNRESOLVED))
                                                for i, ih in enumerate(fx.inherits)])
        return True

    def insert_calls(self, items: Sequence[tuple[str, CallSite, Resolution]]) -> None:
        """Add call sites (with their resolution) for files written with ``with_calls=False``."""
        self._update(_INSERT_CALLS, [_call_row(self._gk, path, c, r) for path, c, r in items])

    def restamp_files(self, stamps: Sequence[tuple[str, str, int]]) -> None:
        """(path, hash, mtime_ns): the file row of ``path`` takes ``mtime_ns`` when it holds
        ``hash`` (GraphStore.restamp_files)."""
        self._update("UPDATE files SET mtime_ns=? WHERE graph_id=? AND path=? AND hash=?",
                     [(int(m), self._gk, p, h) for p, h, m in stamps if h])

    def delete_files(self, paths: Iterable[str]) -> None:
        paths = list(paths)
        with self._savepoint("delete") as conn:
            self._delete_paths(conn, paths)

    def _update(self, sql: str, rows: list[tuple]) -> None:
        if not rows:
            return
        with self._savepoint("update") as conn:
            conn.executemany(sql, rows)

    def update_call_targets(self, updates: Sequence[tuple[int, Resolution]]) -> None:
        self._update("UPDATE calls SET target=?, resolution=?, confidence=? WHERE graph_id=? AND id=?",
                     [(r.target, r.resolution, r.confidence, self._gk, i) for i, r in updates])

    def update_inherit_targets(self, updates: Sequence[tuple[int, Resolution]]) -> None:
        self._update("UPDATE inherits SET target=?, resolution=?, confidence=? WHERE graph_id=? AND id=?",
                     [(r.target, r.resolution, r.confidence, self._gk, i) for i, r in updates])

    def update_import_targets(self, updates: Sequence[tuple[int, str]]) -> None:
        self._update("UPDATE imports SET target=? WHERE graph_id=? AND id=?",
                     [(t, self._gk, i) for i, t in updates])

    # -- reads -------------------------------------------------------------------------
    @staticmethod
    def _file(r: sqlite3.Row) -> FileRow:
        return FileRow(path=r["path"], language=r["language"] or "", hash=r["hash"] or "", size=r["size"] or 0,
                       mtime_ns=r["mtime_ns"] or 0, lines=r["lines"] or 0, module=r["module"] or "",
                       status=r["status"], reason=r["reason"] or "", indexed_at=r["indexed_at"] or 0.0)

    @staticmethod
    def _sym(r: sqlite3.Row) -> SymbolRow:
        return SymbolRow(id=r["id"], path=r["path"], qname=r["qname"], name=r["name"], kind=r["kind"],
                         signature=r["signature"] or "", start_line=r["start_line"], end_line=r["end_line"],
                         start_col=r["start_col"], end_col=r["end_col"], hash=r["hash"] or "",
                         summary=r["summary"] or "", parent=r["parent"] or "", is_test=bool(r["is_test"]),
                         exported=bool(r["exported"]), language=r["language"] or "")

    @staticmethod
    def _call(r: sqlite3.Row) -> CallRow:
        return CallRow(id=r["id"], path=r["path"], caller=r["caller"], callee=r["callee"] or r["name"], name=r["name"],
                       line=r["line"], col=r["col"], kind=r["kind"], hint=r["hint"], target=r["target"],
                       resolution=r["resolution"], confidence=r["confidence"], args=r["args"])

    @staticmethod
    def _imp(r: sqlite3.Row) -> ImportRow:
        return ImportRow(path=r["path"], module=r["module"], name=r["name"], alias=r["alias"], line=r["line"],
                         target=r["target"])

    @staticmethod
    def _inh(r: sqlite3.Row) -> InheritRow:
        return InheritRow(path=r["path"], child=r["child"], base=r["base"], kind=r["kind"], line=r["line"],
                          target=r["target"], resolution=r["resolution"], confidence=r["confidence"])

    _SYM_ORDER = " ORDER BY qname, path, start_line"
    _CALL_ORDER = " ORDER BY path, line, col, coalesce(nullif(callee, ''), name), id"

    def files(self) -> list[FileRow]:
        return [self._file(r) for r in self._q("SELECT * FROM files WHERE graph_id=? ORDER BY path", (self._gk,))]

    def file(self, path: str) -> FileRow | None:
        rows = self._q("SELECT * FROM files WHERE graph_id=? AND path=?", (self._gk, path))
        return self._file(rows[0]) if rows else None

    def symbols_in_file(self, path: str) -> list[SymbolRow]:
        return [self._sym(r) for r in self._q(
            "SELECT * FROM symbols WHERE graph_id=? AND path=? ORDER BY start_line, start_col, qname",
            (self._gk, path))]

    def all_symbols(self) -> Iterable[SymbolRow]:
        cur = self._conn().execute("SELECT * FROM symbols WHERE graph_id=?" + self._SYM_ORDER, (self._gk,))
        for r in cur:
            yield self._sym(r)

    def symbols_by_qname(self, qname: str) -> list[SymbolRow]:
        return [self._sym(r) for r in self._q(
            "SELECT * FROM symbols INDEXED BY symbols_qname WHERE graph_id=? AND qname=?" + self._SYM_ORDER,
            (self._gk, qname))]

    def symbols_by_name(self, name: str, limit: int = 50) -> list[SymbolRow]:
        return [self._sym(r) for r in self._q(
            "SELECT * FROM symbols INDEXED BY symbols_name WHERE graph_id=? AND name=?" + self._SYM_ORDER + " LIMIT ?",
            (self._gk, name, limit))]

    def symbol_by_id(self, symbol_id: int) -> SymbolRow | None:
        rows = self._q("SELECT * FROM symbols WHERE graph_id=? AND id=?", (self._gk, symbol_id))
        return self._sym(rows[0]) if rows else None

    def symbol_at(self, path: str, line: int) -> SymbolRow | None:
        rows = self._q(
            "SELECT * FROM symbols WHERE graph_id=? AND path=? AND start_line<=? AND end_line>=? AND kind!='module' "
            "ORDER BY (end_line-start_line), start_line DESC LIMIT 1",
            (self._gk, path, line, line))
        return self._sym(rows[0]) if rows else None

    def search(self, text: str, limit: int, offset: int = 0) -> list[tuple[SymbolRow, float]]:
        """Symbols by BM25 over name, qname and sub-words for the words of ``text`` OR-ed,
        best first, ties by (qname, path, start_line). When its words match more than
        ``SEARCH_POOL`` symbols in all (a name not found on a kernel-size graph: "probe",
        "small"), the symbols holding every word come first, ranked among themselves, then
        those of its rarest terms, as many as keep that pool; the commonest terms weigh least
        in BM25 and cost most to rank. A search of one common word still ranks all of it."""
        terms, words = _fts_terms(text)
        if not terms or limit <= 0:
            return []
        if len(terms) > 1:
            df = self._fts_df(terms + words)
            if sum(df.get(_fts_key(t), 0) for t in terms) > SEARCH_POOL:
                want = limit + offset
                rows = []
                if len(words) > 1:
                    rows = self._search_rows(" AND ".join(words), want, 0)
                if len(rows) < want:
                    keep, total = [], 0
                    for t in sorted(terms, key=lambda t: df.get(_fts_key(t), 0)):
                        n = df.get(_fts_key(t), 0)
                        if keep and total + n > SEARCH_POOL:
                            break
                        keep.append(t)
                        total += n
                    seen = {r.id for r, _ in rows}
                    rows += [(r, sc) for r, sc in self._search_rows(" OR ".join(t for t in terms if t in keep), want, 0)
                             if r.id not in seen]
                return rows[offset:want]
        return self._search_rows(" OR ".join(terms), limit, offset)

    def _search_rows(self, q: str, limit: int, offset: int) -> list[tuple[SymbolRow, float]]:
        rows = self._q(
            "SELECT s.*, bm25(symbols_fts, 4.0, 2.0, 1.0) AS score FROM symbols_fts "
            "JOIN symbols s ON s.id = symbols_fts.rowid "
            "WHERE symbols_fts MATCH ? AND s.graph_id=? "
            "ORDER BY score, s.qname, s.path, s.start_line LIMIT ? OFFSET ?",
            (q, self._gk, limit, offset))
        return [(self._sym(r), -float(r["score"])) for r in rows]

    def _fts_df(self, terms: Sequence[str]) -> dict[str, int]:
        """How many symbols (of every graph in the file) hold each term, by its vocabulary key."""
        keys = list(dict.fromkeys(_fts_key(t) for t in terms))
        return {r["term"]: r["doc"] for r in self._q(
            f"SELECT term, doc FROM fts_vocab WHERE term IN ({','.join('?' * len(keys))})", keys)}

    def count_search(self, text: str) -> int:
        q = _fts_query(text)
        if not q:
            return 0
        rows = self._q(
            "SELECT count(*) AS n FROM symbols_fts JOIN symbols s ON s.id = symbols_fts.rowid "
            "WHERE symbols_fts MATCH ? AND s.graph_id=?", (q, self._gk))
        return rows[0]["n"]

    def lexical_search(self, terms: Sequence[str], limit: int, offset: int = 0) -> list[tuple[SymbolRow, float]]:
        """Symbols by BM25 over their stemmed lexical fields (context/lexical.py: name
        sub-words, qualified-name parts, signature, summary, path words; column weights
        ``FIELD_WEIGHTS``) for ``terms`` OR-ed (already split and stemmed), best first, ties
        by (qname, path, start_line). FTS5 ranks on its own (``ORDER BY rank LIMIT``: a top-n pass that reads no
        symbol row) and only the best rows are joined; rows of other graphs in the file are
        skipped, reading further while they crowd the page."""
        q = fts_query(self._distinctive(terms))
        if not q or limit <= 0:
            return []
        want = limit + offset
        inner = max(want * 2, 50)
        while True:
            rows = self._q(
                "SELECT s.*, r.score AS score FROM (SELECT rowid, rank AS score FROM symbols_lex "
                "WHERE symbols_lex MATCH ? AND rank MATCH ? ORDER BY rank LIMIT ?) r "
                "CROSS JOIN symbols s ON s.id = r.rowid WHERE s.graph_id=? ORDER BY r.score, s.qname, s.path, s.start_line",
                (q, _BM25_RANK, inner, self._gk))
            if len(rows) >= want or inner >= _FTS_ALL:
                break
            got = self._q("SELECT count(*) AS n FROM (SELECT 1 FROM symbols_lex WHERE symbols_lex MATCH ? LIMIT ?)",
                          (q, inner + 1))[0]["n"]
            if got <= inner:
                break  # every match was read: this graph has no more
            inner = min(inner * 4, _FTS_ALL)
        return [(self._sym(r), -float(r["score"])) for r in rows[offset:want]]

    def _distinctive(self, terms: Sequence[str]) -> list[str]:
        """``terms`` without those in more than ``LEX_COMMON_SHARE`` of the symbols and more
        than ``LEX_COMMON_MIN`` ("self", "def", "test" in a standard library), or in more than
        ``LEX_COMMON_MAX`` symbols: BM25 gives them little weight, and ranking every symbol
        that holds them is what a query costs (a short list costs little and still tells).
        When all are that common, the rarest stays."""
        terms = list(dict.fromkeys(terms))
        if len(terms) < 2:
            return terms
        df = self._lex_df(terms)
        n = df[""]
        most = min(max(LEX_COMMON_SHARE * n, LEX_COMMON_MIN), LEX_COMMON_MAX)
        keep = [t for t in terms if df.get(t, 0) <= most]
        return keep or [min(terms, key=lambda t: df.get(t, 0))]

    def _lex_df(self, terms: list[str]) -> dict[str, int]:
        """How many symbols (of every graph in the file) hold each of ``terms``, and under
        ``""`` how many there are: the vocabulary counts a term's rows by walking its whole
        document list, and a task's plain words come back request after request, so what was
        read is kept while the file is unchanged (``_kept_counts``)."""

        def read(todo: list[str]) -> dict[str, int]:
            words = [t for t in todo if t]
            got = {r["term"]: r["doc"] for r in self._q(
                f"SELECT term, doc FROM lex_vocab WHERE term IN ({','.join('?' * len(words))})", words)} \
                if words else {}
            if "" in todo:
                got[""] = self._q("SELECT count(*) AS n FROM symbols_lex_docsize")[0]["n"]
            return got

        return self._kept_counts("lex_vocab", ["", *terms], read)

    def signature_mentions(self, names: Sequence[str], limit: int) -> dict[str, list[SymbolRow]]:
        """For each name (a type's), symbols of this graph whose signature holds its words in a
        row (the full-text table's signature column: the stemmed sub-words of the name as a
        phrase), at most ``limit`` each: the candidates for "the functions that take this
        type" (the caller checks the signature's text). One read for all names (a sub-select
        each, graph-bound before its limit)."""
        phrases: list[tuple[str, str]] = []
        for n in dict.fromkeys(names):
            ws = [w for w in lex_words(n) if '"' not in w]
            if ws:
                phrases.append((n, 'lex_sig : "' + " ".join(ws) + '"'))
        if not phrases or limit <= 0:
            return {}
        sub = " UNION ALL ".join(
            "SELECT * FROM (SELECT ? AS m_name, s.* FROM symbols_lex CROSS JOIN symbols s "
            "ON s.id = symbols_lex.rowid WHERE symbols_lex MATCH ? AND s.graph_id=? LIMIT ?)" for _ in phrases)
        args: list[object] = [x for n, q in phrases for x in (n, q, self._gk, limit)]
        out: dict[str, list[SymbolRow]] = {}
        for r in self._q(sub, args):
            out.setdefault(r["m_name"], []).append(self._sym(r))
        for rows in out.values():
            rows.sort(key=lambda x: (x.path, x.start_line, x.qname))
        return out

    def count_lexical(self, terms: Sequence[str], cap: int | None = None) -> int:
        """How many symbols ``lexical_search`` matches; at most ``cap`` when given (cheap)."""
        q = fts_query(self._distinctive(terms))
        if not q:
            return 0
        rows = self._q("SELECT count(*) AS n FROM (SELECT 1 FROM symbols_lex CROSS JOIN symbols s "
                       "ON s.id = symbols_lex.rowid WHERE symbols_lex MATCH ? AND s.graph_id=? LIMIT ?)",
                       (q, self._gk, -1 if cap is None else cap))
        return rows[0]["n"]

    def callers(self, qname: str, limit: int = 1000) -> list[CallRow]:
        return [self._call(r) for r in self._q(
            "SELECT * FROM calls INDEXED BY calls_target WHERE graph_id=? AND target=? AND target != ''"
            + self._CALL_ORDER + " LIMIT ?",
            (self._gk, qname, limit))]

    def count_callers(self, qname: str) -> int:
        return self._q("SELECT count(*) AS n FROM calls INDEXED BY calls_target WHERE graph_id=? AND target=? "
                       "AND target != ''", (self._gk, qname))[0]["n"]

    def callees(self, caller: str, limit: int = 1000) -> list[CallRow]:
        return [self._call(r) for r in self._q(
            "SELECT * FROM calls INDEXED BY calls_caller WHERE graph_id=? AND caller=?" + self._CALL_ORDER + " LIMIT ?",
            (self._gk, caller, limit))]

    def count_callees(self, caller: str) -> int:
        return self._q("SELECT count(*) AS n FROM calls INDEXED BY calls_caller WHERE graph_id=? AND caller=?",
                       (self._gk, caller))[0]["n"]

    def unresolved_named(self, name: str, limit: int = 100) -> list[CallRow]:
        return [self._call(r) for r in self._q(
            "SELECT * FROM calls INDEXED BY calls_name WHERE graph_id=? AND name=? AND target='' "
            "AND resolution='unresolved'"
            + self._CALL_ORDER + " LIMIT ?", (self._gk, name, limit))]

    def count_unresolved_named(self, name: str) -> int:
        # (graph_id, name, target, resolution) answers this from the index alone
        return self._q("SELECT count(*) AS n FROM calls INDEXED BY calls_name WHERE graph_id=? AND name=? "
                       "AND target='' AND resolution='unresolved'", (self._gk, name))[0]["n"]

    def calls_in_files(self, paths: Iterable[str]) -> list[CallRow]:
        out: list[CallRow] = []
        for p in paths:
            out.extend(self._call(r) for r in self._q(
                "SELECT * FROM calls WHERE graph_id=? AND path=?" + self._CALL_ORDER, (self._gk, p)))
        return out

    def calls_in_lines(self, path: str, first: int, last: int) -> list[CallRow]:
        """The calls of ``path`` on lines ``first``..``last`` (what a delta wrote: write_delta)."""
        return [self._call(r) for r in self._q(
            "SELECT * FROM calls WHERE graph_id=? AND path=? AND line BETWEEN ? AND ?" + self._CALL_ORDER,
            (self._gk, path, first, last))]

    def calls_touching(self, names: Iterable[str]) -> list[CallRow]:
        names = sorted(set(names))
        out: dict[int, CallRow] = {}
        for i in range(0, len(names), 300):
            chunk = names[i:i + 300]
            marks = ",".join("?" * len(chunk))
            # calls_head and calls_hint are partial indexes (a head that is the name, an empty
            # hint: most calls, C's all): the name's own query finds those rows
            for col, only in (("name", ""), ("head", " AND head != ''"), ("hint_name", " AND hint_name != ''")):
                for r in self._q(f"SELECT * FROM calls WHERE graph_id=? AND {col} IN ({marks}){only}",
                                 (self._gk, *chunk)):
                    out[r["id"]] = self._call(r)
        return [out[k] for k in sorted(out)]

    def calls_by_hint_name(self, names: Iterable[str]) -> list[CallRow]:
        names = sorted(set(names))
        out: dict[int, CallRow] = {}
        for i in range(0, len(names), 300):
            chunk = names[i:i + 300]
            marks = ",".join("?" * len(chunk))
            for r in self._q(f"SELECT * FROM calls WHERE graph_id=? AND hint_name IN ({marks}) AND hint_name != ''",
                             (self._gk, *chunk)):
                out[r["id"]] = self._call(r)
        return [out[k] for k in sorted(out)]

    def all_calls(self) -> Iterable[CallRow]:
        cur = self._conn().execute("SELECT * FROM calls WHERE graph_id=? ORDER BY id", (self._gk,))
        for r in cur:
            yield self._call(r)

    def imports(self, path: str | None = None) -> list[ImportRow]:
        if path is None:
            rows = self._q("SELECT * FROM imports WHERE graph_id=? ORDER BY path, line, module, name", (self._gk,))
        else:
            rows = self._q("SELECT * FROM imports WHERE graph_id=? AND path=? ORDER BY line, module, name",
                           (self._gk, path))
        return [self._imp(r) for r in rows]

    def all_imports(self) -> Iterable[tuple[int, ImportRow]]:
        for r in self._q("SELECT * FROM imports WHERE graph_id=? ORDER BY id", (self._gk,)):
            yield r["id"], self._imp(r)

    def _touching(self, table: str, keys: Sequence[tuple[str, Iterable[str]]]) -> list[sqlite3.Row]:
        """Rows of ``table`` whose column ``col`` holds one of its values, for each (col,
        values) pair; each row once, in id order. Columns are constants of this module."""
        out: dict[int, sqlite3.Row] = {}
        for col, values in keys:
            vals = sorted(set(values))
            for i in range(0, len(vals), 300):
                chunk = vals[i:i + 300]
                for r in self._q(f"SELECT * FROM {table} INDEXED BY {table}_{col} WHERE graph_id=? "
                                 f"AND {col} IN ({','.join('?' * len(chunk))})", (self._gk, *chunk)):
                    out[r["id"]] = r
        return [out[k] for k in sorted(out)]

    def imports_touching(self, paths: Iterable[str], names: Iterable[str],
                         modules: Iterable[str] = ()) -> list[tuple[int, ImportRow]]:
        names = list(names)
        rows = self._touching("imports", (("path", paths), ("name", names), ("alias", names), ("mod_head", names),
                                          ("mod_last", names), ("module", modules)))
        return [(r["id"], self._imp(r)) for r in rows]

    def inherits(self, path: str | None = None) -> list[InheritRow]:
        if path is None:
            rows = self._q("SELECT * FROM inherits WHERE graph_id=? ORDER BY path, line, child, base", (self._gk,))
        else:
            rows = self._q("SELECT * FROM inherits WHERE graph_id=? AND path=? ORDER BY line, child, base",
                           (self._gk, path))
        return [self._inh(r) for r in rows]

    def all_inherits(self) -> Iterable[tuple[int, InheritRow]]:
        for r in self._q("SELECT * FROM inherits WHERE graph_id=? ORDER BY id", (self._gk,)):
            yield r["id"], self._inh(r)

    def inherits_touching(self, paths: Iterable[str], names: Iterable[str]) -> list[tuple[int, InheritRow]]:
        names = list(names)
        rows = self._touching("inherits", (("path", paths), ("base_name", names), ("base_head", names)))
        return [(r["id"], self._inh(r)) for r in rows]

    def subtypes(self, qname: str, limit: int = 100) -> list[InheritRow]:
        return [self._inh(r) for r in self._q(
            "SELECT * FROM inherits WHERE graph_id=? AND target=? ORDER BY child, path LIMIT ?",
            (self._gk, qname, limit))]

    # -- batch reads: in-process, a call per key costs no round trip, but each query lets go
    # of the GIL and takes it back: with 8 requests at once every handover can wait a switch
    # interval (minimalContext made ~240 queries; 4,300 of them one-qname reads for 40 tasks).
    # The symbol reads below are one query per chunk of keys, on the one-key read's index
    # (INDEXED BY), in its order; the others are the one-key read's own query
    def symbols_by_qnames(self, qnames: Iterable[str]) -> dict[str, list[SymbolRow]]:
        out: dict[str, list[SymbolRow]] = {}
        keys = list(dict.fromkeys(qnames))
        for k in range(0, len(keys), _KEYS_PER_QUERY):
            chunk = keys[k:k + _KEYS_PER_QUERY]
            for r in self._q("SELECT * FROM symbols INDEXED BY symbols_qname WHERE graph_id=? AND qname IN "
                             f"({','.join('?' * len(chunk))})" + self._SYM_ORDER, (self._gk, *chunk)):
                out.setdefault(r["qname"], []).append(self._sym(r))
        return {q: out[q] for q in keys if q in out}

    def files_by_paths(self, paths: Iterable[str]) -> dict[str, FileRow]:
        out = {p: self.file(p) for p in dict.fromkeys(paths)}
        return {p: f for p, f in out.items() if f is not None}

    def symbols_in_files(self, paths: Iterable[str]) -> dict[str, list[SymbolRow]]:
        out: dict[str, list[SymbolRow]] = {}
        keys = list(dict.fromkeys(paths))
        for k in range(0, len(keys), _KEYS_PER_QUERY):
            chunk = keys[k:k + _KEYS_PER_QUERY]
            for r in self._q("SELECT * FROM symbols INDEXED BY symbols_path WHERE graph_id=? AND path IN "
                             f"({','.join('?' * len(chunk))}) ORDER BY path, start_line, start_col, qname",
                             (self._gk, *chunk)):
                out.setdefault(r["path"], []).append(self._sym(r))
        return {p: out[p] for p in keys if p in out}

    def members_in_files(self, paths: Iterable[str], parents: Iterable[str]) -> dict[str, list[SymbolRow]]:
        """``symbols_in_files`` of ``paths`` with only the symbols whose parent is one of
        ``parents`` (a type's members, a member's siblings), in the same order: the parent is
        checked in the query, so the other symbols of a large file (a test module's hundreds of
        methods) are never built."""
        out: dict[str, list[SymbolRow]] = {}
        keys = list(dict.fromkeys(paths))
        tops = list(dict.fromkeys(parents))
        if not keys or not tops:
            return out
        step = max(1, _KEYS_PER_QUERY // 2)
        for k in range(0, len(keys), step):
            chunk = keys[k:k + step]
            for j in range(0, len(tops), step):
                these = tops[j:j + step]
                for r in self._q("SELECT * FROM symbols INDEXED BY symbols_path WHERE graph_id=? AND path IN "
                                 f"({','.join('?' * len(chunk))}) AND parent IN ({','.join('?' * len(these))}) "
                                 "ORDER BY path, start_line, start_col, qname", (self._gk, *chunk, *these)):
                    out.setdefault(r["path"], []).append(self._sym(r))
        if len(tops) > step:  # rows of one file came from several reads: back in the file's order
            for rows in out.values():
                rows.sort(key=lambda x: (x.start_line, x.start_col, x.qname))
        return {p: out[p] for p in keys if p in out}

    def symbol_table_rows(self) -> Iterator[tuple[FileRow, list[tuple[str, str, str, str]], list[ImportRef]]]:
        """What the resolver's symbol table (index/resolve.py) needs of every indexed file, in
        path order, streamed: (file row, its symbols as (qname, kind, parent, signature) by
        qname and position, its imports by line, module and name). Two path-ordered cursors
        walked side by side, the columns needed only, one file's rows held at a time: a
        catch-up or daemon start reads the whole index through here (a query per file and
        whole SymbolRows cost it twice the time)."""
        files = [f for f in self.files() if f.status != "skipped"]
        rank = {f.path: i for i, f in enumerate(files)}

        def by_file(sql: str) -> Iterator[tuple[int, list[tuple]]]:
            cur = self._conn().cursor()
            cur.row_factory = None
            k, rows = -1, []
            for r in cur.execute(sql, (self._gk,)):
                at = rank.get(r[0])
                if at is None:  # a skipped file's (none are stored)
                    continue
                if at != k:
                    if rows:
                        yield k, rows
                    k, rows = at, []
                rows.append(r)
            if rows:
                yield k, rows

        syms = by_file("SELECT path, qname, kind, parent, signature, start_line, start_col FROM symbols "
                       "INDEXED BY symbols_path WHERE graph_id=? ORDER BY path")
        imps = by_file("SELECT path, module, name, alias, line FROM imports INDEXED BY imports_path "
                       "WHERE graph_id=? ORDER BY path")
        s, i = next(syms, None), next(imps, None)
        for k, f in enumerate(files):
            while s is not None and s[0] < k:
                s = next(syms, None)
            while i is not None and i[0] < k:
                i = next(imps, None)
            srows = s[1] if s is not None and s[0] == k else []
            irows = i[1] if i is not None and i[0] == k else []
            srows.sort(key=lambda r: (r[1], r[5], r[6]))
            irows.sort(key=lambda r: (r[4], r[1], r[2]))
            yield (f, [(r[1], r[2], r[3] or "", r[4] or "") for r in srows],
                   [ImportRef(module=r[1], name=r[2], alias=r[3], line=r[4]) for r in irows])

    def callers_many(self, qnames: Iterable[str], limit: int = 1000) -> dict[str, list[CallRow]]:
        out = {q: self.callers(q, limit) for q in dict.fromkeys(qnames)}
        return {q: rows for q, rows in out.items() if rows}

    def callees_many(self, callers: Iterable[str], limit: int = 1000) -> dict[str, list[CallRow]]:
        out = {q: self.callees(q, limit) for q in dict.fromkeys(callers)}
        return {q: rows for q, rows in out.items() if rows}

    def subtypes_many(self, qnames: Iterable[str], limit: int = 100) -> dict[str, list[InheritRow]]:
        out = {q: self.subtypes(q, limit) for q in dict.fromkeys(qnames)}
        return {q: rows for q, rows in out.items() if rows}

    def relation_counts(self, qnames: Iterable[str], names: Iterable[str] = ()
                        ) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
        qs = list(dict.fromkeys(qnames))
        ns = list(dict.fromkeys(names))
        # the one-key counts' queries, a chunk of keys at a time (GROUP BY on the same index)
        callers = self._counts("SELECT target AS k, count(*) AS n FROM calls INDEXED BY calls_target WHERE "
                               "graph_id=? AND target != '' AND target IN ({}) GROUP BY target", qs)
        callees = self._counts("SELECT caller AS k, count(*) AS n FROM calls INDEXED BY calls_caller WHERE "
                               "graph_id=? AND caller IN ({}) GROUP BY caller", qs)
        unresolved = self._counts("SELECT name AS k, count(*) AS n FROM calls INDEXED BY calls_name WHERE "
                                  "graph_id=? AND name IN ({}) AND target='' AND resolution='unresolved' "
                                  "GROUP BY name", ns)
        return callers, callees, unresolved

    def _counts(self, sql: str, keys: list[str]) -> dict[str, int]:
        def read(todo: list[str]) -> dict[str, int]:
            got: dict[str, int] = {}
            for k in range(0, len(todo), _KEYS_PER_QUERY):
                chunk = todo[k:k + _KEYS_PER_QUERY]
                for r in self._q(sql.format(",".join("?" * len(chunk))), (self._gk, *chunk)):
                    got[r["k"]] = r["n"]
            return got

        return self._kept_counts(sql, keys, read)

    def _kept_counts(self, kind: str, keys: list[str], read) -> dict[str, int]:
        """The count of each key (0 when ``read`` gives none): those this connection read
        before from ``_known_counts(kind)``, the others by ``read(keys not kept)``, then kept
        (at most ``_COUNTS_KEPT`` per kind: past it the kept ones start again)."""
        known = self._known_counts(kind)
        if known is None:
            known = {}
        out = {k: known[k] for k in keys if k in known}
        todo = [k for k in dict.fromkeys(keys) if k not in out]
        if todo:
            got = read(todo)
            if len(known) + len(todo) > _COUNTS_KEPT:
                known.clear()  # out already holds what was kept
            for k in todo:
                out[k] = known[k] = got.get(k, 0)
        return out

    def _known_counts(self, sql: str) -> dict[str, int] | None:
        """The counts of ``sql`` this thread's connection read before, by key, while the graph
        has not changed since: its ``PRAGMA data_version`` (changes with every commit of
        another connection, of any process, and is the version a read snapshot reads) and none
        of its own commits (``transaction`` drops them); None inside a write (it reads its own
        uncommitted rows). Counting is the price of a popular key (``TestCase.assertEqual``:
        34,000 calls walked on the stdlib, again in nearly every minimalContext: ~9 ms a
        request), and the same keys come back request after request."""
        if self._tx_owner == threading.get_ident():
            return None
        try:
            version = self._conn().execute("PRAGMA data_version").fetchone()[0]
        except sqlite3.Error as e:
            raise StoreError(f"graph query failed: {e}") from e
        held = getattr(self._local, "counts", None)
        if held is None or held[0] != version:
            held = self._local.counts = (version, {})
        return held[1].setdefault(sql, {})

    def stats(self) -> GraphStats:
        g = (self._gk,)
        langs = {r["language"]: r["n"] for r in self._q(
            "SELECT language, count(*) AS n FROM files WHERE graph_id=? AND status!='skipped' GROUP BY language "
            "ORDER BY language", g)}
        kinds = {r["kind"]: r["n"] for r in self._q(
            "SELECT kind, count(*) AS n FROM symbols WHERE graph_id=? GROUP BY kind ORDER BY kind", g)}
        one = lambda sql: self._q(sql, g)[0]["n"]  # noqa: E731
        return GraphStats(
            files=one("SELECT count(*) AS n FROM files WHERE graph_id=? AND status!='skipped'"),
            skipped=one("SELECT count(*) AS n FROM files WHERE graph_id=? AND status='skipped'"),
            symbols=one("SELECT count(*) AS n FROM symbols WHERE graph_id=?"),
            calls=one("SELECT count(*) AS n FROM calls WHERE graph_id=?"),
            resolved_calls=one("SELECT count(*) AS n FROM calls INDEXED BY calls_target "
                               "WHERE graph_id=? AND target!=''"),  # the partial index: resolved calls only
            imports=one("SELECT count(*) AS n FROM imports WHERE graph_id=?"),
            inherits=one("SELECT count(*) AS n FROM inherits WHERE graph_id=?"),
            languages=langs,
            kinds=kinds,
        )

    def dump(self) -> dict[str, list[tuple]]:
        g = (self._gk,)
        return {
            "files": sorted(tuple(r) for r in self._q(
                "SELECT path, language, hash, size, lines, module, status, reason FROM files WHERE graph_id=?", g)),
            "symbols": sorted(tuple(r) for r in self._q(
                "SELECT path, qname, name, kind, signature, start_line, end_line, start_col, end_col, hash, summary, "
                "parent, is_test, exported, language FROM symbols WHERE graph_id=?", g)),
            "calls": sorted(tuple(r) for r in self._q(
                "SELECT path, caller, coalesce(nullif(callee, ''), name), name, hint, line, col, kind, target, "
                "resolution, confidence FROM calls WHERE graph_id=?", g)),
            "imports": sorted(tuple(r) for r in self._q(
                "SELECT path, module, name, alias, line, target FROM imports WHERE graph_id=?", g)),
            "inherits": sorted(tuple(r) for r in self._q(
                "SELECT path, child, base, kind, line, target, resolution, confidence FROM inherits WHERE graph_id=?",
                g)),
        }
