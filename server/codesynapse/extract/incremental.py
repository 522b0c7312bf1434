"""Re-extract only the top-level statements an edit touched.

A live update of a large file used to parse and extract all of it again for a one-line edit
(an 8,550-line test file: ~160 ms). For languages whose hooks say where a statement's facts
depend on other statements (``LanguageHooks.traces_file_facts``: Python, whose receiver hints
can come from the classes a function of the same file returns), the last extraction of a
recently updated file is kept here, cut into blocks of top-level statements
(``engine.extract_blocks``). The next version of the file is compared with the kept bytes;
only the blocks the changed bytes touch are parsed again (on their own, as a range of the
file), the blocks before them are kept as they are and those after them move by the lines the
edit added or removed. The result must be exactly what a whole extraction gives
(tests/unit/test_extract_incremental.py checks that on random edits of real files), so the
whole file is extracted instead whenever that cannot be promised:

* the parsed range has a syntax error (an opened string or bracket can swallow what follows);
* a hint in the range was learnt from a name defined outside it, or a kept block's hint from a
  name the edited blocks define (or defined), directly or through the functions it calls;
* the file's module name changed, or its extraction hit a limit or had syntax errors.

Only files of at least ``MIN_BYTES`` are kept (a small file is extracted whole in a few
milliseconds), at most ``MAX_FILES`` of them and ``MAX_BYTES`` of kept source; the least
recently updated goes first.
"""

from __future__ import annotations

import logging
import threading
from bisect import bisect_right
from collections import OrderedDict
from dataclasses import dataclass

from msgspec.structs import replace

from codesynapse.extract import engine
from codesynapse.extract.model import CallSite, Delta, FileExtraction, ImportRef, Inherit, Symbol

log = logging.getLogger(__name__)

MIN_BYTES = 32 << 10
MAX_FILES = 32
MAX_BYTES = 24 << 20

_lock = threading.Lock()
_kept: OrderedDict[tuple, "_Entry"] = OrderedDict()
# how files were extracted, and why whole (tests and the bench read this)
stats: dict[str, int] = {"incremental": 0, "whole": 0}


def _why(reason: str) -> None:
    stats[reason] = stats.get(reason, 0) + 1


@dataclass
class _Block:
    start: int  # byte where the block starts (a line start)
    row: int  # its first row (0-based)
    symbols: list[Symbol]
    calls: list[CallSite]
    imports: list[ImportRef]
    inherits: list[Inherit]
    defines: tuple[str, ...]
    consults: frozenset[str]


@dataclass
class _Entry:
    src: bytes
    hash: str  # of src
    module: str
    module_symbol: Symbol
    blocks: list[_Block]


def forget(path_prefix: str | None = None) -> None:
    """Drop what is kept (everything, or the files under one root)."""
    with _lock:
        if path_prefix is None:
            _kept.clear()
        else:
            for k in [k for k in _kept if k[0] == path_prefix]:
                del _kept[k]


def kept_files() -> int:
    with _lock:
        return len(_kept)


def _split(b: engine.Blocks) -> list[_Block]:
    """Each block's share of what the range gave, by the rows it spans."""
    f = b.file
    rows = [r for _, r in b.starts]
    out = [_Block(start=s, row=r, symbols=[], calls=[], imports=[], inherits=[], defines=d, consults=frozenset())
           for (s, r), d in zip(b.starts, b.defines)]

    def at(line: int) -> _Block:
        return out[max(0, bisect_right(rows, line - 1) - 1)]

    for s in f.symbols:
        if s.kind != "module":
            at(s.start_line).symbols.append(s)
    for c in f.calls:
        at(c.line).calls.append(c)
    for im in f.imports:
        at(im.line).imports.append(im)
    for ih in f.inherits:
        at(ih.line).inherits.append(ih)
    starts = [s for s, _ in b.starts]
    seen: dict[int, set[str]] = {}
    for byte, names in b.consults:
        i = max(0, bisect_right(starts, byte) - 1)
        seen.setdefault(i, set()).update(names)
    for i, names in seen.items():
        out[i].consults = frozenset(names)
    return out


def _moved(b: _Block, dbyte: int, drow: int) -> _Block:
    if not drow:
        return _Block(start=b.start + dbyte, row=b.row, symbols=b.symbols, calls=b.calls, imports=b.imports,
                      inherits=b.inherits, defines=b.defines, consults=b.consults)
    return _Block(
        start=b.start + dbyte, row=b.row + drow,
        symbols=[replace(s, start_line=s.start_line + drow, end_line=s.end_line + drow) for s in b.symbols],
        calls=[replace(c, line=c.line + drow) for c in b.calls],
        imports=[replace(i, line=i.line + drow) for i in b.imports],
        inherits=[replace(i, line=i.line + drow) for i in b.inherits],
        defines=b.defines, consults=b.consults)


def _assemble(e: _Entry, path: str, language: str, file_hash: str, lines: int, size: int) -> FileExtraction:
    symbols = [e.module_symbol]
    calls: list[CallSite] = []
    imports: list[ImportRef] = []
    inherits: list[Inherit] = []
    for b in e.blocks:
        symbols += b.symbols
        calls += b.calls
        imports += b.imports
        inherits += b.inherits
    return FileExtraction(path=path, language=language, hash=file_hash, size=size, lines=lines, module=e.module,
                          symbols=symbols, calls=calls, imports=imports, inherits=inherits)


def _common(a: bytes, b: bytes) -> tuple[int, int]:
    """(common prefix length, common suffix length not overlapping it) of ``a`` and ``b``."""
    n = min(len(a), len(b))
    lo, hi = 0, n  # the prefix length is in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    p = lo
    lo, hi = 0, n - p
    la, lb = len(a), len(b)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[la - mid:la - lo] == b[lb - mid:lb - lo]:
            lo = mid
        else:
            hi = mid - 1
    return p, lo


def _limits_ok(e: _Entry) -> bool:
    defs = sum(len(b.symbols) for b in e.blocks)
    calls = sum(len(b.calls) for b in e.blocks)
    return defs < engine.MAX_DEFS and calls < engine.MAX_CALLS


def _store(key: tuple, e: _Entry) -> None:
    with _lock:
        _kept[key] = e
        _kept.move_to_end(key)
        total = sum(len(x.src) for x in _kept.values())
        while len(_kept) > MAX_FILES or (total > MAX_BYTES and len(_kept) > 1):
            _, old = _kept.popitem(last=False)
            total -= len(old.src)


def _whole(key, parser, src, query, hooks, relpath, language, module, file_hash, redact_extra, lines
           ) -> FileExtraction:
    stats["whole"] += 1
    if len(src) > engine.CHUNK_BYTES:  # extracted a piece at a time, untraced: not kept
        with _lock:
            _kept.pop(key, None)
        return engine.extract_file(parser=parser, src=src, query=query, hooks=hooks, relpath=relpath,
                                   language=language, module=module, file_hash=file_hash, redact_extra=redact_extra)
    b = engine.extract_blocks(parser=parser, src=src, query=query, hooks=hooks, relpath=relpath, module=module,
                              file_hash=file_hash, redact_extra=redact_extra)
    fx = engine.finish(b.file, language, file_hash, lines)
    e = _Entry(src=src, hash=file_hash, module=b.file.module, module_symbol=b.file.symbols[0], blocks=_split(b))
    if not fx.partial and not fx.error and _limits_ok(e):
        _store(key, e)
    else:
        with _lock:
            _kept.pop(key, None)
    return fx


def extract(*, root: str, parser, src: bytes, query, hooks, relpath: str, language: str, module: str,
            file_hash: str, redact_extra=()) -> FileExtraction:
    """``src`` extracted as ``engine.extract_file`` would, re-using the kept extraction of the
    file's last version where the edit did not reach."""
    key = (root, relpath, language, tuple(getattr(p, "pattern", p) for p in redact_extra))
    lines = engine._line_count(src)
    with _lock:
        e = _kept.get(key)
    if e is None or e.module != module or len(src) > engine.CHUNK_BYTES:
        _why("whole: not kept" if e is None else "whole: module changed" if e.module != module else "whole: too large")
        return _whole(key, parser, src, query, hooks, relpath, language, module, file_hash, redact_extra, lines)
    try:
        got = _update(e, parser, src, query, hooks, relpath, module, file_hash, redact_extra)
    except Exception:  # never worse than a whole extraction
        log.exception("incremental extraction of %s failed; extracting it whole", relpath)
        got = None
    if got is None:
        return _whole(key, parser, src, query, hooks, relpath, language, module, file_hash, redact_extra, lines)
    stats["incremental"] += 1
    out, delta = got
    _store(key, out)
    fx = _assemble(out, relpath, language, file_hash, lines, len(src))
    fx.delta = delta
    return fx


def _update(e: _Entry, parser, src: bytes, query, hooks, relpath: str, module: str, file_hash: str,
            redact_extra) -> tuple[_Entry, Delta | None] | None:
    old = e.src
    blocks = e.blocks
    if src == old:
        return _Entry(src=src, hash=file_hash, module=e.module, module_symbol=e.module_symbol, blocks=blocks), None
    p, s = _common(old, src)
    starts = [b.start for b in blocks]
    # the blocks the change touches: from the one holding the byte before it (an indented
    # line added at a block's start continues the block above) to the one holding the byte
    # after it (what follows may continue what was written)
    i = max(0, bisect_right(starts, max(p - 1, 0)) - 1)
    old_end = len(old) - s
    j = max(i, bisect_right(starts, min(old_end, len(old) - 1)) - 1)
    lo = blocks[i].start
    old_hi = blocks[j + 1].start if j + 1 < len(blocks) else len(old)
    dbyte = len(src) - len(old)
    hi = old_hi + dbyte
    if hi < lo or (hi < len(src) and src[hi - 1:hi] != b"\n"):
        _why("whole: the edit does not end at a line end")
        return None
    drow = src.count(b"\n", lo, hi) - old.count(b"\n", lo, old_hi)
    kept_before, kept_after = blocks[:i], blocks[j + 1:]
    outside = {n for b in kept_before for n in b.defines} | {n for b in kept_after for n in b.defines}
    module_symbol = e.module_symbol
    if hi > lo:
        got = engine.extract_blocks(parser=parser, src=src, query=query, hooks=hooks, relpath=relpath,
                                    module=module, file_hash=file_hash, redact_extra=redact_extra,
                                    lo=lo, hi=hi, lo_row=blocks[i].row)
        if got.error or got.file.module != e.module:
            _why("whole: syntax error in the edited range" if got.error else "whole: module changed")
            return None
        parsed = _split(got)
        if lo == 0:
            module_symbol = got.file.symbols[0]
    elif lo == 0:
        _why("whole: first statements removed")
        return None  # the file's first statements are gone: its module facts come from a whole parse
    else:
        parsed = []
    if lo != 0:
        module_symbol = replace(module_symbol, end_line=max(engine._line_count(src), 1), hash=file_hash)
    # a block of the range whose text did not change (the blocks beside the edit) gave what
    # it gives now, learnt in the whole file: it is kept (moved), unless a name its hints
    # were learnt from is defined by a block that did change
    unchanged: dict[bytes, list[_Block]] = {}
    for k in range(i, j + 1):
        end = blocks[k + 1].start if k + 1 < len(blocks) else len(old)
        unchanged.setdefault(old[blocks[k].start:end], []).append(blocks[k])
    pairs: list[tuple[_Block | None, _Block]] = []
    for n, nb in enumerate(parsed):
        end = parsed[n + 1].start if n + 1 < len(parsed) else hi
        same = unchanged.get(src[nb.start:end])
        ob = same.pop(0) if same else None
        pairs.append((_moved(ob, nb.start - ob.start, nb.row - ob.row) if ob is not None else None, nb))
    edited = {n for left in unchanged.values() for b in left for n in b.defines}
    edited |= {n for ob, nb in pairs if ob is None for n in nb.defines}
    new_blocks: list[_Block] = []
    for ob, nb in pairs:
        if ob is not None and not ob.consults & edited:
            new_blocks.append(ob)
        elif nb.consults & outside:
            # learnt from what the range's own parse could see, not from the whole file
            _why("whole: a hint in the range names a definition outside it")
            return None
        else:
            new_blocks.append(nb)
    # a kept hint learnt from an edited name may be different now
    if any(b.consults & edited for b in kept_before) or any(b.consults & edited for b in kept_after):
        _why("whole: a kept hint names an edited definition")
        return None
    moved = [_moved(b, dbyte, drow) for b in kept_after]
    out = _Entry(src=src, hash=file_hash, module=e.module, module_symbol=module_symbol,
                 blocks=kept_before + new_blocks + moved)
    if not _limits_ok(out):
        return None
    old_next = blocks[j + 1].row if j + 1 < len(blocks) else engine._line_count(old)
    delta = Delta(base_hash=e.hash, first_line=blocks[i].row + 1, last_line=max(old_next, blocks[i].row + 1),
                  shift=drow, symbols=[s for b in new_blocks for s in b.symbols],
                  calls=[c for b in new_blocks for c in b.calls])
    return out, delta
