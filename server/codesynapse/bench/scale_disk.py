"""What takes the space in a SQLite code graph (issue 24 #3), and how large the same rows are
in this version's layout.

``python -m codesynapse.bench.scale_disk GRAPH_DB [--relayout NEW_DB]``

* the space by b-tree (SQLite's ``dbstat`` table: every table, index and FTS5 shadow table),
  grouped by the table it belongs to, with row counts;
* ``--relayout``: copy the graph's rows (files, symbols, calls, imports, inherits) into a new
  store of this version (same rows; FTS words made from them as the store makes them) and report both
  sizes. An index built by an older version is measured without indexing the corpus again.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

GRAPH_TABLES = ("files", "symbols", "calls", "imports", "inherits")


def _owner(name: str, indexes: dict[str, str]) -> str:
    if name in indexes:
        return indexes[name]
    for t in ("symbols_fts", "symbols_lex"):
        if name.startswith(t):
            return t
    if name.startswith("sqlite_autoindex_"):
        return name[len("sqlite_autoindex_"):].rsplit("_", 1)[0]
    return name


def space(db: str | Path) -> dict[str, Any]:
    """Bytes by b-tree and by owning table (``dbstat``), row counts, and the file sizes."""
    conn = sqlite3.connect(f"file:{Path(db).resolve()}?mode=ro", uri=True)
    try:
        indexes = {r[0]: r[1] for r in conn.execute("SELECT name, tbl_name FROM sqlite_master WHERE type='index'")}
        try:
            rows = conn.execute("SELECT name, SUM(pgsize), SUM(unused) FROM dbstat GROUP BY name").fetchall()
        except sqlite3.OperationalError as e:
            raise SystemExit(f"this SQLite has no dbstat table ({e})") from e
        by_btree = {n: {"bytes": b, "unused": u} for n, b, u in sorted(rows, key=lambda r: -r[1])}
        by_table: dict[str, int] = {}
        for n, v in by_btree.items():
            o = _owner(n, indexes)
            by_table[o] = by_table.get(o, 0) + v["bytes"]
        counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in GRAPH_TABLES}
    finally:
        conn.close()
    files = {sfx or "db": os.path.getsize(str(db) + sfx) for sfx in ("", "-wal") if os.path.exists(str(db) + sfx)}
    return {"path": str(db), "fileBytes": files, "byTable": dict(sorted(by_table.items(), key=lambda kv: -kv[1])),
            "byBtree": by_btree, "rows": counts}


def relayout(old: str | Path, new: str | Path) -> dict[str, Any]:
    """Store ``old``'s rows (its first graph) in a new store of this version at ``new``."""
    from codesynapse.store.sqlite.graph import SqliteGraphStore, add_symbol_words

    for sfx in ("", "-wal", "-shm"):
        Path(str(new) + sfx).unlink(missing_ok=True)
    src = sqlite3.connect(f"file:{Path(old).resolve()}?mode=ro", uri=True)
    gid = src.execute("SELECT graph_id FROM meta WHERE key='schema_version' ORDER BY graph_id").fetchone()[0]
    old_keyed = bool(src.execute("SELECT 1 FROM sqlite_master WHERE name='graphs'").fetchall())
    old_key = src.execute("SELECT key FROM graphs WHERE graph_id=?", (gid,)).fetchone()[0] if old_keyed else gid
    src.close()
    store = SqliteGraphStore(new, gid)
    try:
        conn = store._conn()
        conn.execute("ATTACH DATABASE ? AS o", (f"file:{Path(old).resolve()}?mode=ro",))
        with store.transaction():
            for t in GRAPH_TABLES:
                new_cols = [r[1] for r in conn.execute(f"PRAGMA main.table_info({t})")]
                old_cols = {r[1] for r in conn.execute(f"PRAGMA o.table_info({t})")}
                take = [c for c in new_cols if c in old_cols and c != "graph_id"]
                # this version stores a call's head and callee only when they are not its name
                sel = [f"CASE WHEN {c} = name THEN '' ELSE {c} END" if c in ("head", "callee") else c for c in take]
                order = "id" if "id" in old_cols else "rowid"
                conn.execute(f"INSERT INTO main.{t}(graph_id, {', '.join(take)}) SELECT ?, {', '.join(sel)} "
                             f"FROM o.{t} WHERE graph_id=? ORDER BY {order}", (store._gk, old_key))
            # the full-text tables are contentless: their words are made from the copied rows
            cur = conn.execute("SELECT id, name, qname, signature, summary, path FROM main.symbols")
            while batch := cur.fetchmany(10_000):
                add_symbol_words(conn, [tuple(r) for r in batch])
        conn.execute("DETACH DATABASE o")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        store.close()
    return space(new)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m codesynapse.bench.scale_disk", description=__doc__.split("\n\n")[0])
    ap.add_argument("db", help="a graph.db")
    ap.add_argument("--relayout", metavar="NEW_DB", help="copy its rows into a store of this version there")
    a = ap.parse_args(argv)
    out: dict[str, Any] = {"old": space(a.db)}
    if a.relayout:
        out["new"] = relayout(a.db, a.relayout)
    for k, v in out.items():
        total = sum(v["fileBytes"].values())
        sys.stderr.write(f"{k}: {v['path']} {total / 1e6:,.1f} MB; rows {v['rows']}\n")
        for t, b in list(v["byTable"].items())[:12]:
            sys.stderr.write(f"  {t:24s} {b / 1e6:10,.1f} MB\n")
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
