"""HugeGraph-only helpers for the contract suite: rows planted behind the store's back."""

from __future__ import annotations

import json

from codesynapse.store.hugegraph.graph import index_key

PLANT = """
graph.addVertex(T.label, 'mem_entity', T.id, e.id, 'eid', e.id, 'tenant_id', e.tenant, 'ns', e.namespace,
                'session', e.session, 'name', e.name, 'aliases_json', aliasesJson, 'alias_keys', [aliasKey] as Set,
                'type', '', 'version', 1, 'created_at', now, 'updated_at', now, 'valid_to', '')
graph.tx().commit()
def s = g.V(f.subject_id).next()
def o = g.V(f.object_id).next()
s.addEdge('fact', o, 'fid', f.id, 'tenant_id', f.tenant, 'ns', f.namespace, 'session', f.session,
          'predicate', f.predicate, 'confidence', 1.0d, 'source_client', '', 'created_at', now, 'updated_at', now,
          'valid_to', '')
'ok'
"""


def plant_memory_rows(memory_store, foreign_entity: dict, fact: dict, now: str) -> None:
    """Write a foreign entity (with one alias) and a fact straight into HugeGraph, with the
    same labels and keys as HugeGraphMemoryStore (test_memory_store.py: planted rows)."""
    e = foreign_entity
    memory_store.client.submit("plant", PLANT, {
        "e": e, "f": fact, "now": now, "aliasesJson": json.dumps([e["alias"]]),
        "aliasKey": index_key(e["tenant"], e["namespace"], e["alias"])})
