"""PHP: the module is the namespace; classes, interfaces, traits, enums, functions, methods,
constants; ``use`` imports; ``$this->``, ``self::``, ``parent::`` and static calls; PHPUnit.

Module qname = the file's ``namespace`` (``App\\Service``; a file without one uses its
path without ``.php``), and qnames use ``\\`` as the separator (``App\\Service\\OrderService\\place``).
``use A\\B\\C;`` binds ``C`` (grouped ``use A\\{B, C as D}`` too, and ``use function``).
Callees are written with ``.`` between parts (``$this.repo.save``, ``Order.create``,
``App.Util.format_money``); ``self::m`` / ``static::m`` become ``$this.m`` and ``parent::m``
becomes ``super().m``. Traits used in a class (``use Logs;``) are bases. Receiver hints:
typed properties and promoted constructor parameters (``$this.repo``), typed parameters,
``$x = new T()`` and ``$this->x = new T()``. Tests: ``test*`` methods of ``*Test`` classes
and methods with ``#[Test]`` or a ``@test`` docblock.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from tree_sitter import Node

from codesynapse.extract.hooks import LanguageHooks, squash, text
from codesynapse.extract.model import ImportRef

_TYPE = re.compile(r"^[A-Za-z_]\w*(\\[A-Za-z_]\w*)*$")
_CONST = re.compile(r"^[A-Z][A-Z0-9_]*$")
_SCOPES = frozenset({"anonymous_function", "arrow_function", "function_definition", "method_declaration",
                     "class_declaration"})


def _qualified(node: Node | None, src: bytes) -> str:
    if node is None:
        return ""
    return re.sub(r"\s+", "", text(node, src)).lstrip("\\")


def type_name(node: Node | None, src: bytes) -> str:
    if node is None:
        return ""
    t = node.type
    if t == "named_type":
        kids = node.named_children
        return type_name(kids[0], src) if kids else _qualified(node, src)
    if t in ("name", "qualified_name"):
        return _qualified(node, src)
    if t == "optional_type":
        kids = node.named_children
        return type_name(kids[0], src) if kids else ""
    return ""


def _norm(node: Node | None, src: bytes, depth: int = 0) -> str:
    if node is None or depth > 16:
        return "?"
    t = node.type
    if t == "variable_name":
        return text(node, src)
    if t in ("name", "qualified_name"):
        return _qualified(node, src).replace("\\", ".")
    if t in ("member_access_expression", "nullsafe_member_access_expression"):
        return f"{_norm(node.child_by_field_name('object'), src, depth + 1)}.{text(node.child_by_field_name('name'), src)}"
    if t in ("member_call_expression", "nullsafe_member_call_expression"):
        return f"{_norm(node.child_by_field_name('object'), src, depth + 1)}.{text(node.child_by_field_name('name'), src)}()"
    if t == "scoped_call_expression":
        return f"{_scope(node.child_by_field_name('scope'), src)}.{text(node.child_by_field_name('name'), src)}()"
    if t == "function_call_expression":
        return f"{_norm(node.child_by_field_name('function'), src, depth + 1)}()"
    if t == "object_creation_expression":
        typ = next((c for c in node.named_children if c.type in ("name", "qualified_name")), None)
        return f"{_qualified(typ, src).replace(chr(92), '.')}()" if typ is not None else "?"
    if t == "parenthesized_expression":
        kids = node.named_children
        return _norm(kids[0], src, depth + 1) if kids else "?"
    if t == "subscript_expression":
        kids = node.named_children
        return f"{_norm(kids[0], src, depth + 1)}[]" if kids else "?"
    return "?"


def _scope(scope: Node | None, src: bytes) -> str:
    s = text(scope, src)
    if s in ("self", "static"):
        return "$this"
    if s == "parent":
        return "super()"
    return _qualified(scope, src).replace("\\", ".") if scope is not None else "?"


class PhpHooks(LanguageHooks):
    sep = "\\"
    comment_types = frozenset({"comment"})

    def module_name(self, relpath: str, root: str) -> str:
        return str(PurePosixPath(relpath).with_suffix(""))

    def tree_module(self, root: Node, src: bytes, module: str) -> str:
        for c in root.named_children:
            if c.type == "namespace_definition":
                return _qualified(c.child_by_field_name("name"), src)
        return ""

    def refine_kind(self, kind: str, node: Node, parent_kind: str) -> str:
        return kind

    def constant_ok(self, name: str, node: Node) -> bool:
        return bool(_CONST.match(name))

    def body(self, node: Node) -> Node | None:
        if node.type == "const_element":
            return None
        return node.child_by_field_name("body")

    def signature(self, node: Node, src: bytes) -> str:
        if node.type == "const_element":
            return f"const {text(node.named_children[0], src)}" if node.named_children else "const"
        body = node.child_by_field_name("body")
        start = node.start_byte
        for c in node.children:
            if c.type == "attribute_list":
                start = c.end_byte
        end = body.start_byte if body is not None else node.end_byte
        return squash(src[start:end].decode("utf-8", "replace").strip().rstrip(";{").strip())

    def summary(self, node: Node, src: bytes) -> str:
        target = node.parent if node.type == "const_element" and node.parent is not None else node
        return super().summary(target, src)

    def is_test(self, name: str, kind: str, relpath: str, node: Node, src: bytes, parent: str) -> bool:
        if kind != "method":
            return False
        if name.startswith("test") and parent.endswith("Test"):
            return True
        if any(c.type == "attribute_list" and re.search(r"\bTest\b", text(c, src)) for c in node.children):
            return True
        prev = node.prev_sibling
        return prev is not None and prev.type == "comment" and "@test" in text(prev, src)

    def exported(self, name: str, node: Node, src: bytes) -> bool:
        vis = [text(c, src) for c in node.children if c.type == "visibility_modifier"]
        return not vis or vis[0] in ("public", "protected")

    def callee_text(self, callee: Node, src: bytes) -> str:
        if callee.type == "object_creation_expression":
            s = _norm(callee, src)
            s = s[:-2] if s.endswith("()") else s
            if s in ("self", "static"):  # new self(): the enclosing class
                p = callee.parent
                while p is not None and p.type not in ("class_declaration", "enum_declaration", "trait_declaration"):
                    p = p.parent
                s = text(p.child_by_field_name("name"), src) if p is not None else ""
        elif callee.parent is not None and callee.parent.type in ("base_clause", "class_interface_clause",
                                                                  "use_declaration"):
            s = _qualified(callee, src)
        else:
            s = _norm(callee, src)
            s = s[:-2] if s.endswith("()") else s
        return "" if not s or s == "?" else s

    def imports(self, nodes: list[Node], src: bytes, module: str, relpath: str) -> list[ImportRef]:
        out: list[ImportRef] = []
        for node in nodes:
            line = node.start_point[0] + 1
            prefix = ""
            group = node.child_by_field_name("body")
            for c in node.named_children:
                if c.type == "namespace_name":
                    prefix = _qualified(c, src)
            clauses = group.named_children if group is not None else node.named_children
            for cl in clauses:
                if cl.type not in ("namespace_use_clause", "namespace_use_group_clause"):
                    continue
                alias_node = cl.child_by_field_name("alias")
                target = next((k for k in cl.named_children if k.type in ("qualified_name", "name")
                               and k != alias_node), None)
                if target is None:
                    continue
                full = _qualified(target, src)
                if prefix:
                    full = f"{prefix}\\{full}"
                mod, _, name = full.rpartition("\\")
                alias = text(alias_node, src) if alias_node is not None else ""
                if mod:
                    out.append(ImportRef(module=mod, name=name, alias=alias if alias != name else "", line=line))
                else:
                    out.append(ImportRef(module=name, alias=alias, line=line))
        return out

    # -- receiver hints ----------------------------------------------------------------
    def receiver_hints(self, unit: Node, src: bytes) -> dict[str, str]:
        hints: dict[str, str] = {}
        conflicts: set[str] = set()

        def put(var: str, typ: str) -> None:
            if not var or var in conflicts:
                return
            if not typ or not _TYPE.match(typ) or typ.lower() in ("self", "static", "array", "mixed"):
                return
            typ = typ.replace("\\", ".")
            if var in hints and hints[var] != typ:
                conflicts.add(var)
                del hints[var]
                return
            hints[var] = typ

        def new_type(v: Node | None) -> str:
            if v is None or v.type != "object_creation_expression":
                return ""
            typ = next((c for c in v.named_children if c.type in ("name", "qualified_name")), None)
            return _qualified(typ, src)

        def walk(body: Node | None, this_only: bool) -> None:
            stack = [body] if body is not None else []
            while stack:
                n = stack.pop()
                if n.type == "assignment_expression":
                    left = n.child_by_field_name("left")
                    var = _norm(left, src) if left is not None else "?"
                    if var != "?" and (not this_only or var.startswith("$this.")):
                        put(var, new_type(n.child_by_field_name("right")))
                for c in reversed(n.named_children):
                    if c.type not in _SCOPES:
                        stack.append(c)

        def params(plist: Node | None, promote: bool) -> None:
            for p in plist.named_children if plist is not None else ():
                if p.type in ("simple_parameter", "property_promotion_parameter", "variadic_parameter"):
                    var = text(p.child_by_field_name("name"), src)
                    typ = type_name(p.child_by_field_name("type"), src)
                    put(var, typ)
                    if promote and p.type == "property_promotion_parameter":
                        put("$this." + var.lstrip("$"), typ)

        if unit.type in ("class_declaration", "trait_declaration", "enum_declaration"):
            body = unit.child_by_field_name("body")
            for m in body.named_children if body is not None else ():
                if m.type == "property_declaration":
                    typ = type_name(m.child_by_field_name("type"), src)
                    for el in m.named_children:
                        if el.type == "property_element":
                            put("$this." + text(el.child_by_field_name("name"), src).lstrip("$"), typ)
                elif m.type == "method_declaration":
                    if text(m.child_by_field_name("name"), src) == "__construct":
                        params(m.child_by_field_name("parameters"), True)
                    walk(m.child_by_field_name("body"), True)
            return {k: v for k, v in hints.items() if k.startswith("$this.")}
        params(unit.child_by_field_name("parameters"), False)
        walk(unit.child_by_field_name("body"), False)
        return hints
