"""MemoryStore on Neo4j 5.26: the memory graph as a real graph.

Model (labels and relationship types are constants; every value is a ``$parameter``):

- ``(:CsMemEntity {id, tenant, namespace, session, name, aliases, type, version,
  created_at, updated_at, valid_to, live_name})``. ``aliases`` is the ordered alias list
  (read back with the entity, so it is bound by the entity's scope); ``live_name`` equals
  ``name`` while the entity is live and is removed by a tombstone, so the composite
  uniqueness constraint on ``(tenant, namespace, session, live_name)`` plays the role of
  SQLite's partial unique index "one live entity per name and visibility";
- ``(:CsMemEntity)-[:ALIAS]->(:CsMemAlias {entity_id, tenant, namespace, session, alias})``:
  alias nodes exist for indexed exact lookup (``find_exact``);
- ``(:CsMemEntity)-[:FACT {id, tenant, namespace, session, predicate, confidence,
  source_client, created_at, updated_at, valid_to, live_key}]->(:CsMemEntity)``: a fact is
  a relationship between its two endpoints (``live_key`` makes "one live identical fact"
  a relationship uniqueness constraint);
- ``(:CsMemScope {tenant, namespace, seq, todo_seq})``: one per namespace. Every write
  transaction first takes its write lock (like SQLite's ``BEGIN IMMEDIATE``, but per
  namespace) and draws change-feed and queue sequence numbers from it, so sequence order
  is commit order within a namespace;
- ``(:CsMemChange {tenant, namespace, session, entity_id, seq})``, ``(:CsMemTodo …)`` and
  ``(:CsMemEmbedded …)``: the change feed and the embedding queue, as in SQLite.

Every query binds the scope: ``{tenant: $t, namespace: $n}`` on every node and fact it
touches — roots, facts and both endpoints — and visibility ``session IN $vis`` (``$vis``
is ``['', scope.session]`` — plus the parent's session for a sub-session, ``Scope.visible_sessions`` —, or ``['']`` for durable-only reads). Driver errors become
``StoreError`` / ``StoreUnavailable`` (``from e``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from codesynapse.errors import StoreError
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
from codesynapse.store.neo4j.driver import check_uri, ensure_schema, translate_error
from codesynapse.store.rows import anchor_rows, by_owner, new_entity_id, new_fact_id

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
PAGE = 1000

_SCHEMA = (
    "CREATE CONSTRAINT cs_mem_entity_id IF NOT EXISTS FOR (n:CsMemEntity) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT cs_mem_entity_live IF NOT EXISTS FOR (n:CsMemEntity) "
    "REQUIRE (n.tenant, n.namespace, n.session, n.live_name) IS UNIQUE",
    "CREATE INDEX cs_mem_entity_name IF NOT EXISTS FOR (n:CsMemEntity) ON (n.tenant, n.namespace, n.name)",
    "CREATE CONSTRAINT cs_mem_alias_key IF NOT EXISTS FOR (n:CsMemAlias) REQUIRE (n.entity_id, n.alias) IS UNIQUE",
    "CREATE INDEX cs_mem_alias_lookup IF NOT EXISTS FOR (n:CsMemAlias) ON (n.tenant, n.namespace, n.alias)",
    "CREATE CONSTRAINT cs_mem_fact_id IF NOT EXISTS FOR ()-[f:FACT]-() REQUIRE f.id IS UNIQUE",
    "CREATE CONSTRAINT cs_mem_fact_live IF NOT EXISTS FOR ()-[f:FACT]-() "
    "REQUIRE (f.tenant, f.namespace, f.session, f.live_key) IS UNIQUE",
    "CREATE INDEX cs_mem_fact_scope IF NOT EXISTS FOR ()-[f:FACT]-() ON (f.tenant, f.namespace, f.session)",
    "CREATE CONSTRAINT cs_mem_scope_key IF NOT EXISTS FOR (n:CsMemScope) REQUIRE (n.tenant, n.namespace) IS UNIQUE",
    "CREATE INDEX cs_mem_change_scope IF NOT EXISTS FOR (n:CsMemChange) ON (n.tenant, n.namespace, n.seq)",
    "CREATE CONSTRAINT cs_mem_todo_key IF NOT EXISTS FOR (n:CsMemTodo) REQUIRE (n.model_key, n.entity_id) IS UNIQUE",
    "CREATE INDEX cs_mem_todo_scope IF NOT EXISTS FOR (n:CsMemTodo) ON (n.model_key, n.tenant, n.namespace)",
    "CREATE CONSTRAINT cs_mem_embedded_key IF NOT EXISTS FOR (n:CsMemEmbedded) "
    "REQUIRE (n.model_key, n.entity_id) IS UNIQUE",
    "CREATE CONSTRAINT cs_mem_meta_key IF NOT EXISTS FOR (n:CsMemMeta) REQUIRE n.key IS UNIQUE",
    "CREATE CONSTRAINT cs_mem_session_key IF NOT EXISTS FOR (n:CsMemSession) "
    "REQUIRE (n.tenant, n.namespace, n.session) IS UNIQUE",
    "CREATE CONSTRAINT cs_mem_anchor_id IF NOT EXISTS FOR (n:CsMemAnchor) REQUIRE n.id IS UNIQUE",
    "CREATE INDEX cs_mem_anchor_qname IF NOT EXISTS FOR (n:CsMemAnchor) ON (n.tenant, n.namespace, n.qname)",
    "CREATE INDEX cs_mem_anchor_path IF NOT EXISTS FOR (n:CsMemAnchor) ON (n.tenant, n.namespace, n.path)",
    "CREATE INDEX cs_mem_anchor_status IF NOT EXISTS FOR (n:CsMemAnchor) ON (n.tenant, n.namespace, n.status)",
    "CREATE INDEX cs_mem_anchor_owner IF NOT EXISTS FOR (n:CsMemAnchor) ON (n.tenant, n.namespace, n.entity_id)",
)

# The visible, live entity ``e`` of the scope.
_E_VIS = "e.session IN $vis AND e.valid_to IS NULL"
_ENTITY = "e {.id, .tenant, .namespace, .session, .name, .aliases, .type, .version, .created_at, .updated_at}"
_FACT = ("f {.id, .tenant, .namespace, .session, .predicate, .confidence, .source_client, .created_at, "
         ".updated_at, subject_id: s.id, subject_name: s.name, object_id: o.id, object_name: o.name}")
# A fact and both endpoints: all live, all visible, all in the scope.
_FACT_VIS = ("s.session IN $vis AND s.valid_to IS NULL AND f.session IN $vis AND f.valid_to IS NULL "
             "AND o.session IN $vis AND o.valid_to IS NULL")


def _p(scope: Scope, *, durable_only: bool = False, **extra: Any) -> dict[str, Any]:
    return {"t": scope.tenant, "n": scope.namespace,
            "vis": [""] if durable_only else list(scope.visible_sessions), **extra}


# (.position is projected too: ORDER BY a.position after RETURN reads this map, which shadows a)
_ANCHOR = ("a {.id, .entity_id, .session, .qname, .name, .path, .hash, .kind, .line, .status, .status_at, "
           ".previous, .created_at, .position}")


def _anchor(r: dict[str, Any]) -> AnchorRecord:
    return AnchorRecord(id=r["id"], entity_id=r["entity_id"], session=r["session"], qname=r["qname"],
                        name=r["name"], path=r["path"], hash=r["hash"], kind=r["kind"], line=int(r["line"]),
                        status=r.get("status") or "", status_at=r.get("status_at") or "",
                        previous=r.get("previous") or "", created_at=r.get("created_at") or "")


def _live_key(subject_id: str, predicate: str, object_id: str) -> str:
    return f"{subject_id}\x1f{predicate}\x1f{object_id}"


def _entity(r: dict[str, Any]) -> EntityRecord:
    return EntityRecord(id=r["id"], tenant=r["tenant"], namespace=r["namespace"], session=r["session"],
                        name=r["name"], aliases=tuple(r.get("aliases") or ()), type=r.get("type") or "",
                        version=int(r["version"]), created_at=r["created_at"], updated_at=r["updated_at"])


def _fact(r: dict[str, Any]) -> FactRecord:
    return FactRecord(id=r["id"], tenant=r["tenant"], namespace=r["namespace"], session=r["session"],
                      subject_id=r["subject_id"], subject_name=r["subject_name"], predicate=r["predicate"],
                      object_id=r["object_id"], object_name=r["object_name"], confidence=float(r["confidence"]),
                      source_client=r.get("source_client") or "", created_at=r["created_at"],
                      updated_at=r["updated_at"])


class Neo4jMemoryStore:
    """MemoryStore on a Neo4j database (thread-safe: pooled driver, one session per call)."""

    def __init__(self, uri: str, *, user: str = "neo4j", password: str = "", database: str | None = None,
                 connect_timeout: float = 5.0, timeout: float = 10.0):
        check_uri(uri)
        from neo4j import GraphDatabase
        from neo4j.exceptions import ConfigurationError, DriverError, Neo4jError

        self._errors = (Neo4jError, DriverError)
        self.uri = uri
        self.database = database
        self.timeout = timeout
        try:
            self._driver = GraphDatabase.driver(
                uri, auth=(user, password) if password else None, connection_timeout=connect_timeout,
                connection_acquisition_timeout=max(connect_timeout, 10.0), max_transaction_retry_time=15.0,
                notifications_min_severity="OFF")
        except (ValueError, ConfigurationError) as e:
            raise StoreError(f"invalid neo4j URI {uri!r}: {e}") from e
        self._bookmarks = GraphDatabase.bookmark_manager()
        try:
            self._driver.verify_connectivity()
            ensure_schema(self._driver, database, _SCHEMA)
            self._write("schema", lambda tx: tx.run(
                "MERGE (m:CsMemMeta {key: 'schema_version'}) ON CREATE SET m.value = $v", v=str(SCHEMA_VERSION)
            ).consume())
            version = self._one("schema", "MATCH (m:CsMemMeta {key: 'schema_version'}) RETURN m.value", {})
            if version is not None and int(version) != SCHEMA_VERSION:
                raise StoreError(f"memory schema version {version} != {SCHEMA_VERSION}")
        except self._errors as e:
            self._driver.close()
            raise translate_error(e, f"connect to {uri}") from e
        except BaseException:
            self._driver.close()
            raise

    # ---- plumbing ---------------------------------------------------------------------

    def _session(self):
        return self._driver.session(database=self.database, bookmark_manager=self._bookmarks)

    def _write(self, what: str, fn: Callable[..., Any]) -> Any:
        from neo4j import unit_of_work

        try:
            with self._session() as s:
                return s.execute_write(unit_of_work(timeout=self.timeout)(fn))
        except self._errors as e:
            raise translate_error(e, f"memory {what}") from e

    def _all(self, what: str, query: str, params: dict[str, Any]) -> list[Any]:
        from neo4j import Query

        try:
            with self._session() as s:
                return [rec.values()[0] for rec in s.run(Query(query, timeout=self.timeout), params)]
        except self._errors as e:
            raise translate_error(e, f"memory {what}") from e

    def _one(self, what: str, query: str, params: dict[str, Any]) -> Any:
        rows = self._all(what, query, params)
        return rows[0] if rows else None

    @staticmethod
    def _lock(tx, scope: Scope) -> None:
        """Take the namespace's write lock (flipping a property write-locks the node)."""
        tx.run("MERGE (l:CsMemScope {tenant: $t, namespace: $n}) ON CREATE SET l.seq = 0, l.todo_seq = 0 "
               "SET l.lock = NOT coalesce(l.lock, false)", t=scope.tenant, n=scope.namespace).consume()

    @staticmethod
    def _log_changes(tx, scope: Scope, rows: list[dict[str, str]]) -> None:
        """Append (session, entity_id) rows to the change feed, numbered in order."""
        if not rows:
            return
        tx.run("MATCH (l:CsMemScope {tenant: $t, namespace: $n}) "
               "WITH l, l.seq AS base SET l.seq = base + size($rows) "
               "WITH base UNWIND range(0, size($rows) - 1) AS i "
               "CREATE (:CsMemChange {tenant: $t, namespace: $n, session: $rows[i].session, "
               "entity_id: $rows[i].entity_id, seq: base + i + 1})",
               t=scope.tenant, n=scope.namespace, rows=rows).consume()

    def close(self) -> None:
        try:
            self._driver.close()
        except self._errors:
            log.debug("closing the neo4j driver failed", exc_info=True)

    # ---- entities ---------------------------------------------------------------------

    def upsert_entity(
        self, scope: Scope, *, name: str, aliases: Sequence[str], type: str, durable: bool,
        now: str,
    ) -> UpsertOutcome:
        session = "" if durable else scope.session
        clean: list[str] = []
        for a in aliases:
            if a != name and a not in clean:
                clean.append(a)
        p = {"t": scope.tenant, "n": scope.namespace, "s": session, "name": name, "type": type,
             "aliases": clean, "now": now}

        def work(tx) -> tuple[str, str]:
            self._lock(tx, scope)
            row = tx.run("MATCH (e:CsMemEntity {tenant: $t, namespace: $n, session: $s, name: $name}) "
                         "WHERE e.valid_to IS NULL RETURN e.id AS id, e.type AS type, e.aliases AS aliases",
                         p).single()
            if row is None:
                eid = new_entity_id()
                tx.run("CREATE (e:CsMemEntity {id: $id, tenant: $t, namespace: $n, session: $s, name: $name, "
                       "live_name: $name, aliases: $aliases, type: $type, version: 1, created_at: $now, "
                       "updated_at: $now})", p, id=eid).consume()
                status = "created"
            else:
                eid = row["id"]
                if list(row["aliases"] or []) == clean and row["type"] == type:
                    return eid, "unchanged"
                tx.run("MATCH (e:CsMemEntity {id: $id, tenant: $t, namespace: $n, session: $s}) "
                       "SET e.type = $type, e.aliases = $aliases, e.version = e.version + 1, e.updated_at = $now "
                       "WITH e OPTIONAL MATCH (e)-[:ALIAS]->(a:CsMemAlias {tenant: $t, namespace: $n, session: $s}) "
                       "DETACH DELETE a", p, id=eid).consume()
                status = "updated"
            tx.run("MATCH (e:CsMemEntity {id: $id, tenant: $t, namespace: $n, session: $s}) "
                   "UNWIND $aliases AS alias "
                   "CREATE (e)-[:ALIAS]->(:CsMemAlias {entity_id: $id, tenant: $t, namespace: $n, session: $s, "
                   "alias: alias})", p, id=eid).consume()
            self._log_changes(tx, scope, [{"session": session, "entity_id": eid}])
            return eid, status

        eid, status = self._write("upsert_entity", work)
        rec = self.get_entities(scope, [eid])[eid]
        return UpsertOutcome(entity=rec, status=status)

    def get_entities(self, scope: Scope, ids: Sequence[str]) -> dict[str, EntityRecord]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        rows = self._all("get_entities",
                         "UNWIND $ids AS x MATCH (e:CsMemEntity {id: x, tenant: $t, namespace: $n}) "
                         f"WHERE {_E_VIS} RETURN {_ENTITY}", _p(scope, ids=ids))
        return {r["id"]: _entity(r) for r in rows}

    def find_exact(
        self, scope: Scope, terms: Sequence[str], *, durable_only: bool = False,
        limit: int = 10,
    ) -> list[EntityRecord]:
        terms = exact_terms(terms)
        if not terms:
            return []
        rows = self._all(
            "find_exact",
            "CALL { "
            "UNWIND $terms AS x MATCH (e:CsMemEntity {id: x, tenant: $t, namespace: $n}) RETURN e "
            "UNION UNWIND $terms AS x MATCH (e:CsMemEntity {tenant: $t, namespace: $n, name: x}) RETURN e "
            "UNION UNWIND $terms AS x "
            "MATCH (e:CsMemEntity {tenant: $t, namespace: $n})-[:ALIAS]->"
            "(a:CsMemAlias {tenant: $t, namespace: $n, alias: x}) WHERE a.session IN $vis RETURN e } "
            f"WITH e WHERE {_E_VIS} RETURN {_ENTITY}",
            _p(scope, durable_only=durable_only, terms=terms))
        recs = [_entity(r) for r in rows]
        return rank_exact(recs, terms, limit)

    def iter_entities(self, scope: Scope) -> Iterator[EntityRecord]:
        after = ""
        while True:
            rows = self._all("iter_entities",
                             f"MATCH (e:CsMemEntity {{tenant: $t, namespace: $n}}) WHERE {_E_VIS} AND e.id > $after "
                             f"RETURN {_ENTITY} ORDER BY e.id LIMIT $lim", _p(scope, after=after, lim=PAGE))
            if not rows:
                return
            yield from (_entity(r) for r in rows)
            after = rows[-1]["id"]

    def list_entities(
        self, scope: Scope, *, durable: bool | None, after: tuple[str, str] | None,
        limit: int,
    ) -> list[tuple[EntityRecord, int]]:
        where = [_E_VIS]
        params = _p(scope, lim=max(0, limit))
        if durable is True:
            where.append("e.session = ''")
        elif durable is False:
            where.append("e.session = $own")
            params["own"] = scope.session
        if after is not None:
            where.append("(e.name > $an OR (e.name = $an AND e.id > $ai))")
            params.update(an=after[0], ai=after[1])
        rows = self._all("list_entities",
                         f"MATCH (e:CsMemEntity {{tenant: $t, namespace: $n}}) WHERE {' AND '.join(where)} "
                         f"RETURN {_ENTITY} ORDER BY e.name, e.id LIMIT $lim", params)
        recs = [_entity(r) for r in rows]
        counts = dict.fromkeys((r.id for r in recs), 0)
        if recs:
            for f in self.facts_touching(scope, list(counts), limit=1_000_000):
                for eid in (f.subject_id, f.object_id):
                    if eid in counts:
                        counts[eid] += 1
        return [(r, counts[r.id]) for r in recs]

    def forget_entities(self, scope: Scope, ids: Sequence[str], now: str) -> tuple[int, int]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return (0, 0)
        p = _p(scope, ids=ids, now=now)

        def work(tx) -> tuple[int, int]:
            self._lock(tx, scope)
            live = [r.data() for r in tx.run(
                "UNWIND $ids AS x MATCH (e:CsMemEntity {id: x, tenant: $t, namespace: $n}) "
                f"WHERE {_E_VIS} RETURN e.id AS entity_id, e.session AS session", p)]
            if not live:
                return (0, 0)
            p["live"] = [r["entity_id"] for r in live]
            nf = tx.run(
                "UNWIND $live AS x MATCH (e:CsMemEntity {id: x, tenant: $t, namespace: $n})"
                "-[f:FACT {tenant: $t, namespace: $n}]-(:CsMemEntity {tenant: $t, namespace: $n}) "
                "WHERE f.session IN $vis AND f.valid_to IS NULL "
                "WITH DISTINCT f SET f.valid_to = $now, f.updated_at = $now REMOVE f.live_key "
                "RETURN count(f) AS n", p).single()["n"]
            ne = tx.run(
                "UNWIND $live AS x MATCH (e:CsMemEntity {id: x, tenant: $t, namespace: $n}) "
                f"WHERE {_E_VIS} SET e.valid_to = $now, e.updated_at = $now REMOVE e.live_name "
                "RETURN count(e) AS n", p).single()["n"]
            self._log_changes(tx, scope, live)
            tx.run("UNWIND $live AS x MATCH (q:CsMemTodo {entity_id: x, tenant: $t, namespace: $n}) "
                   "WHERE q.session IN $vis DELETE q", p).consume()
            return (ne, nf)

        return self._write("forget_entities", work)

    # ---- facts ------------------------------------------------------------------------

    def upsert_fact(
        self, scope: Scope, *, subject_id: str, predicate: str, object_id: str,
        confidence: float, source_client: str, durable: bool, now: str,
    ) -> tuple[FactRecord, bool]:
        session = "" if durable else scope.session
        p = _p(scope, sid=subject_id, oid=object_id, pred=predicate, conf=float(confidence),
               src=source_client, now=now, fs=session, key=_live_key(subject_id, predicate, object_id))

        def work(tx) -> tuple[str, bool]:
            self._lock(tx, scope)
            found = {r["id"]: r["session"] for r in tx.run(
                "UNWIND [$sid, $oid] AS x MATCH (e:CsMemEntity {id: x, tenant: $t, namespace: $n}) "
                f"WHERE {_E_VIS} RETURN e.id AS id, e.session AS session", p)}
            for eid in (subject_id, object_id):
                if eid not in found:
                    raise StoreError(f"fact endpoint {eid} is not a live entity in this scope")
                if durable and found[eid] != "":
                    raise StoreError("a durable fact cannot reference a session entity")
            row = tx.run(
                "MATCH (s:CsMemEntity {id: $sid, tenant: $t, namespace: $n})"
                "-[f:FACT {tenant: $t, namespace: $n, session: $fs, predicate: $pred}]->"
                "(o:CsMemEntity {id: $oid, tenant: $t, namespace: $n}) WHERE f.valid_to IS NULL "
                "RETURN f.id AS id", p).single()
            if row is None:
                fid = new_fact_id()
                tx.run("MATCH (s:CsMemEntity {id: $sid, tenant: $t, namespace: $n}), "
                       "(o:CsMemEntity {id: $oid, tenant: $t, namespace: $n}) "
                       "CREATE (s)-[:FACT {id: $fid, tenant: $t, namespace: $n, session: $fs, predicate: $pred, "
                       "confidence: $conf, source_client: $src, created_at: $now, updated_at: $now, "
                       "live_key: $key}]->(o)", p, fid=fid).consume()
                return fid, True
            fid = row["id"]
            tx.run("MATCH (:CsMemEntity {id: $sid, tenant: $t, namespace: $n})"
                   "-[f:FACT {id: $fid, tenant: $t, namespace: $n, session: $fs}]->"
                   "(:CsMemEntity {id: $oid, tenant: $t, namespace: $n}) "
                   "SET f.confidence = $conf, f.source_client = $src, f.updated_at = $now", p, fid=fid).consume()
            return fid, False

        fid, created = self._write("upsert_fact", work)
        rows = self._all("upsert_fact",
                         "MATCH (s:CsMemEntity {tenant: $t, namespace: $n})-[f:FACT {id: $fid, tenant: $t, "
                         f"namespace: $n}}]->(o:CsMemEntity {{tenant: $t, namespace: $n}}) WHERE {_FACT_VIS} "
                         f"RETURN {_FACT}", _p(scope, fid=fid))
        if not rows:
            raise StoreError("the fact was written but is not visible in this scope")
        return _fact(rows[0]), created

    # Live visible facts touching $ids: one indexed branch per endpoint, deduplicated.
    _TOUCHING = (
        "CALL { "
        "UNWIND $ids AS x MATCH (s:CsMemEntity {id: x, tenant: $t, namespace: $n})"
        "-[f:FACT {tenant: $t, namespace: $n}]->(o:CsMemEntity {tenant: $t, namespace: $n}) RETURN s, f, o "
        "UNION UNWIND $ids AS x MATCH (s:CsMemEntity {tenant: $t, namespace: $n})"
        "-[f:FACT {tenant: $t, namespace: $n}]->(o:CsMemEntity {id: x, tenant: $t, namespace: $n}) "
        "RETURN s, f, o } "
        f"WITH s, f, o WHERE {_FACT_VIS} ")

    def facts_touching(
        self, scope: Scope, entity_ids: Sequence[str], *, limit: int,
    ) -> list[FactRecord]:
        ids = list(dict.fromkeys(entity_ids))
        if not ids or limit <= 0:
            return []
        rows = self._all("facts_touching",
                         self._TOUCHING + f"RETURN {_FACT} ORDER BY f.confidence DESC, f.updated_at DESC, f.id "
                                          "LIMIT $lim", _p(scope, ids=ids, lim=limit))
        return [_fact(r) for r in rows]

    def count_facts_touching(self, scope: Scope, entity_ids: Sequence[str]) -> int:
        """How many facts ``facts_touching`` would return without a limit."""
        ids = list(dict.fromkeys(entity_ids))
        if not ids:
            return 0
        return int(self._one("count_facts_touching", self._TOUCHING + "RETURN count(f)", _p(scope, ids=ids)))

    def forget_facts(
        self, scope: Scope, *, subject_id: str, predicate: str, object_id: str, now: str,
    ) -> int:
        p = _p(scope, sid=subject_id, oid=object_id, pred=predicate, now=now)

        def work(tx) -> int:
            self._lock(tx, scope)
            return tx.run(
                "MATCH (:CsMemEntity {id: $sid, tenant: $t, namespace: $n})"
                "-[f:FACT {tenant: $t, namespace: $n, predicate: $pred}]->"
                "(:CsMemEntity {id: $oid, tenant: $t, namespace: $n}) "
                "WHERE f.session IN $vis AND f.valid_to IS NULL "
                "SET f.valid_to = $now, f.updated_at = $now REMOVE f.live_key RETURN count(f) AS n", p).single()["n"]

        return self._write("forget_facts", work)

    def forget_fact_ids(self, scope: Scope, ids: Sequence[str], now: str) -> list[str]:
        """Tombstone the visible live facts with these ids; returns those ids (in the order
        asked for)."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return []
        p = _p(scope, ids=ids, now=now)

        def work(tx) -> list[str]:
            self._lock(tx, scope)
            done = {r["id"] for r in tx.run(
                "UNWIND $ids AS x MATCH (:CsMemEntity {tenant: $t, namespace: $n})"
                "-[f:FACT {id: x, tenant: $t, namespace: $n}]->(:CsMemEntity {tenant: $t, namespace: $n}) "
                "WHERE f.session IN $vis AND f.valid_to IS NULL "
                "SET f.valid_to = $now, f.updated_at = $now REMOVE f.live_key RETURN f.id AS id", p)}
            return [i for i in ids if i in done]

        return self._write("forget_fact_ids", work)

    # ---- change feed ------------------------------------------------------------------

    def change_cursor(self, scope: Scope) -> int:
        v = self._one("change_cursor",
                      "MATCH (c:CsMemChange {tenant: $t, namespace: $n}) WHERE c.session IN $vis "
                      "RETURN max(c.seq)", _p(scope))
        return int(v) if v is not None else 0

    def changes_since(self, scope: Scope, after: int, limit: int = 10_000) -> tuple[int, list[str]]:
        rows = self._all("changes_since",
                         "MATCH (c:CsMemChange {tenant: $t, namespace: $n}) WHERE c.session IN $vis AND c.seq > $after "
                         "RETURN c {.seq, .entity_id} ORDER BY c.seq LIMIT $lim",
                         _p(scope, after=int(after), lim=max(0, limit)))
        if not rows:
            return after, []
        return int(rows[-1]["seq"]), list(dict.fromkeys(r["entity_id"] for r in rows))

    # ---- embedding queue --------------------------------------------------------------

    _QUEUE = ("MATCH (l:CsMemScope {tenant: $t, namespace: $n}) "
              "WITH l, l.todo_seq AS base SET l.todo_seq = base + size($rows) "
              "WITH base UNWIND range(0, size($rows) - 1) AS i "
              "MERGE (q:CsMemTodo {model_key: $k, entity_id: $rows[i].id, tenant: $t, namespace: $n}) "
              "SET q.session = $rows[i].session, q.version = $rows[i].version, q.enqueued_at = base + i + 1 "
              "RETURN count(q) AS n")

    def enqueue_embedding(self, scope: Scope, model_key: str, items: Sequence[TodoItem]) -> None:
        if not items:
            return
        p = _p(scope, k=model_key, ids=[i.entity_id for i in items])

        def work(tx) -> None:
            self._lock(tx, scope)
            sessions = {r["id"]: r["session"] for r in tx.run(
                "UNWIND $ids AS x MATCH (e:CsMemEntity {id: x, tenant: $t, namespace: $n}) "
                "WHERE e.session IN $vis RETURN e.id AS id, e.session AS session", p)}
            rows = [{"id": it.entity_id, "session": sessions[it.entity_id], "version": int(it.version)}
                    for it in items if it.entity_id in sessions]
            if rows:
                tx.run(self._QUEUE, p, rows=rows).consume()

        self._write("enqueue_embedding", work)

    def enqueue_missing(self, scope: Scope, model_key: str) -> int:
        p = _p(scope, k=model_key)

        def work(tx) -> int:
            self._lock(tx, scope)
            rows = [r.data() for r in tx.run(
                f"MATCH (e:CsMemEntity {{tenant: $t, namespace: $n}}) WHERE {_E_VIS} "
                "OPTIONAL MATCH (m:CsMemEmbedded {model_key: $k, entity_id: e.id, tenant: $t, namespace: $n}) "
                "OPTIONAL MATCH (q:CsMemTodo {model_key: $k, entity_id: e.id, tenant: $t, namespace: $n}) "
                "WITH e, m, q WHERE (m IS NULL OR m.version <> e.version) "
                "AND (q IS NULL OR q.version <> e.version) "
                "RETURN e.id AS id, e.session AS session, e.version AS version ORDER BY e.created_at, e.id", p)]
            if not rows:
                return 0
            return tx.run(self._QUEUE, p, rows=rows).single()["n"]

        return self._write("enqueue_missing", work)

    def take_embedding_todo(self, scope: Scope, model_key: str, limit: int) -> list[TodoItem]:
        rows = self._all(
            "take_embedding_todo",
            "MATCH (q:CsMemTodo {model_key: $k, tenant: $t, namespace: $n}) WHERE q.session IN $vis "
            "MATCH (e:CsMemEntity {id: q.entity_id, tenant: $t, namespace: $n}) "
            f"WHERE {_E_VIS} AND e.version = q.version "
            "RETURN q {.entity_id, .version} ORDER BY q.enqueued_at LIMIT $lim",
            _p(scope, k=model_key, lim=max(0, limit)))
        return [TodoItem(entity_id=r["entity_id"], version=int(r["version"])) for r in rows]

    def pending_embeddings(self, scope: Scope, model_key: str) -> int:
        return int(self._one(
            "pending_embeddings",
            "MATCH (q:CsMemTodo {model_key: $k, tenant: $t, namespace: $n}) WHERE q.session IN $vis "
            f"MATCH (e:CsMemEntity {{id: q.entity_id, tenant: $t, namespace: $n}}) WHERE {_E_VIS} "
            "RETURN count(q)", _p(scope, k=model_key)))

    def mark_embedded(self, scope: Scope, model_key: str, items: Sequence[TodoItem]) -> None:
        if not items:
            return
        p = _p(scope, k=model_key, ids=[i.entity_id for i in items])

        def work(tx) -> None:
            self._lock(tx, scope)
            sessions = {r["id"]: r["session"] for r in tx.run(
                "UNWIND $ids AS x MATCH (e:CsMemEntity {id: x, tenant: $t, namespace: $n}) "
                "WHERE e.session IN $vis RETURN e.id AS id, e.session AS session", p)}
            rows = [{"id": it.entity_id, "session": sessions[it.entity_id], "version": int(it.version)}
                    for it in items if it.entity_id in sessions]
            if not rows:
                return
            tx.run("UNWIND $rows AS r "
                   "MERGE (m:CsMemEmbedded {model_key: $k, entity_id: r.id, tenant: $t, namespace: $n}) "
                   "SET m.session = r.session, m.version = r.version "
                   "WITH r MATCH (q:CsMemTodo {model_key: $k, entity_id: r.id, tenant: $t, namespace: $n}) "
                   "WHERE q.session IN $vis AND q.version <= r.version DELETE q", p, rows=rows).consume()

        self._write("mark_embedded", work)

    def embedded_version(self, scope: Scope, model_key: str, entity_id: str) -> int | None:
        v = self._one("embedded_version",
                      "MATCH (m:CsMemEmbedded {model_key: $k, entity_id: $id, tenant: $t, namespace: $n}) "
                      "WHERE m.session IN $vis RETURN m.version", _p(scope, k=model_key, id=entity_id))
        return int(v) if v is not None else None

    # ---- session end ------------------------------------------------------------------

    def claim_session(self, scope: Scope, owner: str, now: str) -> None:
        if not scope.session:
            raise StoreError("claim_session needs a session scope")
        self._write("claim_session", lambda tx: tx.run(
            "MERGE (o:CsMemSession {tenant: $t, namespace: $n, session: $s}) "
            "ON CREATE SET o.created_at = $now SET o.owner = $owner",
            t=scope.tenant, n=scope.namespace, s=scope.session, owner=owner, now=now).consume())

    def session_owners(self, scope: Scope) -> dict[str, str]:
        rows = self._all(
            "session_owners",
            "CALL { MATCH (e:CsMemEntity {tenant: $t, namespace: $n}) WHERE e.session <> '' "
            "RETURN DISTINCT e.session AS s "
            "UNION MATCH ()-[f:FACT {tenant: $t, namespace: $n}]->() WHERE f.session <> '' "
            "RETURN DISTINCT f.session AS s "
            "UNION MATCH (o:CsMemSession {tenant: $t, namespace: $n}) RETURN o.session AS s } "
            "OPTIONAL MATCH (o:CsMemSession {tenant: $t, namespace: $n, session: s}) "
            "RETURN [s, coalesce(o.owner, '')] ORDER BY s",
            {"t": scope.tenant, "n": scope.namespace})
        return {r[0]: r[1] for r in rows}

    # ---- anchors ----------------------------------------------------------------------

    def set_anchors(self, scope: Scope, entity_id: str, anchors: Sequence[AnchorSpec],
                    now: str) -> None:
        self._set_owner_anchors(
            "set_anchors", scope, "entity", entity_id, anchors, now,
            owner="MATCH (e:CsMemEntity {id: $id, tenant: $t, namespace: $n}) "
                  f"WHERE {_E_VIS} RETURN e.session AS session",
            create="MATCH (e:CsMemEntity {id: $id, tenant: $t, namespace: $n, session: $s}) UNWIND $rows AS r "
                   "CREATE (e)-[:ANCHOR]->")

    def _set_owner_anchors(self, what: str, scope: Scope, kind: str, owner_id: str,
                           anchors: Sequence[AnchorSpec], now: str, *, owner: str, create: str) -> None:
        """Replace the anchors of a live visible entity or fact (``owner`` finds its session)
        with ``anchors``, in the owner's own session; ``create`` is the pattern up to the new
        anchor node (an entity's anchors hang off an ANCHOR edge, a fact's stand alone)."""
        rows = anchor_rows(anchors)

        def work(tx) -> None:
            self._lock(tx, scope)
            o = tx.run(owner, _p(scope, id=owner_id)).single()
            if o is None:
                raise StoreError(f"no live {kind} {owner_id} in this scope")
            p = {"t": scope.tenant, "n": scope.namespace, "s": o["session"], "id": owner_id, "rows": rows,
                 "now": now}
            tx.run("MATCH (a:CsMemAnchor {entity_id: $id, tenant: $t, namespace: $n, session: $s}) DETACH DELETE a",
                   p).consume()
            tx.run(create + "(:CsMemAnchor {id: r.id, entity_id: $id, tenant: $t, namespace: $n, "
                   "session: $s, qname: r.qname, name: r.name, path: r.path, hash: r.hash, kind: r.kind, "
                   "line: r.line, status: '', status_at: '', previous: '', created_at: $now, position: r.position})",
                   p).consume()

        self._write(what, work)

    # the anchor's entity: live, in the anchor's tenant/namespace/session
    _A_OWNER = ("MATCH (e:CsMemEntity {id: a.entity_id, tenant: $t, namespace: $n}) "
                "WHERE e.session = a.session AND e.valid_to IS NULL ")
    # ... or its entity or fact (a fact's anchors: CsMemAnchor nodes without an ANCHOR edge,
    # whose entity_id is the fact's id), for the staleness pass
    _A_ANY_OWNER = ("WHERE EXISTS { MATCH (e:CsMemEntity {id: a.entity_id, tenant: $t, namespace: $n}) "
                    "WHERE e.session = a.session AND e.valid_to IS NULL } "
                    "OR EXISTS { MATCH (:CsMemEntity {tenant: $t, namespace: $n})"
                    "-[f:FACT {id: a.entity_id, tenant: $t, namespace: $n}]->(:CsMemEntity {tenant: $t, namespace: $n}) "
                    "WHERE f.session = a.session AND f.valid_to IS NULL } ")
    supports_fact_anchors = True

    def set_fact_anchors(self, scope: Scope, fact_id: str, anchors: Sequence[AnchorSpec],
                         now: str) -> None:
        self._set_owner_anchors(
            "set_fact_anchors", scope, "fact", fact_id, anchors, now,
            owner="MATCH (:CsMemEntity {tenant: $t, namespace: $n})-[f:FACT {id: $id, tenant: $t, namespace: $n}]"
                  "->(:CsMemEntity {tenant: $t, namespace: $n}) WHERE f.session IN $vis AND f.valid_to IS NULL "
                  "RETURN f.session AS session",
            create="UNWIND $rows AS r CREATE ")

    def fact_anchors_of(self, scope: Scope, fact_ids: Sequence[str]) -> dict[str, list[AnchorRecord]]:
        ids = list(dict.fromkeys(fact_ids))
        if not ids:
            return {}
        rows = self._all("fact_anchors_of",
                         "UNWIND $ids AS x MATCH (s:CsMemEntity {tenant: $t, namespace: $n})"
                         "-[f:FACT {id: x, tenant: $t, namespace: $n}]->(o:CsMemEntity {tenant: $t, namespace: $n}) "
                         f"WHERE {_FACT_VIS} "
                         "MATCH (a:CsMemAnchor {tenant: $t, namespace: $n, entity_id: x}) WHERE a.session = f.session "
                         f"RETURN {_ANCHOR} ORDER BY a.entity_id, a.position", _p(scope, ids=ids))
        return by_owner(_anchor(r) for r in rows)

    def facts_anchored_to(self, scope: Scope, qnames: Sequence[str], limit: int = 100
                          ) -> list[tuple[AnchorRecord, FactRecord]]:
        names = list(dict.fromkeys(qnames))
        if not names:
            return []
        rows = self._all("facts_anchored_to",
                         "MATCH (a:CsMemAnchor {tenant: $t, namespace: $n}) WHERE a.qname IN $q AND a.session IN $vis "
                         "MATCH (s:CsMemEntity {tenant: $t, namespace: $n})"
                         "-[f:FACT {id: a.entity_id, tenant: $t, namespace: $n}]->(o:CsMemEntity {tenant: $t, namespace: $n}) "
                         f"WHERE f.session = a.session AND {_FACT_VIS} "
                         f"RETURN [{_ANCHOR}, {_FACT}] ORDER BY f.updated_at DESC, a.entity_id, a.position "
                         "LIMIT $limit", _p(scope, q=names, limit=int(limit)))
        return [(_anchor(a), _fact(f)) for a, f in rows]

    def anchors_of(self, scope: Scope, entity_ids: Sequence[str]) -> dict[str, list[AnchorRecord]]:
        ids = list(dict.fromkeys(entity_ids))
        if not ids:
            return {}
        rows = self._all("anchors_of",
                         "UNWIND $ids AS x MATCH (e:CsMemEntity {id: x, tenant: $t, namespace: $n}) "
                         f"WHERE {_E_VIS} MATCH (e)-[:ANCHOR]->(a:CsMemAnchor {{tenant: $t, namespace: $n}}) "
                         "WHERE a.session = e.session "
                         f"RETURN {_ANCHOR} ORDER BY a.entity_id, a.position", _p(scope, ids=ids))
        return by_owner(_anchor(r) for r in rows)

    def anchored_to(self, scope: Scope, qnames: Sequence[str], limit: int = 100) -> list[AnchorRecord]:
        names = list(dict.fromkeys(qnames))
        if not names:
            return []
        rows = self._all("anchored_to",
                         "MATCH (a:CsMemAnchor {tenant: $t, namespace: $n}) WHERE a.qname IN $q AND a.session IN $vis "
                         f"{self._A_OWNER}RETURN {_ANCHOR} ORDER BY e.updated_at DESC, a.entity_id, a.position "
                         "LIMIT $limit", _p(scope, q=names, limit=int(limit)))
        return [_anchor(r) for r in rows]

    def anchors_to_check(self, scope: Scope, paths: Sequence[str], names: Sequence[str]
                         ) -> list[AnchorRecord]:
        p = {"t": scope.tenant, "n": scope.namespace, "paths": list(dict.fromkeys(paths))}
        out = {r["id"]: _anchor(r) for r in self._all(
            "anchors_to_check", "MATCH (a:CsMemAnchor {tenant: $t, namespace: $n}) WHERE a.path IN $paths "
            f"WITH a {self._A_ANY_OWNER}RETURN {_ANCHOR}", p)} if p["paths"] else {}
        if names:
            wanted = set(names)
            for r in self._all("anchors_to_check", "MATCH (a:CsMemAnchor {tenant: $t, namespace: $n, "
                               f"status: 'removed'}}) {self._A_ANY_OWNER}RETURN {_ANCHOR}", p):
                if r["name"] in wanted:
                    out[r["id"]] = _anchor(r)
        return [out[k] for k in sorted(out)]

    def update_anchors(self, scope: Scope, anchors: Sequence[AnchorRecord]) -> None:
        rows = [{"id": a.id, "qname": a.qname, "name": a.name, "path": a.path, "hash": a.hash, "kind": a.kind,
                 "line": a.line,
                 "status": a.status, "status_at": a.status_at, "previous": a.previous} for a in anchors]
        if not rows:
            return

        def work(tx) -> None:
            tx.run("UNWIND $rows AS r MATCH (a:CsMemAnchor {id: r.id, tenant: $t, namespace: $n}) "
                   "SET a.qname = r.qname, a.name = r.name, a.path = r.path, a.hash = r.hash, a.kind = r.kind, a.line = r.line, "
                   "a.status = r.status, a.status_at = r.status_at, a.previous = r.previous",
                   t=scope.tenant, n=scope.namespace, rows=rows).consume()

        self._write("update_anchors", work)

    def purge_session(self, scope: Scope) -> list[str]:
        if not scope.session:
            raise StoreError("purge_session needs a session scope")
        p = {"t": scope.tenant, "n": scope.namespace, "s": scope.session}

        def work(tx) -> list[str]:
            self._lock(tx, scope)
            ids = [r["id"] for r in tx.run(
                "MATCH (e:CsMemEntity {tenant: $t, namespace: $n, session: $s}) RETURN e.id AS id ORDER BY id", p)]
            tx.run("MATCH (:CsMemEntity {tenant: $t, namespace: $n})-[f:FACT {tenant: $t, namespace: $n, session: $s}]"
                   "->(:CsMemEntity {tenant: $t, namespace: $n}) DELETE f", p).consume()
            for label in ("CsMemTodo", "CsMemEmbedded", "CsMemAlias", "CsMemSession", "CsMemAnchor"):
                tx.run(f"MATCH (x:{label} {{tenant: $t, namespace: $n, session: $s}}) DETACH DELETE x", p).consume()
            tx.run("MATCH (e:CsMemEntity {tenant: $t, namespace: $n, session: $s}) DETACH DELETE e", p).consume()
            self._log_changes(tx, scope, [{"session": scope.session, "entity_id": i} for i in ids])
            return ids

        return self._write("purge_session", work)

    # ---- maintenance (not in the protocol) --------------------------------------------

    def delete_namespace(self, tenant: str, namespace: str) -> None:
        """Hard-delete everything of one tenant/namespace (tests and benchmarks)."""
        p = {"t": tenant, "n": namespace}

        def work(tx) -> None:
            for label in ("CsMemEntity", "CsMemAlias", "CsMemChange", "CsMemTodo", "CsMemEmbedded", "CsMemScope",
                          "CsMemAnchor"):
                tx.run(f"MATCH (x:{label} {{tenant: $t, namespace: $n}}) DETACH DELETE x", p).consume()

        self._write("delete_namespace", work)
