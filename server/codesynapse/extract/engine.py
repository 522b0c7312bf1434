"""Query-driven extraction: one tree-sitter parse per file, one compiled query per language.

Capture names used by ``queries/<language>.scm``:

- ``@definition.<kind>`` on a definition node, with ``@name`` on its name in the same match;
- ``@reference.call`` / ``@reference.new`` on a call, with ``@callee`` on the callee expression;
- ``@inherit`` / ``@implements`` on a base-type expression inside a type definition.

Containment (which class a method belongs to, which unit a call belongs to) comes from byte
ranges, so queries stay small and declarative. Imports, kinds, summaries and receiver hints
come from the language's hooks.
"""

from __future__ import annotations

import hashlib
import logging
from bisect import bisect_right
from dataclasses import dataclass, field

from tree_sitter import Node, Parser, Point, Query, QueryCursor, Range

from codesynapse.extract.hooks import LanguageHooks, end_row, text
from codesynapse.extract.redact import RecordGate
from codesynapse.extract.model import (
    TYPE_KINDS,
    UNIT_KINDS,
    CallSite,
    FileExtraction,
    Inherit,
    Symbol,
)

log = logging.getLogger(__name__)

MAX_DEFS = 50_000  # definitions kept a file; later ones are left out and the file says so
MAX_CALLS = 200_000  # call sites kept a file
# A file larger than CHUNK_BYTES (the default maxFileBytes) is parsed a piece of about
# PIECE_BYTES at a time: a tree costs 50-150 times the bytes it covers (a million lines of
# ``x = 1`` are a 6 MB file and an 850 MB tree), so only one piece's tree and its query matches
# are held at once. Pieces are cut between top-level statements; a single statement larger
# than MAX_PIECE_BYTES ends the file's extraction (the rest is left out and the file says so).
# What the hooks learn from the whole tree (Python classes returned by the file's functions,
# Go struct fields) is learnt per piece: with pieces forced down to 16 KiB, 2,493 of 2,500
# Python files extract exactly as whole, and the other 7 lose a receiver hint or two.
CHUNK_BYTES = 1 << 20
PIECE_BYTES = 256 << 10
MAX_PIECE_BYTES = 4 << 20


@dataclass
class _Def:
    node: Node
    name: str
    kind: str
    qname: str = ""
    parent: "_Def | None" = None
    body_start: int = 0
    body_end: int = 0
    hints: dict[str, str] | None = None
    children: list["_Def"] = field(default_factory=list)


def _gate(extra) -> RecordGate:
    return RecordGate(extra)


@dataclass
class _File:
    """One file's extraction, accumulated a piece (segment) at a time."""

    src: bytes
    query: Query
    hooks: LanguageHooks
    relpath: str
    module: str
    gate: RecordGate  # every string of what is extracted passes it (extract/redact.py), at the end
    path_module: str = ""
    symbols: list[Symbol] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)
    inherits: list[Inherit] = field(default_factory=list)
    imports: list = field(default_factory=list)
    partial: bool = False
    defs_kept: int = 0
    defs_left: int = 0
    calls_left: int = 0  # over MAX_CALLS
    calls_cut: int = 0  # after the definitions limit's cut
    bases_cut: int = 0
    cut: int = -1  # byte from which definitions (and the calls and bases after them) are left out
    cut_line: int = 0
    rest_line: int = 0  # line from which the rest of the file is left out (one statement too large)
    # (unit start byte, top-level names its receiver hints were learnt from), when traced
    consults: list | None = None
    gated: bool = False

    def pass_gate(self) -> None:
        """Every string of what was extracted through the redaction gate (once): symbols
        (qualified names, names, signatures, summaries), calls, imports and bases, and the
        names the incremental extractor keeps."""
        if self.gated:
            return
        g = self.gate
        self.symbols = g.records(self.symbols)
        self.calls = g.records(self.calls)
        self.imports = g.records(self.imports)
        self.inherits = g.records(self.inherits)
        self.module = g.ref(self.module)
        if self.consults:
            self.consults = [(byte, frozenset(g.text(n) for n in names)) for byte, names in self.consults]
        self.gated = True

    def notes(self, lines: int) -> str:
        """Why the file is partial, naming what was left out ("" when nothing was)."""
        out = []
        if self.defs_left:
            after = [f"{n:,} {what}" for n, what in ((self.calls_cut, "call sites"), (self.bases_cut, "base types"))
                     if n]
            out.append(f"definitions limit ({MAX_DEFS:,} a file): {self.defs_left:,} definitions from line "
                       f"{self.cut_line:,} on left out" + (f", and the {' and '.join(after)} after them" if after else ""))
        if self.calls_left:
            out.append(f"call sites limit ({MAX_CALLS:,} a file): {self.calls_left:,} call sites left out")
        if self.rest_line:
            out.append(f"a top-level statement over {MAX_PIECE_BYTES:,} bytes at line {self.rest_line:,}: "
                       f"lines {self.rest_line:,}-{lines:,} left out")
        if out and self.partial:
            out.insert(0, "syntax errors")
        return "; ".join(out)


def _hints(f: _File, node: Node) -> dict[str, str]:
    """A unit's receiver hints; traced, the top-level names they were learnt from are noted."""
    if f.consults is None:
        return f.hooks.receiver_hints(node, f.src)
    f.hooks.trace_begin()
    try:
        hints = f.hooks.receiver_hints(node, f.src)
    finally:
        names = f.hooks.trace_end()
    if names:
        f.consults.append((node.start_byte, names))
    return hints


def _receiver_hint(f: _File, owner, recv: str) -> str:
    """The hint of receiver ``recv`` seen from unit ``owner``: its own and its enclosing
    functions' hints, then (``self.x``/``this.x``) any method's of the enclosing class."""
    unit = owner
    while unit is not None:
        if unit.hints is None:
            unit.hints = _hints(f, unit.node)
        if recv in unit.hints:
            return unit.hints[recv]
        if unit.kind in TYPE_KINDS:
            break
        unit = unit.parent
    if recv.startswith(("self.", "this.")):
        cls = owner
        while cls is not None and cls.kind not in TYPE_KINDS:
            cls = cls.parent
        if cls is not None:
            for m in cls.children:
                if m.hints is None:
                    m.hints = _hints(f, m.node)
                if recv in m.hints:
                    return m.hints[recv]
    return ""


def _segment(f: _File, root: Node, hi: int | None) -> None:
    """Extract what starts before ``hi`` in ``root`` (hi None: all of it): a whole file's tree,
    or a piece's tree whose statements from ``hi`` on are parsed again with the next piece.
    Pieces are cut between top-level statements and every definition lies inside one, so
    containment never crosses a piece."""
    src, hooks, module, relpath = f.src, f.hooks, f.module, f.relpath
    sep = hooks.sep
    cursor = QueryCursor(f.query)
    defs: list[_Def] = []
    calls: list[tuple[Node, Node, str]] = []
    bases: list[tuple[Node, str]] = []
    import_nodes: list[Node] = []
    end = hi if hi is not None else len(src) + 1  # what starts at ``hi`` or later is the next piece's
    for _idx, caps in cursor.matches(root):
        for cname, nodes in caps.items():
            if cname.startswith("definition."):
                name_nodes = caps.get("name")
                if not name_nodes:
                    continue
                # several @name captures in one match are joined with "." (a C++
                # ``TEST(Suite, Name)`` is named ``Suite.Name``)
                name = ".".join(text(n, src).strip() for n in name_nodes) if nodes[0].start_byte < end else ""
                if name:
                    defs.append(_Def(nodes[0], name, cname.split(".", 1)[1]))
                break
            if cname in ("reference.call", "reference.new"):
                callee = caps.get("callee")
                if callee and nodes[0].start_byte < end:
                    calls.append((nodes[0], callee[0], "new" if cname == "reference.new" else "call"))
                break
            if cname == "import":
                if nodes[0].start_byte < end:
                    import_nodes.append(nodes[0])
                break
            if cname in ("inherit", "implements"):
                for n in nodes:
                    if n.start_byte < end:
                        bases.append((n, "implements" if cname == "implements" else "inherits"))
                break

    # Containment: sort outer-first, then a stack walk assigns parents.
    defs.sort(key=lambda d: (d.node.start_byte, -d.node.end_byte))
    uniq: list[_Def] = []
    seen: set[tuple[int, int]] = set()
    for d in defs:
        key = (d.node.start_byte, d.node.end_byte)
        if key in seen:
            continue
        seen.add(key)
        uniq.append(d)
    defs = uniq
    stack: list[_Def] = []
    symbols = f.symbols
    kept: list[_Def] = []
    for d in defs:
        while stack and d.node.start_byte >= stack[-1].node.end_byte:
            stack.pop()
        parent = stack[-1] if stack else None
        parent_kind = parent.kind if parent else "module"
        d.kind = hooks.refine_kind(d.kind, d.node, parent_kind)
        if d.kind == "constant" and (parent is not None or not hooks.constant_ok(d.name, d.node)):
            continue
        d.parent = parent
        # A definition outside its type's body (Go receiver methods, Rust impl blocks, C++
        # ``Foo::bar``) is qualified by the type the hooks name: <scope><sep>Type<sep>name.
        owner_type = hooks.owner(d.node, src) if parent is None or parent.kind not in TYPE_KINDS else ""
        scope_q = parent.qname if parent else module
        if owner_type:
            scope_q = scope_q + sep + owner_type
        d.qname = scope_q + sep + d.name
        is_test = hooks.is_test(d.name, d.kind, relpath, d.node, src, parent.name if parent else "")
        if d.kind == "test" and not is_test:
            continue  # a ``@definition.test`` capture (a JS ``it(...)`` block) the hooks did not confirm
        if f.defs_kept >= MAX_DEFS:
            # over the limit: this and every later definition is left out, and so are the
            # calls and bases after it (their owners would be unknown)
            if f.cut < 0:
                f.cut, f.cut_line = d.node.start_byte, d.node.start_point[0] + 1
            f.defs_left += 1
            continue
        f.defs_kept += 1
        body = hooks.body(d.node)
        d.body_start, d.body_end = (body.start_byte, body.end_byte) if body is not None else (d.node.start_byte, d.node.end_byte)
        kept.append(d)
        if parent:
            parent.children.append(d)
        stack.append(d)
        parent_q = scope_q
        kind = "test" if is_test and d.kind in ("function", "method") else d.kind
        d.kind = kind if kind == "test" else d.kind
        symbols.append(
            Symbol(
                qname=d.qname,
                name=d.name,
                kind=d.kind,
                signature=hooks.signature(d.node, src),
                start_line=d.node.start_point[0] + 1,
                # a node that ends at column 0 ends with its newline (C ``#define``): its last
                # line is the one before
                end_line=d.node.end_point[0] + (0 if d.node.end_point[1] == 0
                                                and d.node.end_point[0] > d.node.start_point[0] else 1),
                start_col=d.node.start_point[1],
                end_col=d.node.end_point[1],
                hash=hashlib.sha1(src[d.node.start_byte:d.node.end_byte]).hexdigest(),
                summary=hooks.summary(d.node, src),
                parent=parent_q,
                is_test=is_test,
                exported=hooks.exported(d.name, d.node, src),
            )
        )
    del defs, uniq, stack

    # Units that own calls: functions/methods/tests by their body, types by their body too.
    owners = [d for d in kept if d.kind in UNIT_KINDS or d.kind in TYPE_KINDS]
    owners.sort(key=lambda d: d.body_start)
    starts = [d.body_start for d in owners]

    def owner_of(byte: int) -> _Def | None:
        """Innermost owner whose body holds ``byte``: the last owner starting at or before it,
        or one of that owner's ancestors (definitions nest)."""
        i = bisect_right(starts, byte) - 1
        d = owners[i] if i >= 0 else None
        while d is not None:
            if d.body_start <= byte < d.body_end and (d.kind in UNIT_KINDS or d.kind in TYPE_KINDS):
                return d
            d = d.parent
        return None

    def enclosing_class(d: _Def | None) -> _Def | None:
        while d is not None and d.kind not in TYPE_KINDS:
            d = d.parent
        return d

    call_sites = f.calls
    args_hook = getattr(hooks, "call_args", None)
    for call_node, callee_node, ckind in calls:
        if 0 <= f.cut <= call_node.start_byte:
            f.calls_cut += 1
            continue
        if len(call_sites) >= MAX_CALLS:
            f.calls_left += bool(hooks.callee_text(callee_node, src))
            continue
        owner = owner_of(call_node.start_byte)
        caller = owner.qname if owner else module
        callee = hooks.callee_text(callee_node, src)
        if not callee:
            continue
        name = callee.rsplit(".", 1)[-1].rsplit("::", 1)[-1].rsplit("->", 1)[-1]
        hint = ""
        recv = callee.rsplit(".", 1)[0] if "." in callee else ""
        if recv and owner is not None:
            hint = _receiver_hint(f, owner, recv)
            # ``x.field.m`` with ``x`` of a type whose struct is not in this file: a field hint
            hook = getattr(hooks, "field_hint", None)
            if not hint and hook is not None and recv.count(".") == 1 and owner.kind not in TYPE_KINDS:
                var, fld = recv.split(".")
                base = _receiver_hint(f, owner, var) if var.isidentifier() and fld.isidentifier() else ""
                if base:
                    hint = hook(base, fld)
            # ``f().m`` / ``self.make().m``: the receiver is a call's result (a return hint)
            result_hint = getattr(hooks, "call_result_hint", None)
            if not hint and result_hint is not None and recv.endswith("()") and owner.kind not in TYPE_KINDS \
                    and recv != "super()":
                inner = recv[:-2]
                inner_recv = inner.rsplit(".", 1)[0] if "." in inner else ""
                if owner.hints is None:
                    owner.hints = _hints(f, owner.node)
                known = dict(owner.hints)
                if inner_recv and inner_recv not in known:
                    h = _receiver_hint(f, owner, inner_recv)
                    if h:
                        known[inner_recv] = h
                hint = result_hint(owner.node, inner, known, src)
        # what each argument is (parameter hints of the called function read them)
        args = args_hook(call_node, src, owner.node if owner is not None else None,
                         (lambda r, o=owner: _receiver_hint(f, o, r)) if owner is not None else (lambda r: "")) \
            if args_hook is not None else ""
        call_sites.append(
            CallSite(
                caller=caller, callee=callee[:512], name=name[:256],
                line=call_node.start_point[0] + 1, col=call_node.start_point[1],
                receiver_hint=hint[:256], kind=ckind, args=args,
            )
        )
    del calls

    # The innermost definition holding a base: the last one starting at or before it, or one
    # of that definition's ancestors (definitions nest), as in owner_of.
    kept_starts = [d.node.start_byte for d in kept]

    def innermost(n: Node, types_only: bool) -> _Def | None:
        i = bisect_right(kept_starts, n.start_byte) - 1
        d = kept[i] if i >= 0 else None
        while d is not None:
            if (not types_only or d.kind in TYPE_KINDS) and d.node.end_byte >= n.end_byte:
                return d
            d = d.parent
        return None

    for base_node, bkind in bases:
        if 0 <= f.cut <= base_node.start_byte:
            f.bases_cut += 1
            continue
        child = innermost(base_node, True)
        if child is not None:
            child_q = child.qname
        else:
            # A base named outside the type's body (Rust ``impl Trait for Type``): the hooks
            # name the type; it is qualified by the innermost enclosing definition.
            owner_type = hooks.base_owner(base_node, src)
            if not owner_type:
                continue
            scope = innermost(base_node, False)
            child_q = (scope.qname if scope is not None else module) + sep + owner_type
        base = hooks.callee_text(base_node, src)
        if base and base not in ("object",):
            f.inherits.append(Inherit(child=child_q, base=base[:512], kind=bkind, line=base_node.start_point[0] + 1))

    f.imports.extend(hooks.imports(import_nodes, src, module, relpath))


def _start(f: _File, root: Node, lines: int, file_hash: str) -> None:
    """The module symbol (and the module name a file may declare), from the piece holding the
    file's first statement (a piece that kept only comments is followed by one that may name
    it again)."""
    hooks, src = f.hooks, f.src
    # Languages whose module is declared in the file (Java/Kotlin package, C# namespace,
    # PHP namespace) name it from the tree; the path-based name is the fallback.
    module = f.module = hooks.tree_module(root, src, f.path_module) or f.path_module
    mod_name = module.rsplit(hooks.sep, 1)[-1].rsplit("/", 1)[-1] if module else f.relpath
    sym = Symbol(
        qname=module, name=mod_name, kind="module", signature="", start_line=1,
        end_line=max(lines, 1), start_col=0, end_col=0, hash=file_hash,
        summary=hooks.summary_module(root, src) if hasattr(hooks, "summary_module") else "",
    )
    if f.symbols:
        f.symbols[0] = sym
    else:
        f.symbols.append(sym)


# First bytes of a line that does not start a top-level statement by its look: indentation,
# a blank line, a closing bracket, a comment (comments sit at column 0 inside bodies too).
_NOT_A_STATEMENT = frozenset((b" ", b"\t", b"\r", b"\n", b")", b"]", b"}", b"#", b"/", b"*", b""))


def _piece_end(src: bytes, lo: int, size: int) -> int:
    """Where a piece of about ``size`` bytes from ``lo`` ends: before the last line of its second
    half that starts a top-level statement by its look (not indented, not blank, not a closing
    bracket, not a comment), else at the first line end after ``lo + size``, else at ``lo + size``."""
    n = len(src)
    hi = lo + size
    if hi >= n:
        return n
    j, floor = hi, lo + size // 2
    while (j := src.rfind(b"\n", floor, j)) >= 0:
        if src[j + 1:j + 2] not in _NOT_A_STATEMENT:
            return j + 1
    nl = src.find(b"\n", hi, min(n, hi + (64 << 10)))
    return nl + 1 if nl >= 0 else hi


def _comment(node: Node) -> bool:
    """A comment (an extra node: error recovery's ERROR nodes can be extras too, and are not)."""
    return node.is_extra and not node.has_error


def _first_error(root: Node, lo: int) -> int:
    """Where the first top-level statement from ``lo`` on that a cut may have broken starts
    (with the comments directly above it), or -1: one with a syntax error, or the one before
    an indented line that parsed as a statement of its own (the rest of a body whose header
    error recovery closed early)."""
    c = root.walk()
    if not c.goto_first_child():
        return -1
    run, run_end = -1, -2  # the comments right above the current statement
    # the line of statements before (where its first one starts, with its comments), its last row
    prev_start, prev_end = -1, -1
    while True:
        k = c.node
        if _comment(k):
            if run < 0 or k.start_point[0] > run_end + 1:
                run = k.start_byte
            run_end = k.end_point[0]
        else:
            start = run if run >= 0 and run_end >= k.start_point[0] - 1 else k.start_byte
            new_line = prev_end < k.start_point[0]
            if k.start_byte >= lo:
                if k.has_error or k.is_missing:
                    return max(start if new_line else prev_start, lo)
                if k.start_point[1] > 0 and new_line and prev_start >= 0:
                    return max(prev_start, lo)
            if new_line:
                prev_start = start
            prev_end, run = k.end_point[0], -1
        if not c.goto_next_sibling():
            return -1


def _restart(root: Node, lo: int) -> int:
    """Where the piece after this one starts: at the last paragraph of top-level statements
    (no blank line between them), since the piece's end may have cut the last statement and
    a comment belongs to the statement below it; in a piece that is one paragraph, at the
    last statement that starts a line below one that is not a comment. -1 when the piece
    holds no statement to keep."""
    c = root.walk()
    if not c.goto_last_child():
        return -1
    while _comment(c.node):  # comments at the end may belong to a body that goes on in the next piece
        if not c.goto_previous_sibling():
            return -1
    cur = c.node
    line_start = None
    while c.goto_previous_sibling():
        prev = c.node
        if prev.end_point[0] < cur.start_point[0] - 1:
            return cur.start_byte if cur.start_byte > lo else -1
        if line_start is None and prev.end_point[0] < cur.start_point[0] and not _comment(prev):
            line_start = cur
        cur = prev
    return line_start.start_byte if line_start is not None and line_start.start_byte > lo else -1


def _point(src: bytes, at: int, lo: int, lo_point: tuple[int, int]) -> tuple[int, int]:
    """(row, byte column) of ``at``, counted on from ``lo`` at ``lo_point``."""
    nl = src.count(b"\n", lo, at)
    if not nl:
        return lo_point[0], lo_point[1] + at - lo
    return lo_point[0] + nl, at - src.rfind(b"\n", lo, at) - 1


def extract_file(
    *,
    parser: Parser,
    src: bytes,
    query: Query,
    hooks: LanguageHooks,
    relpath: str,
    language: str,
    module: str,
    file_hash: str,
    redact_extra=(),
) -> FileExtraction:
    """Parse ``src`` and extract it: whole when it is at most CHUNK_BYTES, else a piece at a
    time (pieces of about PIECE_BYTES cut between top-level statements; one piece's tree is
    held at once)."""
    if len(src) <= CHUNK_BYTES:
        return extract_tree(tree=parser.parse(src), src=src, query=query, hooks=hooks, relpath=relpath,
                            language=language, module=module, file_hash=file_hash, redact_extra=redact_extra)
    f = _File(src=src, query=query, hooks=hooks, relpath=relpath, module=module, path_module=module,
              gate=_gate(redact_extra))
    lines = _line_count(src)
    n = len(src)
    lo, lo_point, size = 0, (0, 0), PIECE_BYTES
    # A cut can break the statement it falls in, and tree-sitter's error recovery can then
    # reshape statements before it (even the whole tree): a piece with an error is cut at its
    # first statement that may be broken (or earlier, at its last paragraph) and what comes
    # before is parsed again on its own; an error in a piece's first statement makes the piece
    # grow. One still there when the piece is MAX_PIECE_BYTES is the file's own: from then on
    # errors are kept as they are (a file full of them is not parsed again and again).
    trusted = False
    exact = -1  # the end of a piece parsed again on its own
    head = True  # no statement kept yet: the module facts come from the next piece
    try:
        while lo < n:
            hi = exact if exact > lo else _piece_end(src, lo, size)
            parser.included_ranges = [Range(Point(*lo_point), Point(*_point(src, hi, lo, lo_point)), lo, hi)]
            tree = parser.parse(src)
            root = tree.root_node
            if exact > lo:
                nxt, exact = hi, -1
            else:
                nxt = n if hi == n else _restart(root, lo)
                if root.has_error and hi < n and not trusted:
                    err = _first_error(root, lo)
                    if err == lo:
                        # the first statement has an error: cut by this piece's end, or the file's own
                        if size < MAX_PIECE_BYTES:
                            size *= 2
                            continue
                        trusted = True
                    else:
                        if err > lo and (nxt < 0 or err < nxt):
                            nxt = err
                        if nxt > lo:
                            exact = nxt
                            continue
            if nxt < 0:
                if size >= MAX_PIECE_BYTES:
                    if head:
                        _start(f, root, lines, file_hash)
                    f.rest_line = lo_point[0] + 1
                    log.warning("%s: a top-level statement over %s bytes at line %d: the rest is left out",
                                relpath, f"{MAX_PIECE_BYTES:,}", f.rest_line)
                    break
                size *= 2
                continue
            if head:
                _start(f, root, lines, file_hash)
                head = _only_extras(root, nxt)
            _segment(f, root, None if nxt == n else nxt)
            f.partial = f.partial or _has_error(root, lo, nxt)
            if nxt < n:
                lo_point = _point(src, nxt, lo, lo_point)
            lo, size = nxt, PIECE_BYTES
            del tree, root
    finally:
        parser.included_ranges = []
    return _finish(f, language, file_hash, lines)


def _only_extras(root: Node, hi: int) -> bool:
    """Whether the top-level statements before ``hi`` are all comments (or there are none)."""
    c = root.walk()
    if not c.goto_first_child():
        return True
    while c.node.start_byte < hi:
        if not _comment(c.node):
            return False
        if not c.goto_next_sibling():
            break
    return True


def _has_error(root: Node, lo: int, hi: int) -> bool:
    """Whether a top-level statement starting in [lo, hi) has a syntax error."""
    if not root.has_error:
        return False
    c = root.walk()
    if not c.goto_first_child():
        return True
    while True:
        n = c.node
        if n.start_byte >= hi:
            return False
        if n.start_byte >= lo and (n.has_error or n.is_missing):
            return True
        if not c.goto_next_sibling():
            return False


def _line_count(src: bytes) -> int:
    return src.count(b"\n") + (0 if src.endswith(b"\n") or not src else 1)


def _finish(f: _File, language: str, file_hash: str, lines: int) -> FileExtraction:
    f.pass_gate()
    notes = f.notes(lines)
    if notes:
        log.info("%s: partial extraction: %s", f.relpath, notes)
    return FileExtraction(
        path=f.relpath,
        language=language,
        hash=file_hash,
        size=len(f.src),
        lines=lines,
        module=f.module,
        symbols=f.symbols,
        calls=f.calls,
        imports=f.imports,
        inherits=f.inherits,
        partial=f.partial or bool(notes),
        error=notes,
    )


def extract_tree(
    *,
    tree,
    src: bytes,
    query: Query,
    hooks: LanguageHooks,
    relpath: str,
    language: str,
    module: str,
    file_hash: str,
    redact_extra=(),
) -> FileExtraction:
    """Extract a whole file's tree in one segment."""
    f = _File(src=src, query=query, hooks=hooks, relpath=relpath, module=module, path_module=module,
              gate=_gate(redact_extra))
    lines = _line_count(src)
    root = tree.root_node
    _start(f, root, lines, file_hash)
    f.partial = root.has_error
    _segment(f, root, None)
    return _finish(f, language, file_hash, lines)


# ---- statement blocks (extract/incremental.py) --------------------------------------------------


@dataclass
class Blocks:
    """A traced extraction of a whole file or of a range of it, with the file's top-level
    statements grouped into blocks: a block starts at the first statement that begins a line
    (column 0, below the end of the one before, not below a comment: a comment belongs to the
    statement under it) and runs to the next block. Every definition,
    call, import and base lies inside one block; ``consults`` says which top-level names a
    unit's receiver hints were learnt from, ``defines`` which names each block defines."""

    file: _File
    starts: list[tuple[int, int]]  # (byte, row) where each block starts
    defines: list[tuple[str, ...]]
    consults: list[tuple[int, frozenset[str]]]
    error: bool  # a syntax error in the range
    directive: list[bool]  # per block: it holds a line of a container (``#if``, ``#else``, ``#endif``)


def _top_items(root: Node, containers: frozenset[str]):
    """The root's children in order, each of ``containers`` (the hooks' ``block_containers``)
    replaced by its own children, at any depth: its directive lines and the statements inside
    it are top-level items of their own. Yields (node, whether it is a container's own token,
    as ``#ifdef`` or ``#endif``)."""
    c = root.walk()
    if not c.goto_first_child():
        return
    depth = 0
    while True:
        if containers and c.node.type in containers and c.goto_first_child():
            depth += 1
            continue
        yield c.node, depth > 0 and not c.node.is_named
        while not c.goto_next_sibling():
            if depth == 0 or not c.goto_parent():
                return
            depth -= 1


def _blocks(root: Node, src: bytes, hooks: LanguageHooks, range_starts: list[tuple[int, int]]
            ) -> tuple[list[tuple[int, int]], list[tuple[str, ...]], list[bool]]:
    """Block starts (byte, row), the names each block defines and whether it holds a
    container's directive (``_top_items``); every parsed range starts a block
    (``range_starts``: (byte, row) of each, in order)."""
    lo = range_starts[0][0]
    starts: list[tuple[int, int]] = [range_starts[0]]
    defines: list[list[str]] = [[]]
    directive = [False]
    pending = list(range_starts[1:])
    prev_end = -1
    after_comment = False  # a comment stays with the statement below it (its summary)
    code_end = -1  # the row the last statement that is not a comment ended on
    for k, token in _top_items(root, hooks.block_containers):
        while pending and k.start_byte >= pending[0][0]:
            starts.append(pending.pop(0))
            defines.append([])
            directive.append(False)
            after_comment = False
        if k.start_byte >= lo:
            row, col = k.start_point
            if col == 0 and row > prev_end and k.start_byte > starts[-1][0] and not after_comment:
                starts.append((k.start_byte, row))
                defines.append([])
                directive.append(False)
            directive[-1] |= token
            if not k.is_extra:
                defines[-1].extend(hooks.table_names(k, src))
            # a comment written after code on its line is that code's (LanguageHooks.leading_comment)
            after_comment = _comment(k) and k.start_point[0] != code_end
            prev_end = max(prev_end, end_row(k))
            if not _comment(k):
                code_end = end_row(k)
    for st in pending:  # ranges holding no statement
        starts.append(st)
        defines.append([])
        directive.append(False)
    return starts, [tuple(d) for d in defines], directive


def extract_blocks(*, parser: Parser, src: bytes, query: Query, hooks: LanguageHooks, relpath: str,
                   module: str, file_hash: str, redact_extra=(), lo: int = 0, hi: int | None = None,
                   lo_row: int = 0, context: list[tuple[int, int, int]] = ()) -> Blocks:
    """Extract ``src[lo:hi]`` (all of it by default; ``lo`` must start a line, row ``lo_row``,
    and ``hi`` end one) traced, parsed on its own — with the ``context`` ranges (lo, hi, row),
    other whole blocks of the file parsed with it so that the hooks see the definitions they
    hold (what is extracted from them is for the caller to drop); the file's module symbol
    comes first in ``file.symbols`` when the range starts the file."""
    f = _File(src=src, query=query, hooks=hooks, relpath=relpath, module=module, path_module=module,
              gate=_gate(redact_extra), consults=[])
    whole = lo == 0 and (hi is None or hi == len(src)) and not context
    hi = len(src) if hi is None else hi
    ranges = sorted([(lo, hi, lo_row), *context])
    try:
        if not whole:
            parser.included_ranges = [Range(Point(row, 0), Point(*_point(src, b, a, (row, 0))), a, b)
                                      for a, b, row in ranges if b > a]
        tree = parser.parse(src)
    finally:
        parser.included_ranges = []
    root = tree.root_node
    if lo == 0:
        _start(f, root, _line_count(src), file_hash)
    f.partial = root.has_error
    _segment(f, root, None)
    starts, defines, directive = _blocks(root, src, hooks, [(a, row) for a, _b, row in ranges])
    f.pass_gate()
    defines = [tuple(f.gate.text(n) for n in d) for d in defines]
    return Blocks(file=f, starts=starts, defines=defines, consults=f.consults or [], error=root.has_error,
                  directive=directive)


def finish(f: _File, language: str, file_hash: str, lines: int) -> FileExtraction:
    return _finish(f, language, file_hash, lines)
