"""A whole extraction of a large stored file, written as a delta.

A live update of a large file that was extracted whole (its first change seen through the disk,
a language extracted whole on every update, an edit the statement-at-a-time extractor could not
take) still changes a few of its rows: the definitions and call sites around the edit, and the
lines of those below it. Writing it whole deletes and inserts every row and its full-text words
(a 13,000-line generated header: ~1.7 s of a 2.7 s save on the kernel index). :func:`diff`
finds the edited lines by comparing the stored rows with the extraction (the rows above the
first difference are the same, those below the last one the same but moved by the change in
line count) and gives the :class:`Delta` an incremental extraction would have carried, so the
store writes only the rows of the lines that changed. The delta is checked before it is given:
the stored rows it keeps and moves plus the rows it inserts must be exactly the extraction's.
"""

from __future__ import annotations

from collections.abc import Sequence

from codesynapse.extract.model import Delta, FileExtraction

# a file of fewer rows is written whole: reading its stored rows to compare costs about what
# writing them does
MIN_ROWS = 1000


def _sym_key(s, shift: int = 0) -> tuple:
    return (s.start_line + shift, s.end_line + shift, s.qname, s.name, s.kind, s.signature, s.start_col,
            s.end_col, s.hash, s.summary, s.parent, bool(s.is_test), bool(s.exported))


def _stored_call_key(c, shift: int = 0) -> tuple:
    return (c.line + shift, c.col, c.caller, c.callee or c.name, c.name, c.hint, c.kind, c.args)


def _call_key(c) -> tuple:
    return (c.line, c.col, c.caller, c.callee, c.name, c.receiver_hint, c.kind, c.args)


def _own_module(s) -> bool:
    return s.kind == "module" and not s.parent


def _bounds(old: list[tuple], new: list[tuple], shift: int, moved) -> tuple[int, int]:
    """(first, last): the old lines from the first row that differs to the last one that does,
    once the rows below it are moved by ``shift`` (first > last when no row differs: a huge
    first, a last below 1 when every row moved)."""
    i = 0
    while i < len(old) and i < len(new) and old[i] == new[i]:
        i += 1
    inf = 1 << 62
    first = min(old[i][0] if i < len(old) else inf, new[i][0] if i < len(new) else inf)
    j = 0
    while j < len(old) and j < len(new) and moved(old[-1 - j], shift) == new[-1 - j]:
        j += 1
    last = max(old[-1 - j][0] if j < len(old) else -inf, new[-1 - j][0] - shift if j < len(new) else -inf)
    return first, last


def _apply(old: list[tuple], new: list[tuple], first: int, last: int, shift: int, moved) -> list[tuple] | None:
    """The new rows a delta of old lines ``first``..``last`` inserts, if the stored rows it
    leaves (above ``first``), moves (below ``last``) and the rows it inserts are exactly
    ``new``; else None."""
    lo, hi = first, last
    inserted = [r for r in new if lo <= r[0] <= hi + shift]
    kept = [r for r in old if r[0] < lo] + [moved(r, shift) for r in old if r[0] > hi]
    return inserted if sorted(kept + inserted) == new else None


def diff(fx: FileExtraction, stored_hash: str, stored_lines: int, stored_symbols: Sequence,
         stored_calls: Sequence) -> Delta | None:
    """The delta that turns the stored rows of ``fx.path`` (``stored_symbols`` / ``stored_calls``,
    the store's rows of its version ``stored_hash`` of ``stored_lines`` lines) into ``fx``'s, or
    None when it would not be smaller than writing ``fx`` whole."""
    if len(stored_symbols) + len(stored_calls) < MIN_ROWS:
        return None
    syms = [s for k, s in enumerate(fx.symbols) if not (k == 0 and _own_module(s))]
    old_s = sorted(_sym_key(s) for s in stored_symbols if not _own_module(s))
    new_s = sorted(_sym_key(s) for s in syms)
    old_c = sorted(_stored_call_key(c) for c in stored_calls)
    new_c = sorted(_call_key(c) for c in fx.calls)
    shift = fx.lines - stored_lines
    sym_moved = lambda r, d: (r[0] + d, r[1] + d, *r[2:])
    call_moved = lambda r, d: (r[0] + d, *r[1:])
    fs, ls = _bounds(old_s, new_s, shift, sym_moved)
    fc, lc = _bounds(old_c, new_c, shift, call_moved)
    last = max(ls, lc, 0)  # 0: every row moved (the edit is above them all)
    first = min(fs, fc, last + 1)  # last + 1: no row replaced, those below ``last`` move
    ins_s = _apply(old_s, new_s, first, last, shift, sym_moved)
    ins_c = _apply(old_c, new_c, first, last, shift, call_moved) if ins_s is not None else None
    if ins_s is None or ins_c is None or len(ins_s) + len(ins_c) > (len(new_s) + len(new_c)) // 2:
        return None
    want_s, want_c = set(ins_s), set(ins_c)
    return Delta(base_hash=stored_hash, first_line=first, last_line=last, shift=shift,
                 symbols=[s for s in syms if _sym_key(s) in want_s],
                 calls=[c for c in fx.calls if _call_key(c) in want_c])
