"""Rows the graph stores hand back. Plain msgspec Structs: names, never positions."""

from __future__ import annotations

import msgspec


class FileRow(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    language: str = ""
    hash: str = ""
    size: int = 0
    mtime_ns: int = 0
    lines: int = 0
    module: str = ""
    status: str = "indexed"  # indexed | partial | skipped
    reason: str = ""  # why skipped / why partial
    indexed_at: float = 0.0


class SymbolRow(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    path: str
    qname: str
    name: str
    kind: str
    signature: str
    start_line: int
    end_line: int
    start_col: int
    end_col: int
    hash: str
    summary: str
    parent: str
    is_test: bool
    exported: bool
    language: str


class CallRow(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    path: str
    caller: str
    callee: str
    name: str
    line: int
    col: int
    kind: str
    hint: str
    target: str  # "" when unresolved
    resolution: str  # local | import | self | super | inferred | module | constructor | unresolved | external
    confidence: float
    args: str = ""  # what the call passes (extract/model.py CallSite.args)


class ImportRow(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    module: str
    name: str
    alias: str
    line: int
    target: str  # resolved module/symbol qname, "" if outside the graph


class InheritRow(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    child: str
    base: str
    kind: str
    line: int
    target: str
    resolution: str
    confidence: float


class Resolution(msgspec.Struct, frozen=True):
    """What the resolver decided for one call site or base expression."""

    target: str
    resolution: str
    confidence: float


class GraphStats(msgspec.Struct, kw_only=True):
    files: int
    skipped: int
    symbols: int
    calls: int
    resolved_calls: int
    imports: int
    inherits: int
    languages: dict[str, int]
    kinds: dict[str, int]
