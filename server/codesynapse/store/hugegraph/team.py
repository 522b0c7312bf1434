"""HugeGraph's side of team graphs (store/team.py's ``TeamServer`` port, docs/TEAM.md).

HugeGraph has no MERGE and no composite unique constraint, and a Gremlin ``addVertex`` with
an existing custom id overwrites that vertex instead of failing. So create-if-absent is made
of two things: a **deterministic vertex id** per key (one vertex per base, one per (tenant,
repository)), and the same **server-side lock** the graph writers use (``synchronized`` on an
interned string in the Gremlin server JVM, released after the commit): the script reads the
vertex, decides and writes while no other script for that key runs. Two builders in two
processes racing for one base are serialized there; one takes the lease, the other sees it.
As for every HugeGraph writer, the lock is per HugeGraph server process (docs/BACKENDS.md).

Labels:

- ``cs_base`` (id ``cb:<sha256(base graph id)>``) ``{graph_id, repo_gid, owner, lease_until}``,
  secondary index ``repo_gid``: the registry of a repository's bases **and** each base's build
  lock (``owner`` '' when free; a lease that ended may be taken over). A base is registered
  when it is first opened as a team base; ``repo gc`` drops the registry vertex with the base.
- ``cs_repo_entry`` (id ``ce:<sha256(tenant, repository graph id)>``) ``{entry_id, tenant_id,
  graph_id, identity, revision, granted_at}``: the repository entry (AccessRepository).

Every lookup is by id **and** binds the key's properties (``graph_id``; ``tenant_id`` and
``graph_id``): an id alone is never enough. Values travel as bindings only.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from codesynapse.store.hugegraph.client import IN_CHUNK, ensure_schema
from codesynapse.store.hugegraph.ids import vertex_id

TEAM_SCHEMA = "\n".join([
    "def s = graph.schema()",
    *(f"s.propertyKey('{k}').as{t}().ifNotExist().create()" for k, t in (
        ("graph_id", "Text"), ("owner", "Text"), ("tenant_id", "Text"), ("repo_gid", "Text"),
        ("lease_until", "Double"), ("entry_id", "Text"), ("identity", "Text"), ("revision", "Int"),
        ("granted_at", "Double"))),
    ("s.vertexLabel('cs_base').properties('graph_id', 'repo_gid', 'owner', 'lease_until')"
     ".useCustomizeStringId().ifNotExist().create()"),
    "s.indexLabel('cs_base_repo').onV('cs_base').by('repo_gid').secondary().ifNotExist().create()",
    ("s.vertexLabel('cs_repo_entry').properties('entry_id', 'tenant_id', 'graph_id', 'identity', 'revision', "
     "'granted_at').useCustomizeStringId().ifNotExist().create()"),
    "'ok'",
])

_BASE = "synchronized (('codesynapse-base\\u001f' + bid).intern()) {\n"
_ENTRY = "synchronized (('codesynapse-entry\\u001f' + t + '\\u001f' + gid).intern()) {\n"
_FIND_BASE = "def vs = g.V(lid).hasLabel('cs_base').has('graph_id', bid).toList()\n"
_FIND_ENTRY = "def vs = g.V(eid).hasLabel('cs_repo_entry').has('tenant_id', t).has('graph_id', gid).toList()\n"

REGISTER = _BASE + _FIND_BASE + """
if (vs.isEmpty()) {
  graph.addVertex(T.label, 'cs_base', T.id, lid, 'graph_id', bid, 'repo_gid', repo, 'owner', '', 'lease_until', 0.0d)
  graph.tx().commit()
}
'ok'
}
"""
# take the lock when it is free, ours, or its lease has ended (the builder died)
ACQUIRE = _BASE + _FIND_BASE + """
def mine = true
if (vs.isEmpty()) {
  graph.addVertex(T.label, 'cs_base', T.id, lid, 'graph_id', bid, 'repo_gid', repo, 'owner', o,
                  'lease_until', exp as double)
} else {
  def v = vs[0]
  def cur = v.value('owner')
  mine = cur == '' || cur == o || (v.value('lease_until') as double) < (now as double)
  if (mine) {
    v.property('owner', o)
    v.property('lease_until', exp as double)
  }
}
graph.tx().commit()
mine
}
"""
RENEW = _BASE + _FIND_BASE + """
def mine = !vs.isEmpty() && vs[0].value('owner') == o
if (mine) {
  vs[0].property('lease_until', exp as double)
  graph.tx().commit()
}
mine
}
"""
RELEASE = _BASE + _FIND_BASE + """
if (!vs.isEmpty() && vs[0].value('owner') == o) {
  vs[0].property('owner', '')
  vs[0].property('lease_until', 0.0d)
  graph.tx().commit()
}
'ok'
}
"""
DROP = _BASE + _FIND_BASE + """
vs.each{ it.remove() }
graph.tx().commit()
'ok'
}
"""
LIST = ("g.V().hasLabel('cs_base').has('repo_gid', repo).project('g', 'o', 'l')"
        ".by('graph_id').by('owner').by('lease_until')")
COMPLETE_OF = ("g.V(ids.toArray()).hasLabel('cs_meta').has('graph_id', within(bids)).has('meta_key', mk)"
               ".project('g', 'v').by('graph_id').by('meta_value')")

GRANT = _ENTRY + _FIND_ENTRY + """
def v
if (vs.isEmpty()) {
  v = graph.addVertex(T.label, 'cs_repo_entry', T.id, eid, 'entry_id', newId, 'tenant_id', t, 'graph_id', gid,
                      'identity', identity, 'revision', 1, 'granted_at', now as double)
} else {
  v = vs[0]
  v.property('identity', identity)
  v.property('revision', (v.value('revision') as int) + 1)
  v.property('granted_at', now as double)
}
graph.tx().commit()
[id: v.value('entry_id'), tenant_id: t, graph_id: gid, identity: identity, revision: v.value('revision')]
}
"""
REVOKE = _ENTRY + _FIND_ENTRY + """
vs.each{ it.remove() }
graph.tx().commit()
vs.size()
}
"""
AUTHORIZED = "g.V(eid).hasLabel('cs_repo_entry').has('tenant_id', t).has('graph_id', gid).count()"

_schema_done: set[tuple[str, str]] = set()
_schema_lock = threading.Lock()


def open_graph(settings, graph_id: str):
    """A HugeGraphStore of ``graph_id`` with the team labels in place; a base's graph id
    (``<repository graph id>@<commit>``) is registered as one of the repository's bases."""
    from codesynapse.store.hugegraph.graph import HugeGraphStore

    store = HugeGraphStore(settings.hugegraph_url, graph_id, graph=settings.hugegraph_graph,
                           user=settings.hugegraph_user, password=settings.hugegraph_password)
    try:
        key = (settings.hugegraph_url, settings.hugegraph_graph)
        with _schema_lock:
            if key not in _schema_done:
                ensure_schema(store.client, TEAM_SCHEMA, f"team schema at {settings.hugegraph_url}")
                _schema_done.add(key)
        repo, sep, _commit = graph_id.rpartition("@")
        if sep:
            store.client.submit("register base", REGISTER, {"bid": graph_id, "lid": _lock_id(graph_id),
                                                            "repo": repo}, timeout=store.write_timeout)
    except BaseException:
        store.close()
        raise
    return store


def _lock_id(base_id: str) -> str:
    return vertex_id("cb", base_id)


def _entry_id(tenant: str, graph_id: str) -> str:
    return vertex_id("ce", tenant, graph_id)


class TeamServer:
    """The team operations on the HugeGraph server of ``store`` (a HugeGraphStore)."""

    def __init__(self, store):
        self.store = store
        self.client = store.client

    def _write(self, what: str, script: str, **bindings: Any) -> list[Any]:
        return self.client.submit(what, script, bindings, timeout=self.store.write_timeout)

    # -- repository entries ------------------------------------------------------------------
    def grant(self, tenant: str, graph_id: str, identity: str) -> dict[str, Any]:
        rows = self._write("repository grant", GRANT, t=tenant, gid=graph_id, eid=_entry_id(tenant, graph_id),
                           newId=uuid.uuid4().hex, identity=identity, now=time.time())
        out: dict[str, Any] = {}
        for item in rows:  # a map comes back entry by entry
            out.update(item)
        return {k: out[k] for k in ("id", "tenant_id", "graph_id", "identity", "revision")}

    def revoke(self, tenant: str, graph_id: str) -> int:
        rows = self._write("repository revoke", REVOKE, t=tenant, gid=graph_id, eid=_entry_id(tenant, graph_id))
        return int(rows[0]) if rows else 0

    def authorized(self, tenant: str, graph_id: str) -> bool:
        rows = self.client.submit("repository entry", AUTHORIZED,
                                  {"t": tenant, "gid": graph_id, "eid": _entry_id(tenant, graph_id)})
        return bool(rows and int(rows[0]) > 0)

    # -- bases -------------------------------------------------------------------------------
    def bases(self, graph_id: str, complete_key: str) -> list[tuple[str, bool, float | None]]:
        prefix = graph_id + "@"
        regs = [r for r in self.client.submit("list bases", LIST, {"repo": graph_id})
                if str(r["g"]).startswith(prefix)]
        complete: set[str] = set()
        bids = sorted(r["g"] for r in regs)
        for i in range(0, len(bids), IN_CHUNK):
            chunk = bids[i:i + IN_CHUNK]
            for r in self.client.submit("list bases", COMPLETE_OF, {
                    "ids": [vertex_id("cm", b, complete_key) for b in chunk], "bids": chunk, "mk": complete_key}):
                if r["v"] == "1":
                    complete.add(r["g"])
        out = [(r["g"], r["g"] in complete, float(r["l"]) if r["o"] else None) for r in regs]
        out.sort()
        return out

    def acquire_lock(self, base_id: str, owner: str, lease_s: float) -> bool:
        now = time.time()
        rows = self._write("base lock", ACQUIRE, bid=base_id, lid=_lock_id(base_id),
                           repo=base_id.rpartition("@")[0], o=owner, exp=now + lease_s, now=now)
        return bool(rows and rows[0] is True)

    def renew_lock(self, base_id: str, owner: str, lease_s: float) -> bool:
        rows = self._write("base lock renew", RENEW, bid=base_id, lid=_lock_id(base_id), o=owner,
                           exp=time.time() + lease_s)
        return bool(rows and rows[0] is True)

    def release_lock(self, base_id: str, owner: str) -> None:
        self._write("base lock release", RELEASE, bid=base_id, lid=_lock_id(base_id), o=owner)

    def drop_lock(self, base_id: str) -> None:
        self._write("drop lock", DROP, bid=base_id, lid=_lock_id(base_id))
