"""Integrity checks for the embedded stores (the code graph and the memory store).

Used after a crash (kill -9 at any point of an index, an incremental update or a memory
write) to prove that what is on disk is still a consistent graph, and by the reliability
suite (tests/reliability). Every check reads only; nothing here repairs.

Code graph (``graph.db``), per graph id:

* SQLite ``PRAGMA integrity_check`` says ``ok``;
* the schema version is recorded, and no ``resolution_pending`` flag is left set (the
  indexer sets it before a write and clears it after resolution; ``Indexer.load`` re-resolves
  when it finds it set, so after a load it must be clear);
* every symbol, call, import and inherit row belongs to a file row, and that file is not a
  skipped one (a skipped file has no graph);
* file rows have a known status; symbols have sane line ranges;
* a call, inherit or import target is empty or names a symbol of the same graph (not
  checked while a crashed update's re-resolution is still pending: ``loaded=False``);
* no call site or symbol is stored twice at one position (what a replayed write would do);
* the FTS5 indexes agree with the symbols table: FTS5 ``integrity-check``, equal row counts,
  and (they are contentless) the same words as the symbol rows make again.

Memory store (``memory.sqlite3``): integrity_check; every alias and fact belongs to an entity
of its own tenant/namespace; no live fact points at a forgotten entity unless the fact is
forgotten too; no two live entities share (tenant, namespace, session, name); no two live
facts share (tenant, namespace, session, subject, predicate, object).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GRAPH_TABLES = ("symbols", "calls", "imports", "inherits")
FILE_STATUSES = ("indexed", "partial", "skipped")
MAX_EXAMPLES = 5


@dataclass
class IntegrityReport:
    """What was checked and what failed. ``ok`` when no problem was found."""

    path: str
    problems: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    checks: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def fail(self, check: str, message: str, examples: list[Any] | None = None) -> None:
        if examples:
            message += f" (e.g. {examples[:MAX_EXAMPLES]!r})"
        self.problems.append(f"{check}: {message}")

    def __str__(self) -> str:
        head = f"{self.path}: {'ok' if self.ok else f'{len(self.problems)} problem(s)'}"
        return "\n".join([head, *("  - " + p for p in self.problems)])


def _connect_ro(path: str | Path) -> sqlite3.Connection:
    """A read-only connection; WAL content is visible (the -wal file is read, not replayed
    into the main file, so a daemon that is still running is not disturbed)."""
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=30, isolation_level=None)
    conn.row_factory = sqlite3.Row
    return conn


def _sqlite_integrity(conn: sqlite3.Connection, rep: IntegrityReport) -> bool:
    rep.checks.append("sqlite integrity_check")
    try:
        rows = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
    except sqlite3.DatabaseError as e:  # damage where the check itself must read (a torn schema page)
        rows = [str(e)]
    if rows != ["ok"]:
        rep.fail("sqlite", "PRAGMA integrity_check failed", rows)
        return False
    return True


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


def check_graph(path: str | Path, graph_id: str | None = None, *, loaded: bool = True) -> IntegrityReport:
    """Check a SQLite code graph file. ``graph_id`` limits the check to one graph (default:
    every graph in the file). ``loaded``: the graph has been opened by an indexer since the
    last write (then a left-over ``resolution_pending`` flag is a problem; right after a
    crash, before any load, it is expected)."""
    rep = IntegrityReport(str(path))
    conn = _connect_ro(path)
    try:
        if not _sqlite_integrity(conn, rep):
            return rep
        tables = _tables(conn)
        missing = {"meta", "graphs", "files", *GRAPH_TABLES, "symbols_fts"} - tables
        if missing and not loaded:
            # killed while the store was first created: the schema is made statement by
            # statement (CREATE ... IF NOT EXISTS) and completed by the next open
            rep.checks.append(f"schema incomplete before a load ({len(missing)} tables to create)")
            return rep
        if missing:
            rep.fail("schema", f"missing tables {sorted(missing)}")
            return rep
        # the code graph's tables hold a graph's key in ``graphs``, meta its id
        keys = {r[1]: r[0] for r in conn.execute("SELECT key, graph_id FROM graphs")}
        stored = {r[0] for t in ("files", *GRAPH_TABLES) for r in conn.execute(f"SELECT DISTINCT graph_id FROM {t}")}
        if stored - set(keys.values()):
            rep.fail("graphs", "rows whose graph key no graph id names", sorted(stored - set(keys.values())))
        gids = [graph_id] if graph_id else sorted(
            {r[0] for r in conn.execute("SELECT DISTINCT graph_id FROM meta")} | set(keys))
        for g in gids:
            _check_one_graph(conn, g, keys.get(g, -1), rep, loaded)
        _check_fts(conn, rep)
    finally:
        conn.close()
    return rep


def _check_one_graph(conn: sqlite3.Connection, g: str, key: int, rep: IntegrityReport, loaded: bool) -> None:
    """Check graph ``g``, whose rows in the code graph's tables carry ``key``."""
    q = conn.execute
    for t in ("files", *GRAPH_TABLES):
        rep.counts[f"{g}:{t}"] = q(f"SELECT count(*) FROM {t} WHERE graph_id=?", (key,)).fetchone()[0]

    rep.checks.append("meta")
    meta = {r["key"]: r["value"] for r in q("SELECT key, value FROM meta WHERE graph_id=?", (g,))}
    if "schema_version" not in meta and any(rep.counts[f"{g}:{t}"] for t in ("files", *GRAPH_TABLES)):
        rep.fail("meta", f"graph {g} has rows but no schema_version")
    if loaded and meta.get("resolution_pending") == "1":
        rep.fail("meta", f"graph {g}: resolution_pending is still set after a load")

    rep.checks.append("file statuses")
    bad = [tuple(r) for r in q(
        f"SELECT path, status FROM files WHERE graph_id=? AND status NOT IN ({','.join('?' * len(FILE_STATUSES))})",
        (key, *FILE_STATUSES))]
    if bad:
        rep.fail("files", f"graph {g}: {len(bad)} file rows with an unknown status", bad)

    rep.checks.append("rows belong to a file")
    for t in GRAPH_TABLES:
        orphans = [r[0] for r in q(
            f"SELECT DISTINCT t.path FROM {t} t LEFT JOIN files f ON f.graph_id=t.graph_id AND f.path=t.path "
            f"WHERE t.graph_id=? AND f.path IS NULL", (key,))]
        if orphans:
            rep.fail("orphans", f"graph {g}: {t} rows of {len(orphans)} paths without a file row", orphans)
        of_skipped = [r[0] for r in q(
            f"SELECT DISTINCT t.path FROM {t} t JOIN files f ON f.graph_id=t.graph_id AND f.path=t.path "
            f"WHERE t.graph_id=? AND f.status='skipped'", (key,))]
        if of_skipped:
            rep.fail("orphans", f"graph {g}: {t} rows of {len(of_skipped)} skipped files", of_skipped)

    rep.checks.append("symbol ranges")
    bad = [tuple(r) for r in q(
        "SELECT path, qname, start_line, end_line FROM symbols WHERE graph_id=? AND "
        "(start_line IS NULL OR end_line IS NULL OR start_line < 1 OR end_line < start_line)", (key,))]
    if bad:
        rep.fail("symbols", f"graph {g}: {len(bad)} symbols with a bad line range", bad)

    if meta.get("resolution_pending") == "1" and not loaded:
        # an update stopped between its writes and re-resolution (a crash): edges into files
        # it deleted or rewrote may still point at old symbols; Indexer.load re-resolves them
        rep.checks.append("targets not checked (resolution pending; re-resolved on load)")
    else:
        _check_targets(q, g, key, rep)

    rep.checks.append("no duplicated rows")
    dup_sql = {
        "symbols": "path, qname, kind, start_line, start_col",
        "calls": "path, caller, callee, line, col",
    }  # imports and inherits have no column: `class Z(NamedTuple, NamedTuple)` is two legal rows
    for t, cols in dup_sql.items():
        dups = [tuple(r) for r in q(
            f"SELECT {cols}, count(*) AS n FROM {t} WHERE graph_id=? GROUP BY {cols} HAVING n > 1 LIMIT 50", (key,))]
        if dups:
            rep.fail("duplicates", f"graph {g}: {t} rows stored more than once", dups)


def _check_targets(q, g: str, key: int, rep: IntegrityReport) -> None:
    rep.checks.append("targets exist or are empty")
    for t, col in (("calls", "target"), ("inherits", "target"), ("imports", "target")):
        dangling = [tuple(r) for r in q(
            f"SELECT t.path, t.{col} FROM {t} t WHERE t.graph_id=? AND t.{col} != '' AND NOT EXISTS "
            f"(SELECT 1 FROM symbols s WHERE s.graph_id=t.graph_id AND s.qname=t.{col}) LIMIT 50", (key,))]
        if dangling:
            rep.fail("targets", f"graph {g}: {t}.{col} names symbols that do not exist", dangling)
    unresolved_with_target = q(
        "SELECT count(*) FROM calls WHERE graph_id=? AND target='' AND resolution NOT IN ('unresolved', 'external')",
        (key,)).fetchone()[0]
    if unresolved_with_target:
        rep.fail("targets", f"graph {g}: {unresolved_with_target} calls without a target claim a resolution")


def _check_fts(conn: sqlite3.Connection, rep: IntegrityReport) -> None:
    rep.checks.append("fts in sync")
    n_sym = conn.execute("SELECT count(*) FROM symbols").fetchone()[0]
    tables = _tables(conn)
    for fts in ("symbols_fts", "symbols_lex"):
        if f"{fts}_docsize" in tables:
            n_fts = conn.execute(f"SELECT count(*) FROM {fts}_docsize").fetchone()[0]
            if n_fts != n_sym:
                rep.fail("fts", f"the FTS index {fts} holds {n_fts} rows, the symbols table {n_sym}")
    # FTS5 integrity-check: the index is well formed. It needs a writable connection: a
    # read-only one cannot INSERT, so open a second connection read-write only when the
    # file is writable.
    path = conn.execute("PRAGMA database_list").fetchone()["file"]
    try:
        rw = sqlite3.connect(path, timeout=30, isolation_level=None)
    except sqlite3.Error as e:  # pragma: no cover - the file was just opened
        rep.fail("fts", f"cannot open for the FTS check: {e}")
        return
    try:
        rw.execute("BEGIN")
        try:
            for fts in ("symbols_fts", "symbols_lex"):
                if fts in tables:
                    rw.execute(f"INSERT INTO {fts}({fts}) VALUES('integrity-check')")
        except sqlite3.DatabaseError as e:
            rep.fail("fts", f"FTS5 integrity-check failed: {e}")
        finally:
            rw.execute("ROLLBACK")
    except sqlite3.OperationalError as e:
        if "locked" in str(e) or "busy" in str(e):
            rep.checks.append("fts integrity-check skipped (database busy)")
        else:
            rep.fail("fts", f"FTS5 integrity-check could not run: {e}")
    finally:
        rw.close()
    if "symbols_lex" in tables and "symbols_fts" in tables:
        _check_fts_words(conn, path, rep)


def _check_fts_words(conn: sqlite3.Connection, path: str, rep: IntegrityReport) -> None:
    """The full-text tables are contentless (store/sqlite/graph.py): their words must be
    exactly what the symbol rows make. Made again from the rows into a private temporary
    database, the two vocabularies (term, rows, occurrences) are compared."""
    from codesynapse.store.sqlite.graph import fts_values

    rep.checks.append("fts words match the symbol rows")
    chk = sqlite3.connect("", isolation_level=None)  # a private temporary database on disk
    try:
        chk.execute("ATTACH DATABASE ? AS g", (path,))  # read only: no statement here writes to it
        for fts, sql in (("symbols_fts", "name, qname, terms"),
                         ("symbols_lex", "lex_name, lex_qname, lex_sig, lex_doc, lex_path")):
            tok = conn.execute("SELECT sql FROM sqlite_master WHERE name=?", (fts,)).fetchone()[0]
            tokenize = tok[tok.index("tokenize"):].rstrip(")").strip() if "tokenize" in tok else ""
            chk.execute(f"CREATE VIRTUAL TABLE main.{fts} USING fts5({sql}, content=''"
                        f"{', ' + tokenize if tokenize else ''})")
        chk.execute("BEGIN")
        cur = conn.execute("SELECT id, name, qname, signature, summary, path FROM symbols")
        while batch := cur.fetchmany(5000):
            made = [(r[0], *fts_values(r[1], r[2], r[3], r[4], r[5])) for r in batch]
            chk.executemany("INSERT INTO main.symbols_fts(rowid, name, qname, terms) VALUES (?,?,?,?)",
                            [(i, *a) for i, a, _ in made])
            chk.executemany("INSERT INTO main.symbols_lex(rowid, lex_name, lex_qname, lex_sig, lex_doc, lex_path) "
                            "VALUES (?,?,?,?,?,?)", [(i, *b) for i, _, b in made])
        chk.execute("COMMIT")
        for fts in ("symbols_fts", "symbols_lex"):
            chk.execute(f"CREATE VIRTUAL TABLE temp.{fts}_made USING fts5vocab(main, {fts}, 'row')")
            chk.execute(f"CREATE VIRTUAL TABLE temp.{fts}_stored USING fts5vocab(g, {fts}, 'row')")
            a, b = f"SELECT term, doc, cnt FROM {fts}_stored", f"SELECT term, doc, cnt FROM {fts}_made"
            diff = chk.execute(f"SELECT term FROM (SELECT * FROM ({a} EXCEPT {b}) UNION ALL "
                               f"SELECT * FROM ({b} EXCEPT {a})) LIMIT ?", (MAX_EXAMPLES,)).fetchall()
            if diff:
                rep.fail("fts", f"the words of {fts} are not those of the symbol rows (terms "
                                f"{', '.join(repr(d[0]) for d in diff)})")
    except sqlite3.Error as e:
        rep.fail("fts", f"the FTS words could not be compared: {e}")
    finally:
        chk.close()


def check_memory(path: str | Path) -> IntegrityReport:
    """Check a SQLite memory store file (``memory.sqlite3``)."""
    rep = IntegrityReport(str(path))
    conn = _connect_ro(path)
    try:
        if not _sqlite_integrity(conn, rep):
            return rep
        tables = _tables(conn)
        need = {"memory_meta", "memory_entities", "memory_aliases", "memory_facts"}
        if need - tables:
            rep.fail("schema", f"missing tables {sorted(need - tables)}")
            return rep
        q = conn.execute
        for t in sorted(need):
            rep.counts[t] = q(f"SELECT count(*) FROM {t}").fetchone()[0]
        rep.counts["live_entities"] = q("SELECT count(*) FROM memory_entities WHERE valid_to IS NULL").fetchone()[0]
        rep.counts["live_facts"] = q("SELECT count(*) FROM memory_facts WHERE valid_to IS NULL").fetchone()[0]

        rep.checks.append("aliases belong to an entity of their scope")
        bad = [tuple(r) for r in q(
            "SELECT a.entity_id, a.alias FROM memory_aliases a LEFT JOIN memory_entities e ON e.id=a.entity_id "
            "WHERE e.id IS NULL OR e.tenant != a.tenant OR e.namespace != a.namespace OR e.session != a.session "
            "LIMIT 50")]
        if bad:
            rep.fail("aliases", "aliases without an entity of the same scope", bad)

        rep.checks.append("fact endpoints exist in the fact's scope")
        for col in ("subject_id", "object_id"):
            bad = [tuple(r) for r in q(
                f"SELECT f.id, f.{col} FROM memory_facts f LEFT JOIN memory_entities e ON e.id=f.{col} "
                f"WHERE e.id IS NULL OR e.tenant != f.tenant OR e.namespace != f.namespace LIMIT 50")]
            if bad:
                rep.fail("facts", f"facts whose {col} is missing or foreign", bad)
            bad = [tuple(r) for r in q(
                f"SELECT f.id, f.{col} FROM memory_facts f JOIN memory_entities e ON e.id=f.{col} "
                f"WHERE f.valid_to IS NULL AND e.valid_to IS NOT NULL LIMIT 50")]
            if bad:
                rep.fail("facts", f"live facts whose {col} was forgotten", bad)

        rep.checks.append("no duplicated live entities or facts")
        dups = [tuple(r) for r in q(
            "SELECT tenant, namespace, session, name, count(*) AS n FROM memory_entities WHERE valid_to IS NULL "
            "GROUP BY tenant, namespace, session, name HAVING n > 1 LIMIT 50")]
        if dups:
            rep.fail("duplicates", "live entities stored twice", dups)
        dups = [tuple(r) for r in q(
            "SELECT tenant, namespace, session, subject_id, predicate, object_id, count(*) AS n FROM memory_facts "
            "WHERE valid_to IS NULL GROUP BY tenant, namespace, session, subject_id, predicate, object_id "
            "HAVING n > 1 LIMIT 50")]
        if dups:
            rep.fail("duplicates", "live facts stored twice", dups)
    finally:
        conn.close()
    return rep


def diff_dumps(a: dict[str, list[tuple]], b: dict[str, list[tuple]], limit: int = MAX_EXAMPLES) -> list[str]:
    """Human-readable differences between two ``GraphStore.dump()`` results ([] when equal)."""
    from collections import Counter

    out: list[str] = []
    for key in sorted(set(a) | set(b)):
        ca, cb = Counter(a.get(key, [])), Counter(b.get(key, []))
        only_a = list((ca - cb).elements())
        only_b = list((cb - ca).elements())
        if only_a or only_b:
            out.append(f"{key}: {len(only_a)} rows only in the first, {len(only_b)} only in the second; "
                       f"first-only e.g. {only_a[:limit]!r}; second-only e.g. {only_b[:limit]!r}")
    return out
