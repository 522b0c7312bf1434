"""Module and finding nodes of the graph: the rows the stores hand back, and the port.

Module nodes (one per ``(ecosystem, key)``) are required by manifests (REQUIRED_BY, with
the constraint as written and the version a lockfile resolves) and imported by files
(IMPORTED_BY: derived from the stored import rows whose module falls under one of the
module's import names, see graph/deps.py). Finding nodes come from SARIF results: each
AFFECTS its file and the innermost symbol whose range holds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

import msgspec

from codesynapse.extract.manifests import Requirement
from codesynapse.graph.model import ImportRow

LEVELS = ("error", "warning", "note", "none")  # SARIF result levels, most severe first


class ManifestRow(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    kind: str
    ecosystem: str
    stamp: str  # size:mtime of the manifest and its lockfile: unchanged files are not read again
    lockfile: str = ""
    notes: str = ""  # what could not be read ("; "-separated)
    requirements: int = 0


class RequirementRow(msgspec.Struct, frozen=True, kw_only=True):
    """A REQUIRED_BY edge: module (ecosystem, key) ← manifest."""

    manifest: str
    ecosystem: str
    name: str
    key: str
    constraint: str
    resolved: str
    scope: str
    start_line: int
    end_line: int


class FindingRow(msgspec.Struct, frozen=True, kw_only=True):
    id: int = 0
    tool: str
    rule_id: str
    level: str  # error | warning | note | none
    severity: str  # critical | high | medium | low | info
    message: str  # redacted, one line
    path: str  # "" when the result names no file of the workspace
    start_line: int = 0  # 0: the whole file
    start_col: int = 0
    end_line: int = 0
    end_col: int = 0
    symbol: str = ""  # qname of the innermost symbol holding start_line at import ("" = file level)
    file_hash: str = ""  # the file's indexed hash when the scan saw it; "" = changed since the scan
    source: str = ""  # the SARIF file it came from


class FindingRun(msgspec.Struct, frozen=True, kw_only=True):
    tool: str
    source: str
    stamp: str  # size:mtime of the SARIF file when imported
    scanned_at: float
    results: int
    imported_at: float


@runtime_checkable
class DependencyStore(Protocol):
    """What a graph store adds for modules and findings (SQLite, Neo4j, HugeGraph)."""

    def manifests(self) -> list[ManifestRow]: ...
    def write_manifests(self, items: Sequence[tuple[ManifestRow, Sequence[Requirement]]],
                        deleted: Iterable[str] = ()) -> None:
        """Replace the requirements of these manifests; drop ``deleted`` manifests."""
        ...
    def requirements(self, keys: Iterable[tuple[str, str]] | None = None) -> list[RequirementRow]:
        """REQUIRED_BY edges of the modules ``(ecosystem, key)`` (all when None), ordered by
        (ecosystem, key, manifest, start_line)."""
        ...
    def module_keys(self, text: str = "", ecosystem: str = "", offset: int = 0,
                    limit: int = 100) -> list[tuple[str, str]]:
        """Distinct (ecosystem, key), sorted; ``text`` matches a substring of the key."""
        ...
    def count_modules(self, text: str = "", ecosystem: str = "") -> int: ...
    def imports_under(self, prefixes: Iterable[str]) -> list[ImportRow]:
        """Import rows not resolved inside the graph (target "") whose module is one of
        ``prefixes`` or lies below one (``p.x``, ``p/x``, ``p::x``); by path, line."""
        ...
    def external_imports(self, limit: int = 1000) -> list[tuple[str, str, int]]:
        """(language of the importing file, module, number of files) of imports not resolved
        inside the graph, most imported first."""
        ...
    def replace_findings(self, runs: Sequence[FindingRun], rows: Sequence[FindingRow]) -> None:
        """Each run's tool's earlier findings are replaced by ``rows`` (one transaction)."""
        ...
    def delete_findings_from(self, source: str) -> int: ...
    def finding_runs(self) -> list[FindingRun]: ...
    def findings(self, path: str | None = None, start: int = 0, end: int = 0,
                 limit: int = 1000) -> list[FindingRow]:
        """Findings of ``path`` (all when None) whose line lies in [start, end] (any line when
        end is 0), most severe first, then by path, line, tool, rule."""
        ...
    def count_findings(self, path: str | None = None, start: int = 0, end: int = 0) -> int: ...
