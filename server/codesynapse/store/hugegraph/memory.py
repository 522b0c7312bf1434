"""MemoryStore on Apache HugeGraph 1.5, over Gremlin (the transport of store/hugegraph/graph.py).

Model, in the seed's HugeGraph vocabulary (labels and property keys are constants; every
value is a Gremlin binding):

- ``mem_entity`` (vertex id = the entity id ``eid``) ``{eid, tenant_id, ns, session, name,
  aliases_json, alias_keys, type, version, created_at, updated_at, valid_to}``;
  ``valid_to`` is ``''`` while live (the seed's ``has('valid_to', '')``). Secondary
  indexes ``(tenant_id, ns, name)`` and ``alias_keys`` (a set of ``tenant␟ns␟alias`` keys:
  the alias lookup is bound to the scope by its key and re-checked on the vertex);
- ``mem_entity -fact-> mem_entity`` ``{fid, tenant_id, ns, session, predicate, confidence,
  source_client, created_at, updated_at, valid_to}`` (several facts per pair: the edge
  label is multi-times with sort key ``fid``); edge indexes ``fid`` and
  ``(tenant_id, ns, session)``;
- ``mem_scope`` (one per tenant/namespace: change-feed and queue counters),
  ``mem_change``, ``mem_todo``, ``mem_embedded``, ``mem_meta``.

Every query binds ``tenant_id`` and ``ns`` on the roots, on every fact and on both fact
endpoints, and visibility (``session`` in ``Scope.visible_sessions``: ``['', scope.session]``, plus the parent's for a sub-session; or ``['']``) and
liveness on each of them. HugeGraph has no uniqueness constraints across properties and
no row locks, so every write runs under a per-namespace lock taken *inside the Gremlin
server* (``synchronized`` on an interned ``tenant␟ns`` string) and commits before
releasing it: writers of one namespace are serialized, as SQLite's ``BEGIN IMMEDIATE``
and Neo4j's ``CsMemScope`` lock do. Errors become StoreError / StoreUnavailable.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from typing import Any

from codesynapse.errors import StoreError
from codesynapse.memory.exact import exact_terms, rank_exact
from codesynapse.scope import Scope
from codesynapse.store.hugegraph.client import (
    IN_CHUNK,
    GremlinClient,
    ensure_schema,
    index_key,
)
from codesynapse.store.hugegraph.ids import vertex_id
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
TX_ROWS = 3_000

_KEYS = {
    "eid": "Text", "tenant_id": "Text", "ns": "Text", "session": "Text", "name": "Text", "aliases_json": "Text",
    "type": "Text", "version": "Int", "created_at": "Text", "updated_at": "Text", "valid_to": "Text",
    "fid": "Text", "predicate": "Text", "confidence": "Double", "source_client": "Text", "seq": "Long",
    "todo_seq": "Long", "entity_id": "Text", "model_key": "Text", "enqueued_at": "Long", "meta_value": "Text",
    "owner": "Text",
    # anchors (own keys: the code graph of the same HugeGraph graph defines path, line, … its own way)
    "aid": "Text", "anc_qname": "Text", "anc_name": "Text", "anc_path": "Text", "anc_hash": "Text",
    "anc_kind": "Text", "anc_line": "Int", "anc_status": "Text", "anc_status_at": "Text", "anc_previous": "Text",
    "anc_pos": "Int",
}
_ENTITY_PROPS = ("eid", "tenant_id", "ns", "session", "name", "aliases_json", "alias_keys", "type", "version",
                 "created_at", "updated_at", "valid_to")
_ANCHOR_PROPS = ("aid", "entity_id", "tenant_id", "ns", "session", "anc_qname", "anc_name", "anc_path", "anc_hash",
                 "anc_kind", "anc_line", "anc_status", "anc_status_at", "anc_previous", "anc_pos", "created_at")
_FACT_PROPS = ("fid", "tenant_id", "ns", "session", "predicate", "confidence", "source_client", "created_at",
               "updated_at", "valid_to")


def _schema_script() -> str:
    def props(names: Sequence[str]) -> str:
        return ", ".join(repr(n) for n in names)

    return "\n".join([
        "def s = graph.schema()",
        *(f"s.propertyKey('{k}').as{t}().ifNotExist().create()" for k, t in _KEYS.items()),
        "s.propertyKey('alias_keys').asText().valueSet().ifNotExist().create()",
        f"s.vertexLabel('mem_entity').properties({props(_ENTITY_PROPS)}).nullableKeys('alias_keys')"
        ".useCustomizeStringId().ifNotExist().create()",
        "s.indexLabel('mem_entity_name').onV('mem_entity').by('tenant_id', 'ns', 'name').secondary()"
        ".ifNotExist().create()",
        "s.indexLabel('mem_entity_alias').onV('mem_entity').by('alias_keys').secondary().ifNotExist().create()",
        f"s.edgeLabel('fact').sourceLabel('mem_entity').targetLabel('mem_entity').multiTimes().properties("
        f"{props(_FACT_PROPS)}).sortKeys('fid').ifNotExist().create()",
        "s.indexLabel('fact_fid').onE('fact').by('fid').secondary().ifNotExist().create()",
        "s.indexLabel('fact_scope').onE('fact').by('tenant_id', 'ns', 'session').secondary().ifNotExist().create()",
        "s.vertexLabel('mem_scope').properties('tenant_id', 'ns', 'seq', 'todo_seq').useCustomizeStringId()"
        ".ifNotExist().create()",
        "s.indexLabel('mem_scope_ns').onV('mem_scope').by('tenant_id', 'ns').secondary().ifNotExist().create()",
        "s.vertexLabel('mem_change').properties('tenant_id', 'ns', 'session', 'entity_id', 'seq')"
        ".useAutomaticId().ifNotExist().create()",
        "s.indexLabel('mem_change_ns').onV('mem_change').by('tenant_id', 'ns').secondary().ifNotExist().create()",
        "s.vertexLabel('mem_todo').properties('tenant_id', 'ns', 'session', 'model_key', 'entity_id', 'version', "
        "'enqueued_at').useCustomizeStringId().ifNotExist().create()",
        "s.indexLabel('mem_todo_ns').onV('mem_todo').by('tenant_id', 'ns', 'model_key').secondary()"
        ".ifNotExist().create()",
        "s.vertexLabel('mem_embedded').properties('tenant_id', 'ns', 'session', 'model_key', 'entity_id', "
        "'version').useCustomizeStringId().ifNotExist().create()",
        "s.indexLabel('mem_embedded_ns').onV('mem_embedded').by('tenant_id', 'ns').secondary().ifNotExist().create()",
        "s.vertexLabel('mem_meta').properties('meta_value').useCustomizeStringId().ifNotExist().create()",
        "s.vertexLabel('mem_session').properties('tenant_id', 'ns', 'session', 'owner', 'created_at')"
        ".useCustomizeStringId().ifNotExist().create()",
        "s.indexLabel('mem_session_ns').onV('mem_session').by('tenant_id', 'ns').secondary().ifNotExist().create()",
        f"s.vertexLabel('mem_anchor').properties({props(_ANCHOR_PROPS)}).useCustomizeStringId().ifNotExist().create()",
        "s.indexLabel('mem_anchor_ns').onV('mem_anchor').by('tenant_id', 'ns').secondary().ifNotExist().create()",
        "'ok'",
    ])


SCHEMA_SCRIPT = _schema_script()
META = """
if (g.V('mm:schema_version').hasLabel('mem_meta').toList().isEmpty()) {
  graph.addVertex(T.label, 'mem_meta', T.id, 'mm:schema_version', 'meta_value', v)
  graph.tx().commit()
}
g.V('mm:schema_version').hasLabel('mem_meta').values('meta_value')
"""

# ---- script fragments ----------------------------------------------------------------------------

# Visible and live, for a traversal positioned on a mem_entity or a fact (filters, not index
# conditions: the roots' index conditions are tenant_id/ns/name or ids).
_LIVE = ".has('session', within(vis)).has('valid_to', '')"
# The same as filter steps, for roots found by an index: a has() there would become an index
# condition, and HugeGraph refuses conditions on unindexed properties (NoIndexException).
_W_LIVE = ".where(values('session').is(within(vis))).where(values('valid_to').is(''))"
_IN_SCOPE = ".has('tenant_id', t).has('ns', n)"
_ENTITY = f".hasLabel('mem_entity'){_IN_SCOPE}"
# A root by ids: the id lookup, bound to the scope.
_BY_IDS = f"g.V(ids.toArray()){_ENTITY}"
# the namespace's entities (index prefix (tenant_id, ns))
_NS_ENTITIES = "g.V().hasLabel('mem_entity').has('tenant_id', t).has('ns', n)"
_ENTITY_MAP = "elementMap('eid', 'tenant_id', 'ns', 'session', 'name', 'aliases_json', 'type', 'version', " \
              "'created_at', 'updated_at')"
# From a visible live entity, its facts in both directions with both endpoints bound.
_OUT_FACTS = (f".as('s').outE('fact'){_IN_SCOPE}{_LIVE}.as('f').inV(){_ENTITY}{_LIVE}.as('o')"
              ".select('s', 'f', 'o').by(elementMap())")
_IN_FACTS = (f".as('o').inE('fact'){_IN_SCOPE}{_LIVE}.as('f').outV(){_ENTITY}{_LIVE}.as('s')"
             ".select('s', 'f', 'o').by(elementMap())")
# A fact found by the fid index: re-checked, with both endpoints bound.
_FACT_BY_FID = (f"g.E().hasLabel('fact').has('fid', within(fids))"
                f".where(values('tenant_id').is(t)).where(values('ns').is(n))"
                f".where(values('session').is(within(vis))).where(values('valid_to').is(''))"
                f".as('f').outV(){_ENTITY}{_LIVE}.as('s').select('f').inV(){_ENTITY}{_LIVE}.as('o')")

# Serialize the namespace's writers and commit before the lock is released.
_LOCK_OPEN = """
synchronized (('codesynapse-memory\\u001f' + t + '\\u001f' + n).intern()) {
def scopeV = { ->
  def found = g.V(scopeId).hasLabel('mem_scope').toList()
  found.isEmpty() ? graph.addVertex(T.label, 'mem_scope', T.id, scopeId, 'tenant_id', t, 'ns', n, 'seq', 0L,
                                    'todo_seq', 0L) : found[0]
}
def logChanges = { sv, List rows ->
  for (r in rows) {
    def next = (sv.value('seq') as long) + 1L
    sv.property('seq', next)
    graph.addVertex(T.label, 'mem_change', 'tenant_id', t, 'ns', n, 'session', r[0], 'entity_id', r[1], 'seq', next)
  }
}
def queue = { sv, List rows ->
  for (r in rows) {
    def next = (sv.value('todo_seq') as long) + 1L
    sv.property('todo_seq', next)
    graph.addVertex(T.label, 'mem_todo', T.id, r[3], 'tenant_id', t, 'ns', n, 'session', r[1], 'model_key', k,
                    'entity_id', r[0], 'version', r[2], 'enqueued_at', next)
  }
}
"""
_LOCK_CLOSE = """
graph.tx().commit()
result
}
"""


def _locked(body: str) -> str:
    return _LOCK_OPEN + body + _LOCK_CLOSE


UPSERT_ENTITY = _locked(f"""
def found = {_NS_ENTITIES}.has('name', name).where(values('session').is(s)).where(values('valid_to').is('')).toList()
def sv = scopeV()
def result
if (found.isEmpty()) {{
  graph.addVertex(T.label, 'mem_entity', T.id, eid, 'eid', eid, 'tenant_id', t, 'ns', n, 'session', s,
                  'name', name, 'aliases_json', aliasesJson, 'alias_keys', aliasKeys as Set, 'type', type,
                  'version', 1, 'created_at', now, 'updated_at', now, 'valid_to', '')
  logChanges(sv, [[s, eid]])
  result = [eid, 'created']
}} else {{
  def e = found[0]
  if (e.value('aliases_json') == aliasesJson && e.value('type') == type) {{
    result = [e.id().toString(), 'unchanged']
  }} else {{
    e.property('aliases_json', aliasesJson)
    e.property('alias_keys').remove()
    if (!aliasKeys.isEmpty()) {{ e.property('alias_keys', aliasKeys as Set) }}
    e.property('type', type)
    e.property('version', (e.value('version') as int) + 1)
    e.property('updated_at', now)
    logChanges(sv, [[s, e.id().toString()]])
    result = [e.id().toString(), 'updated']
  }}
}}
""")

GET_ENTITIES = f"{_BY_IDS}{_LIVE}.{_ENTITY_MAP}"
FIND_EXACT = f"""
def out = []
out.addAll({_BY_IDS}{_LIVE}.{_ENTITY_MAP}.toList())
out.addAll({_NS_ENTITIES}.has('name', within(terms)){_W_LIVE}.{_ENTITY_MAP}.toList())
for (key in aliasKeys) {{
  out.addAll(g.V().hasLabel('mem_entity').has('alias_keys', ConditionP.contains(key))
             .where(values('tenant_id').is(t)).where(values('ns').is(n)){_W_LIVE}.{_ENTITY_MAP}.toList())
}}
out
"""
NS_ENTITIES = f"{_NS_ENTITIES}{_W_LIVE}.{_ENTITY_MAP}"
FACTS_TOUCHING = f"""
def out = []
out.addAll({_BY_IDS}{_LIVE}{_OUT_FACTS}.toList())
out.addAll({_BY_IDS}{_LIVE}{_IN_FACTS}.toList())
out
"""
FACTS_BY_FID = _FACT_BY_FID + ".select('s', 'f', 'o').by(elementMap())"

FORGET_ENTITIES = _locked(f"""
def live = {_BY_IDS}{_LIVE}.toList()
def facts = []
for (e in live) {{
  facts.addAll(g.V(e.id()).bothE('fact'){_IN_SCOPE}{_LIVE}
               .where(otherV().hasLabel('mem_entity').has('tenant_id', t).has('ns', n)).toList())
}}
def liveIds = live.collect{{ it.id().toString() }}
def todos = live.isEmpty() ? [] : g.V().hasLabel('mem_todo').has('tenant_id', t).has('ns', n)
                                   .where(values('session').is(within(vis))).toList()
                                   .findAll{{ liveIds.contains(it.value('entity_id')) }}
facts = facts.unique{{ it.id().toString() }}
for (f in facts) {{ f.property('valid_to', now); f.property('updated_at', now) }}
for (e in live) {{ e.property('valid_to', now); e.property('updated_at', now) }}
todos.each{{ it.remove() }}
logChanges(scopeV(), live.collect{{ [it.value('session'), it.id().toString()] }})
def result = [live.size(), facts.size()]
""")

UPSERT_FACT = _locked(f"""
def ends = g.V([sid, oid].unique().toArray()){_ENTITY}{_LIVE}.toList()
def byId = ends.collectEntries{{ [(it.id().toString()): it] }}
def result
if (!byId.containsKey(sid) || !byId.containsKey(oid)) {{
  result = ['missing', byId.containsKey(sid) ? oid : sid]
}} else if (fs == '' && (byId[sid].value('session') != '' || byId[oid].value('session') != '')) {{
  result = ['session-endpoint', '']
}} else {{
  def old = g.V(sid){_ENTITY}.outE('fact'){_IN_SCOPE}.has('session', fs).has('predicate', pred).has('valid_to', '')
             .where(inV().hasId(oid).hasLabel('mem_entity').has('tenant_id', t).has('ns', n)).toList()
  if (old.isEmpty()) {{
    byId[sid].addEdge('fact', byId[oid], 'fid', fid, 'tenant_id', t, 'ns', n, 'session', fs, 'predicate', pred,
                      'confidence', conf, 'source_client', src, 'created_at', now, 'updated_at', now,
                      'valid_to', '')
    result = [fid, 'created']
  }} else {{
    def f = old[0]
    f.property('confidence', conf)
    f.property('source_client', src)
    f.property('updated_at', now)
    result = [f.value('fid'), 'updated']
  }}
}}
""")

FORGET_FACTS = _locked(f"""
def found = g.V(sid){_ENTITY}.outE('fact'){_IN_SCOPE}.has('predicate', pred){_LIVE}
             .where(inV().hasId(oid).hasLabel('mem_entity').has('tenant_id', t).has('ns', n)).toList()
for (f in found) {{ f.property('valid_to', now); f.property('updated_at', now) }}
def result = found.size()
""")

FORGET_FACT_IDS = _locked(f"""
def found = g.E().hasLabel('fact').has('fid', within(fids)).where(values('tenant_id').is(t))
             .where(values('ns').is(n)).where(values('session').is(within(vis))).where(values('valid_to').is(''))
             .where(outV().hasLabel('mem_entity').has('tenant_id', t).has('ns', n))
             .where(inV().hasLabel('mem_entity').has('tenant_id', t).has('ns', n)).toList()
for (f in found) {{ f.property('valid_to', now); f.property('updated_at', now) }}
def result = found.collect{{ it.value('fid') }}
""")

CHANGES = ("g.V().hasLabel('mem_change').has('tenant_id', t).has('ns', n).where(values('session').is(within(vis)))"
           ".where(values('seq').is(gt(after))).elementMap('seq', 'entity_id')")
CHANGE_CURSOR = ("g.V().hasLabel('mem_change').has('tenant_id', t).has('ns', n).where(values('session').is(within(vis)))"
                 ".values('seq').max()")

ENQUEUE = _locked(f"""
def found = {_BY_IDS}.has('session', within(vis)).toList().collectEntries{{ [(it.id().toString()): it.value('session')] }}
def rows = items.findAll{{ found.containsKey(it[0]) }}.collect{{ [it[0], found[it[0]], it[1], it[2]] }}
for (r in rows) {{ g.V(r[3]).hasLabel('mem_todo').has('tenant_id', t).has('ns', n).drop().iterate() }}
queue(scopeV(), rows)
def result = rows.size()
""")

ENQUEUE_MISSING = _locked(f"""
def ents = {_NS_ENTITIES}{_W_LIVE}.elementMap('session', 'version', 'created_at').toList()
def done = g.V().hasLabel('mem_embedded').has('tenant_id', t).has('ns', n).where(values('model_key').is(k))
            .elementMap('entity_id', 'version').toList().collectEntries{{ [(it.entity_id): it.version] }}
def queued = g.V().hasLabel('mem_todo').has('tenant_id', t).has('ns', n).has('model_key', k)
              .elementMap('entity_id', 'version').toList().collectEntries{{ [(it.entity_id): it.version] }}
def rows = ents.findAll{{ done[it[T.id].toString()] != it.version && queued[it[T.id].toString()] != it.version }}
               .sort{{ a, b -> a.created_at <=> b.created_at ?: a[T.id] <=> b[T.id] }}
               .collect{{ [it[T.id].toString(), it.session, it.version, todoPrefix + it[T.id].toString()] }}
queue(scopeV(), rows)
def result = rows.size()
""")

TODO = f"""
def todos = g.V().hasLabel('mem_todo').has('tenant_id', t).has('ns', n).has('model_key', k)
             .where(values('session').is(within(vis))).elementMap('entity_id', 'version', 'enqueued_at').toList()
def ids = todos.collect{{ it.entity_id }}.unique()
def live = ids.isEmpty() ? [:] : {_BY_IDS}{_LIVE}.elementMap('version').toList()
                                   .collectEntries{{ [(it[T.id].toString()): it.version] }}
todos.findAll{{ live.containsKey(it.entity_id) && (!sameVersion || live[it.entity_id] == it.version) }}
     .sort{{ it.enqueued_at }}.collect{{ [it.entity_id, it.version] }}
"""

MARK_EMBEDDED = _locked(f"""
def found = {_BY_IDS}.has('session', within(vis)).toList().collectEntries{{ [(it.id().toString()): it.value('session')] }}
def todos = g.V(items.collect{{ it[2] }}.toArray()).hasLabel('mem_todo').has('tenant_id', t).has('ns', n)
             .has('session', within(vis)).toList().collectEntries{{ [(it.id().toString()): it] }}
def emb = g.V(items.collect{{ it[3] }}.toArray()).hasLabel('mem_embedded').toList().collectEntries{{ [(it.id().toString()): it] }}
for (r in items) {{
  if (!found.containsKey(r[0])) {{ continue }}
  if (emb.containsKey(r[3])) {{
    if (emb[r[3]].value('tenant_id') != t || emb[r[3]].value('ns') != n) {{ continue }}
    emb[r[3]].property('session', found[r[0]])
    emb[r[3]].property('version', r[1])
  }} else {{
    graph.addVertex(T.label, 'mem_embedded', T.id, r[3], 'tenant_id', t, 'ns', n, 'session', found[r[0]],
                    'model_key', k, 'entity_id', r[0], 'version', r[1])
  }}
  def q = todos[r[2]]
  if (q != null && (q.value('version') as int) <= (r[1] as int)) {{ q.remove(); todos.remove(r[2]) }}
}}
def result = 'ok'
""")

EMBEDDED_VERSION = ("g.V(mid).hasLabel('mem_embedded').has('tenant_id', t).has('ns', n).has('model_key', k)"
                    ".has('entity_id', e).has('session', within(vis)).values('version')")

PURGE_SESSION = _locked(f"""
def ents = {_NS_ENTITIES}.where(values('session').is(s)).toList()
def facts = g.E().hasLabel('fact').has('tenant_id', t).has('ns', n).has('session', s).toList()
def other = []
for (label in ['mem_todo', 'mem_embedded', 'mem_anchor']) {{
  other.addAll(g.V().hasLabel(label).has('tenant_id', t).has('ns', n).where(values('session').is(s)).toList())
}}
def ids = ents.collect{{ it.id().toString() }}.sort()
facts.each{{ it.remove() }}
other.each{{ it.remove() }}
ents.each{{ it.remove() }}
g.V(sessionId).hasLabel('mem_session').has('tenant_id', t).has('ns', n).drop().iterate()
logChanges(scopeV(), ids.collect{{ [s, it] }})
def result = ids
""")

CLAIM_SESSION = _locked("""
g.V(sessionId).hasLabel('mem_session').has('tenant_id', t).has('ns', n).drop().iterate()
graph.addVertex(T.label, 'mem_session', T.id, sessionId, 'tenant_id', t, 'ns', n, 'session', s, 'owner', owner,
                'created_at', now)
def result = 'ok'
""")

# the anchors of owner ``eid`` (an entity or a fact) in its session ``s`` replaced by ``rows``
# (store/rows.py anchor_rows)
_REPLACE_ANCHORS = """  g.V().hasLabel('mem_anchor').has('tenant_id', t).has('ns', n).where(values('entity_id').is(eid))
       .where(values('session').is(s)).drop().iterate()
  for (r in rows) {
    graph.addVertex(T.label, 'mem_anchor', T.id, r.id, 'aid', r.id, 'entity_id', eid, 'tenant_id', t, 'ns', n,
                    'session', s, 'anc_qname', r.qname, 'anc_name', r.name, 'anc_path', r.path, 'anc_hash', r.hash,
                    'anc_kind', r.kind, 'anc_line', r.line as int, 'anc_status', '', 'anc_status_at', '',
                    'anc_previous', '', 'anc_pos', r.position as int, 'created_at', now)
  }
"""

SET_ANCHORS = _locked(f"""
def own = {_BY_IDS}{_LIVE}.toList()
def result = 'missing'
if (!own.isEmpty()) {{
  def s = own[0].value('session')
{_REPLACE_ANCHORS}  result = 'ok'
}}
""")

# a fact's anchors: mem_anchor vertices whose entity_id is the fact's fid, in the fact's session
SET_FACT_ANCHORS = _locked(f"""
def own = g.E().hasLabel('fact').has('fid', eid).where(values('tenant_id').is(t)).where(values('ns').is(n))
               .where(values('session').is(within(vis))).where(values('valid_to').is('')).toList()
def result = 'missing'
if (!own.isEmpty()) {{
  def s = own[0].value('session')
{_REPLACE_ANCHORS}  result = 'ok'
}}
""")
# the live facts among these fids, of every session (the staleness pass's fact owners)
LIVE_FACT_OWNERS = ("g.E().hasLabel('fact').has('fid', within(fids)).where(values('tenant_id').is(t))"
                    ".where(values('ns').is(n)).where(values('valid_to').is(''))"
                    ".elementMap('fid', 'session', 'updated_at').toList()")

# the namespace's anchors of the given sessions (index prefix (tenant_id, ns)); owners are checked after
NS_ANCHORS = ("g.V().hasLabel('mem_anchor').has('tenant_id', t).has('ns', n)"
              ".where(values('session').is(within(vis))).elementMap().toList()")
ALL_ANCHORS = "g.V().hasLabel('mem_anchor').has('tenant_id', t).has('ns', n).elementMap().toList()"
LIVE_OWNERS = ("g.V(ids.toArray()).hasLabel('mem_entity').has('tenant_id', t).has('ns', n)"
               ".has('valid_to', '').elementMap('eid', 'session', 'updated_at').toList()")

UPDATE_ANCHORS = _locked("""
for (r in rows) {
  for (a in g.V(r.aid).hasLabel('mem_anchor').has('tenant_id', t).has('ns', n).toList()) {
    a.property('anc_qname', r.qname); a.property('anc_name', r.name); a.property('anc_path', r.path)
    a.property('anc_hash', r.hash)
    a.property('anc_kind', r.kind); a.property('anc_line', r.line as int); a.property('anc_status', r.status)
    a.property('anc_status_at', r.status_at); a.property('anc_previous', r.previous)
  }
}
def result = 'ok'
""")

SESSION_OWNERS = f"""
def owners = g.V().hasLabel('mem_session').has('tenant_id', t).has('ns', n).elementMap('session', 'owner').toList()
                  .collectEntries{{ [(it.session): it.owner] }}
def held = {_NS_ENTITIES}.values('session').toList() as Set
held.addAll(g.E().hasLabel('fact').has('tenant_id', t).has('ns', n).values('session').toList())
held.addAll(owners.keySet())
held.remove('')
held.sort().collect{{ [it, owners.getOrDefault(it, '')] }}
"""

DELETE_NAMESPACE = """
def n2 = 0
for (label in ['mem_entity', 'mem_change', 'mem_todo', 'mem_embedded', 'mem_scope', 'mem_anchor']) {
  while (true) {
    def found = g.V().hasLabel(label).has('tenant_id', t).has('ns', n).limit(txRows).id().toList()
    if (found.isEmpty()) { break }
    g.V(found.toArray()).drop().iterate()
    graph.tx().commit()
    n2 += found.size()
  }
}
n2
"""


# ---- conversion ----------------------------------------------------------------------------------

def _entity(r: dict[str, Any]) -> EntityRecord:
    return EntityRecord(id=r["eid"], tenant=r["tenant_id"], namespace=r["ns"], session=r["session"],
                        name=r["name"], aliases=tuple(json.loads(r.get("aliases_json") or "[]")),
                        type=r.get("type") or "", version=int(r["version"]), created_at=r["created_at"],
                        updated_at=r["updated_at"])


def _fact(row: dict[str, Any]) -> FactRecord:
    s, f, o = row["s"], row["f"], row["o"]
    return FactRecord(id=f["fid"], tenant=f["tenant_id"], namespace=f["ns"], session=f["session"],
                      subject_id=s["eid"], subject_name=s["name"], predicate=f["predicate"], object_id=o["eid"],
                      object_name=o["name"], confidence=float(f["confidence"]),
                      source_client=f.get("source_client") or "", created_at=f["created_at"],
                      updated_at=f["updated_at"])


def _anchor(r: dict[str, Any]) -> AnchorRecord:
    return AnchorRecord(id=r["aid"], entity_id=r["entity_id"], session=r["session"], qname=r["anc_qname"],
                        name=r["anc_name"], path=r["anc_path"], hash=r["anc_hash"], kind=r["anc_kind"],
                        line=int(r["anc_line"]), status=r.get("anc_status") or "",
                        status_at=r.get("anc_status_at") or "", previous=r.get("anc_previous") or "",
                        created_at=r.get("created_at") or "")


def _valid_ids(ids: Sequence[str]) -> list[str]:
    """Entity ids for a ``g.V(ids)`` lookup: distinct and non-empty (any string is a
    possible custom id; a foreign or unknown one finds nothing in this scope)."""
    return [i for i in dict.fromkeys(ids) if isinstance(i, str) and i]


class HugeGraphMemoryStore:
    """MemoryStore on a HugeGraph graph (thread-safe: one connection per thread)."""

    def __init__(self, url: str, *, graph: str = "hugegraph", user: str = "", password: str = "",
                 connect_timeout: float = 5.0, timeout: float = 10.0):
        self.client = GremlinClient(url, graph=graph, user=user, password=password,
                                    connect_timeout=connect_timeout, timeout=timeout)
        self.url = url
        ensure_schema(self.client, SCHEMA_SCRIPT, f"memory schema at {url}")
        rows = self.client.submit("memory schema", META, {"v": str(SCHEMA_VERSION)})
        if rows and rows[0] != str(SCHEMA_VERSION):
            raise StoreError(f"memory schema version {rows[0]} != {SCHEMA_VERSION}")

    # ---- plumbing ---------------------------------------------------------------------

    @staticmethod
    def _b(scope: Scope, *, durable_only: bool = False, **extra: Any) -> dict[str, Any]:
        return {"t": scope.tenant, "n": scope.namespace, "vis": [""] if durable_only else list(scope.visible_sessions),
                **extra}

    def _run(self, what: str, script: str, bindings: dict[str, Any]) -> list[Any]:
        return self.client.submit(f"memory {what}", script, bindings)

    def _locked(self, what: str, script: str, scope: Scope, bindings: dict[str, Any]) -> Any:
        bindings.setdefault("scopeId", vertex_id("ms", scope.tenant, scope.namespace))
        bindings.setdefault("k", "")
        rows = self.client.submit(f"memory {what}", script, bindings, timeout=max(self.client.timeout, 60.0))
        return rows

    def close(self) -> None:
        self.client.close()

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
        b = self._b(scope, s=session, name=name, type=type, now=now, eid=new_entity_id(),
                    aliasesJson=json.dumps(clean, ensure_ascii=False),
                    aliasKeys=[self._alias_key(scope, a) for a in clean])
        eid, status = self._locked("upsert_entity", UPSERT_ENTITY, scope, b)
        rec = self.get_entities(scope, [eid])[eid]
        return UpsertOutcome(entity=rec, status=status)

    @staticmethod
    def _alias_key(scope: Scope, alias: str) -> str:
        return index_key(scope.tenant, scope.namespace, alias)

    def get_entities(self, scope: Scope, ids: Sequence[str]) -> dict[str, EntityRecord]:
        ids = _valid_ids(ids)
        out: dict[str, EntityRecord] = {}
        for i in range(0, len(ids), IN_CHUNK):
            for r in self._run("get_entities", GET_ENTITIES, self._b(scope, ids=ids[i:i + IN_CHUNK])):
                out[r["eid"]] = _entity(r)
        return out

    def find_exact(
        self, scope: Scope, terms: Sequence[str], *, durable_only: bool = False,
        limit: int = 10,
    ) -> list[EntityRecord]:
        terms = exact_terms(terms)
        if not terms:
            return []
        found: dict[str, EntityRecord] = {}
        for i in range(0, len(terms), IN_CHUNK):
            part = terms[i:i + IN_CHUNK]
            b = self._b(scope, durable_only=durable_only, ids=part, terms=part,
                        aliasKeys=[self._alias_key(scope, a) for a in part])
            for r in self._run("find_exact", FIND_EXACT, b):
                found[r["eid"]] = _entity(r)
        # re-check every hit: it must be this scope's and match a term exactly
        wanted = set(terms)
        recs = [r for r in found.values() if r.tenant == scope.tenant and r.namespace == scope.namespace
                and (r.id in wanted or r.name in wanted or wanted.intersection(r.aliases))]
        return rank_exact(recs, terms, limit)

    def _ns_entities(self, scope: Scope) -> list[EntityRecord]:
        return [_entity(r) for r in self._run("entities", NS_ENTITIES, self._b(scope))]

    def iter_entities(self, scope: Scope) -> Iterator[EntityRecord]:
        """Ordered by id. The namespace's live visible entities are read in one query (no
        ordered index over ids in HugeGraph; docs/BACKENDS.md)."""
        yield from sorted(self._ns_entities(scope), key=lambda r: r.id)

    def list_entities(
        self, scope: Scope, *, durable: bool | None, after: tuple[str, str] | None,
        limit: int,
    ) -> list[tuple[EntityRecord, int]]:
        recs = self._ns_entities(scope)
        if durable is True:
            recs = [r for r in recs if r.session == ""]
        elif durable is False:
            recs = [r for r in recs if r.session == scope.session]
        if after is not None:
            recs = [r for r in recs if (r.name, r.id) > (after[0], after[1])]
        recs = sorted(recs, key=lambda r: (r.name, r.id))[:max(0, limit)]
        counts = dict.fromkeys((r.id for r in recs), 0)
        if recs:
            for f in self._touching(scope, list(counts)):
                for eid in (f.subject_id, f.object_id):
                    if eid in counts:
                        counts[eid] += 1
        return [(r, counts[r.id]) for r in recs]

    def forget_entities(self, scope: Scope, ids: Sequence[str], now: str) -> tuple[int, int]:
        ids = _valid_ids(ids)
        ne = nf = 0
        for i in range(0, len(ids), IN_CHUNK):
            e, f = self._locked("forget_entities", FORGET_ENTITIES, scope,
                                self._b(scope, ids=ids[i:i + IN_CHUNK], now=now))
            ne, nf = ne + int(e), nf + int(f)
        return (ne, nf)

    # ---- facts ------------------------------------------------------------------------

    def upsert_fact(
        self, scope: Scope, *, subject_id: str, predicate: str, object_id: str,
        confidence: float, source_client: str, durable: bool, now: str,
    ) -> tuple[FactRecord, bool]:
        session = "" if durable else scope.session
        for eid in (subject_id, object_id):
            if not _valid_ids([eid]):
                raise StoreError(f"fact endpoint {eid!r} is not a live entity in this scope")
        b = self._b(scope, sid=subject_id, oid=object_id, pred=predicate, conf=float(confidence),
                    src=source_client, now=now, fs=session, fid=new_fact_id())
        fid, status = self._locked("upsert_fact", UPSERT_FACT, scope, b)
        if fid == "missing":
            raise StoreError(f"fact endpoint {status} is not a live entity in this scope")
        if fid == "session-endpoint":
            raise StoreError("a durable fact cannot reference a session entity")
        rows = self._run("upsert_fact", FACTS_BY_FID, self._b(scope, fids=[fid]))
        if not rows:
            raise StoreError("the fact was written but is not visible in this scope")
        return _fact(rows[0]), status == "created"

    def _touching(self, scope: Scope, ids: Sequence[str]) -> list[FactRecord]:
        ids = _valid_ids(ids)
        found: dict[str, FactRecord] = {}
        for i in range(0, len(ids), IN_CHUNK):
            for r in self._run("facts_touching", FACTS_TOUCHING, self._b(scope, ids=ids[i:i + IN_CHUNK])):
                f = _fact(r)
                found[f.id] = f
        out = list(found.values())
        # confidence desc, updated_at desc, id (two sorts: the second key runs backwards)
        out.sort(key=lambda f: f.id)
        out.sort(key=lambda f: f.updated_at, reverse=True)
        out.sort(key=lambda f: f.confidence, reverse=True)
        return out

    def facts_touching(
        self, scope: Scope, entity_ids: Sequence[str], *, limit: int,
    ) -> list[FactRecord]:
        if limit <= 0:
            return []
        return self._touching(scope, entity_ids)[:limit]

    def count_facts_touching(self, scope: Scope, entity_ids: Sequence[str]) -> int:
        return len(self._touching(scope, entity_ids))

    def forget_facts(
        self, scope: Scope, *, subject_id: str, predicate: str, object_id: str, now: str,
    ) -> int:
        if not _valid_ids([subject_id]) or not _valid_ids([object_id]):
            return 0
        rows = self._locked("forget_facts", FORGET_FACTS, scope,
                            self._b(scope, sid=subject_id, oid=object_id, pred=predicate, now=now))
        return int(rows[0]) if rows else 0

    def forget_fact_ids(self, scope: Scope, ids: Sequence[str], now: str) -> list[str]:
        ids = _valid_ids(ids)
        done: set[str] = set()
        for i in range(0, len(ids), IN_CHUNK):
            done.update(self._locked("forget_fact_ids", FORGET_FACT_IDS, scope,
                                     self._b(scope, fids=ids[i:i + IN_CHUNK], now=now)))
        return [i for i in ids if i in done]

    # ---- change feed ------------------------------------------------------------------

    def change_cursor(self, scope: Scope) -> int:
        rows = self._run("change_cursor", CHANGE_CURSOR, self._b(scope))
        return int(rows[0]) if rows and rows[0] is not None else 0

    def changes_since(self, scope: Scope, after: int, limit: int = 10_000) -> tuple[int, list[str]]:
        rows = sorted(self._run("changes_since", CHANGES, self._b(scope, after=int(after))),
                      key=lambda r: int(r["seq"]))[:max(0, limit)]
        if not rows:
            return after, []
        return int(rows[-1]["seq"]), list(dict.fromkeys(r["entity_id"] for r in rows))

    # ---- embedding queue --------------------------------------------------------------

    @staticmethod
    def _todo_id(model_key: str, entity_id: str) -> str:
        """``mt:<digest of the model key>:<entity id>`` (the queue script builds the same
        from its prefix)."""
        return HugeGraphMemoryStore._todo_prefix(model_key) + entity_id

    def enqueue_embedding(self, scope: Scope, model_key: str, items: Sequence[TodoItem]) -> None:
        items = [it for it in items if _valid_ids([it.entity_id])]
        for i in range(0, len(items), IN_CHUNK):
            part = items[i:i + IN_CHUNK]
            self._locked("enqueue_embedding", ENQUEUE, scope, self._b(
                scope, k=model_key, ids=[it.entity_id for it in part],
                items=[[it.entity_id, int(it.version), self._todo_id(model_key, it.entity_id)] for it in part]))

    def enqueue_missing(self, scope: Scope, model_key: str) -> int:
        rows = self._locked("enqueue_missing", ENQUEUE_MISSING, scope,
                            self._b(scope, k=model_key, todoPrefix=self._todo_prefix(model_key)))
        return int(rows[0]) if rows else 0

    @staticmethod
    def _todo_prefix(model_key: str) -> str:
        return vertex_id("mt", model_key) + ":"

    def take_embedding_todo(self, scope: Scope, model_key: str, limit: int) -> list[TodoItem]:
        rows = self._run("take_embedding_todo", TODO, self._b(scope, k=model_key, sameVersion=True, ids=[]))
        return [TodoItem(entity_id=r[0], version=int(r[1])) for r in rows[:max(0, limit)]]

    def pending_embeddings(self, scope: Scope, model_key: str) -> int:
        return len(self._run("pending_embeddings", TODO, self._b(scope, k=model_key, sameVersion=False, ids=[])))

    def mark_embedded(self, scope: Scope, model_key: str, items: Sequence[TodoItem]) -> None:
        items = [it for it in items if _valid_ids([it.entity_id])]
        for i in range(0, len(items), IN_CHUNK):
            part = items[i:i + IN_CHUNK]
            self._locked("mark_embedded", MARK_EMBEDDED, scope, self._b(
                scope, k=model_key, ids=[it.entity_id for it in part],
                items=[[it.entity_id, int(it.version), self._todo_id(model_key, it.entity_id),
                        vertex_id("me", model_key) + ":" + it.entity_id] for it in part]))

    def embedded_version(self, scope: Scope, model_key: str, entity_id: str) -> int | None:
        rows = self._run("embedded_version", EMBEDDED_VERSION,
                         self._b(scope, k=model_key, e=entity_id, mid=vertex_id("me", model_key) + ":" + entity_id))
        return int(rows[0]) if rows else None

    # ---- session end ------------------------------------------------------------------

    # ---- anchors ----------------------------------------------------------------------

    def set_anchors(self, scope: Scope, entity_id: str, anchors: Sequence[AnchorSpec],
                    now: str) -> None:
        rows = anchor_rows(anchors)
        got = self._locked("set_anchors", SET_ANCHORS, scope,
                           self._b(scope, ids=[entity_id], eid=entity_id, rows=rows, now=now))
        if not got or got[0] != "ok":
            raise StoreError(f"no live entity {entity_id} in this scope")

    def _anchors(self, scope: Scope, vis: Sequence[str] | None
                 ) -> tuple[list[AnchorRecord], dict[str, dict[str, Any]]]:
        """The namespace's anchors in sessions ``vis`` (None: every session, for the staleness
        pass) whose entity is live (in the anchor's own session), and those entities
        (eid → session, updated_at)."""
        b = {"t": scope.tenant, "n": scope.namespace}
        raw = (self._run("anchors", ALL_ANCHORS, b) if vis is None
               else self._run("anchors", NS_ANCHORS, {**b, "vis": list(vis)}))
        raw = sorted(raw, key=lambda r: (r["entity_id"], int(r.get("anc_pos") or 0)))  # each entity's order
        rows = [_anchor(r) for r in raw]
        ids = _valid_ids([a.entity_id for a in rows])
        owners: dict[str, dict[str, Any]] = {}
        for i in range(0, len(ids), IN_CHUNK):
            for r in self._run("anchor owners", LIVE_OWNERS, {"t": scope.tenant, "n": scope.namespace,
                                                              "ids": ids[i:i + IN_CHUNK]}):
                owners[r["eid"]] = r
        live = [a for a in rows if a.entity_id in owners and owners[a.entity_id]["session"] == a.session]
        return live, owners

    def anchors_of(self, scope: Scope, entity_ids: Sequence[str]) -> dict[str, list[AnchorRecord]]:
        wanted = set(entity_ids)
        if not wanted:
            return {}
        rows, _ = self._anchors(scope, scope.visible_sessions)
        out: dict[str, list[AnchorRecord]] = {}
        for a in rows:  # in (entity, position) order
            if a.entity_id in wanted:
                out.setdefault(a.entity_id, []).append(a)
        return out

    def anchored_to(self, scope: Scope, qnames: Sequence[str], limit: int = 100) -> list[AnchorRecord]:
        wanted = set(qnames)
        if not wanted:
            return []
        rows, owners = self._anchors(scope, scope.visible_sessions)
        hits = [a for a in rows if a.qname in wanted]
        hits.sort(key=lambda a: owners[a.entity_id]["updated_at"], reverse=True)
        return hits[:limit]

    def anchors_to_check(self, scope: Scope, paths: Sequence[str], names: Sequence[str]
                         ) -> list[AnchorRecord]:
        p, nm = set(paths), set(names)
        rows, _ = self._anchors(scope, None)
        rows += self._fact_anchors(scope, None)[0]
        return sorted((a for a in rows if a.path in p or (a.status == "removed" and a.name in nm)),
                      key=lambda a: a.id)

    # ---- fact anchors (mem_anchor vertices whose entity_id is a fact's fid) -----------------

    supports_fact_anchors = True

    def set_fact_anchors(self, scope: Scope, fact_id: str, anchors: Sequence[AnchorSpec],
                         now: str) -> None:
        rows = anchor_rows(anchors)
        got = self._locked("set_fact_anchors", SET_FACT_ANCHORS, scope,
                           self._b(scope, eid=fact_id, rows=rows, now=now))
        if not got or got[0] != "ok":
            raise StoreError(f"no live fact {fact_id} in this scope")

    def _fact_anchors(self, scope: Scope, vis: Sequence[str] | None
                      ) -> tuple[list[AnchorRecord], dict[str, FactRecord]]:
        """The namespace's anchors in sessions ``vis`` (None: every session) whose fact is live
        in the anchor's own session, and (with ``vis``) those facts, visible with both
        endpoints live and visible."""
        b = {"t": scope.tenant, "n": scope.namespace}
        raw = (self._run("anchors", ALL_ANCHORS, b) if vis is None
               else self._run("anchors", NS_ANCHORS, {**b, "vis": list(vis)}))
        raw = sorted(raw, key=lambda r: (r["entity_id"], int(r.get("anc_pos") or 0)))
        rows = [_anchor(r) for r in raw]
        fids = _valid_ids([a.entity_id for a in rows])
        sessions: dict[str, str] = {}
        facts: dict[str, FactRecord] = {}
        for i in range(0, len(fids), IN_CHUNK):
            part = fids[i:i + IN_CHUNK]
            if vis is None:
                for r in self._run("fact anchor owners", LIVE_FACT_OWNERS, {**b, "fids": part}):
                    sessions[r["fid"]] = r["session"]
            else:
                for r in self._run("fact anchor owners", FACTS_BY_FID, self._b(scope, fids=part)):
                    f = _fact(r)
                    facts[f.id], sessions[f.id] = f, f.session
        return [a for a in rows if sessions.get(a.entity_id, None) == a.session], facts

    def fact_anchors_of(self, scope: Scope, fact_ids: Sequence[str]) -> dict[str, list[AnchorRecord]]:
        wanted = set(fact_ids)
        if not wanted:
            return {}
        rows, _ = self._fact_anchors(scope, scope.visible_sessions)
        out: dict[str, list[AnchorRecord]] = {}
        for a in rows:  # in (fact, position) order
            if a.entity_id in wanted:
                out.setdefault(a.entity_id, []).append(a)
        return out

    def facts_anchored_to(self, scope: Scope, qnames: Sequence[str], limit: int = 100
                          ) -> list[tuple[AnchorRecord, FactRecord]]:
        wanted = set(qnames)
        if not wanted:
            return []
        rows, facts = self._fact_anchors(scope, scope.visible_sessions)
        hits = [(a, facts[a.entity_id]) for a in rows if a.qname in wanted]
        hits.sort(key=lambda h: h[1].updated_at, reverse=True)
        return hits[:limit]

    def update_anchors(self, scope: Scope, anchors: Sequence[AnchorRecord]) -> None:
        rows = [{"aid": a.id, "qname": a.qname, "name": a.name, "path": a.path, "hash": a.hash, "kind": a.kind,
                 "line": a.line,
                 "status": a.status, "status_at": a.status_at, "previous": a.previous} for a in anchors]
        if rows:
            self._locked("update_anchors", UPDATE_ANCHORS, scope, self._b(scope, rows=rows))

    def purge_session(self, scope: Scope) -> list[str]:
        if not scope.session:
            raise StoreError("purge_session needs a session scope")
        return list(self._locked("purge_session", PURGE_SESSION, scope,
                                 self._b(scope, s=scope.session, sessionId=self._session_id(scope))))

    @staticmethod
    def _session_id(scope: Scope) -> str:
        return vertex_id("mss", scope.tenant, scope.namespace, scope.session)

    def claim_session(self, scope: Scope, owner: str, now: str) -> None:
        if not scope.session:
            raise StoreError("claim_session needs a session scope")
        self._locked("claim_session", CLAIM_SESSION, scope,
                     self._b(scope, s=scope.session, owner=owner, now=now, sessionId=self._session_id(scope)))

    def session_owners(self, scope: Scope) -> dict[str, str]:
        return {r[0]: r[1] for r in self._run("session_owners", SESSION_OWNERS, self._b(scope))}

    # ---- maintenance (not in the protocol) --------------------------------------------

    def delete_namespace(self, tenant: str, namespace: str) -> int:
        """Hard-delete everything of one tenant/namespace (tests and benchmarks)."""
        rows = self.client.submit("memory delete_namespace", DELETE_NAMESPACE,
                                  {"t": tenant, "n": namespace, "txRows": TX_ROWS}, timeout=300.0)
        return int(rows[0]) if rows else 0
