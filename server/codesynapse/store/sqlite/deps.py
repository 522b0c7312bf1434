"""Module and finding tables of the SQLite graph store (graph/depmodel.py's port).

Mixed into SqliteGraphStore: uses its per-thread connections (``_q``) and its one-writer
savepoints (``_savepoint``); every query binds ``graph_id``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

from codesynapse.extract.manifests import Requirement
from codesynapse.graph.depmodel import (
    LEVELS,
    FindingRow,
    FindingRun,
    ManifestRow,
    RequirementRow,
)
from codesynapse.graph.model import ImportRow

DEPS_SCHEMA = """
CREATE TABLE IF NOT EXISTS manifests(
  graph_id TEXT NOT NULL, path TEXT NOT NULL, kind TEXT NOT NULL, ecosystem TEXT NOT NULL, stamp TEXT NOT NULL,
  lockfile TEXT NOT NULL, notes TEXT NOT NULL, requirements INTEGER NOT NULL, PRIMARY KEY(graph_id, path));
CREATE TABLE IF NOT EXISTS requires(
  id INTEGER PRIMARY KEY, graph_id TEXT NOT NULL, manifest TEXT NOT NULL, ecosystem TEXT NOT NULL,
  name TEXT NOT NULL, key TEXT NOT NULL, constraint_ TEXT NOT NULL, resolved TEXT NOT NULL, scope TEXT NOT NULL,
  start_line INTEGER NOT NULL, end_line INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS requires_key ON requires(graph_id, ecosystem, key, manifest, start_line);
CREATE INDEX IF NOT EXISTS requires_manifest ON requires(graph_id, manifest);
CREATE TABLE IF NOT EXISTS findings(
  id INTEGER PRIMARY KEY, graph_id TEXT NOT NULL, tool TEXT NOT NULL, rule_id TEXT NOT NULL, level TEXT NOT NULL,
  rank INTEGER NOT NULL, severity TEXT NOT NULL, message TEXT NOT NULL, path TEXT NOT NULL,
  start_line INTEGER NOT NULL, start_col INTEGER NOT NULL, end_line INTEGER NOT NULL, end_col INTEGER NOT NULL,
  symbol TEXT NOT NULL, file_hash TEXT NOT NULL, source TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS findings_path ON findings(graph_id, path, start_line);
CREATE INDEX IF NOT EXISTS findings_tool ON findings(graph_id, tool);
CREATE TABLE IF NOT EXISTS finding_runs(
  graph_id TEXT NOT NULL, tool TEXT NOT NULL, source TEXT NOT NULL, stamp TEXT NOT NULL, scanned_at REAL NOT NULL,
  results INTEGER NOT NULL, imported_at REAL NOT NULL, PRIMARY KEY(graph_id, tool));
"""

DEPS_TABLES = ("manifests", "requires", "findings", "finding_runs")
_RANK = {lv: i for i, lv in enumerate(LEVELS)}
_FINDING_ORDER = " ORDER BY rank, path, start_line, start_col, tool, rule_id, id"


def _escape_like(s: str) -> str:
    return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class SqliteDepsMixin:
    graph_id: str  # the dependency tables' key; the code graph's tables (imports, files) use _gk
    _gk: int

    # -- modules ---------------------------------------------------------------------------
    def manifests(self) -> list[ManifestRow]:
        return [ManifestRow(path=r["path"], kind=r["kind"], ecosystem=r["ecosystem"], stamp=r["stamp"],
                            lockfile=r["lockfile"], notes=r["notes"], requirements=r["requirements"])
                for r in self._q("SELECT * FROM manifests WHERE graph_id=? ORDER BY path",  # type: ignore[attr-defined]
                                 (self.graph_id,))]

    def write_manifests(self, items: Sequence[tuple[ManifestRow, Sequence[Requirement]]],
                        deleted: Iterable[str] = ()) -> None:
        g = self.graph_id
        paths = [m.path for m, _ in items] + list(deleted)
        if not paths:
            return
        with self._savepoint("manifest write") as conn:  # type: ignore[attr-defined]
            conn.executemany("DELETE FROM requires WHERE graph_id=? AND manifest=?", [(g, p) for p in paths])
            conn.executemany("DELETE FROM manifests WHERE graph_id=? AND path=?", [(g, p) for p in paths])
            conn.executemany("INSERT INTO manifests VALUES (?,?,?,?,?,?,?,?)",
                             [(g, m.path, m.kind, m.ecosystem, m.stamp, m.lockfile, m.notes, len(reqs))
                              for m, reqs in items])
            conn.executemany(
                "INSERT INTO requires(graph_id, manifest, ecosystem, name, key, constraint_, resolved, scope, "
                "start_line, end_line) VALUES (?,?,?,?,?,?,?,?,?,?)",
                [(g, m.path, r.ecosystem, r.name, r.key, r.constraint, r.resolved, r.scope, r.start_line, r.end_line)
                 for m, reqs in items for r in reqs])

    @staticmethod
    def _req(r) -> RequirementRow:
        return RequirementRow(manifest=r["manifest"], ecosystem=r["ecosystem"], name=r["name"], key=r["key"],
                              constraint=r["constraint_"], resolved=r["resolved"], scope=r["scope"],
                              start_line=r["start_line"], end_line=r["end_line"])

    def requirements(self, keys: Iterable[tuple[str, str]] | None = None) -> list[RequirementRow]:
        order = " ORDER BY ecosystem, key, manifest, start_line, id"
        if keys is None:
            return [self._req(r) for r in self._q("SELECT * FROM requires WHERE graph_id=?" + order,  # type: ignore[attr-defined]
                                                  (self.graph_id,))]
        out: list[RequirementRow] = []
        for eco, key in sorted(set(keys)):
            out.extend(self._req(r) for r in self._q(  # type: ignore[attr-defined]
                "SELECT * FROM requires WHERE graph_id=? AND ecosystem=? AND key=?" + order, (self.graph_id, eco, key)))
        return out

    def _module_filter(self, text: str, ecosystem: str) -> tuple[str, list]:
        sql, args = " WHERE graph_id=?", [self.graph_id]
        if ecosystem:
            sql += " AND ecosystem=?"
            args.append(ecosystem)
        if text:
            sql += " AND (key LIKE ? ESCAPE '\\' OR name LIKE ? ESCAPE '\\')"
            like = f"%{_escape_like(text.lower())}%"
            args += [like, like]
        return sql, args

    def module_keys(self, text: str = "", ecosystem: str = "", offset: int = 0,
                    limit: int = 100) -> list[tuple[str, str]]:
        where, args = self._module_filter(text, ecosystem)
        rows = self._q(f"SELECT DISTINCT ecosystem, key FROM requires{where} ORDER BY ecosystem, key "  # type: ignore[attr-defined]
                       "LIMIT ? OFFSET ?", (*args, limit, offset))
        return [(r["ecosystem"], r["key"]) for r in rows]

    def count_modules(self, text: str = "", ecosystem: str = "") -> int:
        where, args = self._module_filter(text, ecosystem)
        return self._q(f"SELECT count(*) AS n FROM (SELECT DISTINCT ecosystem, key FROM requires{where})",  # type: ignore[attr-defined]
                       tuple(args))[0]["n"]

    def imports_under(self, prefixes: Iterable[str]) -> list[ImportRow]:
        out: dict[int, ImportRow] = {}
        for p in sorted(set(prefixes)):
            if not p:
                continue
            # p itself, and the ranges [p., p/) ∪ [p/, p0) ∪ [p::, p:;) of the (graph_id, module) index
            for r in self._q(  # type: ignore[attr-defined]
                    "SELECT * FROM imports WHERE graph_id=? AND target='' AND (module=? OR (module>=? AND module<?) "
                    "OR (module>=? AND module<?))", (self._gk, p, p + ".", p + "0", p + "::", p + ":;")):  # type: ignore[attr-defined]
                out[r["id"]] = ImportRow(path=r["path"], module=r["module"], name=r["name"], alias=r["alias"],
                                         line=r["line"], target=r["target"])
        return sorted(out.values(), key=lambda i: (i.path, i.line, i.module, i.name))

    def external_imports(self, limit: int = 1000) -> list[tuple[str, str, int]]:
        rows = self._q(  # type: ignore[attr-defined]
            "SELECT f.language AS language, i.module AS module, count(DISTINCT i.path) AS n FROM imports i "
            "JOIN files f ON f.graph_id=i.graph_id AND f.path=i.path WHERE i.graph_id=? AND i.target='' "
            "GROUP BY f.language, i.module ORDER BY n DESC, f.language, i.module LIMIT ?",
            (self._gk, limit))  # type: ignore[attr-defined]
        return [(r["language"] or "", r["module"], r["n"]) for r in rows]

    # -- findings --------------------------------------------------------------------------
    def replace_findings(self, runs: Sequence[FindingRun], rows: Sequence[FindingRow]) -> None:
        g = self.graph_id
        with self._savepoint("findings write") as conn:  # type: ignore[attr-defined]
            tools = sorted({r.tool for r in runs})
            conn.executemany("DELETE FROM findings WHERE graph_id=? AND tool=?", [(g, t) for t in tools])
            conn.executemany("DELETE FROM finding_runs WHERE graph_id=? AND tool=?", [(g, t) for t in tools])
            conn.executemany("INSERT INTO finding_runs VALUES (?,?,?,?,?,?,?)",
                             [(g, r.tool, r.source, r.stamp, r.scanned_at, r.results, r.imported_at or time.time())
                              for r in runs])
            conn.executemany(
                "INSERT INTO findings(graph_id, tool, rule_id, level, rank, severity, message, path, start_line, "
                "start_col, end_line, end_col, symbol, file_hash, source) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(g, f.tool, f.rule_id, f.level, _RANK.get(f.level, len(LEVELS)), f.severity, f.message, f.path,
                  f.start_line, f.start_col, f.end_line, f.end_col, f.symbol, f.file_hash, f.source) for f in rows])

    def delete_findings_from(self, source: str) -> int:
        g = self.graph_id
        with self._savepoint("findings delete") as conn:  # type: ignore[attr-defined]
            n = conn.execute("DELETE FROM findings WHERE graph_id=? AND source=?", (g, source)).rowcount
            conn.execute("DELETE FROM finding_runs WHERE graph_id=? AND source=?", (g, source))
        return n

    def finding_runs(self) -> list[FindingRun]:
        return [FindingRun(tool=r["tool"], source=r["source"], stamp=r["stamp"], scanned_at=r["scanned_at"],
                           results=r["results"], imported_at=r["imported_at"])
                for r in self._q("SELECT * FROM finding_runs WHERE graph_id=? ORDER BY tool",  # type: ignore[attr-defined]
                                 (self.graph_id,))]

    def _finding_filter(self, path: str | None, start: int, end: int) -> tuple[str, tuple]:
        if path is None:
            return " WHERE graph_id=?", (self.graph_id,)
        if end:
            return " WHERE graph_id=? AND path=? AND start_line>=? AND start_line<=?", (self.graph_id, path, start, end)
        return " WHERE graph_id=? AND path=?", (self.graph_id, path)

    def findings(self, path: str | None = None, start: int = 0, end: int = 0, limit: int = 1000) -> list[FindingRow]:
        where, args = self._finding_filter(path, start, end)
        return [FindingRow(id=r["id"], tool=r["tool"], rule_id=r["rule_id"], level=r["level"], severity=r["severity"],
                           message=r["message"], path=r["path"], start_line=r["start_line"], start_col=r["start_col"],
                           end_line=r["end_line"], end_col=r["end_col"], symbol=r["symbol"], file_hash=r["file_hash"],
                           source=r["source"])
                for r in self._q("SELECT * FROM findings" + where + _FINDING_ORDER + " LIMIT ?",  # type: ignore[attr-defined]
                                 (*args, limit))]

    def findings_in_ranges(self, spans: Sequence[tuple[str, int, int]], limit: int = 1000) -> list[FindingRow]:
        """``findings(path, start, end, limit)`` of each span, one after the other (a batch read)."""
        return [f for path, a, b in spans for f in self.findings(path, a, b, limit)]

    def count_findings_many(self, spans: Sequence[tuple[str, int, int]]) -> list[int]:
        """``count_findings(path, start, end)`` of each span (a batch read)."""
        return [self.count_findings(p, a, b) for p, a, b in spans]

    def count_findings(self, path: str | None = None, start: int = 0, end: int = 0) -> int:
        where, args = self._finding_filter(path, start, end)
        return self._q("SELECT count(*) AS n FROM findings" + where, args)[0]["n"]  # type: ignore[attr-defined]
