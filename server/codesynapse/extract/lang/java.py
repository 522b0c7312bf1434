"""Java: the module is the ``package``; classes, interfaces, enums, records; ``@Test``.

Module qname = the declared package (``com.shop.store``), so every class of a package is a
member of one module and same-package references resolve without imports; files without a
package declaration use their directory (dots for slashes). ``import a.b.C`` binds ``C``;
``import a.b.*`` is a star import; ``import static a.b.C.m`` binds ``m``.

Receiver hints: fields (``repo`` and ``this.repo``), parameters and locals by declared type
(``List<Item>`` → ``List``), ``var x = new T()``.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from tree_sitter import Node

from codesynapse.extract.hooks import LanguageHooks, squash, text
from codesynapse.extract.model import ImportRef

_TYPE = re.compile(r"^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$")
_TEST_ANN = frozenset({"Test", "ParameterizedTest", "RepeatedTest", "TestFactory", "TestTemplate"})
_SCOPES = frozenset({"class_declaration", "interface_declaration", "enum_declaration", "record_declaration",
                     "lambda_expression", "class_body", "method_declaration", "constructor_declaration"})


def type_text(node: Node | None, src: bytes) -> str:
    """``Repo`` / ``a.b.Repo`` / ``List<Item>`` → ``List``; "" for primitives and arrays."""
    if node is None:
        return ""
    t = node.type
    if t in ("type_identifier", "identifier"):
        return text(node, src)
    if t == "scoped_type_identifier":
        return re.sub(r"\s+", "", text(node, src))
    if t == "generic_type":
        kids = [c for c in node.named_children if c.type != "type_arguments"]
        return type_text(kids[0], src) if kids else ""
    return ""


def _norm(node: Node | None, src: bytes, depth: int = 0) -> str:
    if node is None or depth > 16:
        return "?"
    t = node.type
    if t in ("identifier", "type_identifier"):
        return text(node, src)
    if t == "this":
        return "this"
    if t == "super":
        return "super()"
    if t == "field_access":
        return f"{_norm(node.child_by_field_name('object'), src, depth + 1)}.{text(node.child_by_field_name('field'), src)}"
    if t == "method_invocation":
        name = text(node.child_by_field_name("name"), src)
        obj = node.child_by_field_name("object")
        head = f"{_norm(obj, src, depth + 1)}." if obj is not None else ""
        return f"{head}{name}()"
    if t == "object_creation_expression":
        typ = type_text(node.child_by_field_name("type"), src)
        return f"{typ}()" if typ else "?"
    if t in ("scoped_type_identifier", "generic_type"):
        return type_text(node, src) or "?"
    if t == "array_access":
        return f"{_norm(node.child_by_field_name('array'), src, depth + 1)}[]"
    if t in ("parenthesized_expression", "cast_expression"):
        kids = node.named_children
        return _norm(kids[-1], src, depth + 1) if kids else "?"
    return "?"


class JavaHooks(LanguageHooks):
    sep = "."
    comment_types = frozenset({"line_comment", "block_comment"})

    def module_name(self, relpath: str, root: str) -> str:
        d = str(PurePosixPath(relpath).parent)
        return d.replace("/", ".") if d not in ("", ".") else "default"

    def tree_module(self, root: Node, src: bytes, module: str) -> str:
        for c in root.named_children:
            if c.type == "package_declaration":
                for k in c.named_children:
                    if k.type in ("scoped_identifier", "identifier"):
                        return re.sub(r"\s+", "", text(k, src))
        return ""

    def refine_kind(self, kind: str, node: Node, parent_kind: str) -> str:
        return kind

    def body(self, node: Node) -> Node | None:
        return node.child_by_field_name("body")

    def signature(self, node: Node, src: bytes) -> str:
        body = node.child_by_field_name("body")
        start = node.start_byte
        mods = next((c for c in node.children if c.type == "modifiers"), None)
        if mods is not None:  # drop annotations, keep the keywords
            kws = [text(c, src) for c in mods.children if c.type not in ("marker_annotation", "annotation")]
            rest_start = mods.end_byte
            end = body.start_byte if body is not None else node.end_byte
            rest = src[rest_start:end].decode("utf-8", "replace")
            return squash((" ".join(kws) + " " + rest).strip().rstrip(";{").strip())
        end = body.start_byte if body is not None else node.end_byte
        return squash(src[start:end].decode("utf-8", "replace").strip().rstrip(";{").strip())

    def _annotations(self, node: Node, src: bytes) -> list[str]:
        mods = next((c for c in node.children if c.type == "modifiers"), None)
        out = []
        for c in mods.named_children if mods is not None else ():
            if c.type in ("marker_annotation", "annotation"):
                out.append(text(c.child_by_field_name("name"), src).rsplit(".", 1)[-1])
        return out

    def is_test(self, name: str, kind: str, relpath: str, node: Node, src: bytes, parent: str) -> bool:
        return kind == "method" and any(a in _TEST_ANN for a in self._annotations(node, src))

    def exported(self, name: str, node: Node, src: bytes) -> bool:
        mods = next((c for c in node.children if c.type == "modifiers"), None)
        words = set(text(mods, src).split()) if mods is not None else set()
        if "public" in words or "protected" in words:
            return True
        p = node.parent
        return p is not None and p.type == "interface_body"

    def callee_text(self, callee: Node, src: bytes) -> str:
        if callee.type == "method_invocation":
            s = _norm(callee, src)
            s = s[:-2] if s.endswith("()") else s
        elif callee.type == "object_creation_expression":
            s = type_text(callee.child_by_field_name("type"), src)
        else:
            s = _norm(callee, src)
        return "" if not s or s == "?" else s

    def imports(self, nodes: list[Node], src: bytes, module: str, relpath: str) -> list[ImportRef]:
        out: list[ImportRef] = []
        for node in nodes:
            path_node = next((c for c in node.named_children if c.type in ("scoped_identifier", "identifier")), None)
            if path_node is None:
                continue
            path = re.sub(r"\s+", "", text(path_node, src))
            star = any(c.type == "asterisk" for c in node.children)
            line = node.start_point[0] + 1
            if star:
                out.append(ImportRef(module=path, name="*", line=line))
            else:
                mod, _, name = path.rpartition(".")
                out.append(ImportRef(module=mod, name=name, line=line) if mod else ImportRef(module=name, line=line))
        return out

    # -- receiver hints ----------------------------------------------------------------
    def receiver_hints(self, unit: Node, src: bytes) -> dict[str, str]:
        hints: dict[str, str] = {}
        conflicts: set[str] = set()

        def put(var: str, typ: str) -> None:
            if not var or var in conflicts:
                return
            if not typ or not _TYPE.match(typ):
                return
            if var in hints and hints[var] != typ:
                conflicts.add(var)
                del hints[var]
                return
            hints[var] = typ

        def declared(decl: Node) -> None:
            typ = type_text(decl.child_by_field_name("type"), src)
            for d in decl.children_by_field_name("declarator"):
                name = text(d.child_by_field_name("name"), src)
                val = d.child_by_field_name("value")
                t = typ
                if (not t or t == "var") and val is not None and val.type == "object_creation_expression":
                    t = type_text(val.child_by_field_name("type"), src)
                if t == "var":
                    t = ""
                yield_pairs.append((name, t))

        yield_pairs: list[tuple[str, str]] = []
        if unit.type in ("class_declaration", "enum_declaration", "record_declaration", "interface_declaration"):
            body = unit.child_by_field_name("body")
            for m in body.named_children if body is not None else ():
                if m.type in ("field_declaration", "constant_declaration"):
                    declared(m)
            params = unit.child_by_field_name("parameters")  # record components
            for p in params.named_children if params is not None else ():
                if p.type == "formal_parameter":
                    yield_pairs.append((text(p.child_by_field_name("name"), src),
                                        type_text(p.child_by_field_name("type"), src)))
            for name, t in yield_pairs:
                put(name, t)
                put("this." + name, t)
            return hints
        params = unit.child_by_field_name("parameters")
        for p in params.named_children if params is not None else ():
            if p.type in ("formal_parameter", "spread_parameter"):
                put(text(p.child_by_field_name("name"), src), type_text(p.child_by_field_name("type"), src))
        body = unit.child_by_field_name("body")
        stack = [body] if body is not None else []
        while stack:
            n = stack.pop()
            if n.type == "local_variable_declaration":
                declared(n)
            for c in reversed(n.named_children):
                if c.type not in _SCOPES:
                    stack.append(c)
        for name, t in yield_pairs:
            put(name, t)
        return hints
