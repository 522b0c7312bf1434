"""The resolver's symbol table of a team graph's base, kept with the base (issue 26, docs/TEAM.md).

A daemon resolves its overlay's calls against the base's symbols, so before its first index
it builds the resolver's in-memory table (``SymbolIndex``) from the whole graph: every
file's symbols, imports and inherit rows. Read row by row from the server, that was most of a
second checkout's time to first answer (the CPython standard library: 25–43 s under load).

A base is immutable, so its table is computed once, by the builder, from the rows it wrote,
and stored with the base before its ``base_complete`` stamp (``write_table``): a compact,
compressed blob in a few meta entries, checked by its SHA-256 when read. A reader fetches
it in one round trip per part and composes it with what lies above (``compose``): a delta
base's own files, tombstones and re-resolved inherit rows, then the checkout's overlay, read
as rows (it is the checkout's own, small change set). A base published without a table is
read row by row, as before (``read_level``).

The table holds exactly what ``Indexer.load`` reads: per indexed file its module, language,
symbols ``(qname, kind, parent, signature)`` in (qname, start line) order and imports
``(module, name, alias, line)`` in (line, module, name) order; per path its inherit rows
``(line, child, base, target)``.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import zlib
from collections.abc import Iterable
from typing import Any

import msgspec

from codesynapse.extract.model import ImportRef

log = logging.getLogger(__name__)

TABLE = "team.symbol_table"  # meta: how many parts; the parts are TABLE.<i>, the digest TABLE.sha256
PART_CHARS = 4_000_000  # characters of base64 per meta entry
STREAM = 256  # files read at a time from rows (as Indexer.load)
VERSION = 1


class Level(msgspec.Struct, array_like=True):
    """One store's own rows, as the resolver needs them."""

    paths: list[str]  # every file row's path, skipped ones too (what this level shadows below it)
    files: dict[str, tuple[str, str, list[tuple[str, str, str, str]], list[tuple[str, str, str, int]]]]
    inherits: dict[str, list[tuple[int, str, str, str]]]


class Table:
    """A composed table: what the resolver loads."""

    def __init__(self, files: dict, inherits: dict):
        self.files = files
        self.inherits = inherits

    def fill(self, index, inherits_by_file: dict[str, list[tuple[str, str]]]) -> None:
        """Add every file to ``index`` (a SymbolIndex) in path order, and the resolved inherit
        rows to ``inherits_by_file`` — as Indexer.load does from rows."""
        for path in sorted(self.files):
            module, language, syms, refs = self.files[path]
            index.add_file(path, module, language, [tuple(s) for s in syms],
                           [ImportRef(module=m, name=n, alias=a, line=ln) for m, n, a, ln in refs])
        for path in sorted(self.inherits):
            for _line, child, _base, target in self.inherits[path]:
                if target:
                    inherits_by_file.setdefault(path, []).append((child, target))


def read_level(store) -> Level:
    """A store's own rows (a base without a stored table, a delta base's, an overlay's)."""
    rows = store.files()
    indexed = [f for f in rows if f.status != "skipped"]
    files: dict[str, Any] = {}
    for i in range(0, len(indexed), STREAM):
        chunk = indexed[i:i + STREAM]
        paths = [f.path for f in chunk]
        syms = store.symbols_in_files(paths)
        imps: dict[str, list] = {}
        for _, im in store.imports_touching(paths, ()):
            imps.setdefault(im.path, []).append(im)
        for f in chunk:
            srows = sorted(syms.get(f.path, ()), key=lambda s: (s.qname, s.start_line))
            irows = sorted(imps.get(f.path, ()), key=lambda im: (im.line, im.module, im.name))
            files[f.path] = (f.module, f.language, [(s.qname, s.kind, s.parent, s.signature) for s in srows],
                             [(im.module, im.name, im.alias, im.line) for im in irows])
    inherits: dict[str, list] = {}
    for ih in store.inherits():
        inherits.setdefault(ih.path, []).append((ih.line, ih.child, ih.base, ih.target))
    for v in inherits.values():
        v.sort()
    return Level(paths=sorted(f.path for f in rows), files=files, inherits=inherits)


def encode(level: Level) -> dict[str, str]:
    """The meta entries that hold ``level``."""
    data = base64.b64encode(zlib.compress(msgspec.msgpack.encode([VERSION, level]), 6)).decode("ascii")
    parts = [data[i:i + PART_CHARS] for i in range(0, len(data), PART_CHARS)] or [""]
    out = {f"{TABLE}.{i}": p for i, p in enumerate(parts)}
    out[f"{TABLE}.sha256"] = hashlib.sha256(data.encode("ascii")).hexdigest()
    out[TABLE] = str(len(parts))
    return out


def write_table(store) -> int:
    """Compute the table of ``store``'s own rows and keep it in its meta (the builder, before
    the base's completion stamp). Returns the stored size in characters."""
    entries = encode(read_level(store))
    store.set_meta(entries)
    return sum(len(v) for k, v in entries.items() if k != TABLE)


def stored_level(store) -> Level | None:
    """The table kept in ``store``'s meta; None when it has none (or it does not check out)."""
    n = store.get_meta(TABLE)
    if not n:
        return None
    try:
        data = "".join(store.get_meta(f"{TABLE}.{i}") or "" for i in range(int(n)))
        if hashlib.sha256(data.encode("ascii")).hexdigest() != store.get_meta(f"{TABLE}.sha256"):
            raise ValueError("it does not match its digest")
        version, level = msgspec.msgpack.decode(zlib.decompress(base64.b64decode(data)), type=tuple[int, Level])
    except (ValueError, UnicodeError, zlib.error, msgspec.DecodeError) as e:
        log.warning("the kept symbol table of %s is unusable (%s): reading its rows instead",
                    getattr(store, "graph_id", "?"), e)
        return None
    return level if version == VERSION else None


def compose(below: Table, level: Level, tombstones: Iterable[str] = (),
            inherit_overrides: Iterable[tuple[Any, Any]] = ()) -> Table:
    """``level`` over ``below``: a path ``level`` holds (or a tombstone) shadows it below; a
    re-resolved inherit row of a path below (``(old row, new row)``) takes its new target."""
    shadow = set(level.paths) | set(tombstones)
    files = {p: e for p, e in below.files.items() if p not in shadow}
    inherits = {p: list(rows) for p, rows in below.inherits.items() if p not in shadow}
    for old, new in inherit_overrides:
        rows = inherits.get(old.path)
        if not rows:
            continue
        for i, (line, child, base, _target) in enumerate(rows):
            if (line, child, base) == (old.line, old.child, old.base):
                rows[i] = (line, child, base, new.target)
                break
    files.update(level.files)
    for p, rows in level.inherits.items():
        inherits[p] = list(rows)
    return Table(files, inherits)


def table_of(store) -> Table:
    """The table of any graph store: a composite's own (``symbol_table``), else the one kept
    in its meta, else read from its rows."""
    own = getattr(store, "symbol_table", None)
    if own is not None:
        return own()
    level = stored_level(store) or read_level(store)
    return Table(level.files, level.inherits)
