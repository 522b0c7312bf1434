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

from tree_sitter import Node, Query, QueryCursor

from codesynapse.extract.hooks import LanguageHooks, text
from codesynapse.extract.model import (
    TYPE_KINDS,
    UNIT_KINDS,
    CallSite,
    FileExtraction,
    Inherit,
    Symbol,
)

log = logging.getLogger(__name__)

MAX_DEFS = 50_000
MAX_CALLS = 200_000


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


def _redactor(extra):
    from codesynapse.extract.redact import redact

    return lambda s: redact(s, extra) if s else s


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
    redact = _redactor(redact_extra)
    root = tree.root_node
    sep = hooks.sep
    # Languages whose module is declared in the file (Java/Kotlin package, C# namespace,
    # PHP namespace) name it from the tree; the path-based name is the fallback.
    module = hooks.tree_module(root, src, module) or module
    cursor = QueryCursor(query)
    defs: list[_Def] = []
    calls: list[tuple[Node, Node, str]] = []
    bases: list[tuple[Node, str]] = []
    import_nodes: list[Node] = []
    for _idx, caps in cursor.matches(root):
        for cname, nodes in caps.items():
            if cname.startswith("definition."):
                name_nodes = caps.get("name")
                if not name_nodes:
                    continue
                # several @name captures in one match are joined with "." (a C++
                # ``TEST(Suite, Name)`` is named ``Suite.Name``)
                name = ".".join(text(n, src).strip() for n in name_nodes)
                if name and len(defs) < MAX_DEFS:
                    defs.append(_Def(nodes[0], name, cname.split(".", 1)[1]))
                break
            if cname in ("reference.call", "reference.new"):
                callee = caps.get("callee")
                if callee and len(calls) < MAX_CALLS:
                    calls.append((nodes[0], callee[0], "new" if cname == "reference.new" else "call"))
                break
            if cname == "import":
                import_nodes.append(nodes[0])
                break
            if cname in ("inherit", "implements"):
                for n in nodes:
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
    symbols: list[Symbol] = []
    lines = src.count(b"\n") + (0 if src.endswith(b"\n") or not src else 1)
    mod_name = module.rsplit(sep, 1)[-1].rsplit("/", 1)[-1] if module else relpath
    symbols.append(
        Symbol(
            qname=module, name=mod_name, kind="module", signature="", start_line=1,
            end_line=max(lines, 1), start_col=0, end_col=0, hash=file_hash,
            summary=redact(hooks.summary_module(root, src) if hasattr(hooks, "summary_module") else ""),
        )
    )
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
                signature=redact(hooks.signature(d.node, src)),
                start_line=d.node.start_point[0] + 1,
                # a node that ends at column 0 ends with its newline (C ``#define``): its last
                # line is the one before
                end_line=d.node.end_point[0] + (0 if d.node.end_point[1] == 0
                                                and d.node.end_point[0] > d.node.start_point[0] else 1),
                start_col=d.node.start_point[1],
                end_col=d.node.end_point[1],
                hash=hashlib.sha1(src[d.node.start_byte:d.node.end_byte]).hexdigest(),
                summary=redact(hooks.summary(d.node, src)),
                parent=parent_q,
                is_test=is_test,
                exported=hooks.exported(d.name, d.node, src),
            )
        )

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

    call_sites: list[CallSite] = []
    for call_node, callee_node, ckind in calls:
        owner = owner_of(call_node.start_byte)
        caller = owner.qname if owner else module
        callee = hooks.callee_text(callee_node, src)
        if not callee:
            continue
        name = callee.rsplit(".", 1)[-1].rsplit("::", 1)[-1].rsplit("->", 1)[-1]
        hint = ""
        recv = callee.rsplit(".", 1)[0] if "." in callee else ""
        if recv and owner is not None:
            unit = owner
            while unit is not None:
                if unit.hints is None:
                    unit.hints = hooks.receiver_hints(unit.node, src)
                if recv in unit.hints:
                    hint = unit.hints[recv]
                    break
                if unit.kind in TYPE_KINDS:
                    break
                unit = unit.parent
            if not hint and recv.startswith(("self.", "this.")):
                cls = enclosing_class(owner)
                if cls is not None:
                    for m in cls.children:
                        if m.hints is None:
                            m.hints = hooks.receiver_hints(m.node, src)
                        if recv in m.hints:
                            hint = m.hints[recv]
                            break
        call_sites.append(
            CallSite(
                caller=caller, callee=callee[:512], name=name[:256],
                line=call_node.start_point[0] + 1, col=call_node.start_point[1],
                receiver_hint=hint[:256], kind=ckind,
            )
        )

    inherits: list[Inherit] = []
    type_defs = [d for d in kept if d.kind in TYPE_KINDS]
    for base_node, bkind in bases:
        child = None
        for d in type_defs:
            if d.node.start_byte <= base_node.start_byte and base_node.end_byte <= d.node.end_byte:
                if child is None or d.node.start_byte >= child.node.start_byte:
                    child = d
        if child is not None:
            child_q = child.qname
        else:
            # A base named outside the type's body (Rust ``impl Trait for Type``): the hooks
            # name the type; it is qualified by the innermost enclosing definition.
            owner_type = hooks.base_owner(base_node, src)
            if not owner_type:
                continue
            scope = None
            for d in kept:
                if d.node.start_byte <= base_node.start_byte and base_node.end_byte <= d.node.end_byte:
                    if scope is None or d.node.start_byte >= scope.node.start_byte:
                        scope = d
            child_q = (scope.qname if scope is not None else module) + sep + owner_type
        base = hooks.callee_text(base_node, src)
        if base and base not in ("object",):
            inherits.append(Inherit(child=child_q, base=base[:512], kind=bkind, line=base_node.start_point[0] + 1))

    imports = hooks.imports(import_nodes, src, module, relpath)
    return FileExtraction(
        path=relpath,
        language=language,
        hash=file_hash,
        size=len(src),
        lines=lines,
        module=module,
        symbols=symbols,
        calls=call_sites,
        imports=imports,
        inherits=inherits,
        partial=root.has_error,
    )
