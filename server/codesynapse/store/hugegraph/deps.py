"""Module and finding vertices of the HugeGraph graph store (graph/depmodel.py's port).

Model (schema created at open with the rest, ``ifNotExist``; every root binds ``graph_id``):

- ``cs_manifest`` (id ``cmf:<sha256(graph_id, path)>``) ``{graph_id, path, kind, ecosystem,
  stamp, lockfile, notes, req_count}``, index ``(graph_id)``;
- ``cs_requirement`` (automatic id) ``{graph_id, manifest, ecosystem, dep_key, name,
  dep_constraint, resolved, scope, start_line, end_line}``: a REQUIRED_BY edge as a vertex
  (a manifest may require one module twice, in two scopes; HugeGraph keeps one edge per
  label between two vertices unless given sort keys). A module is the set of requirement
  vertices with its ``(ecosystem, dep_key)``, as in SQLite's ``requires`` table; indexes
  ``(graph_id, manifest)`` and ``(graph_id, dep_key)`` (HugeGraph refuses a second index on
  a prefix of one: a lookup by ``graph_id`` alone uses them);
- ``cs_finding`` (automatic id: the protocol's row id) ``{graph_id, tool, rule_id, level,
  rank, severity, message, path, start_line, start_col, end_line, end_col, symbol,
  file_hash, source}``, indexes ``(graph_id, path)``, ``(graph_id, tool)``, ``(graph_id,
  source)``; ``cs_finding_run`` (id from ``(graph_id, tool)``).

Writes run under the graph's server-side lock (as write_files does): index lookups first,
then drops, then the new vertices, committed every TX_ROWS. Mixed into HugeGraphStore.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from codesynapse.extract.manifests import Requirement
from codesynapse.graph.depmodel import (
    LEVELS,
    FindingRow,
    FindingRun,
    ManifestRow,
    RequirementRow,
)
from codesynapse.graph.model import ImportRow
from codesynapse.store.hugegraph.ids import vertex_id

_KEYS = {
    "ecosystem": "Text", "stamp": "Text", "lockfile": "Text", "notes": "Text", "req_count": "Int",
    "manifest": "Text", "dep_key": "Text", "dep_constraint": "Text", "resolved": "Text", "scope": "Text",
    "tool": "Text", "rule_id": "Text", "level": "Text", "rank": "Int", "severity": "Text", "message": "Text",
    "symbol": "Text", "file_hash": "Text", "source": "Text", "scanned_at": "Double", "results": "Int",
    "imported_at": "Double",
}
_MANIFEST_KEYS = ("path", "kind", "ecosystem", "stamp", "lockfile", "notes", "req_count")
_REQ_KEYS = ("manifest", "ecosystem", "dep_key", "name", "dep_constraint", "resolved", "scope", "start_line",
             "end_line")
_FINDING_KEYS = ("tool", "rule_id", "level", "rank", "severity", "message", "path", "start_line", "start_col",
                 "end_line", "end_col", "symbol", "file_hash", "source")
_RUN_KEYS = ("tool", "source", "stamp", "scanned_at", "results", "imported_at")
DEPS_LABELS = ("cs_requirement", "cs_manifest", "cs_finding", "cs_finding_run")
_RANK = {lv: i for i, lv in enumerate(LEVELS)}


def _q(names: Sequence[str]) -> str:
    return "[" + ", ".join(f"'{n}'" for n in names) + "]"


def deps_schema_lines() -> list[str]:
    def vlabel(label: str, props: Sequence[str], idstrategy: str) -> str:
        return (f"s.vertexLabel('{label}').properties({', '.join(repr(p) for p in ('graph_id', *props))})"
                f".{idstrategy}().ifNotExist().create()")

    def index(name: str, label: str, fields: Sequence[str]) -> str:
        return (f"s.indexLabel('{name}').onV('{label}').by({', '.join(repr(f) for f in fields)}).secondary()"
                ".ifNotExist().create()")

    return [
        *(f"s.propertyKey('{k}').as{t}().ifNotExist().create()" for k, t in _KEYS.items()),
        vlabel("cs_manifest", _MANIFEST_KEYS, "useCustomizeStringId"),
        index("cs_manifest_graph", "cs_manifest", ("graph_id",)),
        vlabel("cs_requirement", _REQ_KEYS, "useAutomaticId"),
        index("cs_requirement_manifest", "cs_requirement", ("graph_id", "manifest")),
        index("cs_requirement_key", "cs_requirement", ("graph_id", "dep_key")),
        vlabel("cs_finding", _FINDING_KEYS, "useAutomaticId"),
        index("cs_finding_path", "cs_finding", ("graph_id", "path")),
        index("cs_finding_tool", "cs_finding", ("graph_id", "tool")),
        index("cs_finding_source", "cs_finding", ("graph_id", "source")),
        vlabel("cs_finding_run", _RUN_KEYS, "useCustomizeStringId"),
        index("cs_finding_run_graph", "cs_finding_run", ("graph_id",)),
    ]


_LOCK = "synchronized (('codesynapse-graph\\u001f' + gid).intern()) {\n"
_KV = "def kv = { List keys, List row -> def out = []; keys.eachWithIndex{ k, i -> out << k << row[i] }; out }\n"
# drop ``ids`` (found before any change: HugeGraph refuses an index query in a transaction
# holding uncommitted changes), then add ``rows`` of ``label``, committing every txRows
_DROP_ADD = """
def all = ids.unique()
for (chunk in all.collate(txRows as int)) { g.V(chunk.toArray()).drop().iterate(); graph.tx().commit() }
def n = 0
for (r in rows) {
  graph.addVertex(*(head(r) + kv(props, body(r))))
  n += 1
  if (n %% (txRows as int) == 0) { graph.tx().commit() }
}
graph.tx().commit()
"""

WRITE_MANIFESTS = _LOCK + _KV + """
def ids = []
for (p in paths) { ids.addAll(g.V().hasLabel('cs_requirement').has('graph_id', gid).has('manifest', p).id().toList()) }
def manIds = paths.collect{ manifestIdOf[it] }
if (!manIds.isEmpty()) { ids.addAll(g.V(manIds.toArray()).hasLabel('cs_manifest').has('graph_id', gid).id().toList()) }
def props = %(man)s
def rows = manifestRows
def head = { r -> [T.label, 'cs_manifest', T.id, manifestIdOf[r[0]], 'graph_id', gid] }
def body = { r -> r }
""" % {"man": _q(_MANIFEST_KEYS)} + _DROP_ADD.replace("%%", "%") + """
props = %(req)s
for (r in reqRows) {
  graph.addVertex(*([T.label, 'cs_requirement', 'graph_id', gid] + kv(props, r)))
  n += 1
  if (n %% (txRows as int) == 0) { graph.tx().commit() }
}
graph.tx().commit()
}
'ok'
""" % {"req": _q(_REQ_KEYS)}

REPLACE_FINDINGS = _LOCK + _KV + """
def ids = []
for (t in tools) {
  ids.addAll(g.V().hasLabel('cs_finding').has('graph_id', gid).has('tool', t).id().toList())
  ids.addAll(g.V(runIdOf[t]).hasLabel('cs_finding_run').has('graph_id', gid).id().toList())
}
def props = %(run)s
def rows = runRows
def head = { r -> [T.label, 'cs_finding_run', T.id, runIdOf[r[0]], 'graph_id', gid] }
def body = { r -> r }
""" % {"run": _q(_RUN_KEYS)} + _DROP_ADD.replace("%%", "%") + """
props = %(f)s
for (r in findingRows) {
  graph.addVertex(*([T.label, 'cs_finding', 'graph_id', gid] + kv(props, r)))
  n += 1
  if (n %% (txRows as int) == 0) { graph.tx().commit() }
}
graph.tx().commit()
}
'ok'
""" % {"f": _q(_FINDING_KEYS)}

DELETE_FINDINGS_FROM = _LOCK + """
def ids = g.V().hasLabel('cs_finding').has('graph_id', gid).has('source', src).id().toList()
def runs = g.V().hasLabel('cs_finding_run').has('graph_id', gid).where(values('source').is(src)).id().toList()
for (chunk in (ids + runs).collate(txRows as int)) { g.V(chunk.toArray()).drop().iterate(); graph.tx().commit() }
ids.size()
}
"""

MANIFESTS = "g.V().hasLabel('cs_manifest').has('graph_id', gid).elementMap()"
REQUIREMENTS = "g.V().hasLabel('cs_requirement').has('graph_id', gid).elementMap()"
REQUIREMENTS_OF_KEYS = ("g.V().hasLabel('cs_requirement').has('graph_id', gid).has('dep_key', within(vals))"
                        ".elementMap()")
IMPORTS_OF_GRAPH = "g.V().hasLabel('cs_import').has('graph_id', gid).where(values('target').is('')).elementMap()"
FILE_LANGUAGES = "g.V().hasLabel('cs_file').has('graph_id', gid).project('p', 'l').by('path').by('language')"
FINDINGS_ALL = "g.V().hasLabel('cs_finding').has('graph_id', gid).elementMap()"
FINDINGS_OF_PATH = "g.V().hasLabel('cs_finding').has('graph_id', gid).has('path', p).elementMap()"
FINDING_RUNS = "g.V().hasLabel('cs_finding_run').has('graph_id', gid).elementMap()"

_IN_CHUNK = 100


class HugeGraphDepsMixin:
    graph_id: str

    def _manifest_id(self, path: str) -> str:
        return vertex_id("cmf", self.graph_id, path)

    def _run_id(self, tool: str) -> str:
        return vertex_id("cfr", self.graph_id, tool)

    # -- modules ---------------------------------------------------------------------------
    def manifests(self) -> list[ManifestRow]:
        rows = self._run("manifests", MANIFESTS)  # type: ignore[attr-defined]
        return sorted((ManifestRow(path=r["path"], kind=r["kind"], ecosystem=r["ecosystem"], stamp=r["stamp"],
                                   lockfile=r.get("lockfile") or "", notes=r.get("notes") or "",
                                   requirements=r.get("req_count") or 0) for r in rows), key=lambda m: m.path)

    def write_manifests(self, items: Sequence[tuple[ManifestRow, Sequence[Requirement]]],
                        deleted: Iterable[str] = ()) -> None:
        paths = list(dict.fromkeys([m.path for m, _ in items] + list(deleted)))
        if not paths:
            return
        mans = [[m.path, m.kind, m.ecosystem, m.stamp, m.lockfile, m.notes, len(reqs)] for m, reqs in items]
        reqs = [[m.path, r.ecosystem, r.key, r.name, r.constraint, r.resolved, r.scope, r.start_line, r.end_line]
                for m, rs in items for r in rs]
        self._write("write_manifests", WRITE_MANIFESTS, paths=paths,  # type: ignore[attr-defined]
                    manifestIdOf={p: self._manifest_id(p) for p in paths}, manifestRows=mans, reqRows=reqs)

    @staticmethod
    def _req(r: dict[str, Any]) -> tuple[RequirementRow, int]:
        return RequirementRow(manifest=r["manifest"], ecosystem=r["ecosystem"], name=r["name"], key=r["dep_key"],
                              constraint=r.get("dep_constraint") or "", resolved=r.get("resolved") or "",
                              scope=r.get("scope") or "", start_line=r["start_line"],
                              end_line=r["end_line"]), int(r["id"])

    def requirements(self, keys: Iterable[tuple[str, str]] | None = None) -> list[RequirementRow]:
        if keys is None:
            rows = [self._req(r) for r in self._run("requirements", REQUIREMENTS)]  # type: ignore[attr-defined]
        else:
            want = set(keys)
            vals = sorted({k for _e, k in want})
            rows = []
            for i in range(0, len(vals), _IN_CHUNK):
                rows.extend(self._req(r) for r in self._run("requirements", REQUIREMENTS_OF_KEYS,  # type: ignore[attr-defined]
                                                            vals=vals[i:i + _IN_CHUNK]))
            rows = [x for x in rows if (x[0].ecosystem, x[0].key) in want]
        rows.sort(key=lambda x: (x[0].ecosystem, x[0].key, x[0].manifest, x[0].start_line, x[1]))
        return [r for r, _ in rows]

    def _modules(self, text: str, ecosystem: str) -> list[tuple[str, str]]:
        t = text.lower()
        keys: set[tuple[str, str]] = set()
        for r in self.requirements():
            if ecosystem and r.ecosystem != ecosystem:
                continue
            if t and t not in r.key.lower() and t not in r.name.lower():
                continue
            keys.add((r.ecosystem, r.key))
        return sorted(keys)

    def module_keys(self, text: str = "", ecosystem: str = "", offset: int = 0,
                    limit: int = 100) -> list[tuple[str, str]]:
        return self._modules(text, ecosystem)[max(offset, 0):max(offset, 0) + max(limit, 0)]

    def count_modules(self, text: str = "", ecosystem: str = "") -> int:
        return len(self._modules(text, ecosystem))

    def imports_under(self, prefixes: Iterable[str]) -> list[ImportRow]:
        ps = tuple(sorted({p for p in prefixes if p}))
        if not ps:
            return []
        out = []
        for r in self._run("imports_under", IMPORTS_OF_GRAPH):  # type: ignore[attr-defined]
            m = r["module"]
            if any(m == p or m.startswith((p + ".", p + "/", p + "::")) for p in ps):
                out.append(self._imp(r))  # type: ignore[attr-defined]
        return sorted(out, key=lambda i: (i.path, i.line, i.module, i.name))

    def external_imports(self, limit: int = 1000) -> list[tuple[str, str, int]]:
        langs = {r["p"]: r["l"] or "" for r in self._run("external_imports", FILE_LANGUAGES)}  # type: ignore[attr-defined]
        files: dict[tuple[str, str], set[str]] = {}
        for r in self._run("external_imports", IMPORTS_OF_GRAPH):  # type: ignore[attr-defined]
            if r["path"] in langs:
                files.setdefault((langs[r["path"]], r["module"]), set()).add(r["path"])
        rows = sorted(((lang, mod, len(ps)) for (lang, mod), ps in files.items()), key=lambda x: (-x[2], x[0], x[1]))
        return rows[:max(limit, 0)]

    # -- findings --------------------------------------------------------------------------
    def replace_findings(self, runs: Sequence[FindingRun], rows: Sequence[FindingRow]) -> None:
        tools = sorted({r.tool for r in runs})
        self._write("replace_findings", REPLACE_FINDINGS, tools=tools,  # type: ignore[attr-defined]
                    runIdOf={t: self._run_id(t) for t in tools},
                    runRows=[[r.tool, r.source, r.stamp, float(r.scanned_at), int(r.results), float(r.imported_at)]
                             for r in runs],
                    findingRows=[[f.tool, f.rule_id, f.level, _RANK.get(f.level, len(LEVELS)), f.severity, f.message,
                                  f.path, f.start_line, f.start_col, f.end_line, f.end_col, f.symbol, f.file_hash,
                                  f.source] for f in rows])

    def delete_findings_from(self, source: str) -> int:
        n = self._write("delete_findings_from", DELETE_FINDINGS_FROM, src=source)  # type: ignore[attr-defined]
        return int(n[0]) if n else 0

    def finding_runs(self) -> list[FindingRun]:
        rows = self._run("finding_runs", FINDING_RUNS)  # type: ignore[attr-defined]
        return sorted((FindingRun(tool=r["tool"], source=r["source"], stamp=r["stamp"],
                                  scanned_at=float(r["scanned_at"]), results=int(r["results"]),
                                  imported_at=float(r["imported_at"])) for r in rows), key=lambda r: r.tool)

    def _findings(self, path: str | None, start: int, end: int) -> list[FindingRow]:
        rows = self._run("findings", FINDINGS_ALL) if path is None else \
            self._run("findings", FINDINGS_OF_PATH, p=path)  # type: ignore[attr-defined]
        out = []
        for r in rows:
            if end and not (start <= r["start_line"] <= end):
                continue
            out.append(FindingRow(id=int(r["id"]), tool=r["tool"], rule_id=r["rule_id"], level=r["level"],
                                  severity=r["severity"], message=r["message"], path=r["path"],
                                  start_line=r["start_line"], start_col=r["start_col"], end_line=r["end_line"],
                                  end_col=r["end_col"], symbol=r.get("symbol") or "", file_hash=r.get("file_hash") or "",
                                  source=r["source"]))
        out.sort(key=lambda f: (_RANK.get(f.level, len(LEVELS)), f.path, f.start_line, f.start_col, f.tool,
                                f.rule_id, f.id))
        return out

    def findings(self, path: str | None = None, start: int = 0, end: int = 0, limit: int = 1000) -> list[FindingRow]:
        return self._findings(path, start, end)[:max(limit, 0)]

    def findings_in_ranges(self, spans: Sequence[tuple[str, int, int]], limit: int = 1000) -> list[FindingRow]:
        """``findings(path, start, end, limit)`` of each span, one after the other: one
        request per distinct path."""
        of_path = {p: self._findings(p, 0, 0) for p in dict.fromkeys(p for p, _, _ in spans)}
        return [f for p, a, b in spans for f in [x for x in of_path[p] if a <= x.start_line <= b][:max(limit, 0)]]

    def count_findings_many(self, spans: Sequence[tuple[str, int, int]]) -> list[int]:
        """``count_findings(path, start, end)`` of each span: one request per distinct path."""
        of_path = {p: self._findings(p, 0, 0) for p in dict.fromkeys(p for p, _, _ in spans)}
        return [sum(1 for x in of_path[p] if not b or a <= x.start_line <= b) for p, a, b in spans]

    def count_findings(self, path: str | None = None, start: int = 0, end: int = 0) -> int:
        return len(self._findings(path, start, end))
