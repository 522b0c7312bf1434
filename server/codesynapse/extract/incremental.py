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
import re
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
MAX_BYTES = 8 << 20  # of kept source; what is kept costs ~6 times its source (the 32 largest stdlib files: 6.3 MB, 38 MB)
# a hint in the edited range learnt from definitions elsewhere in the file: those are parsed with
# the range (as many rounds as a chain of functions returning each other's classes is long)
CONTEXT_ROUNDS = 4
CONTEXT_FACTS = 20_000  # definitions and calls of the blocks parsed for context, at most

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


_CONTINUATION = re.compile(rb"(?:else|elif|except|finally)\b")


def _starts_statement(src: bytes, pos: int) -> bool:
    """Whether the first line at ``pos`` that is neither blank nor a comment at column 0
    starts a statement of its own (not indented, not a clause of the statement above)."""
    n = len(src)
    while pos < n:
        nl = src.find(b"\n", pos)
        end = n if nl < 0 else nl
        line = src[pos:end]
        body = line.strip()
        if body and (not body.startswith(b"#") or line[:1] in (b" ", b"\t")):
            # an indented comment belongs to the indented body above it (tree-sitter ends that
            # statement after it)
            return line[:1] not in (b" ", b"\t", b")", b"]", b"}") and not _CONTINUATION.match(line)
        pos = end + 1
    return True


def _changed_lines(old: bytes, new: bytes) -> tuple[int, int]:
    """The change from ``old`` to ``new`` as whole lines: ``old[a:b]`` became
    ``new[a:b + len(new) - len(old)]`` (both start and end lines). Lines only inserted or
    only deleted leave the lines beside them out (an empty side)."""
    p, s = _common(old, new)
    a = old.rfind(b"\n", 0, p) + 1
    b = len(old) - s
    d = len(new) - len(old)
    if b > a and old[b - 1:b] != b"\n" or b == a and b < len(old) and not new[a:a + d].endswith(b"\n"):
        nl = old.find(b"\n", b)
        b = len(old) if nl < 0 else nl + 1
    b = max(a, b)
    old_seg, new_seg = old[a:b], new[a:b + d]
    if old_seg and d > 0:
        if new_seg.endswith(old_seg) and new_seg[d - 1:d] == b"\n":
            return a, a  # lines inserted above what was there
        if new_seg.startswith(old_seg) and old_seg.endswith(b"\n"):
            return b, b  # lines inserted below it
    if new_seg and d < 0:
        if old_seg.endswith(new_seg) and old_seg[-d - 1:-d] == b"\n":
            return a, b - len(new_seg)  # lines deleted above what stays
        if old_seg.startswith(new_seg) and new_seg.endswith(b"\n"):
            return a + len(new_seg), b  # lines deleted below it
    return a, b


def _ends_cleanly(src: bytes, lo: int, hi: int) -> bool:
    """Whether ``src[lo:hi]`` is empty or ends with a whole line that holds no comment and is
    not a decorator or a line continuation (nothing in it can join the statement below)."""
    if hi <= lo:
        return True
    if src[hi - 1:hi] != b"\n":
        return False
    last = src[max(lo, src.rfind(b"\n", lo, hi - 1) + 1):hi - 1].strip()
    # a comment, even after code on the line, is the summary of the statement below it
    return b"#" not in last and not last.startswith(b"@") and not last.endswith(b"\\")


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
    dbyte = len(src) - len(old)
    ra, rb = _changed_lines(old, src)  # the change: old[ra:rb] became src[ra:rb + dbyte], whole lines
    n = len(blocks)
    # block starts and rows; the end of a file that ends a line is one more (empty) block start
    starts = [b.start for b in blocks] + [len(old)]
    rows = [b.row for b in blocks] + [engine._line_count(old)]  # a last line without a newline is a row too
    at_start = {st: k for k, st in enumerate(starts) if k < n or old.endswith(b"\n")}
    # The blocks the change touches. From the block holding the byte before it (an indented
    # line added at a block's start continues the block above), or from the block it starts
    # at when it starts with a new statement below a clean line (not a comment, which would be
    # the summary of what is written below it); to the block holding the byte after it (what
    # follows may continue what was written), or to the block it ends at when it ends with a
    # finished line that is not a comment (a comment belongs to the statement below it).
    if ra > 0 and ra in at_start and _ends_cleanly(src, 0, ra):
        i = at_start[ra]
    else:
        i = max(0, bisect_right(starts, ra - 1, 0, n) - 1)
    # tree-sitter does not mind an indented first line: the range itself must start with a
    # statement of its own (comment lines do not end an indented body)
    while i > 0 and not _starts_statement(src, starts[i]):
        i -= 1
    if rb in at_start and at_start[rb] >= i and rb > 0:
        j = at_start[rb] - 1
    else:
        j = max(i, bisect_right(starts, min(rb, len(old) - 1), 0, n) - 1)
    while j + 1 < n and not (_starts_statement(src, starts[j + 1] + dbyte)
                             and _ends_cleanly(src, starts[i], starts[j + 1] + dbyte)):
        j += 1
    lo, old_hi = starts[i], starts[j + 1]
    hi = old_hi + dbyte
    if hi < lo or (hi < len(src) and src[hi - 1:hi] != b"\n"):
        _why("whole: the edit does not end at a line end")
        return None
    drow = src.count(b"\n", lo, hi) - old.count(b"\n", lo, old_hi)
    kept_before, kept_after = blocks[:i], blocks[j + 1:]
    lo_row = rows[i]
    module_symbol = e.module_symbol
    if hi <= lo:
        if lo == 0:
            _why("whole: first statements removed")
            return None  # the file's first statements are gone: its module facts come from a whole parse
        module_symbol = replace(module_symbol, end_line=max(engine._line_count(src), 1), hash=file_hash)
        new_blocks: list[_Block] = []
        edited = {n for b in blocks[i:j + 1] for n in b.defines}
    else:
        # blocks of the range whose text did not change (the blocks beside the edit) gave what
        # they give now, learnt in the whole file: they are kept (moved), unless a name their
        # hints were learnt from is defined by a block that did change
        unchanged: dict[bytes, list[_Block]] = {}
        for k in range(i, j + 1):
            end = blocks[k + 1].start if k + 1 < len(blocks) else len(old)
            unchanged.setdefault(old[blocks[k].start:end], []).append(blocks[k])
        by_name: dict[str, list[int]] = {}  # blocks outside the range by the names they define
        for k, b in enumerate(blocks):
            if k < i or k > j:
                for n in b.defines:
                    by_name.setdefault(n, []).append(k)
        context: set[int] = set()  # outside blocks parsed with the range for what they define
        for _attempt in range(CONTEXT_ROUNDS):
            ranges = []
            for k in sorted(context):
                b = blocks[k]
                end = blocks[k + 1].start if k + 1 < len(blocks) else len(old)
                ranges.append((b.start, end, b.row) if k < i else (b.start + dbyte, end + dbyte, b.row + drow))
            got = engine.extract_blocks(parser=parser, src=src, query=query, hooks=hooks, relpath=relpath,
                                        module=module, file_hash=file_hash, redact_extra=redact_extra,
                                        lo=lo, hi=hi, lo_row=lo_row, context=ranges)
            if got.error or got.file.module != e.module:
                _why("whole: syntax error in the edited range" if got.error else "whole: module changed")
                return None
            parsed = [b for b in _split(got) if lo <= b.start < hi]
            pairs: list[tuple[_Block | None, _Block]] = []
            left = {t: list(bs) for t, bs in unchanged.items()}
            for n, nb in enumerate(parsed):
                end = parsed[n + 1].start if n + 1 < len(parsed) else hi
                same = left.get(src[nb.start:end])
                ob = same.pop(0) if same else None
                pairs.append((_moved(ob, nb.start - ob.start, nb.row - ob.row) if ob is not None else None, nb))
            edited = {n for bs in left.values() for b in bs for n in b.defines}
            edited |= {n for ob, nb in pairs if ob is None for n in nb.defines}
            new_blocks = []
            need: set[str] = set()
            for ob, nb in pairs:
                if ob is not None and not ob.consults & edited:
                    new_blocks.append(ob)
                else:
                    # a hint learnt from a definition outside the range was learnt from what the
                    # parse could see: such definitions are parsed with the range next round
                    need |= {n for n in nb.consults if n in by_name and not all(k in context for k in by_name[n])}
                    new_blocks.append(nb)
            if not need:
                break
            context |= {k for n in need for k in by_name[n]}
            if sum(len(blocks[k].symbols) + len(blocks[k].calls) for k in context) > CONTEXT_FACTS:
                _why("whole: a hint in the range names definitions outside it (too many)")
                return None
        else:
            _why("whole: a hint in the range names definitions outside it (chain too long)")
            return None
        if lo == 0:
            module_symbol = got.file.symbols[0]
        else:
            module_symbol = replace(module_symbol, end_line=max(engine._line_count(src), 1), hash=file_hash)
    # a kept hint learnt from an edited name may be different now
    if any(b.consults & edited for b in kept_before) or any(b.consults & edited for b in kept_after):
        _why("whole: a kept hint names an edited definition")
        return None
    moved = [_moved(b, dbyte, drow) for b in kept_after]
    out = _Entry(src=src, hash=file_hash, module=e.module, module_symbol=module_symbol,
                 blocks=kept_before + new_blocks + moved)
    if not _limits_ok(out):
        return None
    delta = Delta(base_hash=e.hash, first_line=rows[i] + 1, last_line=rows[j + 1],
                  shift=drow, symbols=[s for b in new_blocks for s in b.symbols],
                  calls=[c for b in new_blocks for c in b.calls])
    return out, delta
