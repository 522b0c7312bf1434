"""C#: the module is the namespace; classes, structs, interfaces, enums, records, methods,
constructors; ``using`` directives; ``[Fact]``/``[Test]``/``[TestMethod]`` tests.

Module qname = the file's (first) namespace, block or file-scoped (``Shop.Services``), so
every type of a namespace is a member of one module and same-namespace references resolve
without ``using``; a file without a namespace uses its directory (dots for slashes).
``using Shop.Core;`` imports a whole namespace (a star import); ``using M = A.B.C;`` binds
``M``; ``using static A.B;`` is a star import of the type ``A.B``. Base lists name a class
and/or interfaces without saying which: a name shaped like ``IThing`` is recorded as
``implements``, the rest as ``inherits``. Receiver hints: fields and properties (bare and
``this.``), parameters, locals by declared type or ``var x = new T()``.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from tree_sitter import Node

from codesynapse.extract.hooks import LanguageHooks, first_sentence, squash, text
from codesynapse.extract.model import ImportRef

_TYPE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_TEST_ATTRS = frozenset({"Fact", "Theory", "Test", "TestMethod", "TestCase", "DataTestMethod"})
_SCOPES = frozenset({"lambda_expression", "local_function_statement", "class_declaration",
                     "anonymous_method_expression"})
_TYPES = frozenset({"class_declaration", "struct_declaration", "record_declaration", "interface_declaration",
                    "enum_declaration", "record_struct_declaration"})


def type_text(node: Node | None, src: bytes) -> str:
    if node is None:
        return ""
    t = node.type
    if t == "identifier":
        return text(node, src)
    if t == "qualified_name":
        return re.sub(r"\s+", "", text(node, src))
    if t == "generic_name":
        kid = next((c for c in node.named_children if c.type == "identifier"), None)
        return text(kid, src) if kid is not None else ""
    if t == "nullable_type":
        kids = node.named_children
        return type_text(kids[0], src) if kids else ""
    return ""


def _norm(node: Node | None, src: bytes, depth: int = 0) -> str:
    if node is None or depth > 16:
        return "?"
    t = node.type
    if t in ("identifier", "predefined_type"):
        return text(node, src)
    if t == "this" or (not node.is_named and text(node, src) == "this"):
        return "this"
    if t == "base" or (not node.is_named and text(node, src) == "base"):
        return "super()"
    if t == "generic_name":
        return type_text(node, src) or "?"
    if t == "member_access_expression":
        return f"{_norm(node.child_by_field_name('expression'), src, depth + 1)}." \
               f"{type_text(node.child_by_field_name('name'), src) or '?'}"
    if t == "invocation_expression":
        return f"{_norm(node.child_by_field_name('function'), src, depth + 1)}()"
    if t == "object_creation_expression":
        typ = type_text(node.child_by_field_name("type"), src)
        return f"{typ}()" if typ else "?"
    if t == "element_access_expression":
        return f"{_norm(node.child_by_field_name('expression'), src, depth + 1)}[]"
    if t in ("parenthesized_expression", "cast_expression", "postfix_unary_expression", "await_expression"):
        kids = node.named_children
        return _norm(kids[-1], src, depth + 1) if kids else "?"
    if t == "qualified_name":
        return re.sub(r"\s+", "", text(node, src))
    if t == "conditional_access_expression":
        return "?"
    return "?"


_XML_REF = re.compile(r'<(?:see|seealso|paramref|typeparamref)\s+(?:cref|name|langword)="([^"]*)"\s*/>')
_XML_SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.DOTALL)
_XML_RETURNS = re.compile(r"<returns>(.*?)</returns>", re.DOTALL)
_XML_TAG = re.compile(r"</?\w+[^>]*>")


class CSharpHooks(LanguageHooks):
    sep = "."
    comment_types = frozenset({"comment"})

    def module_name(self, relpath: str, root: str) -> str:
        d = str(PurePosixPath(relpath).parent)
        return d.replace("/", ".") if d not in ("", ".") else PurePosixPath(relpath).stem

    def tree_module(self, root: Node, src: bytes, module: str) -> str:
        stack = [root]
        while stack:
            n = stack.pop(0)
            if n.type in ("namespace_declaration", "file_scoped_namespace_declaration"):
                return re.sub(r"\s+", "", text(n.child_by_field_name("name"), src))
            if n.type in ("compilation_unit", "declaration_list"):
                stack.extend(n.named_children)
        return ""

    def refine_kind(self, kind: str, node: Node, parent_kind: str) -> str:
        return kind

    def body(self, node: Node) -> Node | None:
        return node.child_by_field_name("body")

    def _attributes(self, node: Node, src: bytes) -> list[str]:
        out = []
        for c in node.children:
            if c.type == "attribute_list":
                for a in c.named_children:
                    if a.type == "attribute":
                        out.append(text(a.child_by_field_name("name"), src).rsplit(".", 1)[-1])
        return out

    def signature(self, node: Node, src: bytes) -> str:
        body = node.child_by_field_name("body")
        start = node.start_byte
        for c in node.children:  # leave attributes out
            if c.type == "attribute_list":
                start = c.end_byte
        end = body.start_byte if body is not None else node.end_byte
        sig = src[start:end].decode("utf-8", "replace").strip().rstrip(";{").strip()
        return squash(sig)

    def summary(self, node: Node, src: bytes) -> str:
        """An XML doc comment's ``<summary>`` (``<returns>`` when it has none), its
        references written as the names they refer to (``<see cref="T:Ns.Backoff"/>`` →
        Ns.Backoff, ``<paramref name="n"/>`` → n); ``<param>``, ``<remarks>`` and the other
        sections are not the summary. A plain comment is read as other languages' are."""
        doc = self.leading_comment(node, src)
        if "<" not in doc:
            return super().summary(node, src)
        doc = _XML_REF.sub(lambda m: m.group(1).split(":", 1)[-1].split("(", 1)[0], doc)
        part = _XML_SUMMARY.search(doc)
        if part is None:
            part = _XML_RETURNS.search(doc)
            doc = "Returns " + part.group(1) if part is not None else doc
        else:
            doc = part.group(1)
        return first_sentence(_XML_TAG.sub("", doc))

    def is_test(self, name: str, kind: str, relpath: str, node: Node, src: bytes, parent: str) -> bool:
        return kind == "method" and any(a in _TEST_ATTRS for a in self._attributes(node, src))

    def exported(self, name: str, node: Node, src: bytes) -> bool:
        mods = {text(c, src) for c in node.children if c.type == "modifier"}
        if "public" in mods or "protected" in mods:
            return True
        p = node.parent
        return p is not None and p.parent is not None and p.parent.type == "interface_declaration"

    def callee_text(self, callee: Node, src: bytes) -> str:
        if callee.parent is not None and callee.parent.type == "object_creation_expression":
            s = type_text(callee, src)
        elif callee.type in ("identifier", "qualified_name", "generic_name") and callee.parent is not None \
                and callee.parent.type in ("base_list",):
            s = type_text(callee, src)
        else:
            s = _norm(callee, src)
        return "" if not s or s == "?" else s

    def imports(self, nodes: list[Node], src: bytes, module: str, relpath: str) -> list[ImportRef]:
        out: list[ImportRef] = []
        for node in nodes:
            line = node.start_point[0] + 1
            alias_node = node.child_by_field_name("name")
            target = next((c for c in node.named_children if c.type in ("qualified_name", "identifier")
                           and c != alias_node), None)
            if target is None:
                continue
            path = re.sub(r"\s+", "", text(target, src))
            if alias_node is not None:
                mod, _, name = path.rpartition(".")
                out.append(ImportRef(module=mod or path, name=name if mod else "", alias=text(alias_node, src),
                                     line=line))
            else:
                out.append(ImportRef(module=path, name="*", line=line))
        return out

    # -- receiver hints ----------------------------------------------------------------
    def receiver_hints(self, unit: Node, src: bytes) -> dict[str, str]:
        hints: dict[str, str] = {}
        conflicts: set[str] = set()

        def put(var: str, typ: str) -> None:
            if not var or var in conflicts or not typ or typ == "var" or not _TYPE.match(typ):
                return
            if var in hints and hints[var] != typ:
                conflicts.add(var)
                del hints[var]
                return
            hints[var] = typ

        def declared(vd: Node, this_too: bool) -> None:
            typ = vd.child_by_field_name("type")
            tname = type_text(typ, src) if typ is not None and typ.type != "implicit_type" else ""
            for d in vd.named_children:
                if d.type != "variable_declarator":
                    continue
                name = text(d.child_by_field_name("name"), src)
                t = tname
                if not t:
                    val = next((c for c in d.named_children if c.type == "object_creation_expression"), None)
                    t = type_text(val.child_by_field_name("type"), src) if val is not None else ""
                put(name, t)
                if this_too:
                    put("this." + name, t)

        if unit.type in _TYPES:
            body = unit.child_by_field_name("body")
            for m in body.named_children if body is not None else ():
                if m.type == "field_declaration":
                    vd = next((c for c in m.named_children if c.type == "variable_declaration"), None)
                    if vd is not None:
                        declared(vd, True)
                elif m.type == "property_declaration":
                    t = type_text(m.child_by_field_name("type"), src)
                    name = text(m.child_by_field_name("name"), src)
                    put(name, t)
                    put("this." + name, t)
            return hints
        params = unit.child_by_field_name("parameters")
        for p in params.named_children if params is not None else ():
            if p.type == "parameter":
                put(text(p.child_by_field_name("name"), src), type_text(p.child_by_field_name("type"), src))
        body = unit.child_by_field_name("body")
        stack = [body] if body is not None else []
        while stack:
            n = stack.pop()
            if n.type == "variable_declaration":
                declared(n, False)
            for c in reversed(n.named_children):
                if c.type not in _SCOPES:
                    stack.append(c)
        return hints
