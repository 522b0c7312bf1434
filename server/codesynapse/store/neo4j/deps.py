"""Module and finding nodes of the Neo4j graph store (graph/depmodel.py's port).

Model (constants; values are parameters; every root binds ``graph_id``):

- ``(:CsManifest {graph_id, path, kind, ecosystem, stamp, lockfile, notes, requirements})``,
  unique on ``(graph_id, path)``;
- ``(:CsModule {graph_id, ecosystem, key})-[:REQUIRED_BY {graph_id, name, constraint,
  resolved, scope, start_line, end_line}]->(:CsManifest)``: one module node per
  ``(graph_id, ecosystem, key)``, dropped with its last REQUIRED_BY edge;
- ``(:CsFinding {graph_id, id, tool, rule_id, level, rank, severity, message, path,
  start_line, start_col, end_line, end_col, symbol, file_hash, source})``: like a call
  site, a finding is a node that names its file and symbol (files and symbols are rewritten
  on every index; an AFFECTS relationship would be re-wired each time);
- ``(:CsFindingRun {graph_id, tool, source, stamp, scanned_at, results, imported_at})``.

Mixed into Neo4jGraphStore (its ``_rows``, ``_write``, ``_send``, ``_alloc``).
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

DEPS_SCHEMA = (
    "CREATE CONSTRAINT cs_manifest_key IF NOT EXISTS FOR (n:CsManifest) REQUIRE (n.graph_id, n.path) IS UNIQUE",
    "CREATE CONSTRAINT cs_module_key IF NOT EXISTS FOR (n:CsModule) REQUIRE (n.graph_id, n.ecosystem, n.key) IS UNIQUE",
    "CREATE CONSTRAINT cs_finding_run_key IF NOT EXISTS FOR (n:CsFindingRun) REQUIRE (n.graph_id, n.tool) IS UNIQUE",
    "CREATE INDEX cs_module_graph IF NOT EXISTS FOR (n:CsModule) ON (n.graph_id)",
    "CREATE INDEX cs_finding_path IF NOT EXISTS FOR (n:CsFinding) ON (n.graph_id, n.path)",
    "CREATE INDEX cs_finding_tool IF NOT EXISTS FOR (n:CsFinding) ON (n.graph_id, n.tool)",
    "CREATE INDEX cs_finding_source IF NOT EXISTS FOR (n:CsFinding) ON (n.graph_id, n.source)",
    "CREATE INDEX cs_finding_graph IF NOT EXISTS FOR (n:CsFinding) ON (n.graph_id)",
)
DEPS_LABELS = ("CsFinding", "CsFindingRun", "CsModule", "CsManifest")
_RANK = {lv: i for i, lv in enumerate(LEVELS)}

_FINDING_PROPS = ("tool", "rule_id", "level", "rank", "severity", "message", "path", "start_line", "start_col",
                  "end_line", "end_col", "symbol", "file_hash", "source", "id")
_INSERT_FINDINGS = ("UNWIND $rows AS r CREATE (n:CsFinding {graph_id: $g, "
                    + ", ".join(f"{k}: r[{i}]" for i, k in enumerate(_FINDING_PROPS)) + "})")
_FINDING_ORDER = " ORDER BY n.rank, n.path, n.start_line, n.start_col, n.tool, n.rule_id, n.id"


class Neo4jDepsMixin:
    graph_id: str

    # -- modules ---------------------------------------------------------------------------
    def manifests(self) -> list[ManifestRow]:
        rows = self._rows("manifests", "MATCH (m:CsManifest {graph_id: $g}) RETURN m {.*} ORDER BY m.path")  # type: ignore[attr-defined]
        return [ManifestRow(path=r["path"], kind=r["kind"], ecosystem=r["ecosystem"], stamp=r["stamp"],
                            lockfile=r["lockfile"], notes=r["notes"], requirements=r["requirements"]) for r in rows]

    def write_manifests(self, items: Sequence[tuple[ManifestRow, Sequence[Requirement]]],
                        deleted: Iterable[str] = ()) -> None:
        paths = [m.path for m, _ in items] + list(deleted)
        if not paths:
            return
        mans = [[m.path, m.kind, m.ecosystem, m.stamp, m.lockfile, m.notes, len(reqs)] for m, reqs in items]
        reqs = [[m.path, r.ecosystem, r.key, r.name, r.constraint, r.resolved, r.scope, r.start_line, r.end_line]
                for m, rs in items for r in rs]
        g = self.graph_id

        def work(tx):
            tx.run("UNWIND $paths AS p MATCH (m:CsManifest {graph_id: $g, path: p}) DETACH DELETE m",
                   paths=paths, g=g).consume()
            self._send(tx, "UNWIND $rows AS r CREATE (:CsManifest {graph_id: $g, path: r[0], kind: r[1], "  # type: ignore[attr-defined]
                           "ecosystem: r[2], stamp: r[3], lockfile: r[4], notes: r[5], requirements: r[6]})",
                       mans, g=g)
            self._send(tx, "UNWIND $rows AS r MATCH (f:CsManifest {graph_id: $g, path: r[0]}) "  # type: ignore[attr-defined]
                           "MERGE (m:CsModule {graph_id: $g, ecosystem: r[1], key: r[2]}) "
                           "CREATE (m)-[:REQUIRED_BY {graph_id: $g, name: r[3], constraint: r[4], resolved: r[5], "
                           "scope: r[6], start_line: r[7], end_line: r[8]}]->(f)", reqs, g=g)
            tx.run("MATCH (m:CsModule {graph_id: $g}) WHERE NOT (m)-[:REQUIRED_BY]->() DELETE m", g=g).consume()

        self._write("write_manifests", work)  # type: ignore[attr-defined]

    def requirements(self, keys: Iterable[tuple[str, str]] | None = None) -> list[RequirementRow]:
        ret = ("RETURN {manifest: f.path, ecosystem: m.ecosystem, key: m.key, name: r.name, constraint: r.constraint, "
               "resolved: r.resolved, scope: r.scope, start_line: r.start_line, end_line: r.end_line} AS x "
               "ORDER BY x.ecosystem, x.key, x.manifest, x.start_line")
        if keys is None:
            rows = self._rows("requirements", "MATCH (m:CsModule {graph_id: $g})-[r:REQUIRED_BY]->(f:CsManifest) "  # type: ignore[attr-defined]
                                              + ret)
        else:
            ks = [list(k) for k in sorted(set(keys))]
            if not ks:
                return []
            rows = self._rows("requirements", "UNWIND $ks AS k MATCH (m:CsModule {graph_id: $g, ecosystem: k[0], "  # type: ignore[attr-defined]
                                              "key: k[1]})-[r:REQUIRED_BY]->(f:CsManifest) " + ret, ks=ks)
        return [RequirementRow(**r) for r in rows]

    _MODULE_WHERE = ("MATCH (m:CsModule {graph_id: $g}) WHERE ($e = '' OR m.ecosystem = $e) AND ($t = '' OR "
                     "toLower(m.key) CONTAINS $t OR EXISTS { MATCH (m)-[r:REQUIRED_BY]->() "
                     "WHERE toLower(r.name) CONTAINS $t }) ")

    def module_keys(self, text: str = "", ecosystem: str = "", offset: int = 0,
                    limit: int = 100) -> list[tuple[str, str]]:
        rows = self._rows("module_keys", self._MODULE_WHERE + "RETURN [m.ecosystem, m.key] AS k "  # type: ignore[attr-defined]
                                         "ORDER BY k[0], k[1] SKIP $o LIMIT $l",
                          e=ecosystem, t=text.lower(), o=max(offset, 0), l=max(limit, 0))
        return [(r[0], r[1]) for r in rows]

    def count_modules(self, text: str = "", ecosystem: str = "") -> int:
        return int(self._scalar("count_modules", self._MODULE_WHERE + "RETURN count(m)",  # type: ignore[attr-defined]
                                e=ecosystem, t=text.lower()) or 0)

    def imports_under(self, prefixes: Iterable[str]) -> list[ImportRow]:
        ps = sorted({p for p in prefixes if p})
        if not ps:
            return []
        rows = self._rows("imports_under", "UNWIND $ps AS p MATCH (i:CsImport {graph_id: $g}) WHERE i.target = '' "  # type: ignore[attr-defined]
                                           "AND (i.module = p OR i.module STARTS WITH p + '.' OR i.module STARTS WITH "
                                           "p + '/' OR i.module STARTS WITH p + '::') RETURN DISTINCT i {.*}", ps=ps)
        out = [self._imp(r) for r in rows]  # type: ignore[attr-defined]
        return sorted(out, key=lambda i: (i.path, i.line, i.module, i.name))

    def external_imports(self, limit: int = 1000) -> list[tuple[str, str, int]]:
        rows = self._rows("external_imports",  # type: ignore[attr-defined]
                          "MATCH (i:CsImport {graph_id: $g}) WHERE i.target = '' "
                          "MATCH (f:CsFile {graph_id: $g, path: i.path}) "
                          "WITH coalesce(f.language, '') AS language, i.module AS module, count(DISTINCT i.path) AS n "
                          "RETURN [language, module, n] ORDER BY n DESC, language, module LIMIT $l", l=max(limit, 0))
        return [(r[0], r[1], int(r[2])) for r in rows]

    # -- findings --------------------------------------------------------------------------
    def replace_findings(self, runs: Sequence[FindingRun], rows: Sequence[FindingRow]) -> None:
        g = self.graph_id
        tools = sorted({r.tool for r in runs})
        run_rows = [[r.tool, r.source, r.stamp, float(r.scanned_at), r.results, float(r.imported_at)] for r in runs]
        finding_rows = [[f.tool, f.rule_id, f.level, _RANK.get(f.level, len(LEVELS)), f.severity, f.message, f.path,
                         f.start_line, f.start_col, f.end_line, f.end_col, f.symbol, f.file_hash, f.source]
                        for f in rows]

        def work(tx):
            for label in ("CsFinding", "CsFindingRun"):
                tx.run(f"UNWIND $tools AS t MATCH (n:{label} {{graph_id: $g, tool: t}}) DETACH DELETE n",
                       tools=tools, g=g).consume()
            self._send(tx, "UNWIND $rows AS r CREATE (:CsFindingRun {graph_id: $g, tool: r[0], source: r[1], "  # type: ignore[attr-defined]
                           "stamp: r[2], scanned_at: r[3], results: r[4], imported_at: r[5]})", run_rows, g=g)
            base = self._alloc(tx, g, len(finding_rows))  # type: ignore[attr-defined]
            for i, r in enumerate(finding_rows, 1):
                r.append(base + i)
            self._send(tx, _INSERT_FINDINGS, finding_rows, g=g)  # type: ignore[attr-defined]

        self._write("replace_findings", work)  # type: ignore[attr-defined]

    def delete_findings_from(self, source: str) -> int:
        g = self.graph_id

        def work(tx):
            n = tx.run("MATCH (n:CsFinding {graph_id: $g, source: $s}) DETACH DELETE n RETURN count(*) AS n",
                       g=g, s=source).single()["n"]
            tx.run("MATCH (n:CsFindingRun {graph_id: $g, source: $s}) DETACH DELETE n", g=g, s=source).consume()
            return int(n)

        return self._write("delete_findings_from", work)  # type: ignore[attr-defined]

    def finding_runs(self) -> list[FindingRun]:
        rows = self._rows("finding_runs", "MATCH (n:CsFindingRun {graph_id: $g}) RETURN n {.*} ORDER BY n.tool")  # type: ignore[attr-defined]
        return [FindingRun(tool=r["tool"], source=r["source"], stamp=r["stamp"], scanned_at=r["scanned_at"],
                           results=r["results"], imported_at=r["imported_at"]) for r in rows]

    @staticmethod
    def _finding_match(path: str | None, start: int, end: int) -> tuple[str, dict[str, Any]]:
        if path is None:
            return "MATCH (n:CsFinding {graph_id: $g}) ", {}
        if end:
            return ("MATCH (n:CsFinding {graph_id: $g, path: $p}) WHERE n.start_line >= $a AND n.start_line <= $b ",
                    {"p": path, "a": start, "b": end})
        return "MATCH (n:CsFinding {graph_id: $g, path: $p}) ", {"p": path}

    def findings(self, path: str | None = None, start: int = 0, end: int = 0, limit: int = 1000) -> list[FindingRow]:
        match, params = self._finding_match(path, start, end)
        rows = self._rows("findings", match + "RETURN n {.*}" + _FINDING_ORDER + " LIMIT $l",  # type: ignore[attr-defined]
                          l=max(limit, 0), **params)
        return [FindingRow(id=r["id"], tool=r["tool"], rule_id=r["rule_id"], level=r["level"], severity=r["severity"],
                           message=r["message"], path=r["path"], start_line=r["start_line"], start_col=r["start_col"],
                           end_line=r["end_line"], end_col=r["end_col"], symbol=r["symbol"], file_hash=r["file_hash"],
                           source=r["source"]) for r in rows]

    def findings_in_ranges(self, spans: Sequence[tuple[str, int, int]], limit: int = 1000) -> list[FindingRow]:
        """``findings(path, start, end, limit)`` of each span, one after the other: one round
        trip per 1,000 spans."""
        spans = [[p, a, b] for p, a, b in spans]
        out: list[FindingRow] = []
        for i in range(0, len(spans), 1000):
            part = spans[i:i + 1000]
            rows = self._rows(  # type: ignore[attr-defined]
                "findings_in_ranges",
                "UNWIND range(0, size($spans) - 1) AS i CALL { WITH i "
                "MATCH (n:CsFinding {graph_id: $g, path: $spans[i][0]}) "
                "WHERE n.start_line >= $spans[i][1] AND n.start_line <= $spans[i][2] "
                "RETURN n" + _FINDING_ORDER + " LIMIT $l } RETURN n {.*, _i: i}", spans=part, l=max(limit, 0))
            rows = sorted(rows, key=lambda r: r["_i"])  # stable: each span's own order stays
            out += [FindingRow(id=r["id"], tool=r["tool"], rule_id=r["rule_id"], level=r["level"],
                               severity=r["severity"], message=r["message"], path=r["path"],
                               start_line=r["start_line"], start_col=r["start_col"], end_line=r["end_line"],
                               end_col=r["end_col"], symbol=r["symbol"], file_hash=r["file_hash"], source=r["source"])
                    for r in rows]
        return out

    def count_findings_many(self, spans: Sequence[tuple[str, int, int]]) -> list[int]:
        """``count_findings(path, start, end)`` of each span (end 0: the whole file): one
        round trip per 1,000 spans."""
        spans = [[p, a, b] for p, a, b in spans]
        out: list[int] = []
        for i in range(0, len(spans), 1000):
            rows = self._rows(  # type: ignore[attr-defined]
                "count_findings_many",
                "UNWIND range(0, size($spans) - 1) AS i RETURN [i, COUNT { MATCH (n:CsFinding {graph_id: $g, "
                "path: $spans[i][0]}) WHERE $spans[i][2] = 0 OR (n.start_line >= $spans[i][1] AND "
                "n.start_line <= $spans[i][2]) }]", spans=spans[i:i + 1000])
            out += [int(n) for _, n in sorted(rows)]
        return out

    def count_findings(self, path: str | None = None, start: int = 0, end: int = 0) -> int:
        match, params = self._finding_match(path, start, end)
        return int(self._scalar("count_findings", match + "RETURN count(n)", **params) or 0)  # type: ignore[attr-defined]
