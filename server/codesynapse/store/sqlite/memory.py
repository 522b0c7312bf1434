"""MemoryStore on SQLite (WAL). Its own ``memory_*`` tables, in the file given to the
constructor (it may share a file with the code graph).

Every statement binds tenant and namespace, and the visibility rule ``session IN ('', ?, ?)``
with ``scope.session`` and, for a sub-session, its parent's session (else ``scope.session``
again; ``_vp``), or ``session = ?`` for writes of session memory. Values are only
``?`` parameters; table and column names are constants. Rows are read by column name.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from codesynapse.errors import StoreError, StoreUnavailable
from codesynapse.memory.exact import exact_terms, rank_exact
from codesynapse.scope import Scope
from codesynapse.store.memory import (
    AnchorRecord,
    AnchorSpec,
    EntityRecord,
    FactRecord,
    TodoItem,
    UpsertOutcome,
)
from codesynapse.store.rows import anchor_rows, new_entity_id, new_fact_id

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
_CHUNK = 500  # ids per IN (...) list, well under SQLite's variable limit

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memory_meta(
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS memory_entities(
  id TEXT PRIMARY KEY,
  tenant TEXT NOT NULL,
  namespace TEXT NOT NULL,
  session TEXT NOT NULL,
  name TEXT NOT NULL,
  type TEXT NOT NULL,
  version INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  valid_to TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS memory_entities_live_name
  ON memory_entities(tenant, namespace, session, name) WHERE valid_to IS NULL;
CREATE INDEX IF NOT EXISTS memory_entities_scope
  ON memory_entities(tenant, namespace, name, id);
CREATE TABLE IF NOT EXISTS memory_aliases(
  entity_id TEXT NOT NULL,
  tenant TEXT NOT NULL,
  namespace TEXT NOT NULL,
  session TEXT NOT NULL,
  alias TEXT NOT NULL,
  position INTEGER NOT NULL,
  PRIMARY KEY(entity_id, alias)
);
CREATE INDEX IF NOT EXISTS memory_aliases_lookup ON memory_aliases(tenant, namespace, alias);
CREATE INDEX IF NOT EXISTS memory_aliases_entity ON memory_aliases(entity_id, position);
CREATE TABLE IF NOT EXISTS memory_facts(
  id TEXT PRIMARY KEY,
  tenant TEXT NOT NULL,
  namespace TEXT NOT NULL,
  session TEXT NOT NULL,
  subject_id TEXT NOT NULL,
  predicate TEXT NOT NULL,
  object_id TEXT NOT NULL,
  confidence REAL NOT NULL,
  source_client TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  valid_to TEXT
);
CREATE INDEX IF NOT EXISTS memory_facts_subject ON memory_facts(tenant, namespace, subject_id);
CREATE INDEX IF NOT EXISTS memory_facts_object ON memory_facts(tenant, namespace, object_id);
CREATE UNIQUE INDEX IF NOT EXISTS memory_facts_live
  ON memory_facts(tenant, namespace, session, subject_id, predicate, object_id)
  WHERE valid_to IS NULL;
CREATE TABLE IF NOT EXISTS memory_changes(
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  tenant TEXT NOT NULL,
  namespace TEXT NOT NULL,
  session TEXT NOT NULL,
  entity_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS memory_changes_scope ON memory_changes(tenant, namespace, session, seq);
CREATE TABLE IF NOT EXISTS memory_embed_todo(
  model_key TEXT NOT NULL,
  entity_id TEXT NOT NULL,
  tenant TEXT NOT NULL,
  namespace TEXT NOT NULL,
  session TEXT NOT NULL,
  version INTEGER NOT NULL,
  enqueued_at INTEGER NOT NULL,
  PRIMARY KEY(model_key, entity_id)
);
CREATE INDEX IF NOT EXISTS memory_embed_todo_scope
  ON memory_embed_todo(model_key, tenant, namespace, enqueued_at);
CREATE TABLE IF NOT EXISTS memory_embedded(
  model_key TEXT NOT NULL,
  entity_id TEXT NOT NULL,
  tenant TEXT NOT NULL,
  namespace TEXT NOT NULL,
  session TEXT NOT NULL,
  version INTEGER NOT NULL,
  PRIMARY KEY(model_key, entity_id)
);
CREATE TABLE IF NOT EXISTS memory_anchors(
  id TEXT PRIMARY KEY,
  entity_id TEXT NOT NULL,
  tenant TEXT NOT NULL,
  namespace TEXT NOT NULL,
  session TEXT NOT NULL,
  qname TEXT NOT NULL,
  name TEXT NOT NULL,
  path TEXT NOT NULL,
  hash TEXT NOT NULL,
  kind TEXT NOT NULL,
  line INTEGER NOT NULL,
  status TEXT NOT NULL,
  status_at TEXT NOT NULL,
  previous TEXT NOT NULL,
  created_at TEXT NOT NULL,
  position INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS memory_anchors_entity ON memory_anchors(entity_id, position);
CREATE INDEX IF NOT EXISTS memory_anchors_qname ON memory_anchors(tenant, namespace, qname);
CREATE INDEX IF NOT EXISTS memory_anchors_path ON memory_anchors(tenant, namespace, path);
CREATE INDEX IF NOT EXISTS memory_anchors_name ON memory_anchors(tenant, namespace, name);
CREATE TABLE IF NOT EXISTS memory_sessions(
  tenant TEXT NOT NULL,
  namespace TEXT NOT NULL,
  session TEXT NOT NULL,
  owner TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY(tenant, namespace, session)
);
"""

# Visibility of a row aliased ``x`` to the scope: tenant, namespace, durable-or-own-session
# (or the parent's, for a sub-session). Always two session parameters: bind with ``_vp``.
_VIS = "{x}.tenant = ? AND {x}.namespace = ? AND {x}.session IN ('', ?, ?)"


def _vis(alias: str) -> str:
    return _VIS.format(x=alias)


def _vis_by_id(alias: str) -> str:
    """The same scope binding for queries that look rows up by id: the unary ``+`` keeps
    SQLite from preferring a scope index (a namespace scan) over the primary key."""
    return "+{x}.tenant = ? AND +{x}.namespace = ? AND +{x}.session IN ('', ?, ?)".format(x=alias)


def _vp(scope: Scope) -> tuple[str, str, str, str]:
    """tenant, namespace and the two sessions of ``session IN ('', ?, ?)``."""
    return (scope.tenant, scope.namespace, *_sessions(scope))


def _sessions(scope: Scope, durable_only: bool = False) -> tuple[str, str]:
    if durable_only:
        return ("", "")
    return (scope.session, scope.parent_session or scope.session)


def _qmarks(n: int) -> str:
    return ",".join("?" * n)


_ANCHOR_COLS = ("id, entity_id, session, qname, name, path, hash, kind, line, status, status_at, "
                "previous, created_at")


def _anchor(r: sqlite3.Row) -> AnchorRecord:
    return AnchorRecord(id=r["id"], entity_id=r["entity_id"], session=r["session"], qname=r["qname"],
                        name=r["name"], path=r["path"], hash=r["hash"], kind=r["kind"], line=r["line"],
                        status=r["status"], status_at=r["status_at"], previous=r["previous"],
                        created_at=r["created_at"])


class SqliteMemoryStore:
    """MemoryStore on one SQLite file. Thread-safe (one connection behind a lock); several
    processes may open the same file (WAL, busy timeout, ``BEGIN IMMEDIATE`` writes)."""

    def __init__(self, path: Path | str, *, busy_timeout_ms: int = 5000):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        try:
            self._conn = sqlite3.connect(
                str(self.path), isolation_level=None, check_same_thread=False,
                timeout=busy_timeout_ms / 1000,
            )
            self._conn.row_factory = sqlite3.Row
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            with self._write() as c:
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        c.execute(stmt)
                c.execute(
                    "INSERT OR IGNORE INTO memory_meta(key, value) VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )
        except sqlite3.Error as e:
            raise _translate(e) from e

    # ---- plumbing ---------------------------------------------------------------------

    @contextlib.contextmanager
    def _write(self) -> Iterator[_Cursor]:
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as e:
                raise _translate(e) from e
            try:
                yield _Cursor(self._conn)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                try:
                    self._conn.execute("COMMIT")
                except sqlite3.Error as e:
                    self._conn.execute("ROLLBACK")
                    raise _translate(e) from e

    def _read(self, sql: str, params: Sequence[object]) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return self._conn.execute(sql, tuple(params)).fetchall()
            except sqlite3.Error as e:
                raise _translate(e) from e

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # ---- entities ---------------------------------------------------------------------

    def _aliases_for(self, ids: Sequence[str], scope: Scope) -> dict[str, tuple[str, ...]]:
        out: dict[str, list[str]] = {i: [] for i in ids}
        for start in range(0, len(ids), _CHUNK):
            part = list(ids[start:start + _CHUNK])
            rows = self._read(
                f"SELECT a.entity_id AS entity_id, a.alias AS alias FROM memory_aliases a "
                f"INDEXED BY memory_aliases_entity WHERE {_vis('a')} "
                f"AND a.entity_id IN ({_qmarks(len(part))}) "
                f"ORDER BY a.entity_id, a.position",
                (*_vp(scope), *part),
            )
            for r in rows:
                out[r["entity_id"]].append(r["alias"])
        return {k: tuple(v) for k, v in out.items()}

    def _records(self, rows: Sequence[sqlite3.Row], scope: Scope) -> list[EntityRecord]:
        aliases = self._aliases_for([r["id"] for r in rows], scope)
        return [
            EntityRecord(
                id=r["id"], tenant=r["tenant"], namespace=r["namespace"], session=r["session"],
                name=r["name"], aliases=aliases.get(r["id"], ()), type=r["type"],
                version=r["version"], created_at=r["created_at"], updated_at=r["updated_at"],
            )
            for r in rows
        ]

    def upsert_entity(
        self, scope: Scope, *, name: str, aliases: Sequence[str], type: str, durable: bool,
        now: str,
    ) -> UpsertOutcome:
        session = "" if durable else scope.session
        clean: list[str] = []
        for a in aliases:
            if a != name and a not in clean:
                clean.append(a)
        with self._write() as c:
            row = c.one(
                "SELECT id, version, type FROM memory_entities WHERE tenant = ? AND "
                "namespace = ? AND session = ? AND name = ? AND valid_to IS NULL",
                (scope.tenant, scope.namespace, session, name),
            )
            if row is None:
                eid = new_entity_id()
                c.execute(
                    "INSERT INTO memory_entities(id, tenant, namespace, session, name, type, "
                    "version, created_at, updated_at, valid_to) VALUES (?,?,?,?,?,?,1,?,?,NULL)",
                    (eid, scope.tenant, scope.namespace, session, name, type, now, now),
                )
                status = "created"
            else:
                eid = row["id"]
                old = [
                    r["alias"]
                    for r in c.all(
                        "SELECT alias FROM memory_aliases WHERE entity_id = ? AND tenant = ? "
                        "AND namespace = ? AND session = ? ORDER BY position",
                        (eid, scope.tenant, scope.namespace, session),
                    )
                ]
                if old == clean and row["type"] == type:
                    status = "unchanged"
                else:
                    c.execute(
                        "UPDATE memory_entities SET type = ?, version = version + 1, "
                        "updated_at = ? WHERE id = ? AND tenant = ? AND namespace = ? "
                        "AND session = ?",
                        (type, now, eid, scope.tenant, scope.namespace, session),
                    )
                    c.execute(
                        "DELETE FROM memory_aliases WHERE entity_id = ? AND tenant = ? AND "
                        "namespace = ? AND session = ?",
                        (eid, scope.tenant, scope.namespace, session),
                    )
                    status = "updated"
            if status != "unchanged":
                c.executemany(
                    "INSERT INTO memory_aliases(entity_id, tenant, namespace, session, alias, "
                    "position) VALUES (?,?,?,?,?,?)",
                    [(eid, scope.tenant, scope.namespace, session, a, i)
                     for i, a in enumerate(clean)],
                )
                c.execute(
                    "INSERT INTO memory_changes(tenant, namespace, session, entity_id) "
                    "VALUES (?,?,?,?)",
                    (scope.tenant, scope.namespace, session, eid),
                )
        rec = self.get_entities(scope, [eid])[eid]
        return UpsertOutcome(entity=rec, status=status)

    def get_entities(self, scope: Scope, ids: Sequence[str]) -> dict[str, EntityRecord]:
        ids = list(dict.fromkeys(ids))
        out: dict[str, EntityRecord] = {}
        for start in range(0, len(ids), _CHUNK):
            part = ids[start:start + _CHUNK]
            rows = self._read(
                f"SELECT * FROM memory_entities e WHERE {_vis_by_id('e')} AND e.valid_to IS NULL "
                f"AND e.id IN ({_qmarks(len(part))})",
                (*_vp(scope), *part),
            )
            out.update({r.id: r for r in self._records(rows, scope)})
        return out

    def find_exact(
        self, scope: Scope, terms: Sequence[str], *, durable_only: bool = False,
        limit: int = 10,
    ) -> list[EntityRecord]:
        terms = exact_terms(terms)
        if not terms:
            return []
        sessions = _sessions(scope, durable_only)
        q = _qmarks(len(terms))
        vp = (scope.tenant, scope.namespace, *sessions)
        # three indexed branches (by id, by name, by alias); an OR would scan the namespace
        rows = self._read(
            f"SELECT e.* FROM memory_entities e WHERE e.id IN ({q}) AND {_vis_by_id('e')} "
            f"AND e.valid_to IS NULL "
            f"UNION "
            f"SELECT e.* FROM memory_entities e INDEXED BY memory_entities_scope "
            f"WHERE e.tenant = ? AND e.namespace = ? AND e.name IN ({q}) "
            f"AND e.session IN ('', ?, ?) AND e.valid_to IS NULL "
            f"UNION "
            f"SELECT e.* FROM memory_aliases a JOIN memory_entities e ON e.id = a.entity_id "
            f"WHERE {_vis('a')} AND a.alias IN ({q}) AND {_vis_by_id('e')} AND e.valid_to IS NULL",
            (*terms, *vp, scope.tenant, scope.namespace, *terms, *sessions, *vp, *terms, *vp),
        )
        recs = self._records(rows, scope)
        return rank_exact(recs, terms, limit)

    def iter_entities(self, scope: Scope) -> Iterator[EntityRecord]:
        after = ""
        while True:
            rows = self._read(
                f"SELECT * FROM memory_entities e WHERE {_vis('e')} AND e.valid_to IS NULL "
                f"AND e.id > ? ORDER BY e.id LIMIT 1000",
                (*_vp(scope), after),
            )
            if not rows:
                return
            yield from self._records(rows, scope)
            after = rows[-1]["id"]

    def list_entities(
        self, scope: Scope, *, durable: bool | None, after: tuple[str, str] | None,
        limit: int,
    ) -> list[tuple[EntityRecord, int]]:
        where = [_vis("e"), "e.valid_to IS NULL"]
        params: list[object] = list(_vp(scope))
        if durable is True:
            where.append("e.session = ''")
        elif durable is False:
            where.append("e.session = ?")
            params.append(scope.session)
        if after is not None:
            where.append("(e.name, e.id) > (?, ?)")
            params += [after[0], after[1]]
        rows = self._read(
            f"SELECT * FROM memory_entities e WHERE {' AND '.join(where)} "
            f"ORDER BY e.name, e.id LIMIT ?",
            (*params, limit),
        )
        recs = self._records(rows, scope)
        counts = self._fact_counts(scope, [r.id for r in recs])
        return [(r, counts.get(r.id, 0)) for r in recs]

    def _fact_counts(self, scope: Scope, ids: Sequence[str]) -> dict[str, int]:
        if not ids:
            return {}
        counts = dict.fromkeys(ids, 0)
        for f in self.facts_touching(scope, ids, limit=1_000_000):
            for eid in (f.subject_id, f.object_id):
                if eid in counts:
                    counts[eid] += 1
        return counts

    def forget_entities(self, scope: Scope, ids: Sequence[str], now: str) -> tuple[int, int]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return (0, 0)
        q = _qmarks(len(ids))
        with self._write() as c:
            live = c.all(
                f"SELECT id, session FROM memory_entities e WHERE {_vis_by_id('e')} "
                f"AND e.valid_to IS NULL AND e.id IN ({q})",
                (*_vp(scope), *ids),
            )
            live_ids = [r["id"] for r in live]
            if not live_ids:
                return (0, 0)
            lq = _qmarks(len(live_ids))
            nf = c.execute(
                f"UPDATE memory_facts SET valid_to = ?, updated_at = ? WHERE tenant = ? AND "
                f"namespace = ? AND session IN ('', ?, ?) AND valid_to IS NULL AND "
                f"(subject_id IN ({lq}) OR object_id IN ({lq}))",
                (now, now, *_vp(scope), *live_ids, *live_ids),
            ).rowcount
            ne = c.execute(
                f"UPDATE memory_entities SET valid_to = ?, updated_at = ? WHERE tenant = ? AND "
                f"namespace = ? AND session IN ('', ?, ?) AND valid_to IS NULL AND id IN ({lq})",
                (now, now, *_vp(scope), *live_ids),
            ).rowcount
            c.executemany(
                "INSERT INTO memory_changes(tenant, namespace, session, entity_id) "
                "VALUES (?,?,?,?)",
                [(scope.tenant, scope.namespace, r["session"], r["id"]) for r in live],
            )
            c.execute(
                f"DELETE FROM memory_embed_todo WHERE tenant = ? AND namespace = ? AND "
                f"session IN ('', ?, ?) AND entity_id IN ({lq})",
                (*_vp(scope), *live_ids),
            )
        return (ne, nf)

    # ---- facts ------------------------------------------------------------------------

    _FACT_SELECT = (
        "SELECT f.*, s.name AS subject_name, o.name AS object_name FROM memory_facts f "
        "JOIN memory_entities s ON s.id = f.subject_id "
        "JOIN memory_entities o ON o.id = f.object_id "
    )

    @staticmethod
    def _fact(r: sqlite3.Row) -> FactRecord:
        return FactRecord(
            id=r["id"], tenant=r["tenant"], namespace=r["namespace"], session=r["session"],
            subject_id=r["subject_id"], subject_name=r["subject_name"],
            predicate=r["predicate"], object_id=r["object_id"], object_name=r["object_name"],
            confidence=r["confidence"], source_client=r["source_client"],
            created_at=r["created_at"], updated_at=r["updated_at"],
        )

    def _fact_where(self) -> str:
        return (
            f"WHERE {_vis('f')} AND f.valid_to IS NULL AND {_vis('s')} AND s.valid_to IS NULL "
            f"AND {_vis('o')} AND o.valid_to IS NULL "
        )

    def upsert_fact(
        self, scope: Scope, *, subject_id: str, predicate: str, object_id: str,
        confidence: float, source_client: str, durable: bool, now: str,
    ) -> tuple[FactRecord, bool]:
        session = "" if durable else scope.session
        with self._write() as c:
            ends = c.all(
                "SELECT id, session FROM memory_entities e WHERE "
                f"{_vis_by_id('e')} AND e.valid_to IS NULL AND e.id IN (?, ?)",
                (*_vp(scope), subject_id, object_id),
            )
            found = {r["id"]: r["session"] for r in ends}
            for eid in (subject_id, object_id):
                if eid not in found:
                    raise StoreError(f"fact endpoint {eid} is not a live entity in this scope")
                if durable and found[eid] != "":
                    raise StoreError("a durable fact cannot reference a session entity")
            row = c.one(
                "SELECT id FROM memory_facts WHERE tenant = ? AND namespace = ? AND session = ? "
                "AND subject_id = ? AND predicate = ? AND object_id = ? AND valid_to IS NULL",
                (scope.tenant, scope.namespace, session, subject_id, predicate, object_id),
            )
            if row is None:
                fid = new_fact_id()
                c.execute(
                    "INSERT INTO memory_facts(id, tenant, namespace, session, subject_id, "
                    "predicate, object_id, confidence, source_client, created_at, updated_at, "
                    "valid_to) VALUES (?,?,?,?,?,?,?,?,?,?,?,NULL)",
                    (fid, scope.tenant, scope.namespace, session, subject_id, predicate,
                     object_id, confidence, source_client, now, now),
                )
                created = True
            else:
                fid = row["id"]
                c.execute(
                    "UPDATE memory_facts SET confidence = ?, source_client = ?, updated_at = ? "
                    "WHERE id = ? AND tenant = ? AND namespace = ? AND session = ?",
                    (confidence, source_client, now, fid, scope.tenant, scope.namespace,
                     session),
                )
                created = False
        rows = self._read(
            self._FACT_SELECT + self._fact_where() + "AND f.id = ?",
            (*_vp(scope), *_vp(scope), *_vp(scope), fid),
        )
        return self._fact(rows[0]), created

    def facts_touching(
        self, scope: Scope, entity_ids: Sequence[str], *, limit: int,
    ) -> list[FactRecord]:
        ids = list(dict.fromkeys(entity_ids))
        if not ids or limit <= 0:
            return []
        q = _qmarks(len(ids))
        sql, params = self._touching_sql(scope, ids)
        rows = self._read(
            f"SELECT * FROM ({sql}) ORDER BY confidence DESC, updated_at DESC, id LIMIT ?",
            (*params, limit),
        )
        return [self._fact(r) for r in rows]

    def _touching_sql(self, scope: Scope, ids: Sequence[str]) -> tuple[str, tuple[object, ...]]:
        """Live visible facts touching ``ids``: one indexed branch per endpoint (an OR
        would scan the namespace's facts)."""
        q = _qmarks(len(ids))

        def branch(index: str, column: str) -> str:
            return ("SELECT f.*, s.name AS subject_name, o.name AS object_name "
                    f"FROM memory_facts f INDEXED BY {index} "
                    "JOIN memory_entities s ON s.id = f.subject_id "
                    "JOIN memory_entities o ON o.id = f.object_id "
                    + self._fact_where() + f"AND f.{column} IN ({q})")

        scope_params = (*_vp(scope), *_vp(scope), *_vp(scope))
        return (f"{branch('memory_facts_subject', 'subject_id')} UNION "
                f"{branch('memory_facts_object', 'object_id')}",
                (*scope_params, *ids, *scope_params, *ids))

    def count_facts_touching(self, scope: Scope, entity_ids: Sequence[str]) -> int:
        ids = list(dict.fromkeys(entity_ids))
        if not ids:
            return 0
        sql, params = self._touching_sql(scope, ids)
        return int(self._read(f"SELECT count(*) AS n FROM ({sql})", params)[0]["n"])

    def forget_facts(
        self, scope: Scope, *, subject_id: str, predicate: str, object_id: str, now: str,
    ) -> int:
        with self._write() as c:
            return c.execute(
                "UPDATE memory_facts SET valid_to = ?, updated_at = ? WHERE tenant = ? AND "
                "namespace = ? AND session IN ('', ?, ?) AND valid_to IS NULL AND subject_id = ? "
                "AND predicate = ? AND object_id = ?",
                (now, now, *_vp(scope), subject_id, predicate, object_id),
            ).rowcount

    def forget_fact_ids(self, scope: Scope, ids: Sequence[str], now: str) -> list[str]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return []
        with self._write() as c:
            q = _qmarks(len(ids))
            live = [r["id"] for r in c.all(
                f"SELECT id FROM memory_facts WHERE tenant = ? AND namespace = ? AND "
                f"session IN ('', ?, ?) AND valid_to IS NULL AND id IN ({q})",
                (*_vp(scope), *ids))]
            if live:
                c.execute(
                    f"UPDATE memory_facts SET valid_to = ?, updated_at = ? WHERE tenant = ? AND "
                    f"namespace = ? AND session IN ('', ?, ?) AND valid_to IS NULL AND "
                    f"id IN ({_qmarks(len(live))})",
                    (now, now, *_vp(scope), *live))
        return live

    # ---- change feed ------------------------------------------------------------------

    def change_cursor(self, scope: Scope) -> int:
        best = 0
        for session in scope.visible_sessions:
            rows = self._read(
                "SELECT max(seq) AS m FROM memory_changes WHERE tenant = ? AND namespace = ? "
                "AND session = ?",
                (scope.tenant, scope.namespace, session),
            )
            if rows and rows[0]["m"] is not None:
                best = max(best, int(rows[0]["m"]))
        return best

    def changes_since(self, scope: Scope, after: int, limit: int = 10_000) -> tuple[int, list[str]]:
        rows = self._read(
            "SELECT seq, entity_id FROM memory_changes c WHERE "
            f"{_vis('c')} AND c.seq > ? ORDER BY c.seq LIMIT ?",
            (*_vp(scope), after, limit),
        )
        if not rows:
            return after, []
        return int(rows[-1]["seq"]), list(dict.fromkeys(r["entity_id"] for r in rows))

    # ---- embedding queue --------------------------------------------------------------

    def enqueue_embedding(self, scope: Scope, model_key: str, items: Sequence[TodoItem]) -> None:
        if not items:
            return
        with self._write() as c:
            ids = [i.entity_id for i in items]
            sessions = {
                r["id"]: r["session"]
                for r in c.all(
                    f"SELECT id, session FROM memory_entities e WHERE {_vis_by_id('e')} "
                    f"AND e.id IN ({_qmarks(len(ids))})",
                    (*_vp(scope), *ids),
                )
            }
            seq = c.one("SELECT coalesce(max(enqueued_at), 0) AS m FROM memory_embed_todo")
            base = int(seq["m"]) if seq else 0
            c.executemany(
                "INSERT OR REPLACE INTO memory_embed_todo(model_key, entity_id, tenant, "
                "namespace, session, version, enqueued_at) VALUES (?,?,?,?,?,?,?)",
                [(model_key, it.entity_id, scope.tenant, scope.namespace,
                  sessions[it.entity_id], it.version, base + n + 1)
                 for n, it in enumerate(items) if it.entity_id in sessions],
            )

    def enqueue_missing(self, scope: Scope, model_key: str) -> int:
        with self._write() as c:
            seq = c.one("SELECT coalesce(max(enqueued_at), 0) AS m FROM memory_embed_todo")
            base = int(seq["m"]) if seq else 0
            return c.execute(
                "INSERT OR REPLACE INTO memory_embed_todo(model_key, entity_id, tenant, "
                "namespace, session, version, enqueued_at) "
                "SELECT ?, e.id, e.tenant, e.namespace, e.session, e.version, ? + e.rowid "
                "FROM memory_entities e LEFT JOIN memory_embedded m "
                "  ON m.model_key = ? AND m.entity_id = e.id AND m.tenant = ? "
                "  AND m.namespace = ? "
                "LEFT JOIN memory_embed_todo t "
                "  ON t.model_key = ? AND t.entity_id = e.id AND t.version = e.version "
                f"WHERE {_vis('e')} AND e.valid_to IS NULL "
                "AND (m.version IS NULL OR m.version <> e.version) AND t.entity_id IS NULL",
                (model_key, base, model_key, scope.tenant, scope.namespace, model_key,
                 *_vp(scope)),
            ).rowcount

    def take_embedding_todo(self, scope: Scope, model_key: str, limit: int) -> list[TodoItem]:
        rows = self._read(
            "SELECT t.entity_id AS entity_id, t.version AS version FROM memory_embed_todo t "
            "JOIN memory_entities e ON e.id = t.entity_id "
            f"WHERE t.model_key = ? AND {_vis('t')} AND {_vis('e')} AND e.valid_to IS NULL "
            "AND e.version = t.version ORDER BY t.enqueued_at LIMIT ?",
            (model_key, *_vp(scope), *_vp(scope), limit),
        )
        return [TodoItem(entity_id=r["entity_id"], version=r["version"]) for r in rows]

    def pending_embeddings(self, scope: Scope, model_key: str) -> int:
        rows = self._read(
            "SELECT count(*) AS n FROM memory_embed_todo t JOIN memory_entities e "
            "ON e.id = t.entity_id "
            f"WHERE t.model_key = ? AND {_vis('t')} AND {_vis('e')} AND e.valid_to IS NULL",
            (model_key, *_vp(scope), *_vp(scope)),
        )
        return int(rows[0]["n"])

    def mark_embedded(self, scope: Scope, model_key: str, items: Sequence[TodoItem]) -> None:
        if not items:
            return
        with self._write() as c:
            ids = [i.entity_id for i in items]
            sessions = {
                r["id"]: r["session"]
                for r in c.all(
                    f"SELECT id, session FROM memory_entities e WHERE {_vis_by_id('e')} "
                    f"AND e.id IN ({_qmarks(len(ids))})",
                    (*_vp(scope), *ids),
                )
            }
            for it in items:
                if it.entity_id not in sessions:
                    continue
                c.execute(
                    "INSERT OR REPLACE INTO memory_embedded(model_key, entity_id, tenant, "
                    "namespace, session, version) VALUES (?,?,?,?,?,?)",
                    (model_key, it.entity_id, scope.tenant, scope.namespace,
                     sessions[it.entity_id], it.version),
                )
                c.execute(
                    "DELETE FROM memory_embed_todo WHERE model_key = ? AND entity_id = ? AND "
                    "tenant = ? AND namespace = ? AND session IN ('', ?, ?) AND version <= ?",
                    (model_key, it.entity_id, *_vp(scope), it.version),
                )

    def embedded_version(self, scope: Scope, model_key: str, entity_id: str) -> int | None:
        rows = self._read(
            f"SELECT version FROM memory_embedded m WHERE m.model_key = ? AND {_vis('m')} "
            "AND m.entity_id = ?",
            (model_key, *_vp(scope), entity_id),
        )
        return int(rows[0]["version"]) if rows else None

    # ---- session owners and session end -----------------------------------------------

    def claim_session(self, scope: Scope, owner: str, now: str) -> None:
        if not scope.session:
            raise StoreError("claim_session needs a session scope")
        with self._write() as c:
            c.execute(
                "INSERT INTO memory_sessions(tenant, namespace, session, owner, created_at) "
                "VALUES (?,?,?,?,?) ON CONFLICT(tenant, namespace, session) DO UPDATE SET "
                "owner = excluded.owner",
                (scope.tenant, scope.namespace, scope.session, owner, now),
            )

    def session_owners(self, scope: Scope) -> dict[str, str]:
        t, n = scope.tenant, scope.namespace
        rows = self._read(
            "SELECT k.session AS session, coalesce(o.owner, '') AS owner FROM ("
            "  SELECT DISTINCT session FROM memory_entities WHERE tenant = ? AND namespace = ? "
            "  AND session != '' "
            "  UNION SELECT DISTINCT session FROM memory_facts WHERE tenant = ? AND namespace = ? "
            "  AND session != '' "
            "  UNION SELECT session FROM memory_sessions WHERE tenant = ? AND namespace = ?"
            ") k LEFT JOIN memory_sessions o ON o.tenant = ? AND o.namespace = ? "
            "AND o.session = k.session ORDER BY k.session",
            (t, n, t, n, t, n, t, n),
        )
        return {r["session"]: r["owner"] for r in rows}

    # ---- anchors ----------------------------------------------------------------------

    def set_anchors(self, scope: Scope, entity_id: str, anchors: Sequence[AnchorSpec],
                    now: str) -> None:
        self._set_owner_anchors(scope, "memory_entities", "entity", entity_id, anchors, now)

    def _set_owner_anchors(self, scope: Scope, table: str, what: str, owner_id: str,
                           anchors: Sequence[AnchorSpec], now: str) -> None:
        """Replace the anchors of a live visible entity or fact (``table``) with ``anchors``,
        in the owner's own session."""
        with self._write() as c:
            row = c.one(
                f"SELECT id, session FROM {table} o WHERE {_vis_by_id('o')} "
                f"AND o.valid_to IS NULL AND o.id = ?", (*_vp(scope), owner_id))
            if row is None:
                raise StoreError(f"no live {what} {owner_id} in this scope")
            session = row["session"]
            c.execute("DELETE FROM memory_anchors WHERE entity_id = ? AND tenant = ? AND namespace = ? "
                      "AND session = ?", (owner_id, scope.tenant, scope.namespace, session))
            c.executemany(
                f"INSERT INTO memory_anchors({_ANCHOR_COLS}, tenant, namespace, position) "
                f"VALUES (?,?,?,?,?,?,?,?,?,'','','',?,?,?,?)",
                [(r["id"], owner_id, session, r["qname"], r["name"], r["path"], r["hash"], r["kind"], r["line"],
                  now, scope.tenant, scope.namespace, r["position"]) for r in anchor_rows(anchors)])

    # an anchor is read only while its entity is live and visible (same tenant/namespace)
    _LIVE_OWNER = ("EXISTS (SELECT 1 FROM memory_entities e WHERE e.id = a.entity_id AND e.tenant = a.tenant "
                   "AND e.namespace = a.namespace AND e.session = a.session AND e.valid_to IS NULL)")
    # ... or, for a fact's anchor (its owner id is the fact's), while the fact is live
    _LIVE_FACT = ("EXISTS (SELECT 1 FROM memory_facts f WHERE f.id = a.entity_id AND f.tenant = a.tenant "
                  "AND f.namespace = a.namespace AND f.session = a.session AND f.valid_to IS NULL)")
    supports_fact_anchors = True

    def set_fact_anchors(self, scope: Scope, fact_id: str, anchors: Sequence[AnchorSpec],
                         now: str) -> None:
        self._set_owner_anchors(scope, "memory_facts", "fact", fact_id, anchors, now)

    def fact_anchors_of(self, scope: Scope, fact_ids: Sequence[str]) -> dict[str, list[AnchorRecord]]:
        ids = list(dict.fromkeys(fact_ids))
        out: dict[str, list[AnchorRecord]] = {}
        for start in range(0, len(ids), _CHUNK):
            part = ids[start:start + _CHUNK]
            rows = self._read(
                f"SELECT {_ANCHOR_COLS} FROM memory_anchors a INDEXED BY memory_anchors_entity "
                f"WHERE a.entity_id IN ({_qmarks(len(part))}) AND {_vis_by_id('a')} AND {self._LIVE_FACT} "
                f"ORDER BY a.entity_id, a.position", (*part, *_vp(scope)))
            for r in rows:
                out.setdefault(r["entity_id"], []).append(_anchor(r))
        return out

    def facts_anchored_to(self, scope: Scope, qnames: Sequence[str], limit: int = 100
                          ) -> list[tuple[AnchorRecord, FactRecord]]:
        names = list(dict.fromkeys(qnames))[:_CHUNK]
        if not names:
            return []
        rows = self._read(
            f"SELECT a.entity_id FROM memory_anchors a "
            f"JOIN memory_facts f ON f.id = a.entity_id AND f.tenant = a.tenant "
            f"AND f.namespace = a.namespace AND f.session = a.session AND f.valid_to IS NULL "
            f"WHERE {_vis('a')} AND a.qname IN ({_qmarks(len(names))}) "
            f"ORDER BY f.updated_at DESC, a.entity_id, a.position LIMIT ?",
            (*_vp(scope), *names, int(limit)))
        ids = list(dict.fromkeys(r["entity_id"] for r in rows))
        facts: dict[str, FactRecord] = {}
        for start in range(0, len(ids), _CHUNK):  # endpoints live and visible too
            part = ids[start:start + _CHUNK]
            facts.update((r["id"], self._fact(r)) for r in self._read(
                self._FACT_SELECT + self._fact_where() + f"AND f.id IN ({_qmarks(len(part))})",
                (*_vp(scope), *_vp(scope), *_vp(scope), *part)))
        anchors = self.fact_anchors_of(scope, list(facts))
        wanted = set(names)
        return [(a, facts[i]) for i in ids if i in facts for a in anchors.get(i, ()) if a.qname in wanted]

    def anchors_of(self, scope: Scope, entity_ids: Sequence[str]) -> dict[str, list[AnchorRecord]]:
        ids = list(dict.fromkeys(entity_ids))
        out: dict[str, list[AnchorRecord]] = {}
        for start in range(0, len(ids), _CHUNK):
            part = ids[start:start + _CHUNK]
            rows = self._read(
                f"SELECT {_ANCHOR_COLS} FROM memory_anchors a INDEXED BY memory_anchors_entity "
                f"WHERE a.entity_id IN ({_qmarks(len(part))}) AND {_vis_by_id('a')} AND {self._LIVE_OWNER} "
                f"ORDER BY a.entity_id, a.position", (*part, *_vp(scope)))
            for r in rows:
                out.setdefault(r["entity_id"], []).append(_anchor(r))
        return out

    def anchored_to(self, scope: Scope, qnames: Sequence[str], limit: int = 100) -> list[AnchorRecord]:
        names = list(dict.fromkeys(qnames))[:_CHUNK]
        if not names:
            return []
        rows = self._read(
            f"SELECT {', '.join('a.' + c.strip() for c in _ANCHOR_COLS.split(','))} FROM memory_anchors a "
            f"JOIN memory_entities e ON e.id = a.entity_id AND e.tenant = a.tenant "
            f"AND e.namespace = a.namespace AND e.session = a.session AND e.valid_to IS NULL "
            f"WHERE {_vis('a')} "
            f"AND a.qname IN ({_qmarks(len(names))}) ORDER BY e.updated_at DESC, a.entity_id, a.position LIMIT ?",
            (*_vp(scope), *names, int(limit)))
        return [_anchor(r) for r in rows]

    def anchors_to_check(self, scope: Scope, paths: Sequence[str], names: Sequence[str]
                         ) -> list[AnchorRecord]:
        out: dict[str, AnchorRecord] = {}
        key = (scope.tenant, scope.namespace)
        paths, names = list(dict.fromkeys(paths)), list(dict.fromkeys(names))
        for start in range(0, len(paths), _CHUNK):
            part = paths[start:start + _CHUNK]
            rows = self._read(
                f"SELECT {_ANCHOR_COLS} FROM memory_anchors a WHERE a.tenant = ? AND a.namespace = ? "
                f"AND a.path IN ({_qmarks(len(part))}) AND ({self._LIVE_OWNER} OR {self._LIVE_FACT})",
                (*key, *part))
            out.update((r["id"], _anchor(r)) for r in rows)
        if names:  # removed anchors are few: filtered here, not with a list of every name
            wanted = set(names)
            rows = self._read(
                f"SELECT {_ANCHOR_COLS} FROM memory_anchors a WHERE a.tenant = ? AND a.namespace = ? "
                f"AND a.status = 'removed' AND ({self._LIVE_OWNER} OR {self._LIVE_FACT})", key)
            out.update((r["id"], _anchor(r)) for r in rows if r["name"] in wanted)
        return [out[k] for k in sorted(out)]

    def update_anchors(self, scope: Scope, anchors: Sequence[AnchorRecord]) -> None:
        with self._write() as c:
            c.executemany(
                "UPDATE memory_anchors SET qname = ?, name = ?, path = ?, hash = ?, kind = ?, line = ?, status = ?, "
                "status_at = ?, previous = ? WHERE id = ? AND tenant = ? AND namespace = ?",
                [(a.qname, a.name, a.path, a.hash, a.kind, a.line, a.status, a.status_at, a.previous, a.id,
                  scope.tenant, scope.namespace) for a in anchors])

    def purge_session(self, scope: Scope) -> list[str]:
        if not scope.session:
            raise StoreError("purge_session needs a session scope")
        key = (scope.tenant, scope.namespace, scope.session)
        where = "tenant = ? AND namespace = ? AND session = ?"
        with self._write() as c:
            ids = [r["id"] for r in c.all(f"SELECT id FROM memory_entities WHERE {where}", key)]
            for table in ("memory_aliases", "memory_facts", "memory_embed_todo", "memory_anchors",
                          "memory_embedded", "memory_entities", "memory_sessions"):
                c.execute(f"DELETE FROM {table} WHERE {where}", key)
            c.executemany(
                "INSERT INTO memory_changes(tenant, namespace, session, entity_id) "
                "VALUES (?,?,?,?)",
                [(*key, i) for i in ids],
            )
        return ids


class _Cursor:
    """A thin helper over the connection inside a write transaction."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def execute(self, sql: str, params: Sequence[object] = ()) -> sqlite3.Cursor:
        try:
            return self._conn.execute(sql, tuple(params))
        except sqlite3.Error as e:
            raise _translate(e) from e

    def executemany(self, sql: str, rows: Sequence[Sequence[object]]) -> None:
        if not rows:
            return
        try:
            self._conn.executemany(sql, [tuple(r) for r in rows])
        except sqlite3.Error as e:
            raise _translate(e) from e

    def one(self, sql: str, params: Sequence[object] = ()) -> sqlite3.Row | None:
        return self.execute(sql, params).fetchone()

    def all(self, sql: str, params: Sequence[object] = ()) -> list[sqlite3.Row]:
        return self.execute(sql, params).fetchall()


def _translate(e: sqlite3.Error) -> StoreError:
    msg = str(e)
    if isinstance(e, sqlite3.OperationalError) and ("locked" in msg or "busy" in msg):
        return StoreUnavailable(f"memory store busy: {msg}")
    return StoreError(f"memory store: {msg}")
