"""Kotlin: the module is the ``package``; classes, interfaces, objects, enums, functions
(top level, members, companion members), top-level constants; imports; ``@Test``.

Module qname = the declared package (files without one use their directory, dots for
slashes), so same-package references resolve without imports. Members of a ``companion
object`` are qualified by the class (``Cart.empty``), as Kotlin calls them. In a delegation
list a supertype with a constructor call (``Base()``) is a class (``inherits``), one without
is an interface (``implements``). Receiver hints: ``val``/``var`` constructor parameters and
properties (bare and ``this.``) by declared type or ``= Type(...)``, typed parameters, local
``val x: T`` / ``val x = T(...)`` (a capitalized callee is taken as a constructor).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from tree_sitter import Node

from codesynapse.extract.hooks import LanguageHooks, doc_text, first_sentence, squash, strip_comment, text
from codesynapse.extract.model import ImportRef

_TYPE = re.compile(r"^[A-Z]\w*(\.[A-Za-z_]\w*)*$")
_CONST = re.compile(r"^[A-Z][A-Z0-9_]*$")
_TEST_ANN = frozenset({"Test", "ParameterizedTest", "RepeatedTest"})
_SCOPES = frozenset({"lambda_literal", "anonymous_function", "function_declaration", "class_declaration",
                     "object_declaration", "object_literal"})
_COMMENTS = frozenset({"comment", "line_comment", "multiline_comment"})


def _user_type(node: Node | None, src: bytes) -> str:
    """``Repo`` / ``a.b.Repo`` / ``List<Item>`` → ``List``; nullable ``Repo?`` → ``Repo``."""
    if node is None:
        return ""
    t = node.type
    if t == "nullable_type":
        kids = node.named_children
        return _user_type(kids[0], src) if kids else ""
    if t == "user_type":
        parts = [text(c, src) for c in node.named_children if c.type == "type_identifier"]
        return ".".join(parts)
    if t == "type_identifier":
        return text(node, src)
    return ""


def _first_type(node: Node, src: bytes) -> str:
    for c in node.named_children:
        if c.type in ("user_type", "nullable_type"):
            return _user_type(c, src)
    return ""


def _norm(node: Node | None, src: bytes, depth: int = 0) -> str:
    if node is None or depth > 16:
        return "?"
    t = node.type
    if t in ("simple_identifier", "type_identifier"):
        return text(node, src)
    if t == "this_expression":
        return "this"
    if t == "super_expression":
        return "super()"
    if t == "navigation_expression":
        kids = node.named_children
        if len(kids) < 2:
            return "?"
        suffix = kids[-1]
        name = next((c for c in suffix.named_children if c.type == "simple_identifier"), None)
        return f"{_norm(kids[0], src, depth + 1)}.{text(name, src)}" if name is not None else "?"
    if t == "call_expression":
        kids = node.named_children
        return f"{_norm(kids[0], src, depth + 1)}()" if kids else "?"
    if t == "parenthesized_expression":
        kids = node.named_children
        return _norm(kids[0], src, depth + 1) if kids else "?"
    if t == "indexing_expression":
        kids = node.named_children
        return f"{_norm(kids[0], src, depth + 1)}[]" if kids else "?"
    return "?"


class KotlinHooks(LanguageHooks):
    sep = "."
    comment_types = frozenset(_COMMENTS)

    def module_name(self, relpath: str, root: str) -> str:
        d = str(PurePosixPath(relpath).parent)
        return d.replace("/", ".") if d not in ("", ".") else PurePosixPath(relpath).stem

    def tree_module(self, root: Node, src: bytes, module: str) -> str:
        for c in root.named_children:
            if c.type == "package_header":
                ident = next((k for k in c.named_children if k.type == "identifier"), None)
                return re.sub(r"\s+", "", text(ident, src)) if ident is not None else ""
        return ""

    def refine_kind(self, kind: str, node: Node, parent_kind: str) -> str:
        if node.type == "class_declaration":
            if any(c.type == "interface" for c in node.children):
                return "interface"
            if any(c.type == "enum" for c in node.children) or any(
                    c.type == "enum_class_body" for c in node.named_children):
                return "enum"
            return "class"
        if kind == "function" and parent_kind in ("class", "interface", "enum"):
            return "method"
        return kind

    def constant_ok(self, name: str, node: Node) -> bool:
        """``const val`` (the grammar's only property modifier) or an UPPER_CASE name."""
        mods = next((c for c in node.named_children if c.type == "modifiers"), None)
        is_const = mods is not None and any(c.type == "property_modifier" for c in mods.named_children)
        return is_const or bool(_CONST.match(name))

    def body(self, node: Node) -> Node | None:
        for c in node.named_children:
            if c.type in ("class_body", "function_body", "enum_class_body"):
                return c
        return None

    def signature(self, node: Node, src: bytes) -> str:
        if node.type == "property_declaration":  # the name and type, never the value
            decl = next((c for c in node.named_children if c.type == "variable_declaration"), None)
            end = decl.end_byte if decl is not None else node.end_byte
            return squash(src[node.start_byte:end].decode("utf-8", "replace"))
        body = self.body(node)
        start = node.start_byte
        mods = next((c for c in node.named_children if c.type == "modifiers"), None)
        if mods is not None:
            kept = [text(c, src) for c in mods.named_children if c.type != "annotation"]
            head = " ".join(kept)
            rest = src[mods.end_byte:(body.start_byte if body is not None else node.end_byte)]
            sig = (head + " " + rest.decode("utf-8", "replace")).strip()
        else:
            end = body.start_byte if body is not None else node.end_byte
            sig = src[start:end].decode("utf-8", "replace")
        sig = sig.strip().rstrip("{=").strip()
        return squash(sig)

    def summary(self, node: Node, src: bytes) -> str:
        """The comment block above; the grammar sometimes files it under the previous node
        (the import list), so that node's trailing comments count too."""
        comments: list[str] = []
        line = node.start_point[0]
        prev = node.prev_sibling
        if prev is not None and prev.type not in _COMMENTS:
            kids = prev.children
            while kids and kids[-1].type not in _COMMENTS and kids[-1].children:
                kids = kids[-1].children
            prev = kids[-1] if kids and kids[-1].type in _COMMENTS else None
        while prev is not None and prev.type in _COMMENTS and prev.end_point[0] >= line - 1:
            comments.append(strip_comment(text(prev, src)))
            line = prev.start_point[0]
            prev = prev.prev_sibling
        comments.reverse()
        return first_sentence(doc_text("\n".join(comments)))

    def _annotations(self, node: Node, src: bytes) -> list[str]:
        mods = next((c for c in node.named_children if c.type == "modifiers"), None)
        out = []
        for a in mods.named_children if mods is not None else ():
            if a.type == "annotation":
                out.append(_first_type(a, src).rsplit(".", 1)[-1] or text(a, src).lstrip("@"))
        return out

    def is_test(self, name: str, kind: str, relpath: str, node: Node, src: bytes, parent: str) -> bool:
        return kind in ("function", "method") and any(a in _TEST_ANN for a in self._annotations(node, src))

    def exported(self, name: str, node: Node, src: bytes) -> bool:
        mods = next((c for c in node.named_children if c.type == "modifiers"), None)
        words = set(text(mods, src).split()) if mods is not None else set()
        return not ({"private", "internal"} & words)

    def callee_text(self, callee: Node, src: bytes) -> str:
        if callee.type in ("user_type", "constructor_invocation"):
            s = _user_type(callee if callee.type == "user_type" else
                           next((c for c in callee.named_children if c.type == "user_type"), None), src)
        else:
            s = _norm(callee, src)
        return "" if not s or s == "?" else s

    def imports(self, nodes: list[Node], src: bytes, module: str, relpath: str) -> list[ImportRef]:
        out: list[ImportRef] = []
        for node in nodes:
            ident = next((c for c in node.named_children if c.type == "identifier"), None)
            if ident is None:
                continue
            path = re.sub(r"\s+", "", text(ident, src))
            line = node.start_point[0] + 1
            if any(c.type == "wildcard_import" for c in node.named_children):
                out.append(ImportRef(module=path, name="*", line=line))
                continue
            alias_node = next((c for c in node.named_children if c.type == "import_alias"), None)
            alias = ""
            if alias_node is not None:
                a = next((c for c in alias_node.named_children if c.type in ("type_identifier", "simple_identifier")),
                         None)
                alias = text(a, src)
            mod, _, name = path.rpartition(".")
            out.append(ImportRef(module=mod, name=name, alias=alias if alias != name else "", line=line) if mod
                       else ImportRef(module=name, alias=alias, line=line))
        return out

    # -- receiver hints ----------------------------------------------------------------
    def _value_type(self, decl: Node, src: bytes) -> str:
        for c in decl.named_children:
            if c.type == "call_expression":
                kids = c.named_children
                callee = _norm(kids[0], src) if kids else "?"
                last = callee.rsplit(".", 1)[-1]
                return callee if last[:1].isupper() and _TYPE.match(callee) else ""
        return ""

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

        def prop(p: Node, this_too: bool) -> None:
            decl = next((c for c in p.named_children if c.type == "variable_declaration"), None)
            if decl is None:
                return
            name = next((c for c in decl.named_children if c.type == "simple_identifier"), None)
            var = text(name, src)
            typ = _first_type(decl, src) or self._value_type(p, src)
            put(var, typ)
            if this_too:
                put("this." + var, typ)

        if unit.type in ("class_declaration", "object_declaration"):
            ctor = next((c for c in unit.named_children if c.type == "primary_constructor"), None)
            for p in ctor.named_children if ctor is not None else ():
                if p.type == "class_parameter" and any(c.type == "binding_pattern_kind" for c in p.named_children):
                    name = next((c for c in p.named_children if c.type == "simple_identifier"), None)
                    typ = _first_type(p, src)
                    put(text(name, src), typ)
                    put("this." + text(name, src), typ)
            body = self.body(unit)
            for m in body.named_children if body is not None else ():
                if m.type == "property_declaration":
                    prop(m, True)
            return hints
        params = next((c for c in unit.named_children if c.type == "function_value_parameters"), None)
        for p in params.named_children if params is not None else ():
            if p.type == "parameter":
                name = next((c for c in p.named_children if c.type == "simple_identifier"), None)
                put(text(name, src), _first_type(p, src))
        body = self.body(unit)
        stack = [body] if body is not None else []
        while stack:
            n = stack.pop()
            if n.type == "property_declaration":
                prop(n, False)
            for c in reversed(n.named_children):
                if c.type not in _SCOPES:
                    stack.append(c)
        return hints
