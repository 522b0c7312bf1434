"""C++: namespaces, classes, methods (inline, declared, and out-of-line ``T::m``), templates,
``new``, base classes, ``#include``, GoogleTest ``TEST(Suite, Name)``.

Namespaces are reopened across files and a type's header, its implementation and its users
all name it the same way; so every C++ file's module qname is the global namespace,
``(global)``, and definitions are qualified by their namespaces and classes with ``::``
(``(global)::shop::Store::put``). A method declared in the class body and defined out of line
gets the same qname in both places, and ``shop::Store`` means the same type in every file.
``#include`` lines are recorded as star imports of the header as written; resolution does not
need them.
Receiver hints: locals and parameters by declared type (``T x``, ``T* x``, ``const T& x``,
``auto x = new T()`` / ``T()`` / ``std::make_unique<T>()``) and class fields.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from codesynapse.extract.hooks import squash, text
from codesynapse.extract.lang.c import CHooks, norm_callee
from codesynapse.extract.model import ImportRef

_TYPE = re.compile(r"^[A-Za-z_]\w*(::[A-Za-z_]\w*)*$")
_MAKERS = frozenset({"make_unique", "make_shared"})
_SCOPES = frozenset({"lambda_expression", "function_definition", "class_specifier", "struct_specifier"})


def _type_name(node: Node | None, src: bytes) -> str:
    if node is None:
        return ""
    t = node.type
    if t in ("type_identifier", "namespace_identifier", "identifier"):
        return text(node, src)
    if t == "qualified_identifier":
        scope = node.child_by_field_name("scope")
        name = _type_name(node.child_by_field_name("name"), src)
        head = _type_name(scope, src) if scope is not None else ""
        return f"{head}::{name}" if head and name else name
    if t == "template_type":
        base = _type_name(node.child_by_field_name("name"), src)
        if base in ("unique_ptr", "shared_ptr"):
            args = node.child_by_field_name("arguments")
            kids = args.named_children if args is not None else []
            return _type_name(kids[0], src) if kids else ""
        return base
    if t == "type_descriptor":
        return _type_name(node.child_by_field_name("type"), src)
    return ""


def _declarator_name(d: Node | None, src: bytes) -> str:
    while d is not None and d.type in ("pointer_declarator", "reference_declarator", "init_declarator",
                                       "array_declarator"):
        nxt = d.child_by_field_name("declarator")
        if nxt is None:
            nxt = next((c for c in d.named_children if c.type in ("identifier", "field_identifier",
                                                                   "pointer_declarator", "reference_declarator")), None)
        d = nxt
    if d is not None and d.type in ("identifier", "field_identifier"):
        return text(d, src)
    return ""


def _function_declarator(node: Node) -> Node | None:
    d = node.child_by_field_name("declarator")
    while d is not None and d.type in ("pointer_declarator", "reference_declarator"):
        d = d.child_by_field_name("declarator") or next(
            (c for c in d.named_children if c.type in ("function_declarator", "pointer_declarator",
                                                        "reference_declarator")), None)
    return d if d is not None and d.type == "function_declarator" else None


GLOBAL = "(global)"


class CppHooks(CHooks):
    sep = "::"
    # re-extracted a statement at a time as C is (traces_file_facts, from CHooks): receiver
    # hints are learnt inside one definition, and a namespace, a symbol of kind "module", is a
    # statement's symbol like any other (the file's own module symbol is told apart as the
    # first; a namespace wrapping the whole file makes every edit inside it a whole extraction)

    def module_name(self, relpath: str, root: str) -> str:
        return GLOBAL

    def imports(self, nodes: list[Node], src: bytes, module: str, relpath: str) -> list[ImportRef]:
        out: list[ImportRef] = []
        for node in nodes:
            path = node.child_by_field_name("path")
            if path is not None and path.type in ("string_literal", "system_lib_string"):
                out.append(ImportRef(module=text(path, src).strip('"<>'), name="*", line=node.start_point[0] + 1))
        return out

    def owner(self, node: Node, src: bytes) -> str:
        if node.type != "function_definition":
            return ""
        fd = _function_declarator(node)
        d = fd.child_by_field_name("declarator") if fd is not None else None
        if d is None or d.type != "qualified_identifier":
            return ""
        scope = d.child_by_field_name("scope")
        return _type_name(scope, src).rsplit("::", 1)[-1] if scope is not None else ""

    def refine_kind(self, kind: str, node: Node, parent_kind: str) -> str:
        if kind == "function" and parent_kind in ("class", "struct"):
            return "method"
        if kind == "function" and node.type == "function_definition":
            fd = _function_declarator(node)
            d = fd.child_by_field_name("declarator") if fd is not None else None
            if d is not None and d.type == "qualified_identifier":  # void Store::put(…) {…}
                return "method"
        return kind

    def body(self, node: Node) -> Node | None:
        if node.type in ("field_declaration", "declaration"):
            return None
        return node.child_by_field_name("body")

    def signature(self, node: Node, src: bytes) -> str:
        if node.type in ("field_declaration", "declaration") and _function_declarator(node) is not None:
            return squash(text(node, src).rstrip(";"))
        if node.type == "namespace_definition":
            return f"namespace {text(node.child_by_field_name('name'), src)}"
        return super().signature(node, src).rstrip(";").rstrip()

    def summary(self, node: Node, src: bytes) -> str:
        target = node.parent if node.parent is not None and node.parent.type == "template_declaration" else node
        return super().summary(target, src)

    def is_test(self, name: str, kind: str, relpath: str, node: Node, src: bytes, parent: str) -> bool:
        return kind == "test" or super().is_test(name, kind, relpath, node, src, parent)

    def exported(self, name: str, node: Node, src: bytes) -> bool:
        p = node.parent
        while p is not None:
            if p.type == "namespace_definition" and p.child_by_field_name("name") is None:
                return False  # anonymous namespace
            p = p.parent
        return super().exported(name, node, src)

    def callee_text(self, callee: Node, src: bytes) -> str:
        if callee.parent is not None and callee.parent.type == "new_expression":
            s = _type_name(callee, src)
            return s
        s = norm_callee(callee, src)
        return "" if s == "?" else s

    # -- receiver hints ----------------------------------------------------------------
    def _value_type(self, v: Node | None, src: bytes) -> str:
        if v is None:
            return ""
        if v.type == "new_expression":
            return _type_name(v.child_by_field_name("type"), src)
        if v.type == "call_expression":
            fn = v.child_by_field_name("function")
            if fn is not None and fn.type == "qualified_identifier":
                name = fn.child_by_field_name("name")
                if name is not None and name.type == "template_function" and \
                        text(name.child_by_field_name("name"), src) in _MAKERS:
                    args = name.child_by_field_name("arguments")
                    kids = args.named_children if args is not None else []
                    return _type_name(kids[0], src) if kids else ""
            t = _type_name(fn, src) if fn is not None and fn.type in ("identifier", "qualified_identifier") else ""
            return t if t and t.rsplit("::", 1)[-1][:1].isupper() else ""
        return ""

    def _declared(self, decl: Node, src: bytes, put) -> None:
        typ = decl.child_by_field_name("type")
        tname = _type_name(typ, src) if typ is not None and typ.type != "placeholder_type_specifier" else ""
        for d in decl.children_by_field_name("declarator"):
            var = _declarator_name(d, src)
            if not var:
                continue
            t = tname
            if not t and d.type == "init_declarator":
                t = self._value_type(d.child_by_field_name("value"), src)
            put(var, t)

    def receiver_hints(self, unit: Node, src: bytes) -> dict[str, str]:
        hints: dict[str, str] = {}
        conflicts: set[str] = set()

        def put(var: str, typ: str) -> None:
            if not var or var in conflicts or not typ or not _TYPE.match(typ):
                return
            if var in hints and hints[var] != typ:
                conflicts.add(var)
                del hints[var]
                return
            hints[var] = typ

        if unit.type in ("class_specifier", "struct_specifier"):
            body = unit.child_by_field_name("body")
            for f in body.named_children if body is not None else ():
                if f.type == "field_declaration" and _function_declarator(f) is None:
                    typ = _type_name(f.child_by_field_name("type"), src)
                    for d in f.children_by_field_name("declarator"):
                        var = _declarator_name(d, src)
                        put(var, typ)
                        put(f"this.{var}", typ)
            return hints
        if unit.type != "function_definition":
            return hints
        fd = _function_declarator(unit)
        params = fd.child_by_field_name("parameters") if fd is not None else None
        for p in params.named_children if params is not None else ():
            if p.type in ("parameter_declaration", "optional_parameter_declaration"):
                put(_declarator_name(p.child_by_field_name("declarator"), src),
                    _type_name(p.child_by_field_name("type"), src))
        body = unit.child_by_field_name("body")
        stack = [body] if body is not None else []
        while stack:
            n = stack.pop()
            if n.type == "declaration":
                self._declared(n, src, put)
            for c in reversed(n.named_children):
                if c.type not in _SCOPES:
                    stack.append(c)
        return hints
