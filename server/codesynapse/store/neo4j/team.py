"""Neo4j's side of team graphs (store/team.py's ``TeamServer`` port, docs/TEAM.md):
repository entries (``CsRepoEntry``, unique ``(tenant_id, graph_id)``) and one build lock
per base (``CsBaseLock``, unique ``graph_id``). Create-if-absent is MERGE on a uniqueness
constraint; a base is a graph id with a ``schema_version`` meta."""

from __future__ import annotations

import time
import uuid
from typing import Any

LOCK_SCHEMA = ("CREATE CONSTRAINT cs_base_lock_key IF NOT EXISTS FOR (n:CsBaseLock) REQUIRE n.graph_id IS UNIQUE",
               ("CREATE CONSTRAINT cs_repo_entry_key IF NOT EXISTS FOR (n:CsRepoEntry) "
                "REQUIRE (n.tenant_id, n.graph_id) IS UNIQUE"))


def open_graph(settings, graph_id: str):
    """A Neo4jGraphStore of ``graph_id`` with the team labels' constraints in place."""
    from codesynapse.store.neo4j.driver import ensure_schema
    from codesynapse.store.neo4j.graph import Neo4jGraphStore

    store = Neo4jGraphStore(settings.neo4j_uri, graph_id, user=settings.neo4j_user,
                            password=settings.neo4j_password)
    try:
        ensure_schema(store._driver, store.database, LOCK_SCHEMA)
    except BaseException:
        store.close()
        raise
    return store


class TeamServer:
    """The team operations on the Neo4j server of ``store`` (a Neo4jGraphStore)."""

    def __init__(self, store):
        self.store = store

    # -- repository entries ------------------------------------------------------------------
    def grant(self, tenant: str, graph_id: str, identity: str) -> dict[str, Any]:
        now = time.time()

        def work(tx):
            rec = tx.run(
                "MERGE (e:CsRepoEntry {tenant_id: $t, graph_id: $g}) "
                "ON CREATE SET e.id = $id, e.created_at = $now, e.revision = 0 "
                "SET e.identity = $identity, e.revision = e.revision + 1, e.updated_at = $now "
                "RETURN e {.id, .tenant_id, .graph_id, .identity, .revision} AS e",
                t=tenant, g=graph_id, id=uuid.uuid4().hex, now=now, identity=identity).single()
            return dict(rec["e"])

        return self.store._write("repository grant", work)

    def revoke(self, tenant: str, graph_id: str) -> int:
        return self.store._write("repository revoke", lambda tx: tx.run(
            "MATCH (e:CsRepoEntry {tenant_id: $t, graph_id: $g}) DELETE e RETURN count(*) AS n",
            t=tenant, g=graph_id).single()["n"])

    def authorized(self, tenant: str, graph_id: str) -> bool:
        return bool(self.store._scalar("repository entry", "MATCH (e:CsRepoEntry {tenant_id: $t, graph_id: $g}) "
                                       "RETURN count(e) > 0", t=tenant, g=graph_id))

    # -- bases -------------------------------------------------------------------------------
    def bases(self, graph_id: str, complete_key: str) -> list[tuple[str, bool, float | None]]:
        rows = self.store._rows("list bases", (
            "MATCH (m:CsMeta) WHERE m.graph_id STARTS WITH $p AND m.key = 'schema_version' "
            "OPTIONAL MATCH (c:CsMeta {graph_id: m.graph_id, key: $complete}) "
            "OPTIONAL MATCH (l:CsBaseLock {graph_id: m.graph_id}) "
            "RETURN {graph_id: m.graph_id, complete: c.value = '1', lease: l.expires} ORDER BY m.graph_id"),
            p=graph_id + "@", complete=complete_key)
        return [(r["graph_id"], bool(r["complete"]), r["lease"]) for r in rows]

    def acquire_lock(self, base_id: str, owner: str, lease_s: float) -> bool:
        now = time.time()

        def work(tx):
            # MERGE on the unique key makes one node whoever comes first; the write (l.seen)
            # takes the node's lock before the owner and lease are read, so two takers of an
            # expired lock are serialized
            rec = tx.run(
                "MERGE (l:CsBaseLock {graph_id: $g}) ON CREATE SET l.owner = $o, l.expires = $exp "
                "SET l.seen = $now "
                "WITH l, (l.owner = $o OR l.expires < $now) AS mine "
                "SET l.owner = CASE WHEN mine THEN $o ELSE l.owner END, "
                "    l.expires = CASE WHEN mine THEN $exp ELSE l.expires END "
                "RETURN mine", g=base_id, o=owner, exp=now + lease_s, now=now).single()
            return bool(rec["mine"])

        return self.store._write("base lock", work)

    def renew_lock(self, base_id: str, owner: str, lease_s: float) -> bool:
        def work(tx):
            rec = tx.run("MATCH (l:CsBaseLock {graph_id: $g, owner: $o}) SET l.expires = $exp RETURN count(l) AS n",
                         g=base_id, o=owner, exp=time.time() + lease_s).single()
            return rec["n"] > 0

        return self.store._write("base lock renew", work)

    def release_lock(self, base_id: str, owner: str) -> None:
        self.store._write("base lock release", lambda tx: tx.run(
            "MATCH (l:CsBaseLock {graph_id: $g, owner: $o}) DELETE l", g=base_id, o=owner).consume())

    def drop_lock(self, base_id: str) -> None:
        self.store._write("drop lock", lambda tx: tx.run(
            "MATCH (l:CsBaseLock {graph_id: $g}) DELETE l", g=base_id).consume())
