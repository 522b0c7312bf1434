"""The code graph in Apache HugeGraph 1.5 (the seed's second graph engine), over Gremlin.

Transport: HTTP ``POST`` of ``{"gremlin": script, "bindings": {...}, "aliases": {...}}`` to
the **Gremlin server port** (``gremlinserver.url`` of HugeGraph's rest-server.properties),
answered as untyped GraphSON 1.0 JSON; Python's standard library only (``http.client``),
one keep-alive connection per thread, dropped after any error. The REST API's ``/gremlin``
proxy is not used (it loses request/response sync after a request-level error, see
docs/HUGEGRAPH.md). Every script is a constant of this module; every value travels in
``bindings``; labels and property keys are constants. A script is one HugeGraph
transaction (committed when it returns, rolled back when it throws).

Model (schema created at open, ``ifNotExist``; HugeGraph is schema-first and refuses a
query on an unindexed property instead of scanning):

- ``cs_file`` (id ``cf:<sha256(graph_id, path)>``: one vertex per path, like a unique key)
  ``{graph_id, path, language, hash, size, mtime_ns, lines, module, status, reason,
  indexed_at}``, secondary index ``(graph_id, path)``;
- ``cs_file -cs_contains {graph_id}-> cs_symbol``; ``cs_symbol`` (automatic snowflake id:
  the protocol's integer row id, increasing in insertion order) ``{graph_id, path, qname,
  name, kind, …, ft_name, ft_qname, ft_terms, ft_keys}``, indexes ``(graph_id, qname)``,
  ``(graph_id, name)`` and ``ft_keys`` (a set of ``graph_id␟token`` search keys);
- ``cs_call`` (a call *site* is a vertex, for the reasons given in neo4j.py), indexes on
  ``(graph_id, target|caller|name|head|hint_name|path)``; ``cs_import``, ``cs_inherit``
  with ``(graph_id, path)`` and ``(graph_id, target)``; ``cs_meta`` (id from
  ``(graph_id, key)``).

Every root binds ``graph_id`` (an index condition, or ``has('graph_id', gid)`` on an id
lookup) and the one expansion (``cs_contains``) binds it on the edge's far end. Writers of
one graph id serialize on a server-side lock (``synchronized`` on an interned string in the
Gremlin server JVM) and commit inside it. Search: candidates come from the ``ft_keys``
index; the BM25 score is computed here with FTS5's formula (see docs/BACKENDS.md).
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

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
from codesynapse.store.hugegraph.client import (
    IN_CHUNK,
    GremlinClient,
    ensure_schema,
    index_key,
)
from codesynapse.store.hugegraph.deps import (
    DEPS_LABELS,
    HugeGraphDepsMixin,
    deps_schema_lines,
)
from codesynapse.store.hugegraph.ids import vertex_id
from codesynapse.store.text import callee_head, fold_tokens, name_terms, query_terms

log = logging.getLogger(__name__)

TX_ROWS = 3_000  # vertices written per transaction (HugeGraph's default tx capacity is 10,000)
MAX_REQUEST_BYTES = 8 * 1024 * 1024  # a write request's JSON (the server's maxContentLength must allow it)
CORPUS_TTL = 5.0  # seconds a search reuses the graph's symbol count and total length  # values per within(...) lookup
NO_LIMIT = 2**62
# FTS5's bm25() constants and our column weights (name, qname, terms), as in sqlite.py
BM25_K1, BM25_B = 1.2, 0.75
WEIGHTS = (4.0, 2.0, 1.0)


# ---- schema -------------------------------------------------------------------------------------

# property key → type (property keys are global in a HugeGraph graph; the memory store uses
# some of the same names with the same types)
_KEYS = {
    "graph_id": "Text", "path": "Text", "language": "Text", "hash": "Text", "size": "Long", "mtime_ns": "Long",
    "lines": "Int", "module": "Text", "status": "Text", "reason": "Text", "indexed_at": "Double",
    "qname": "Text", "name": "Text", "kind": "Text", "signature": "Text", "start_line": "Int", "end_line": "Int",
    "start_col": "Int", "end_col": "Int", "summary": "Text", "parent": "Text", "is_test": "Boolean",
    "exported": "Boolean", "ft_name": "Text", "ft_qname": "Text", "ft_terms": "Text", "ft_len": "Int",
    "caller": "Text", "callee": "Text", "head": "Text", "hint": "Text", "hint_name": "Text", "line": "Int",
    "col": "Int", "target": "Text", "resolution": "Text", "confidence": "Double", "alias": "Text",
    "child": "Text", "base": "Text", "meta_key": "Text", "meta_value": "Text",
    "mod_head": "Text", "mod_last": "Text", "base_name": "Text", "base_head": "Text", "call_args": "Text",
}
_FILE_KEYS = ("path", "language", "hash", "size", "mtime_ns", "lines", "module", "status", "reason", "indexed_at")
_SYM_KEYS = ("path", "qname", "name", "kind", "signature", "start_line", "end_line", "start_col", "end_col", "hash",
             "summary", "parent", "is_test", "exported", "language", "ft_name", "ft_qname", "ft_terms", "ft_len")
_CALL_KEYS = ("path", "caller", "callee", "name", "head", "hint", "hint_name", "line", "col", "kind", "target",
              "resolution", "confidence", "call_args")
_IMPORT_KEYS = ("path", "module", "name", "alias", "line", "target", "mod_head", "mod_last")
_INHERIT_KEYS = ("path", "child", "base", "kind", "line", "target", "resolution", "confidence", "base_name",
                 "base_head")
# keys that schema version 3 added to labels an older schema created (appended, nullable)
_APPENDED = {"cs_import": ("mod_head", "mod_last"), "cs_inherit": ("base_name", "base_head"),
             "cs_call": ("call_args",)}  # 6: what each argument is (CallSite.args)
_SYM_OUT = ("path", "qname", "name", "kind", "signature", "start_line", "end_line", "start_col", "end_col", "hash",
            "summary", "parent", "is_test", "exported", "language")


def _q(names: Sequence[str]) -> str:
    return "[" + ", ".join(f"'{n}'" for n in names) + "]"


def _schema_script() -> str:
    keys = "\n".join(f"s.propertyKey('{k}').as{t}().ifNotExist().create()" for k, t in _KEYS.items())

    def vlabel(label: str, props: Sequence[str], idstrategy: str) -> str:
        # HugeGraph's ifNotExist() still refuses ("has existed") a label that exists with other
        # properties, as one made by an older schema does: such a label is left as it is here
        # and gets its new keys from appended() below
        return (f"if (!graph.existsVertexLabel('{label}')) {{ s.vertexLabel('{label}')"
                f".properties({', '.join(repr(p) for p in props)}).{idstrategy}().ifNotExist().create() }}")

    def appended(label: str, props: Sequence[str]) -> str:
        # a label made by an older schema lacks these keys; a new one has them already
        names = ", ".join(repr(p) for p in props)
        return (f"if (!s.getVertexLabel('{label}').properties().containsAll([{names}].collect{{ "
                f"s.getPropertyKey(it).id() }})) {{ s.vertexLabel('{label}').properties({names})"
                f".nullableKeys({names}).append() }}")

    def index(name: str, label: str, fields: Sequence[str]) -> str:
        return f"s.indexLabel('{name}').onV('{label}').by({', '.join(repr(f) for f in fields)}).secondary().ifNotExist().create()"

    lines = [
        "def s = graph.schema()",
        keys,
        "s.propertyKey('ft_keys').asText().valueSet().ifNotExist().create()",
        vlabel("cs_meta", ("graph_id", "meta_key", "meta_value"), "useCustomizeStringId"),
        index("cs_meta_graph", "cs_meta", ("graph_id",)),
        vlabel("cs_file", ("graph_id", *_FILE_KEYS), "useCustomizeStringId"),
        index("cs_file_path", "cs_file", ("graph_id", "path")),
        vlabel("cs_symbol", ("graph_id", *_SYM_KEYS, "ft_keys"), "useAutomaticId"),
        index("cs_symbol_qname", "cs_symbol", ("graph_id", "qname")),
        index("cs_symbol_name", "cs_symbol", ("graph_id", "name")),
        index("cs_symbol_ft", "cs_symbol", ("ft_keys",)),
        "s.edgeLabel('cs_contains').sourceLabel('cs_file').targetLabel('cs_symbol').properties('graph_id')"
        ".ifNotExist().create()",
        vlabel("cs_call", ("graph_id", *_CALL_KEYS), "useAutomaticId"),
        *(index(f"cs_call_{k}", "cs_call", ("graph_id", k)) for k in ("target", "caller", "name", "head",
                                                                     "hint_name", "path")),
        vlabel("cs_import", ("graph_id", *_IMPORT_KEYS), "useAutomaticId"),
        vlabel("cs_inherit", ("graph_id", *_INHERIT_KEYS), "useAutomaticId"),
        *(appended(label, keys) for label, keys in _APPENDED.items()),
        index("cs_import_path", "cs_import", ("graph_id", "path")),
        *(index(f"cs_import_{k}", "cs_import", ("graph_id", k)) for k in ("module", "name", "alias", "mod_head",
                                                                          "mod_last")),
        index("cs_inherit_path", "cs_inherit", ("graph_id", "path")),
        index("cs_inherit_target", "cs_inherit", ("graph_id", "target")),
        index("cs_inherit_base_name", "cs_inherit", ("graph_id", "base_name")),
        index("cs_inherit_base_head", "cs_inherit", ("graph_id", "base_head")),
        *deps_schema_lines(),  # modules and findings: hugegraph_deps.py
        "'ok'",
    ]
    return "\n".join(lines)


SCHEMA_SCRIPT = _schema_script()
GRAPH_LABELS = ("cs_meta", "cs_file", "cs_symbol", "cs_call", "cs_import", "cs_inherit")


# ---- scripts ------------------------------------------------------------------------------------

_LOCK = "synchronized (('codesynapse-graph\\u001f' + gid).intern()) {\n"

# Delete everything the paths own. Index and adjacency lookups come first: HugeGraph refuses
# an index query in a transaction that holds uncommitted changes. Commits every TX_ROWS
# deletions (HugeGraph bounds a transaction); callers hold the graph lock.
_FIND_OWNED = """
def owned = []
for (p in paths) {
  owned.addAll(g.V(fileIdOf[p]).hasLabel('cs_file').has('graph_id', gid).out('cs_contains').hasLabel('cs_symbol')
               .has('graph_id', gid).id().toList())
}
for (chunk in paths.collate(100)) {
  owned.addAll(g.V().hasLabel('cs_call').has('graph_id', gid).has('path', within(chunk)).id().toList())
  owned.addAll(g.V().hasLabel('cs_import').has('graph_id', gid).has('path', within(chunk)).id().toList())
  owned.addAll(g.V().hasLabel('cs_inherit').has('graph_id', gid).has('path', within(chunk)).id().toList())
}
def fileIds = paths.collect{ fileIdOf[it] }
def files = fileIds.isEmpty() ? [] : g.V(fileIds.toArray()).hasLabel('cs_file').has('graph_id', gid).id().toList()
for (chunk in (owned + files).collate(txRows as int)) {
  g.V(chunk.toArray()).drop().iterate()
  if (owned.size() + files.size() > txRows) { graph.tx().commit() }
}
"""


_ADD_ROWS = """
def fileKeys = %(file_keys)s
def symKeys = %(sym_keys)s
def callKeys = %(call_keys)s
def importKeys = %(import_keys)s
def inheritKeys = %(inherit_keys)s
def kv = { List keys, List row -> def out = []; keys.eachWithIndex{ k, i -> out << k << row[i] }; out }
for (r in fileRows) {
  graph.addVertex(*([T.label, 'cs_file', T.id, r[0], 'graph_id', gid] + kv(fileKeys, r.subList(1, r.size()))))
}
def fileVertex = [:]
for (r in symRows) {
  def f = fileVertex[r[0]]
  if (f == null) {
    def found = g.V(fileIdOf[r[0]]).hasLabel('cs_file').has('graph_id', gid).toList()
    if (found.isEmpty()) { throw new IllegalArgumentException('no file row for a symbol') }
    f = found[0]
    fileVertex[r[0]] = f
  }
  def v = graph.addVertex(*([T.label, 'cs_symbol', 'graph_id', gid, 'ft_keys', r[-1] as Set]
                            + kv(symKeys, r.subList(0, r.size() - 1))))
  f.addEdge('cs_contains', v, 'graph_id', gid)
}
for (r in callRows) { graph.addVertex(*([T.label, 'cs_call', 'graph_id', gid] + kv(callKeys, r))) }
for (r in importRows) { graph.addVertex(*([T.label, 'cs_import', 'graph_id', gid] + kv(importKeys, r))) }
for (r in inheritRows) { graph.addVertex(*([T.label, 'cs_inherit', 'graph_id', gid] + kv(inheritKeys, r))) }
""" % {"file_keys": _q(_FILE_KEYS), "sym_keys": _q(_SYM_KEYS), "call_keys": _q(_CALL_KEYS),
       "import_keys": _q(_IMPORT_KEYS), "inherit_keys": _q(_INHERIT_KEYS)}

# One step of a write: optionally delete what ``paths`` own, then add rows, then commit,
# all under the graph's lock.
WRITE_SCRIPT = _LOCK + _FIND_OWNED + _ADD_ROWS + """
graph.tx().commit()
}
'ok'
"""

# Set the real properties of files written with placeholders (large batches, see write_files).
FINISH_FILES_SCRIPT = _LOCK + """
def keys = %s
for (r in fileRows) {
  def v = g.V(r[0]).hasLabel('cs_file').has('graph_id', gid).toList()
  if (v.isEmpty()) { throw new IllegalStateException('file row vanished during a write') }
  keys.eachWithIndex{ k, i -> v[0].property(k, r[i + 1]) }
}
graph.tx().commit()
}
'ok'
""" % _q(_FILE_KEYS)

# GraphStore.restamp_files: rows [file vertex id, hash, mtime_ns]; a file row that holds
# another hash is left as it is
RESTAMP_FILES = _LOCK + """
for (r in rows) {
  def v = g.V(r[0]).hasLabel('cs_file').has('graph_id', gid).toList()
  if (!v.isEmpty() && v[0].value('hash') == r[1]) {
    v[0].property('mtime_ns', r[2])
  }
}
graph.tx().commit()
}
'ok'
"""

# Update properties of rows found by id (one lookup for the batch, bound to the graph and
# the label; an id of another graph or label finds nothing).
_UPDATE = _LOCK + """
def found = [:]
for (chunk in rows.collate(500)) {
  g.V(chunk.collect{ it[0] }.toArray()).hasLabel('%(label)s').has('graph_id', gid).toList()
   .each{ found[it.id().asObject() as long] = it }
}
for (r in rows) {
  def v = found[r[0] as long]
  if (v != null) { %(sets)s }
}
graph.tx().commit()
}
'ok'
"""
# (a property write re-indexes the vertex: unchanged values are not written)
_SET_RESOLUTION = ("if (v.value('target') != r[1]) { v.property('target', r[1]) }; "
                   "if (v.value('resolution') != r[2]) { v.property('resolution', r[2]) }; "
                   "if (v.value('confidence') != r[3]) { v.property('confidence', r[3]) }")
UPDATE_CALLS = _UPDATE % {"label": "cs_call", "sets": _SET_RESOLUTION}
UPDATE_INHERITS = _UPDATE % {"label": "cs_inherit", "sets": _SET_RESOLUTION}
UPDATE_IMPORTS = _UPDATE % {"label": "cs_import", "sets": "if (v.value('target') != r[1]) { v.property('target', r[1]) }"}

SET_META = _LOCK + """
for (r in rows) {
  graph.addVertex(T.label, 'cs_meta', T.id, r[0], 'graph_id', gid, 'meta_key', r[1], 'meta_value', r[2])
}
graph.tx().commit()
}
'ok'
"""
GET_META = "g.V(mid).hasLabel('cs_meta').has('graph_id', gid).has('meta_key', mk).values('meta_value')"

DELETE_GRAPH = _LOCK + """
def n = 0
for (label in %s) {
  while (true) {
    def ids = g.V().hasLabel(label).has('graph_id', gid).limit(txRows).id().toList()
    if (ids.isEmpty()) { break }
    g.V(ids.toArray()).drop().iterate()
    graph.tx().commit()
    n += ids.size()
  }
}
n
}
""" % _q(("cs_symbol", "cs_call", "cs_import", "cs_inherit", "cs_file", "cs_meta", *DEPS_LABELS))

_SYM_MAP = f"elementMap({', '.join(repr(k) for k in _SYM_OUT)})"
FILES = "g.V().hasLabel('cs_file').has('graph_id', gid).elementMap()"
FILE = "g.V(fid).hasLabel('cs_file').has('graph_id', gid).has('path', p).elementMap()"
SYMBOLS_IN_FILE = (f"g.V(fid).hasLabel('cs_file').has('graph_id', gid).out('cs_contains').hasLabel('cs_symbol')"
                   f".has('graph_id', gid).{_SYM_MAP}")
SYMBOLS_BY = {k: f"g.V().hasLabel('cs_symbol').has('graph_id', gid).has('{k}', q).{_SYM_MAP}"
              for k in ("qname", "name")}
# a page of the graph's symbols: those of up to IN_CHUNK files (by file vertex id)
SYMBOLS_OF_FILES = (f"g.V(fids.toArray()).hasLabel('cs_file').has('graph_id', gid).out('cs_contains')"
                    f".hasLabel('cs_symbol').has('graph_id', gid).{_SYM_MAP}")
SYMBOL_BY_ID = f"g.V(ids.toArray()).hasLabel('cs_symbol').has('graph_id', gid).{_SYM_MAP}"
# search: every candidate's three token fields, per query term (idf needs the counts)
SEARCH_POSTINGS = """
def out = [:]
for (k in terms) {
  out[k] = g.V().hasLabel('cs_symbol').has('ft_keys', ConditionP.contains(k)).where(values('graph_id').is(gid))
            .project('id', 'n', 'q', 't').by(id).by('ft_name').by('ft_qname').by('ft_terms').toList()
}
out
"""
# BM25's N and average row length, over this graph
SEARCH_CORPUS = """
def lens = g.V().hasLabel('cs_symbol').has('graph_id', gid).values('ft_len').toList()
[total: lens.size(), length: lens.sum() ?: 0]
"""
CALLS_BY = {k: f"g.V().hasLabel('cs_call').has('graph_id', gid).has('{k}', q).elementMap()"
            for k in ("target", "caller", "name", "path")}
COUNT_CALLS_BY = {k: f"g.V().hasLabel('cs_call').has('graph_id', gid).has('{k}', q).count()"
                  for k in ("target", "caller")}
UNRESOLVED = ("g.V().hasLabel('cs_call').has('graph_id', gid).has('name', q).where(values('target').is(''))"
              ".where(values('resolution').is('unresolved'))")
CALLS_IN_PATHS = "g.V().hasLabel('cs_call').has('graph_id', gid).has('path', within(ps)).elementMap()"
CALLS_TOUCHING = """
def out = []
for (k in ['name', 'head', 'hint_name']) {
  out.addAll(g.V().hasLabel('cs_call').has('graph_id', gid).has(k, within(names)).elementMap().toList())
}
out
"""
CALLS_BY_HINT_NAME = "g.V().hasLabel('cs_call').has('graph_id', gid).has('hint_name', within(names)).elementMap()"
ROWS_OF = {label: f"g.V().hasLabel('{label}').has('graph_id', gid).elementMap()"
           for label in ("cs_call", "cs_import", "cs_inherit")}
# a page of a label's rows: those of up to IN_CHUNK paths
ROWS_OF_PATHS = {label: f"g.V().hasLabel('{label}').has('graph_id', gid).has('path', within(ps)).elementMap()"
                 for label in ("cs_call", "cs_import", "cs_inherit")}
FILE_PATHS = "g.V().hasLabel('cs_file').has('graph_id', gid).values('path')"
COUNT_OF = {label: f"g.V().hasLabel('{label}').has('graph_id', gid).count()"
            for label in ("cs_call", "cs_import", "cs_inherit")}
ROWS_OF_PATH = {label: f"g.V().hasLabel('{label}').has('graph_id', gid).has('path', p).elementMap()"
                for label in ("cs_import", "cs_inherit")}
# rows of a label whose property ``k`` (a constant, indexed with graph_id) is one of ``vals``
ROWS_WITH = {(label, k): f"g.V().hasLabel('{label}').has('graph_id', gid).has('{k}', within(vals)).elementMap()"
             for label, keys in (("cs_import", ("path", "module", "name", "alias", "mod_head", "mod_last")),
                                 ("cs_inherit", ("path", "base_name", "base_head")))
             for k in keys}
SUBTYPES = "g.V().hasLabel('cs_inherit').has('graph_id', gid).has('target', q).elementMap()"
# batch reads: up to IN_CHUNK keys (``qs``) per request
SYMBOLS_WITHIN = f"g.V().hasLabel('cs_symbol').has('graph_id', gid).has('qname', within(qs)).{_SYM_MAP}"
FILES_OF_IDS = "g.V(fids.toArray()).hasLabel('cs_file').has('graph_id', gid).elementMap()"
CALLS_WITHIN = {k: f"g.V().hasLabel('cs_call').has('graph_id', gid).has('{k}', within(qs)).elementMap()"
                for k in ("target", "caller")}
SUBTYPES_WITHIN = "g.V().hasLabel('cs_inherit').has('graph_id', gid).has('target', within(qs)).elementMap()"
COUNT_CALLS_WITHIN = {k: f"g.V().hasLabel('cs_call').has('graph_id', gid).has('{k}', within(qs))"
                         f".groupCount().by('{k}')"
                      for k in ("target", "caller")}
COUNT_UNRESOLVED_WITHIN = ("g.V().hasLabel('cs_call').has('graph_id', gid).has('name', within(qs))"
                           ".where(values('target').is('')).where(values('resolution').is('unresolved'))"
                           ".groupCount().by('name')")
STATS = """
def files = g.V().hasLabel('cs_file').has('graph_id', gid).project('s', 'l').by('status').by('language').toList()
[files: files,
 kinds: g.V().hasLabel('cs_symbol').has('graph_id', gid).groupCount().by('kind').next(),
 calls: g.V().hasLabel('cs_call').has('graph_id', gid).count().next(),
 resolved: g.V().hasLabel('cs_call').has('graph_id', gid).where(values('target').is(neq(''))).count().next(),
 imports: g.V().hasLabel('cs_import').has('graph_id', gid).count().next(),
 inherits: g.V().hasLabel('cs_inherit').has('graph_id', gid).count().next()]
"""
DUMP = """
def rows = { String label, List keys -> g.V().hasLabel(label).has('graph_id', gid).elementMap().toList()
                                         .collect{ m -> keys.collect{ m[it] } } }
[files: rows('cs_file', %s), symbols: rows('cs_symbol', %s), calls: rows('cs_call', %s),
 imports: rows('cs_import', %s), inherits: rows('cs_inherit', %s)]
""" % (_q(("path", "language", "hash", "size", "lines", "module", "status", "reason")), _q(_SYM_OUT),
       _q(("path", "caller", "callee", "name", "hint", "line", "col", "kind", "target", "resolution", "confidence")),
       _q(("path", "module", "name", "alias", "line", "target")),
       _q(("path", "child", "base", "kind", "line", "target", "resolution", "confidence")))


# ---- search terms -------------------------------------------------------------------------------

def search_keys(graph_id: str, tokens: Iterable[str]) -> list[str]:
    """Index keys of a symbol's search tokens: the graph id is part of every key, so the
    index lookup itself is bound to the graph (the root also re-checks ``graph_id``)."""
    return sorted({index_key(graph_id, t) for t in tokens})


def _bm25(terms: list[str], postings: dict[str, list[dict]], total: int, length: int) -> dict[Any, tuple[float, dict]]:
    """FTS5's bm25() with column weights (4, 2, 1), over this graph: per term, the
    weighted hit count in the row, saturated against the row's token count; IDF
    ln((N − n + 0.5)/(n + 0.5)), at least 1e-6. Returns id → (score, posting)."""
    avgdl = (length / total) if total else 1.0
    scores: dict[Any, float] = {}
    rows: dict[Any, dict] = {}
    for term in terms:
        hits = postings.get(term) or []
        n = len(hits)
        idf = max(math.log((total - n + 0.5) / (n + 0.5)), 1e-6) if total else 1e-6
        for h in hits:
            fields = (h["n"].split(), h["q"].split(), h["t"].split())
            freq = sum(w * f.count(term) for w, f in zip(WEIGHTS, fields))
            if freq <= 0:
                continue
            dl = sum(len(f) for f in fields)
            scores[h["id"]] = scores.get(h["id"], 0.0) + idf * (freq * (BM25_K1 + 1)) / (
                freq + BM25_K1 * (1 - BM25_B + BM25_B * dl / (avgdl or 1.0)))
            rows[h["id"]] = h
    return {k: (v, rows[k]) for k, v in scores.items()}


# ---- the store ----------------------------------------------------------------------------------

class HugeGraphStore(HugeGraphDepsMixin):
    """GraphStore on a HugeGraph 1.5 graph over its Gremlin server (thread-safe)."""

    capabilities = SERVER_CAPABILITIES  # docs/BACKENDS.md, "Transactions"
    # row ids are HugeGraph's 63-bit snowflake ids: a team checkout's overlay (store/composite.py)
    # numbers its rows above this
    id_ceiling = 1 << 63

    def __init__(self, url: str, graph_id: str, *, graph: str = "hugegraph", user: str = "", password: str = "",
                 connect_timeout: float = 5.0, read_timeout: float = 10.0, write_timeout: float = 300.0):
        self.client = GremlinClient(url, graph=graph, user=user, password=password,
                                    connect_timeout=connect_timeout, timeout=read_timeout)
        self.url = url
        self.graph_id = graph_id
        self.write_timeout = write_timeout
        self._tx_lock = threading.RLock()
        self._corpus: tuple[float, int, int] | None = None
        ensure_schema(self.client, SCHEMA_SCRIPT, f"graph schema at {url}")
        version = self.get_meta("schema_version")
        if version is not None and version != str(SCHEMA_VERSION):
            # derived data: drop this graph id and rebuild (as SQLite and Neo4j do)
            log.warning("graph %s has schema version %s != %s: dropping it to rebuild", graph_id, version,
                        SCHEMA_VERSION)
            self.delete_graph()
            version = None
        if version is None:
            self.set_meta({"schema_version": str(SCHEMA_VERSION)})

    # -- transactions (docs/BACKENDS.md, "Transactions": weaker than SQLite's) ------------------
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Serializes this process' writers of this store (a thread lock held for the block).
        The writes inside are not one transaction together: each protocol call stays its own
        HugeGraph transaction (a large write: several).
        Writers in other processes are not excluded (HugeGraph offers no lock that this
        store could hold across protocol calls)."""
        with self._tx_lock:
            yield

    def snapshot(self) -> AbstractContextManager[None]:
        """No read snapshot: each read is its own transaction on the server."""
        return nullcontext()

    # -- plumbing ----------------------------------------------------------------------------
    def _run(self, what: str, script: str, **bindings: Any) -> list[Any]:
        bindings.setdefault("gid", self.graph_id)
        return self.client.submit(what, script, bindings)

    def _write(self, what: str, script: str, **bindings: Any) -> list[Any]:
        bindings.setdefault("gid", self.graph_id)
        bindings.setdefault("txRows", TX_ROWS)
        return self.client.submit(what, script, bindings, timeout=self.write_timeout)

    def _one(self, what: str, script: str, **bindings: Any) -> Any:
        rows = self._run(what, script, **bindings)
        return rows[0] if rows else None

    def _map(self, what: str, script: str, **bindings: Any) -> dict[str, Any]:
        """A script that returns a map: the Gremlin server sends it entry by entry."""
        out: dict[str, Any] = {}
        for item in self._run(what, script, **bindings):
            out.update(item)
        return out

    def _file_id(self, path: str) -> str:
        return vertex_id("cf", self.graph_id, path)

    def close(self) -> None:
        self.client.close()

    # -- meta --------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        return self._one("get_meta", GET_META, mid=vertex_id("cm", self.graph_id, key), mk=key)

    def set_meta(self, values: dict[str, str]) -> None:
        rows = [[vertex_id("cm", self.graph_id, k), k, str(v)] for k, v in values.items()]
        # large values (a team base's resolver table: store/symtable.py) go in requests of at
        # most MAX_REQUEST_BYTES, each its own transaction
        for part in _chunks(rows, TX_ROWS, MAX_REQUEST_BYTES):
            self._write("set_meta", SET_META, rows=part)

    # -- writes ------------------------------------------------------------------------------
    @staticmethod
    def _call_row(path: str, c: CallSite, r: Resolution) -> list[Any]:
        return [path, c.caller, c.callee, c.name, callee_head(c.callee), c.receiver_hint,
                c.receiver_hint.rsplit(".", 1)[-1] if c.receiver_hint else "", c.line, c.col, c.kind,
                r.target, r.resolution, float(r.confidence), c.args]

    def _step(self, what: str, *, paths: Sequence[str] = (), files: Sequence[list] = (), syms: Sequence[list] = (),
              calls: Sequence[list] = (), imps: Sequence[list] = (), inhs: Sequence[list] = ()) -> None:
        # file vertex ids are computed here only (the script looks them up in fileIdOf)
        file_ids = {p: self._file_id(p) for p in [*paths, *(r[0] for r in syms)]}
        self._corpus = None
        self._write(what, WRITE_SCRIPT, paths=list(paths), fileIdOf=file_ids, fileRows=list(files),
                    symRows=list(syms), callRows=list(calls), importRows=list(imps), inheritRows=list(inhs))

    def write_files(
        self,
        extractions: Sequence[tuple[FileExtraction, int]],
        skipped: Sequence[FileRow] = (),
        call_targets: dict[tuple[str, int], Resolution] | None = None,
        inherit_targets: dict[tuple[str, int], Resolution] | None = None,
        import_targets: dict[tuple[str, int], str] | None = None,
        with_calls: bool = True,
    ) -> None:
        call_targets = call_targets or {}
        inherit_targets = inherit_targets or {}
        import_targets = import_targets or {}
        now = time.time()
        unresolved = Resolution("", "unresolved", 0.0)
        files: list[list[Any]] = []
        syms: list[list[Any]] = []
        calls: list[list[Any]] = []
        imps: list[list[Any]] = []
        inhs: list[list[Any]] = []
        for fx, mtime in extractions:
            files.append([self._file_id(fx.path), fx.path, fx.language, fx.hash, int(fx.size), int(mtime),
                          int(fx.lines), fx.module, "partial" if fx.partial else "indexed",
                          fx.error or ("syntax errors; partial extraction" if fx.partial else ""), now])
            for s in fx.symbols:
                terms = name_terms(s.name, s.qname)
                ft = (fold_tokens(s.name), fold_tokens(s.qname), fold_tokens(terms))
                tokens = " ".join(ft).split()
                syms.append([fx.path, s.qname, s.name, s.kind, s.signature, s.start_line, s.end_line, s.start_col,
                             s.end_col, s.hash, s.summary, s.parent, bool(s.is_test), bool(s.exported), fx.language,
                             *ft, len(tokens), search_keys(self.graph_id, tokens)])
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
            files.append([self._file_id(s.path), s.path, s.language, s.hash, int(s.size), int(s.mtime_ns),
                          int(s.lines), s.module, "skipped", s.reason, now])
        # the last row for a path wins (as a second INSERT of a path would fail on SQLite)
        by_path = {r[1]: r for r in files}
        files = list(by_path.values())
        paths = list(by_path)
        if not paths:
            return
        rows = len(files) + len(syms) + len(calls) + len(imps) + len(inhs)
        size = len(json.dumps([files, syms, calls, imps, inhs]))  # as sent (ASCII)
        if rows + len(syms) <= TX_ROWS and size <= MAX_REQUEST_BYTES:  # symbols also bring an edge
            self._step("write_files", paths=paths, files=files, syms=syms, calls=calls, imps=imps, inhs=inhs)
            return
        # Too large for one transaction: delete and write placeholder file rows first (size
        # and mtime -1, hash ''), then the content in chunks, then the real file rows. A
        # crash in between leaves placeholders, which the indexer sees as changed files and
        # rewrites (docs/BACKENDS.md, "Transactions").
        placeholders = [[r[0], r[1], r[2], "", -1, -1, 0, r[7], r[8], r[9], r[10]] for r in files]
        self._step("write_files", paths=paths, files=placeholders)
        for kind, rows_of_kind in (("syms", syms), ("calls", calls), ("imps", imps), ("inhs", inhs)):
            per = TX_ROWS // 2 if kind == "syms" else TX_ROWS
            for part in _chunks(rows_of_kind, per, MAX_REQUEST_BYTES):
                self._step("write_files", **{kind: part})
        for part in _chunks(files, TX_ROWS, MAX_REQUEST_BYTES):
            self._write("write_files", FINISH_FILES_SCRIPT, fileRows=[[r[0], *r[1:]] for r in part])

    def insert_calls(self, items: Sequence[tuple[str, CallSite, Resolution]]) -> None:
        """Add call sites for files written with ``with_calls=False``: one transaction per
        TX_ROWS call sites (HugeGraph bounds a transaction's size)."""
        rows = [self._call_row(path, c, r) for path, c, r in items]
        for part in _chunks(rows, TX_ROWS, MAX_REQUEST_BYTES):
            self._step("insert_calls", calls=part)

    def restamp_files(self, stamps: Sequence[tuple[str, str, int]]) -> None:
        """GraphStore.restamp_files: the mtime of rows that still hold the given hash."""
        self._update("restamp_files", RESTAMP_FILES, [[self._file_id(p), h, int(m)] for p, h, m in stamps if h])

    def delete_files(self, paths: Iterable[str]) -> None:
        paths = list(dict.fromkeys(paths))
        for i in range(0, len(paths), 1_000):
            self._step("delete_files", paths=paths[i:i + 1_000])

    def _update(self, what: str, script: str, rows: list[list[Any]]) -> None:
        for part in _chunks(rows, TX_ROWS, MAX_REQUEST_BYTES):
            self._write(what, script, rows=part)
        self._corpus = None

    def update_call_targets(self, updates: Sequence[tuple[int, Resolution]]) -> None:
        self._update("update_call_targets", UPDATE_CALLS,
                     [[int(i), r.target, r.resolution, float(r.confidence)] for i, r in updates])

    def update_inherit_targets(self, updates: Sequence[tuple[int, Resolution]]) -> None:
        self._update("update_inherit_targets", UPDATE_INHERITS,
                     [[int(i), r.target, r.resolution, float(r.confidence)] for i, r in updates])

    def update_import_targets(self, updates: Sequence[tuple[int, str]]) -> None:
        self._update("update_import_targets", UPDATE_IMPORTS, [[int(i), t] for i, t in updates])

    def delete_graph(self) -> int:
        """Remove every vertex of this graph id (maintenance: tests, benchmarks, rebuilds;
        not part of the protocol)."""
        n = self._write("delete_graph", DELETE_GRAPH)
        return int(n[0]) if n else 0

    # -- row conversion ----------------------------------------------------------------------
    @staticmethod
    def _file(r: dict[str, Any]) -> FileRow:
        return FileRow(path=r["path"], language=r.get("language") or "", hash=r.get("hash") or "",
                       size=r.get("size") or 0, mtime_ns=r.get("mtime_ns") or 0, lines=r.get("lines") or 0,
                       module=r.get("module") or "", status=r["status"], reason=r.get("reason") or "",
                       indexed_at=r.get("indexed_at") or 0.0)

    @staticmethod
    def _sym(r: dict[str, Any]) -> SymbolRow:
        return SymbolRow(id=int(r["id"]), path=r["path"], qname=r["qname"], name=r["name"], kind=r["kind"],
                         signature=r.get("signature") or "", start_line=r["start_line"], end_line=r["end_line"],
                         start_col=r["start_col"], end_col=r["end_col"], hash=r.get("hash") or "",
                         summary=r.get("summary") or "", parent=r.get("parent") or "",
                         is_test=bool(r.get("is_test")), exported=bool(r.get("exported")),
                         language=r.get("language") or "")

    @staticmethod
    def _call(r: dict[str, Any]) -> CallRow:
        return CallRow(id=int(r["id"]), path=r["path"], caller=r["caller"], callee=r["callee"], name=r["name"],
                       line=r["line"], col=r["col"], kind=r["kind"], hint=r["hint"], target=r["target"],
                       resolution=r["resolution"], confidence=float(r["confidence"]), args=r.get("call_args") or "")

    @staticmethod
    def _imp(r: dict[str, Any]) -> ImportRow:
        return ImportRow(path=r["path"], module=r["module"], name=r["name"], alias=r["alias"], line=r["line"],
                         target=r["target"])

    @staticmethod
    def _inh(r: dict[str, Any]) -> InheritRow:
        return InheritRow(path=r["path"], child=r["child"], base=r["base"], kind=r["kind"], line=r["line"],
                          target=r["target"], resolution=r["resolution"], confidence=float(r["confidence"]))

    @staticmethod
    def _sym_key(s: SymbolRow) -> tuple:
        return (s.qname, s.path, s.start_line, s.id)

    @staticmethod
    def _call_key(c: CallRow) -> tuple:
        return (c.path, c.line, c.col, c.callee, c.id)

    # -- reads -------------------------------------------------------------------------------
    def files(self) -> list[FileRow]:
        return sorted((self._file(r) for r in self._run("files", FILES)), key=lambda f: f.path)

    def file(self, path: str) -> FileRow | None:
        r = self._one("file", FILE, fid=self._file_id(path), p=path)
        return self._file(r) if r else None

    def symbols_in_file(self, path: str) -> list[SymbolRow]:
        rows = [self._sym(r) for r in self._run("symbols_in_file", SYMBOLS_IN_FILE, fid=self._file_id(path))]
        return sorted((s for s in rows if s.path == path), key=lambda s: (s.start_line, s.start_col, s.qname, s.id))

    def _paths(self) -> list[str]:
        return sorted(self._run("files", FILE_PATHS))

    def _bulk(self, what: str, script: str, **bindings: Any) -> list[Any]:
        """A read of one page of a whole-graph listing (longer timeout than a request)."""
        bindings.setdefault("gid", self.graph_id)
        return self.client.submit(what, script, bindings, timeout=self.write_timeout)

    def _rows_by_paths(self, what: str, label: str) -> list[dict[str, Any]]:
        """Every row of ``label`` in this graph, read IN_CHUNK paths per request (one
        response for a whole large graph would be hundreds of megabytes)."""
        paths = self._paths()
        out: list[dict[str, Any]] = []
        for i in range(0, len(paths), IN_CHUNK):
            out.extend(self._bulk(what, ROWS_OF_PATHS[label], ps=paths[i:i + IN_CHUNK]))
        # rows of a path without a file row (not written by the indexer, but the protocol
        # allows it): then read the label whole
        if len(out) != int(self._one(what, COUNT_OF[label]) or 0):
            out = self._bulk(what, ROWS_OF[label])
        return out

    def all_symbols(self) -> Iterable[SymbolRow]:
        """Ordered by (qname, path, start_line); read in pages of files, sorted in memory."""
        fids = [self._file_id(p) for p in self._paths()]
        rows: list[SymbolRow] = []
        for i in range(0, len(fids), IN_CHUNK):
            rows.extend(self._sym(r) for r in self._bulk("all_symbols", SYMBOLS_OF_FILES, fids=fids[i:i + IN_CHUNK]))
        return iter(sorted(rows, key=self._sym_key))

    def symbols_by_qname(self, qname: str) -> list[SymbolRow]:
        return sorted((self._sym(r) for r in self._run("symbols_by_qname", SYMBOLS_BY["qname"], q=qname)),
                      key=self._sym_key)

    def symbols_by_name(self, name: str, limit: int = 50) -> list[SymbolRow]:
        rows = sorted((self._sym(r) for r in self._run("symbols_by_name", SYMBOLS_BY["name"], q=name)),
                      key=self._sym_key)
        return rows[:_lim(limit)]

    def symbol_by_id(self, symbol_id: int) -> SymbolRow | None:
        r = self._one("symbol_by_id", SYMBOL_BY_ID, ids=[int(symbol_id)])
        return self._sym(r) if r else None

    def symbol_at(self, path: str, line: int) -> SymbolRow | None:
        rows = [s for s in self.symbols_in_file(path) if s.start_line <= line <= s.end_line and s.kind != "module"]
        rows.sort(key=lambda s: (s.end_line - s.start_line, -s.start_line, s.id))
        return rows[0] if rows else None

    def _search_all(self, text: str) -> list[tuple[Any, float]]:
        terms = query_terms(text)
        if not terms:
            return []
        keys = {index_key(self.graph_id, t): t for t in terms}
        res = self._map("search", SEARCH_POSTINGS, terms=list(keys))
        postings = {keys[k]: v for k, v in res.items() if k in keys}
        total, length = self._corpus_size()
        scored = _bm25(terms, postings, total, length)
        ranked = sorted(((sid, score, h) for sid, (score, h) in scored.items()),
                        key=lambda x: (-x[1], x[2]["q"], x[0]))
        return [(sid, score) for sid, score, _ in ranked]

    def _corpus_size(self) -> tuple[int, int]:
        """(symbols, their total token count) in this graph, for BM25's N and average row
        length; cached for CORPUS_TTL seconds (and dropped by this store's own writes)."""
        cached = self._corpus
        if cached is not None and time.monotonic() - cached[0] < CORPUS_TTL:
            return cached[1], cached[2]
        r = self._map("search", SEARCH_CORPUS)
        total, length = int(r.get("total") or 0), int(r.get("length") or 0)
        self._corpus = (time.monotonic(), total, length)
        return total, length

    def search(self, text: str, limit: int, offset: int = 0) -> list[tuple[SymbolRow, float]]:
        if limit == 0:
            return []
        ranked = self._search_all(text)
        start = max(0, offset)
        page = ranked[start:start + _lim(limit)]
        if not page:
            return []
        rows = {int(r["id"]): self._sym(r) for r in self._run("search", SYMBOL_BY_ID, ids=[sid for sid, _ in page])}
        # hydrated rows give the exact tie order (qname, path, start_line)
        out = [(rows[int(sid)], score) for sid, score in page if int(sid) in rows]
        return sorted(out, key=lambda x: (-x[1], x[0].qname, x[0].path, x[0].start_line, x[0].id))

    def count_search(self, text: str) -> int:
        return len(self._search_all(text))

    def _calls(self, what: str, key: str, value: str) -> list[CallRow]:
        return sorted((self._call(r) for r in self._run(what, CALLS_BY[key], q=value)), key=self._call_key)

    def callers(self, qname: str, limit: int = 1000) -> list[CallRow]:
        return self._calls("callers", "target", qname)[:_lim(limit)]

    def count_callers(self, qname: str) -> int:
        return int(self._one("count_callers", COUNT_CALLS_BY["target"], q=qname) or 0)

    def callees(self, caller: str, limit: int = 1000) -> list[CallRow]:
        return self._calls("callees", "caller", caller)[:_lim(limit)]

    def count_callees(self, caller: str) -> int:
        return int(self._one("count_callees", COUNT_CALLS_BY["caller"], q=caller) or 0)

    def unresolved_named(self, name: str, limit: int = 100) -> list[CallRow]:
        rows = sorted((self._call(r) for r in self._run("unresolved_named", UNRESOLVED + ".elementMap()", q=name)),
                      key=self._call_key)
        return rows[:_lim(limit)]

    def count_unresolved_named(self, name: str) -> int:
        return int(self._one("count_unresolved_named", UNRESOLVED + ".count()", q=name) or 0)

    def calls_in_files(self, paths: Iterable[str]) -> list[CallRow]:
        paths = list(paths)
        order = {p: i for i, p in reversed(list(enumerate(paths)))}
        out: list[CallRow] = []
        unique = list(order)
        for i in range(0, len(unique), IN_CHUNK):
            out.extend(self._call(r) for r in self._run("calls_in_files", CALLS_IN_PATHS, ps=unique[i:i + IN_CHUNK]))
        out.sort(key=lambda c: (order[c.path], c.line, c.col, c.callee, c.id))
        # a path listed twice is listed twice (as SQLite's loop does)
        if len(unique) != len(paths):
            by_path: dict[str, list[CallRow]] = {}
            for c in out:
                by_path.setdefault(c.path, []).append(c)
            return [c for p in paths for c in by_path.get(p, [])]
        return out

    def calls_touching(self, names: Iterable[str]) -> list[CallRow]:
        names = sorted(set(names))
        out: dict[int, CallRow] = {}
        for i in range(0, len(names), IN_CHUNK):
            for r in self._run("calls_touching", CALLS_TOUCHING, names=names[i:i + IN_CHUNK]):
                c = self._call(r)
                out[c.id] = c
        return [out[k] for k in sorted(out)]

    def calls_by_hint_name(self, names: Iterable[str]) -> list[CallRow]:
        names = sorted(set(names) - {""})
        out: dict[int, CallRow] = {}
        for i in range(0, len(names), IN_CHUNK):
            for r in self._run("calls_by_hint_name", CALLS_BY_HINT_NAME, names=names[i:i + IN_CHUNK]):
                c = self._call(r)
                out[c.id] = c
        return [out[k] for k in sorted(out)]

    def all_calls(self) -> Iterable[CallRow]:
        """In insertion (id) order. The graph's call sites are read into memory first
        (HugeGraph has no ordered index over ids; docs/BACKENDS.md)."""
        return iter(sorted((self._call(r) for r in self._rows_by_paths("all_calls", "cs_call")), key=lambda c: c.id))

    def imports(self, path: str | None = None) -> list[ImportRow]:
        if path is None:
            rows = [(self._imp(r), int(r["id"])) for r in self._run("imports", ROWS_OF["cs_import"])]
            rows.sort(key=lambda x: (x[0].path, x[0].line, x[0].module, x[0].name, x[1]))
        else:
            rows = [(self._imp(r), int(r["id"])) for r in self._run("imports", ROWS_OF_PATH["cs_import"], p=path)]
            rows.sort(key=lambda x: (x[0].line, x[0].module, x[0].name, x[1]))
        return [r for r, _ in rows]

    def all_imports(self) -> Iterable[tuple[int, ImportRow]]:
        return iter(sorted(((int(r["id"]), self._imp(r)) for r in self._rows_by_paths("all_imports", "cs_import")),
                           key=lambda x: x[0]))

    def _touching(self, what: str, label: str, keys: Sequence[tuple[str, Iterable[str]]]) -> list[dict[str, Any]]:
        """Rows of ``label`` whose property ``k`` holds one of its values, for each (k,
        values) pair (an index query each); each row once, in id order."""
        out: dict[int, dict[str, Any]] = {}
        for k, values in keys:
            vals = sorted(set(values))
            for i in range(0, len(vals), IN_CHUNK):
                for r in self._run(what, ROWS_WITH[(label, k)], vals=vals[i:i + IN_CHUNK]):
                    out[int(r["id"])] = r
        return [out[i] for i in sorted(out)]

    def imports_touching(self, paths: Iterable[str], names: Iterable[str],
                         modules: Iterable[str] = ()) -> list[tuple[int, ImportRow]]:
        names = list(names)
        rows = self._touching("imports_touching", "cs_import",
                              (("path", paths), ("name", names), ("alias", names), ("mod_head", names),
                               ("mod_last", names), ("module", modules)))
        return [(int(r["id"]), self._imp(r)) for r in rows]

    def inherits_touching(self, paths: Iterable[str], names: Iterable[str]) -> list[tuple[int, InheritRow]]:
        names = list(names)
        rows = self._touching("inherits_touching", "cs_inherit",
                              (("path", paths), ("base_name", names), ("base_head", names)))
        return [(int(r["id"]), self._inh(r)) for r in rows]

    def inherits(self, path: str | None = None) -> list[InheritRow]:
        if path is None:
            rows = [(self._inh(r), int(r["id"])) for r in self._run("inherits", ROWS_OF["cs_inherit"])]
            rows.sort(key=lambda x: (x[0].path, x[0].line, x[0].child, x[0].base, x[1]))
        else:
            rows = [(self._inh(r), int(r["id"])) for r in self._run("inherits", ROWS_OF_PATH["cs_inherit"], p=path)]
            rows.sort(key=lambda x: (x[0].line, x[0].child, x[0].base, x[1]))
        return [r for r, _ in rows]

    def all_inherits(self) -> Iterable[tuple[int, InheritRow]]:
        return iter(sorted(((int(r["id"]), self._inh(r)) for r in self._rows_by_paths("all_inherits",
                                                                                      "cs_inherit")),
                           key=lambda x: x[0]))

    def subtypes(self, qname: str, limit: int = 100) -> list[InheritRow]:
        rows = [(self._inh(r), int(r["id"])) for r in self._run("subtypes", SUBTYPES, q=qname)]
        rows.sort(key=lambda x: (x[0].child, x[0].path, x[1]))
        return [r for r, _ in rows][:_lim(limit)]

    # -- batch reads: one request per IN_CHUNK keys ------------------------------------------
    def _within(self, what: str, script: str, keys: Iterable[str]) -> list[Any]:
        ks = list(dict.fromkeys(keys))
        out: list[Any] = []
        for i in range(0, len(ks), IN_CHUNK):
            out.extend(self._run(what, script, qs=ks[i:i + IN_CHUNK]))
        return out

    def symbols_by_qnames(self, qnames: Iterable[str]) -> dict[str, list[SymbolRow]]:
        out: dict[str, list[SymbolRow]] = {}
        for r in self._within("symbols_by_qnames", SYMBOLS_WITHIN, qnames):
            out.setdefault(r["qname"], []).append(self._sym(r))
        return {q: sorted(rows, key=self._sym_key) for q, rows in out.items()}

    def files_by_paths(self, paths: Iterable[str]) -> dict[str, FileRow]:
        ps = list(dict.fromkeys(paths))
        wanted = set(ps)
        out: dict[str, FileRow] = {}
        for i in range(0, len(ps), IN_CHUNK):
            for r in self._run("files_by_paths", FILES_OF_IDS, fids=[self._file_id(p) for p in ps[i:i + IN_CHUNK]]):
                if r.get("path") in wanted:
                    out[r["path"]] = self._file(r)
        return out

    def symbols_in_files(self, paths: Iterable[str]) -> dict[str, list[SymbolRow]]:
        ps = list(dict.fromkeys(paths))
        wanted = set(ps)
        out: dict[str, list[SymbolRow]] = {}
        for i in range(0, len(ps), IN_CHUNK):
            fids = [self._file_id(p) for p in ps[i:i + IN_CHUNK]]
            for r in self._run("symbols_in_files", SYMBOLS_OF_FILES, fids=fids):
                s = self._sym(r)
                if s.path in wanted:
                    out.setdefault(s.path, []).append(s)
        return {p: sorted(rows, key=lambda s: (s.start_line, s.start_col, s.qname, s.id)) for p, rows in out.items()}

    def _calls_many(self, what: str, prop: str, keys: Iterable[str], limit: int) -> dict[str, list[CallRow]]:
        out: dict[str, list[CallRow]] = {}
        for r in self._within(what, CALLS_WITHIN[prop], keys):
            c = self._call(r)
            out.setdefault(c.target if prop == "target" else c.caller, []).append(c)
        cut = {k: sorted(rows, key=self._call_key)[:_lim(limit)] for k, rows in out.items()}
        return {k: rows for k, rows in cut.items() if rows}

    def callers_many(self, qnames: Iterable[str], limit: int = 1000) -> dict[str, list[CallRow]]:
        return self._calls_many("callers_many", "target", qnames, limit)

    def callees_many(self, callers: Iterable[str], limit: int = 1000) -> dict[str, list[CallRow]]:
        return self._calls_many("callees_many", "caller", callers, limit)

    def subtypes_many(self, qnames: Iterable[str], limit: int = 100) -> dict[str, list[InheritRow]]:
        out: dict[str, list[tuple[InheritRow, int]]] = {}
        for r in self._within("subtypes_many", SUBTYPES_WITHIN, qnames):
            out.setdefault(r["target"], []).append((self._inh(r), int(r["id"])))
        cut = {q: [x for x, _ in sorted(rows, key=lambda t: (t[0].child, t[0].path, t[1]))][:_lim(limit)]
               for q, rows in out.items()}
        return {q: rows for q, rows in cut.items() if rows}

    def _counts(self, what: str, script: str, keys: Iterable[str]) -> dict[str, int]:
        ks = list(dict.fromkeys(keys))
        got: dict[str, int] = {}
        for i in range(0, len(ks), IN_CHUNK):
            for item in self._run(what, script, qs=ks[i:i + IN_CHUNK]):
                got.update({k: int(v) for k, v in item.items()})
        return {k: got.get(k, 0) for k in ks}

    def relation_counts(self, qnames: Iterable[str], names: Iterable[str] = ()
                        ) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
        qs = list(dict.fromkeys(qnames))
        return (self._counts("relation_counts", COUNT_CALLS_WITHIN["target"], qs),
                self._counts("relation_counts", COUNT_CALLS_WITHIN["caller"], qs),
                self._counts("relation_counts", COUNT_UNRESOLVED_WITHIN, names))

    def stats(self) -> GraphStats:
        r = self._map("stats", STATS)
        files = r.get("files") or []
        langs: dict[str, int] = {}
        for f in files:
            if f["s"] != "skipped":
                langs[f["l"]] = langs.get(f["l"], 0) + 1
        kinds = r.get("kinds") or {}
        return GraphStats(
            files=sum(1 for f in files if f["s"] != "skipped"),
            skipped=sum(1 for f in files if f["s"] == "skipped"),
            symbols=sum(kinds.values()),
            calls=int(r.get("calls") or 0),
            resolved_calls=int(r.get("resolved") or 0),
            imports=int(r.get("imports") or 0),
            inherits=int(r.get("inherits") or 0),
            languages=dict(sorted(langs.items())),
            kinds=dict(sorted(kinds.items())),
        )

    def dump(self) -> dict[str, list[tuple]]:
        """The same tuples as ``SqliteGraphStore.dump`` (booleans as 0/1)."""
        d: dict[str, Any] = {}
        for item in self._bulk("dump", DUMP):
            d.update(item)
        out: dict[str, list[tuple]] = {}
        for key in ("files", "symbols", "calls", "imports", "inherits"):
            rows = []
            for row in d.get(key) or []:
                rows.append(tuple(int(v) if isinstance(v, bool) else v for v in row))
            out[key] = sorted(rows)
        return out


def _chunks(rows: Sequence[Any], per: int, max_bytes: int) -> Iterable[list[Any]]:
    """Consecutive slices of at most ``per`` rows and about ``max_bytes`` of JSON."""
    part: list[Any] = []
    size = 0
    for r in rows:
        n = len(json.dumps(r)) + 1
        if part and (len(part) >= per or size + n > max_bytes):
            yield part
            part, size = [], 0
        part.append(r)
        size += n
    if part:
        yield part


def _lim(limit: int) -> int:
    """A negative limit means "no limit", as SQLite's LIMIT -1."""
    return NO_LIMIT if limit < 0 else int(limit)
