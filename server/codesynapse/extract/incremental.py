"""Re-extract only the top-level statements an edit touched.

A live update of a large file used to parse and extract all of it again for a one-line edit
(an 8,550-line test file: ~160 ms). For languages whose hooks say where a statement's facts
depend on other statements (``LanguageHooks.traces_file_facts``: Python, whose receiver hints
can come from the classes a function of the same file returns), the last extraction of a
recently updated file is kept here, cut into blocks of top-level statements
(``engine.extract_blocks``), each with a digest of its text (the source itself is not kept).
The next version of the file is compared block by block with the kept digests, from the start
and from the end; only the blocks between the first and the last that differ are parsed
again (on their own, as a range of the file), the blocks before them are kept as they are and
those after them move by the lines the edit added or removed. The result must be exactly what a whole extraction gives
(tests/unit/test_extract_incremental.py checks that on random edits of real files), so the
whole file is extracted instead whenever that cannot be promised:

* the parsed range has a syntax error (an opened string or bracket can swallow what follows);
* a hint in the range was learnt from a name defined outside it, or a kept block's hint from a
  name the edited blocks define (or defined), directly or through the functions it calls;
* the file's module name changed, or its extraction hit a limit or had syntax errors.

Only files of at least ``MIN_BYTES`` are kept (a small file is extracted whole in a few
milliseconds), at most ``MAX_FILES`` of them and ``MAX_BYTES`` of kept source in memory; the
least recently updated goes first.

Kept on disk too (``keep_dir``, under the index's data directory): the daemon holds nothing in
memory of a file it has not updated yet, so the first change of a large file seen only through
the disk (a tool that is not an editor with the file open) was extracted whole (the stdlib's
largest files: p50 149 ms, p95 296 ms). Every whole extraction of a file that can be kept,
the indexing workers' too, is also written there (compressed, about a third of the source: the
stdlib's 265 such files, 20.2 MB, keep 6.9 MB), and a file
not kept in memory is loaded from there. What is loaded is the extraction of the bytes it
describes, so it is a sound base for any next version of the file (and, holding no source, is
metadata like the graph: names, signatures, redacted summaries, line ranges, digests); it is used only when this
extractor wrote it (``_version``: this package's code and the grammars) for the same path,
language and redaction patterns, and the module name is checked as for a kept file.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import os
import re
import threading
import zlib
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import msgspec
from msgspec.structs import replace

from codesynapse.extract import engine
from codesynapse.extract.model import CallSite, Delta, FileExtraction, ImportRef, Inherit, Symbol

log = logging.getLogger(__name__)

MIN_BYTES = 32 << 10
MAX_FILES = 32
MAX_BYTES = 8 << 20  # of the kept files' source; what is kept costs ~6 times that (the 32 largest stdlib files: 6.3 MB, 42 MB)
# a hint in the edited range learnt from definitions elsewhere in the file: those are parsed with
# the range (as many rounds as a chain of functions returning each other's classes is long)
CONTEXT_ROUNDS = 4
CONTEXT_FACTS = 20_000  # definitions and calls of the blocks parsed for context, at most

_lock = threading.Lock()
_kept: OrderedDict[tuple, "_Entry"] = OrderedDict()
# the bytes a kept entry was extracted from, by the same key, while it is kept in memory (never
# on disk): the next edit's changed range is found by comparing bytes (_changed_range), not by
# hashing every block of the file again
_sources: dict[tuple, bytes] = {}
_NO_NAMES: frozenset[str] = frozenset()  # the consults of a block that consults none (shared)

# how files were extracted, and why whole (tests and the bench read this)
stats: dict[str, int] = {"incremental": 0, "whole": 0}


def _why(reason: str) -> None:
    stats[reason] = stats.get(reason, 0) + 1


class _Block(msgspec.Struct, kw_only=True, gc=False):
    """One top-level statement's share of a kept extraction. Not tracked by the garbage
    collector (``gc=False``: it holds tuples of structs, bytes, names, never itself), and its
    facts are tuples (untracked once the collector has seen them): a kept 15,000-statement
    header was ~100,000 tracked objects, and a full collection over a few such files took
    0.3-1.1 s inside a save on the kernel (issue 24)."""

    start: int  # byte where the block starts (a line start)
    row: int  # its first row (0-based)
    digest: bytes  # of its text (_digest)
    symbols: tuple[Symbol, ...]
    calls: tuple[CallSite, ...]
    imports: tuple[ImportRef, ...]
    inherits: tuple[Inherit, ...]
    defines: tuple[str, ...]
    consults: frozenset[str]
    # it holds a line of a container the hooks see through (C's ``#if``/``#else``/``#endif``):
    # an edit reaching it changes which statements the container holds (its parse alone may not show that)
    directive: bool = False


@dataclass
class _Entry:
    hash: str  # content hash of the file's bytes
    size: int  # bytes
    lines: int  # engine._line_count
    newline_end: bool  # the file ends with a newline
    module: str
    module_symbol: Symbol
    blocks: list[_Block]


def forget(path_prefix: str | None = None) -> None:
    """Drop what is kept in memory (everything, with what is not written to disk yet, as a
    restart would; or the files under one root)."""
    with _lock:
        if path_prefix is None:
            _kept.clear()
            _sources.clear()
            _dirty.clear()
        else:
            for k in [k for k in _kept if k[0] == path_prefix]:
                del _kept[k]
                _sources.pop(k, None)


def kept_files() -> int:
    with _lock:
        return len(_kept)


# -- kept on disk ------------------------------------------------------------------------

@dataclass
class _Saved:
    version: str  # _version() of the extractor that wrote it
    key: list[str]  # relpath, language, redaction patterns
    entry: _Entry


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(type=_Saved)
_VERSION: str | None = None
# live updates' entries not written yet, by (keep_dir, relpath)
_dirty: dict[tuple[str, str], _Saved] = {}
_flush_lock = threading.Lock()


def _version() -> str:
    """What an extraction depends on besides its input: this package's code and queries, and
    the parser and grammar packages."""
    global _VERSION
    if _VERSION is None:
        h = hashlib.sha1()
        base = Path(__file__).resolve().parent
        for p in sorted(base.rglob("*")):
            if p.suffix in (".py", ".scm") and "__pycache__" not in p.parts:
                h.update(p.relative_to(base).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
        for dist in ("tree-sitter", "tree-sitter-language-pack", "msgspec"):
            try:
                v = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                v = "?"
            h.update(f"{dist}={v}\0".encode())
        _VERSION = h.hexdigest()
    return _VERSION


def _disk_key(relpath: str, language: str, redact_extra) -> list[str]:
    return [relpath, language, *(getattr(p, "pattern", p) for p in redact_extra)]


def disk_path(keep_dir: str, relpath: str) -> str:
    return os.path.join(keep_dir, hashlib.sha1(relpath.encode()).hexdigest() + ".kept")


def _load(keep_dir: str, dkey: list[str]) -> _Entry | None:
    path = disk_path(keep_dir, dkey[0])
    with _lock:
        pending = _dirty.get((keep_dir, dkey[0]))
    if pending is not None:  # written by a live update, not flushed yet
        return pending.entry if pending.key == dkey else None
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    try:
        saved = _DECODER.decode(zlib.decompress(raw))
    except (zlib.error, msgspec.DecodeError, ValueError) as e:
        log.warning("kept extraction of %s unreadable (%s); it is extracted whole", dkey[0], e)
        discard(keep_dir, dkey[0])
        return None
    if saved.version != _version() or saved.key != dkey:
        return None
    return saved.entry


def _write(keep_dir: str, saved: _Saved) -> None:
    path = disk_path(keep_dir, saved.key[0])
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        os.makedirs(keep_dir, exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(zlib.compress(_ENCODER.encode(saved), 1))
        os.replace(tmp, path)
    except OSError as e:
        log.warning("could not keep the extraction of %s on disk: %s", saved.key[0], e)
        try:
            os.unlink(tmp)
        except OSError:
            pass


def discard(keep_dir: str, relpath: str) -> None:
    """Forget what is kept on disk of ``relpath`` (deleted, or no longer kept)."""
    with _lock:
        _dirty.pop((keep_dir, relpath), None)
    try:
        os.unlink(disk_path(keep_dir, relpath))
    except OSError:
        pass


def flush() -> int:
    """Write the live updates' entries to disk: after an update is stored, off the path that
    makes it queryable (the stdlib's largest file: ~6 ms). How many were written."""
    with _flush_lock:  # one flush at a time: a file's later version is written last
        with _lock:
            due = dict(_dirty)
            _dirty.clear()
        for (keep_dir, _), saved in due.items():
            _write(keep_dir, saved)
    return len(due)


def _digest(text: bytes) -> bytes:
    return hashlib.blake2b(text, digest_size=16).digest()


def _entry(src: bytes, file_hash: str, module: str, module_symbol: Symbol, blocks: list[_Block]) -> _Entry:
    return _Entry(hash=file_hash, size=len(src), lines=engine._line_count(src), newline_end=src.endswith(b"\n"),
                  module=module, module_symbol=module_symbol, blocks=blocks)


def _split(b: engine.Blocks, src: bytes | None = None) -> list[_Block]:
    """Each block's share of what the range gave, by the rows it spans; with ``src`` (a whole
    file), each block's digest too."""
    f = b.file
    rows = [r for _, r in b.starts]
    n = len(rows)
    facts: list[list[list]] = [[[], [], [], []] for _ in range(n)]  # symbols, calls, imports, inherits

    def at(line: int) -> list[list]:
        return facts[max(0, bisect_right(rows, line - 1) - 1)]

    # the file's own module symbol (first, without a parent, when the range starts the file)
    # is kept apart (_Entry.module_symbol); other symbols of kind "module" (C++ namespaces)
    # belong to the statements that define them
    own = f.symbols[0] if f.symbols and f.symbols[0].kind == "module" and not f.symbols[0].parent else None
    for s in f.symbols:
        if s is not own:
            at(s.start_line)[0].append(s)
    for c in f.calls:
        at(c.line)[1].append(c)
    for im in f.imports:
        at(im.line)[2].append(im)
    for ih in f.inherits:
        at(ih.line)[3].append(ih)
    starts = [s for s, _ in b.starts]
    seen: dict[int, set[str]] = {}
    for byte, names in b.consults:
        i = max(0, bisect_right(starts, byte) - 1)
        seen.setdefault(i, set()).update(names)
    out = [_Block(start=s, row=r, digest=b"", symbols=tuple(fs[0]), calls=tuple(fs[1]), imports=tuple(fs[2]),
                  inherits=tuple(fs[3]), defines=d, consults=frozenset(seen[k]) if k in seen else _NO_NAMES,
                  directive=t)
           for k, ((s, r), d, t, fs) in enumerate(zip(b.starts, b.defines, b.directive, facts))]
    if src is not None:
        for k, blk in enumerate(out):
            blk.digest = _digest(src[blk.start:out[k + 1].start if k + 1 < len(out) else len(src)])
    return out


def _moved(b: _Block, dbyte: int, drow: int) -> _Block:
    if not drow:
        return _Block(start=b.start + dbyte, row=b.row, digest=b.digest, symbols=b.symbols, calls=b.calls,
                      imports=b.imports, inherits=b.inherits, defines=b.defines, consults=b.consults,
                      directive=b.directive)
    return _Block(
        start=b.start + dbyte, row=b.row + drow, digest=b.digest,
        symbols=tuple([replace(s, start_line=s.start_line + drow, end_line=s.end_line + drow) for s in b.symbols]),
        calls=tuple([replace(c, line=c.line + drow) for c in b.calls]) if b.calls else (),
        imports=tuple([replace(i, line=i.line + drow) for i in b.imports]) if b.imports else (),
        inherits=tuple([replace(i, line=i.line + drow) for i in b.inherits]) if b.inherits else (),
        defines=b.defines, consults=b.consults, directive=b.directive)


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


_CONTINUATION = re.compile(rb"(?:else|elif|except|finally)\b")


def _starts_statement(src: bytes, pos: int, comments: tuple[bytes, ...], offside: bool) -> bool:
    """Whether the first line at ``pos`` that is neither blank nor a comment at column 0
    starts a statement of its own (not indented, not a clause of the statement above)."""
    n = len(src)
    while pos < n:
        nl = src.find(b"\n", pos)
        end = n if nl < 0 else nl
        line = src[pos:end]
        body = line.strip()
        if body and (not body.startswith(comments) or (offside and line[:1] in (b" ", b"\t"))):
            # an indented comment belongs to the indented body above it (tree-sitter ends that
            # statement after it)
            return line[:1] not in (b" ", b"\t", b")", b"]", b"}") and not _CONTINUATION.match(line)
        pos = end + 1
    return True


def _changed_blocks(e: _Entry, src: bytes) -> tuple[int, int]:
    """The change from the kept version to ``src`` as whole kept blocks: the kept version's
    bytes ``[a:b]`` became ``src[a:b + len(src) - e.size]``, ``a`` and ``b`` block starts (or
    the end). The blocks whose text is unchanged from the start of the file, and those from its
    end (each at a line start of ``src``, not overlapping the first ones), stay out; blocks
    only inserted or only deleted leave an empty side."""
    blocks = e.blocks
    n = len(blocks)
    d = len(src) - e.size
    ends = [b.start for b in blocks[1:]] + [e.size]
    i = 0
    while i < n:
        b, end = blocks[i], ends[i]
        if end > len(src) or (end == e.size and not e.newline_end) or _digest(src[b.start:end]) != b.digest:
            break  # (a last line without a newline may go on in src)
        i += 1
    a = blocks[i].start if i < n else e.size
    j = n
    while j > i:
        b, end = blocks[j - 1], ends[j - 1]
        at = b.start + d
        if at < a or (at > 0 and src[at - 1:at] != b"\n") or _digest(src[at:end + d]) != b.digest:
            break
        j -= 1
    return a, blocks[j].start if j < n else e.size


def _common_prefix(a: bytes, b: bytes) -> int:
    """The length of the longest common prefix of ``a`` and ``b`` (a binary search comparing
    slices: C-speed, about twice the bytes compared)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: bytes, b: bytes) -> int:
    lo, hi = 0, min(len(a), len(b))
    na, nb = len(a), len(b)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[na - mid:na - lo] == b[nb - mid:nb - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _changed_range(e: _Entry, old: bytes, src: bytes) -> tuple[int, int]:
    """``_changed_blocks``' answer, from the kept version's bytes ``old``: a block is unchanged
    from the start when it ends inside the bytes both versions begin with, and from the end
    when it starts inside the bytes they end with (then each byte of it compares equal where
    the digest would be computed); found by bisection, not block by block (a 15,000-block
    header: 12-37 ms of each save, hashing blocks). tests/unit/test_extract_incremental.py
    compares the two on random edits."""
    blocks = e.blocks
    n = len(blocks)
    d = len(src) - e.size
    starts = [b.start for b in blocks]
    p = _common_prefix(old, src)
    # blocks [0, i) end by p (a block ends where the next starts); the last block ends the
    # file and, without a newline there, may go on in src
    i = bisect_right(starts, p) - 1 if n else 0  # blocks whose next start is <= p
    i = max(0, min(i, n - 1 if not e.newline_end else n))
    if i == n - 1 and e.newline_end and e.size <= p:
        i = n
    a = starts[i] if i < n else e.size
    q = _common_suffix(old, src)
    # from the end: blocks starting at or after e.size - q, moved by d, at or after a
    j = max(bisect_left(starts, e.size - q), bisect_left(starts, a - d), i)
    while j < n and starts[j] + d > 0 and src[starts[j] + d - 1:starts[j] + d] != b"\n":
        j += 1
    return a, starts[j] if j < n else e.size


def _has_statement(src: bytes, lo: int, hi: int, comments: tuple[bytes, ...]) -> bool:
    """Whether the whole lines ``src[lo:hi]`` hold one that is neither blank nor a comment."""
    pos = lo
    while pos < hi:
        nl = src.find(b"\n", pos, hi)
        end = hi if nl < 0 else nl
        body = src[pos:end].strip()
        if body and not body.startswith(comments):
            return True
        pos = end + 1
    return False


def _ends_cleanly(src: bytes, lo: int, hi: int, marks: tuple[bytes, ...]) -> bool:
    """Whether ``src[lo:hi]`` is empty or ends with a whole line that holds no comment and is
    not a decorator or a line continuation (nothing in it can join the statement below)."""
    if hi <= lo:
        return True
    if src[hi - 1:hi] != b"\n":
        return False
    last = src[max(lo, src.rfind(b"\n", lo, hi - 1) + 1):hi - 1].strip()
    # a comment line is the summary of the statement below it; a comment after code on its
    # line is that code's (LanguageHooks.leading_comment), unless a block comment is left open
    # or one opened above ends there
    if last.startswith(b"@") or any(last.startswith(m) for m in marks):
        return False
    if any(m in last for m in marks) and (b"/*" in marks and last.rfind(b"/*") > last.rfind(b"*/")
                                          or b"*/" in last and not (0 <= last.find(b"/*") < last.find(b"*/"))):
        return False
    # a line continuation joins what follows, over blank lines too (tree-sitter's C
    # preprocessor lines: ``#define F(x) \`` then a blank line takes the next statement in)
    k = hi - 1
    while k >= lo and src[k] in b" \t\r\n":
        k -= 1
    return not (k >= lo and src[k] == 0x5C)


def _limits_ok(e: _Entry) -> bool:
    defs = sum(len(b.symbols) for b in e.blocks)
    calls = sum(len(b.calls) for b in e.blocks)
    return defs < engine.MAX_DEFS and calls < engine.MAX_CALLS


def _store(key: tuple, e: _Entry, src: bytes) -> None:
    with _lock:
        _kept[key] = e
        _kept.move_to_end(key)
        _sources[key] = src
        total = sum(x.size for x in _kept.values())
        while len(_kept) > MAX_FILES or (total > MAX_BYTES and len(_kept) > 1):
            k, old = _kept.popitem(last=False)
            _sources.pop(k, None)
            total -= old.size


def _whole(key, parser, src, query, hooks, relpath, language, module, file_hash, redact_extra, lines,
           keep_dir: str | None = None, in_memory: bool = True) -> FileExtraction:
    stats["whole"] += 1
    if len(src) > engine.CHUNK_BYTES:  # extracted a piece at a time, untraced: not kept
        with _lock:
            _kept.pop(key, None)
            _sources.pop(key, None)
        if keep_dir:
            discard(keep_dir, relpath)
        return engine.extract_file(parser=parser, src=src, query=query, hooks=hooks, relpath=relpath,
                                   language=language, module=module, file_hash=file_hash, redact_extra=redact_extra)
    b = engine.extract_blocks(parser=parser, src=src, query=query, hooks=hooks, relpath=relpath, module=module,
                              file_hash=file_hash, redact_extra=redact_extra)
    fx = engine.finish(b.file, language, file_hash, lines)
    e = _entry(src, file_hash, b.file.module, b.file.symbols[0], _split(b, src))
    if not fx.partial and not fx.error and _limits_ok(e):
        if in_memory:
            _store(key, e, src)
        if keep_dir:
            saved = _Saved(version=_version(), key=_disk_key(relpath, language, redact_extra), entry=e)
            if in_memory:
                with _lock:
                    _dirty[(keep_dir, relpath)] = saved
            else:
                _write(keep_dir, saved)
    else:
        with _lock:
            _kept.pop(key, None)
            _sources.pop(key, None)
        if keep_dir:
            discard(keep_dir, relpath)
    return fx


def extract_whole(*, root: str, parser, src: bytes, query, hooks, relpath: str, language: str, module: str,
                  file_hash: str, redact_extra=(), keep_dir: str) -> FileExtraction:
    """``src`` extracted whole (an index), its extraction written to ``keep_dir`` for the
    first live change of the file, not kept in memory."""
    return _whole(None, parser, src, query, hooks, relpath, language, module, file_hash, redact_extra,
                  engine._line_count(src), keep_dir=keep_dir, in_memory=False)


def extract(*, root: str, parser, src: bytes, query, hooks, relpath: str, language: str, module: str,
            file_hash: str, redact_extra=(), keep_dir: str | None = None) -> FileExtraction:
    """``src`` extracted as ``engine.extract_file`` would, re-using the kept extraction of the
    file's last version where the edit did not reach (from memory, or else from ``keep_dir``)."""
    key = (root, relpath, language, tuple(getattr(p, "pattern", p) for p in redact_extra))
    lines = engine._line_count(src)
    with _lock:
        e = _kept.get(key)
        before = _sources.get(key) if e is not None else None
    if e is None and keep_dir and len(src) <= engine.CHUNK_BYTES:
        e = _load(keep_dir, _disk_key(relpath, language, redact_extra))
        if e is not None:
            _why("loaded from disk")
    if e is None or e.module != module or len(src) > engine.CHUNK_BYTES:
        _why("whole: not kept" if e is None else "whole: module changed" if e.module != module else "whole: too large")
        return _whole(key, parser, src, query, hooks, relpath, language, module, file_hash, redact_extra, lines,
                      keep_dir=keep_dir)
    try:
        got = _update(e, parser, src, query, hooks, relpath, module, file_hash, redact_extra, before)
    except Exception:  # never worse than a whole extraction
        log.exception("incremental extraction of %s failed; extracting it whole", relpath)
        got = None
    if got is None:
        return _whole(key, parser, src, query, hooks, relpath, language, module, file_hash, redact_extra, lines,
                      keep_dir=keep_dir)
    stats["incremental"] += 1
    out, delta = got
    _store(key, out, src)
    if keep_dir and out.hash != e.hash:
        with _lock:
            _dirty[(keep_dir, relpath)] = _Saved(version=_version(), key=_disk_key(relpath, language, redact_extra),
                                                 entry=out)
    fx = _assemble(out, relpath, language, file_hash, lines, len(src))
    fx.delta = delta
    return fx


def _update(e: _Entry, parser, src: bytes, query, hooks, relpath: str, module: str, file_hash: str,
            redact_extra, before: bytes | None = None) -> tuple[_Entry, Delta | None] | None:
    blocks = e.blocks
    if file_hash == e.hash:
        return e, None
    dbyte = len(src) - e.size
    # the change: old[ra:rb] became src[ra:rb + dbyte], whole blocks
    ra, rb = _changed_range(e, before, src) if before is not None and len(before) == e.size \
        else _changed_blocks(e, src)
    n = len(blocks)
    # block starts and rows; the end of a file that ends a line is one more (empty) block start
    starts = [b.start for b in blocks] + [e.size]
    rows = [b.row for b in blocks] + [e.lines]  # a last line without a newline is a row too
    at_start = {st: k for k, st in enumerate(starts) if k < n or e.newline_end}
    # The blocks the change touches. From the block holding the byte before it (an indented
    # line added at a block's start continues the block above), or from the block it starts
    # at when it starts with a new statement below a clean line (not a comment, which would be
    # the summary of what is written below it); to the block holding the byte after it (what
    # follows may continue what was written), or to the block it ends at when it ends with a
    # finished line that is not a comment (a comment belongs to the statement below it).
    lines_, marks, offside = hooks.comment_lines, hooks.comment_marks, hooks.offside_rule
    if ra > 0 and ra in at_start and _ends_cleanly(src, 0, ra, marks):
        i = at_start[ra]
    else:
        i = max(0, bisect_right(starts, ra - 1, 0, n) - 1)
    # tree-sitter does not mind an indented first line: the range itself must start with a
    # statement of its own (comment lines do not end an indented body)
    while i > 0 and not _starts_statement(src, starts[i], lines_, offside):
        i -= 1
    # the module's own facts (its docstring) come from the file's first statement: an edit
    # at or above it is parsed from the start of the file, down through it
    if i > 0 and not _has_statement(src, 0, starts[i], lines_):
        i = 0
    if rb in at_start and at_start[rb] >= i and rb > 0:
        j = at_start[rb] - 1
    else:
        j = max(i, bisect_right(starts, min(rb, e.size - 1), 0, n) - 1)
    while j + 1 < n and not (_starts_statement(src, starts[j + 1] + dbyte, lines_, offside)
                             and _ends_cleanly(src, starts[i], starts[j + 1] + dbyte, marks)
                             and (i > 0 or _has_statement(src, 0, starts[j + 1] + dbyte, lines_))):
        j += 1
    if any(b.directive for b in blocks[i:j + 1]):
        _why("whole: a conditional-compilation line edited")
        return None
    lo, old_hi = starts[i], starts[j + 1]
    hi = old_hi + dbyte
    if hi < lo or (hi < len(src) and src[hi - 1:hi] != b"\n"):
        _why("whole: the edit does not end at a line end")
        return None
    # the kept version's newlines in [lo, old_hi): its rows there, but for a last line without one
    old_newlines = rows[j + 1] - rows[i] - (1 if j + 1 == n and not e.newline_end else 0)
    drow = src.count(b"\n", lo, hi) - old_newlines
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
        unchanged: dict[bytes, list[_Block]] = {}  # by digest
        for k in range(i, j + 1):
            unchanged.setdefault(blocks[k].digest, []).append(blocks[k])
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
                end = blocks[k + 1].start if k + 1 < len(blocks) else e.size
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
                nb.digest = _digest(src[nb.start:end])
                same = left.get(nb.digest)
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
    out = _entry(src, file_hash, e.module, module_symbol, kept_before + new_blocks + moved)
    if not _limits_ok(out):
        return None
    delta = Delta(base_hash=e.hash, first_line=rows[i] + 1, last_line=rows[j + 1],
                  shift=drow, symbols=[s for b in new_blocks for s in b.symbols],
                  calls=[c for b in new_blocks for c in b.calls])
    return out, delta
