"""Go: packages by import path, receiver methods, embedding, doc comments, ``TestXxx``.

Module qname = the package's import path: the nearest ``go.mod``'s module path plus the
directory relative to it (``example.com/shop/store``), or the directory relative to the
repository root when there is no ``go.mod``. Every file of a package shares it, so a bare call
to a function in a sibling file resolves as module-local. External test packages
(``package store_test``) share the directory's qname too.

Methods are qualified by their receiver type wherever they are declared
(``example.com/shop/store.Store.Get``); embedded fields and embedded interfaces are bases,
so promoted methods are found through them (a type's method set). Receiver hints: the method
receiver, typed parameters, ``var x T``, ``x := T{}`` / ``&T{}``, ``x := NewT()`` when that
function is declared in the same file with a named result type, and ``recv.field`` when the
receiver's struct is declared in the same file; package-level ``var x = &T{}`` / ``var x T``
of the same file when no parameter or local shadows ``x`` (``DefaultClient.Get`` in
``http.Get``). A closure's typed parameters and locals count as its function's. A struct's
signature lists its named fields of a named type (``type S struct {view *View; a, b pkg.T}``):
``x.field`` (and ``y := x.field``) with ``x`` of a struct declared in another file gets a field
hint (``->field.Owner``) the resolver reads that list for; an assignment to a field binds nothing.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

from tree_sitter import Node

from codesynapse.extract.hooks import LanguageHooks, squash, text
from codesynapse.extract.lang._filecache import per_file
from codesynapse.extract.model import (
    FIELD_HINT,
    RETURN_HINT,
    ImportRef,
    field_hint,
    return_hint,
)

_TEST = re.compile(r"^(Test|Benchmark|Example|Fuzz)([A-Z0-9_].*)?$")
_TYPE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)?$")
_VERSION = re.compile(r"^v\d+$")
_NEW = re.compile(r"^New([A-Z]\w*)$")
_SCOPES = frozenset({"func_literal", "function_declaration", "method_declaration"})


@lru_cache(maxsize=4096)
def _go_mod(directory: str) -> str | None:
    try:
        with open(os.path.join(directory, "go.mod"), encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if line.startswith("module"):
                    rest = line[len("module"):].strip().strip('"')
                    if rest:
                        return rest
    except OSError:
        return None
    return None


def _type_of(node: Node | None, src: bytes) -> str:
    """The named type of a type expression: ``*Store`` → ``Store``, ``pkg.T`` → ``pkg.T``,
    ``Box[T]`` → ``Box``; "" for maps, slices, funcs and the like."""
    if node is None:
        return ""
    t = node.type
    if t == "pointer_type":
        kids = node.named_children
        return _type_of(kids[0], src) if kids else ""
    if t in ("type_identifier", "identifier", "field_identifier"):
        return text(node, src)
    if t == "qualified_type":
        return f"{text(node.child_by_field_name('package'), src)}.{text(node.child_by_field_name('name'), src)}"
    if t == "generic_type":
        return _type_of(node.child_by_field_name("type"), src)
    if t == "parenthesized_type":
        kids = node.named_children
        return _type_of(kids[0], src) if kids else ""
    return ""


def _norm(node: Node | None, src: bytes, depth: int = 0) -> str:
    if node is None or depth > 16:
        return "?"
    t = node.type
    if t in ("identifier", "field_identifier", "type_identifier", "package_identifier"):
        return text(node, src)
    if t == "selector_expression":
        return f"{_norm(node.child_by_field_name('operand'), src, depth + 1)}.{text(node.child_by_field_name('field'), src)}"
    if t == "call_expression":
        return f"{_norm(node.child_by_field_name('function'), src, depth + 1)}()"
    if t == "composite_literal":  # Store{} used as a receiver: a fresh instance
        typ = _type_of(node.child_by_field_name("type"), src)
        return f"{typ}()" if typ else "?"
    if t == "index_expression":
        return f"{_norm(node.child_by_field_name('operand'), src, depth + 1)}[]"
    if t in ("parenthesized_expression", "unary_expression"):
        kid = node.child_by_field_name("operand") if t == "unary_expression" else None
        if kid is None and node.named_children:
            kid = node.named_children[0]
        return _norm(kid, src, depth + 1)
    if t in ("pointer_type", "qualified_type", "generic_type"):
        s = _type_of(node, src)
        return s or "?"
    return "?"


FIELDS_CAP = 1024  # a struct's signature with its fields; a field cut by the cap is not read


def _named_type(node: Node | None) -> bool:
    """``T``, ``pkg.T``, ``*T``, ``*pkg.T``: a named type as a field's type (no generics, maps,
    slices, funcs, channels, interfaces written in place)."""
    if node is not None and node.type == "pointer_type":
        kids = node.named_children
        node = kids[0] if len(kids) == 1 else None
    return node is not None and node.type in ("type_identifier", "qualified_type")


def _named_fields(struct: Node | None, src: bytes) -> str:
    """``a *T; b, c pkg.U``: the named fields of a struct whose type is a named type, as
    written; embedded fields and other types are left out."""
    out: list[str] = []
    for fl in struct.named_children if struct is not None else ():
        for f in fl.named_children:
            if f.type != "field_declaration":
                continue
            names = [text(n, src) for n in f.children_by_field_name("name")]
            typ = f.child_by_field_name("type")
            if names and _named_type(typ):
                out.append(f"{', '.join(names)} {squash(text(typ, src))}")
    return "; ".join(out)


def _declared_names(fn: Node, src: bytes) -> set[str]:
    """Every name a function (and the closures in it) declares: receiver, parameters,
    results, ``:=`` and ``var``/``const`` names, ``range`` variables (over-approximated)."""
    out: set[str] = set()
    stack = [fn]
    while stack:
        n = stack.pop()
        t = n.type
        if t in ("parameter_declaration", "variadic_parameter_declaration", "var_spec", "const_spec"):
            for x in n.children_by_field_name("name"):
                out.add(text(x, src))
        elif t in ("short_var_declaration", "range_clause"):
            left = n.child_by_field_name("left")
            for x in (left.named_children if left is not None else ()):
                if x.type == "identifier":
                    out.add(text(x, src))
        stack.extend(n.named_children)
    return out


class GoHooks(LanguageHooks):
    sep = "."
    comment_types = frozenset({"comment"})

    def module_name(self, relpath: str, root: str) -> str:
        d = os.path.dirname(relpath)
        parts = d.split("/") if d else []
        for i in range(len(parts), -1, -1):
            mod = _go_mod(os.path.join(root, *parts[:i]))
            if mod is not None:
                rest = "/".join(parts[i:])
                if mod == "std":
                    # GOROOT/src: standard-library import paths carry no module prefix
                    # ("net/http"), and its vendored modules are imported by their own path
                    return rest.removeprefix("vendor/") or mod
                return f"{mod}/{rest}" if rest else mod
        return d

    def tree_module(self, root: Node, src: bytes, module: str) -> str:
        if module:
            return ""
        for c in root.named_children:  # a package at the root of a tree without go.mod
            if c.type == "package_clause":
                return text(c.named_children[0], src) if c.named_children else ""
        return ""

    def owner(self, node: Node, src: bytes) -> str:
        if node.type != "method_declaration":
            return ""
        recv = node.child_by_field_name("receiver")
        for p in recv.named_children if recv is not None else ():
            if p.type == "parameter_declaration":
                return _type_of(p.child_by_field_name("type"), src).rsplit(".", 1)[-1]
        return ""

    def refine_kind(self, kind: str, node: Node, parent_kind: str) -> str:
        return kind

    def body(self, node: Node) -> Node | None:
        if node.type == "type_spec":
            return node.child_by_field_name("type")
        if node.type in ("const_spec", "var_spec", "method_elem"):
            return None
        return node.child_by_field_name("body")

    def signature(self, node: Node, src: bytes) -> str:
        t = node.type
        if t == "const_spec":  # name and type, never the value
            names = [text(n, src) for n in node.children_by_field_name("name")]
            typ = node.child_by_field_name("type")
            return squash("const " + ", ".join(names) + (f" {text(typ, src)}" if typ is not None else ""))
        if t == "var_spec":  # name and declared type, never the value
            names = [text(n, src) for n in node.children_by_field_name("name")]
            typ = node.child_by_field_name("type")
            return squash("var " + ", ".join(names) + (f" {text(typ, src)}" if typ is not None else ""), 160)
        if t == "type_spec":
            typ = node.child_by_field_name("type")
            kw = {"struct_type": "struct", "interface_type": "interface"}.get(typ.type if typ is not None else "", "")
            tp = node.child_by_field_name("type_parameters")
            head = f"type {text(node.child_by_field_name('name'), src)}{text(tp, src) if tp is not None else ''}"
            fields = _named_fields(typ, src) if kw == "struct" else ""
            if fields:  # the declared types of its named fields, which field hints read
                return squash(f"{head} struct {{{fields}}}", FIELDS_CAP)
            return squash(f"{head} {kw or text(typ, src)}", 160)
        if t == "method_elem":
            return squash(text(node, src))
        return super().signature(node, src)

    def _anchor(self, node: Node) -> Node:
        p = node.parent
        if node.type in ("type_spec", "const_spec", "var_spec") and p is not None and \
                p.type in ("type_declaration", "const_declaration", "var_declaration") and len(p.named_children) == 1:
            return p
        return node

    def summary(self, node: Node, src: bytes) -> str:
        return super().summary(self._anchor(node), src)

    def summary_module(self, root: Node, src: bytes) -> str:
        for c in root.named_children:
            if c.type == "package_clause":
                return super().summary(c, src)
        return ""

    def is_test(self, name: str, kind: str, relpath: str, node: Node, src: bytes, parent: str) -> bool:
        return kind == "function" and relpath.endswith("_test.go") and bool(_TEST.match(name))

    def exported(self, name: str, node: Node, src: bytes) -> bool:
        return name[:1].isupper()

    def callee_text(self, callee: Node, src: bytes) -> str:
        s = _norm(callee, src)
        return "" if s == "?" else s

    def imports(self, nodes: list[Node], src: bytes, module: str, relpath: str) -> list[ImportRef]:
        out: list[ImportRef] = []
        for node in nodes:
            specs = [node] if node.type == "import_spec" else []
            for c in node.named_children:
                if c.type == "import_spec":
                    specs.append(c)
                elif c.type == "import_spec_list":
                    specs.extend(x for x in c.named_children if x.type == "import_spec")
            for spec in specs:
                path_node = spec.child_by_field_name("path")
                path = text(path_node, src).strip('"`')
                if not path:
                    continue
                name_node = spec.child_by_field_name("name")
                alias = text(name_node, src) if name_node is not None else ""
                line = spec.start_point[0] + 1
                if alias == ".":
                    out.append(ImportRef(module=path, name="*", line=line))
                    continue
                if not alias:
                    segs = path.split("/")
                    last = segs[-1]
                    if _VERSION.match(last) and len(segs) > 1:  # github.com/x/y/v2 is package y
                        alias = segs[-2]
                    elif "." in last and "/" in path:  # gopkg.in/yaml.v3 is package yaml
                        alias = last.split(".", 1)[0]
                out.append(ImportRef(module=path, alias=alias, line=line))
        return out

    # -- receiver hints ----------------------------------------------------------------
    @staticmethod
    def _file_root(node: Node) -> Node:
        while node.parent is not None:
            node = node.parent
        return node

    @staticmethod
    def _structs(root: Node, src: bytes) -> dict[str, dict[str, str]]:
        """Struct name → {field: type} for the structs declared in this file."""
        out: dict[str, dict[str, str]] = {}
        for decl in root.named_children:
            if decl.type != "type_declaration":
                continue
            for spec in decl.named_children:
                st = spec.child_by_field_name("type") if spec.type == "type_spec" else None
                if st is None or st.type != "struct_type":
                    continue
                fields: dict[str, str] = {}
                for fl in st.named_children:
                    for f in fl.named_children:
                        if f.type != "field_declaration":
                            continue
                        typ = _type_of(f.child_by_field_name("type"), src)
                        for n in f.children_by_field_name("name"):
                            if typ:
                                fields[text(n, src)] = typ
                out[text(spec.child_by_field_name("name"), src)] = fields
        return out

    @staticmethod
    def _results(root: Node, src: bytes) -> dict[str, str]:
        """Function name → its (first) named result type, for this file's functions."""
        out: dict[str, str] = {}
        for decl in root.named_children:
            if decl.type != "function_declaration":
                continue
            res = decl.child_by_field_name("result")
            typ = ""
            if res is not None and res.type == "parameter_list":
                ps = [p for p in res.named_children if p.type == "parameter_declaration"]
                typ = _type_of(ps[0].child_by_field_name("type"), src) if ps else ""
            elif res is not None:
                typ = _type_of(res, src)
            out[text(decl.child_by_field_name("name"), src)] = typ
        return out

    @staticmethod
    def _result_lists(root: Node, src: bytes) -> dict[tuple[str, str], list[str]]:
        """(receiver type or "", name) → the types of every result, one per value (``(a, b
        int)`` is two), "" where a result's type is no named type; for this file's functions
        and methods. Multi-value assignments read their receivers' types from it."""
        out: dict[tuple[str, str], list[str]] = {}
        for decl in root.named_children:
            if decl.type not in ("function_declaration", "method_declaration"):
                continue
            recv = ""
            if decl.type == "method_declaration":
                rl = decl.child_by_field_name("receiver")
                ps = [p for p in rl.named_children if p.type == "parameter_declaration"] if rl is not None else []
                recv = _type_of(ps[0].child_by_field_name("type"), src) if ps else ""
                if not recv:
                    continue
            res = decl.child_by_field_name("result")
            types: list[str] = []
            if res is not None and res.type == "parameter_list":
                for p in res.named_children:
                    if p.type != "parameter_declaration":
                        continue
                    typ = _type_of(p.child_by_field_name("type"), src)
                    types += [typ] * max(1, len(p.children_by_field_name("name")))
            elif res is not None:
                types = [_type_of(res, src)]
            out[(recv, text(decl.child_by_field_name("name"), src))] = types
        return out

    def _call_results(self, root: Node, call: Node, src: bytes, hints: dict[str, str]) -> list[str]:
        """The result types of a call to a function of this file, or to a method of this file
        on a receiver whose type is known here; [] when unknown (nothing is guessed)."""
        if call.type != "call_expression":
            return []
        fn = call.child_by_field_name("function")
        lists = per_file(src, "go.resultlists", lambda: self._result_lists(root, src))
        if fn is not None and fn.type == "identifier":
            return lists.get(("", text(fn, src)), [])
        if fn is not None and fn.type == "selector_expression":
            operand = fn.child_by_field_name("operand")
            recv = hints.get(text(operand, src), "") if operand is not None else ""
            if recv:
                return lists.get((recv, text(fn.child_by_field_name("field"), src)), [])
        return []

    def _package_vars(self, root: Node, src: bytes) -> dict[str, str]:
        """Package-level variable → its type, for this file's ``var`` declarations whose type
        is written or follows from the value (``var DefaultClient = &Client{}``)."""
        out: dict[str, str] = {}
        for decl in root.named_children:
            if decl.type != "var_declaration":
                continue
            specs = [c for c in decl.named_children if c.type == "var_spec"]
            for lst in decl.named_children:
                if lst.type == "var_spec_list":
                    specs.extend(c for c in lst.named_children if c.type == "var_spec")
            for spec in specs:
                typ = _type_of(spec.child_by_field_name("type"), src)
                val = spec.child_by_field_name("value")
                vals = val.named_children if val is not None else []
                for i, name in enumerate(spec.children_by_field_name("name")):
                    t = typ or (self._value_type(root, vals[i], src) if i < len(vals) else "")
                    if t and _TYPE.match(t):
                        out[text(name, src)] = t
        return out

    def _struct_fields(self, root: Node, type_name: str, src: bytes) -> dict[str, str]:
        return per_file(src, "go.structs", lambda: self._structs(root, src)).get(type_name, {})

    def _result_type(self, root: Node, fn_name: str, src: bytes) -> str:
        return per_file(src, "go.results", lambda: self._results(root, src)).get(fn_name, "")

    def _value_type(self, root: Node, val: Node | None, src: bytes) -> str:
        if val is None:
            return ""
        if val.type == "unary_expression":
            val = val.child_by_field_name("operand")
            if val is None:
                return ""
        if val.type == "composite_literal":
            return _type_of(val.child_by_field_name("type"), src)
        if val.type == "call_expression":
            fn = val.child_by_field_name("function")
            if fn is not None and fn.type == "identifier":
                typ = self._result_type(root, text(fn, src), src)
                if typ:
                    return typ
            # The Go constructor convention: NewT(...) / pkg.NewT(...) returns T (or *T). The
            # resolver binds a call only if T exists and has the method.
            if fn is not None and fn.type in ("identifier", "selector_expression"):
                name = text(fn, src) if fn.type == "identifier" else text(fn.child_by_field_name("field"), src)
                m = _NEW.match(name)
                if m:
                    if fn.type == "identifier":
                        return m.group(1)
                    pkg = fn.child_by_field_name("operand")
                    if pkg is not None and pkg.type == "identifier":
                        return f"{text(pkg, src)}.{m.group(1)}"
        return ""

    def call_result_hint(self, unit: Node, callee: str, hints: dict[str, str], src: bytes) -> str:
        """The hint of a receiver that is a call's result (``snapshot.View().ID()``)."""
        if unit.type not in _SCOPES or "?" in callee or "()" in callee or "[]" in callee:
            return ""
        names: set[str] = set()
        n: Node | None = unit
        while n is not None:
            if n.type in _SCOPES:
                names |= _declared_names(n, src)
            n = n.parent
        inner = ""
        recv = callee.rsplit(".", 1)[0] if "." in callee else ""
        if recv and recv in hints:
            inner = hints[recv]
            if inner.startswith((RETURN_HINT, FIELD_HINT)):
                return ""
        elif callee.split(".", 1)[0] in names:
            return ""
        return return_hint(callee, inner)

    def _field_value(self, root: Node, val: Node, src: bytes, hints: dict[str, str]) -> str:
        """``snapshot := deps.snapshot``: the type of a field of a name hinted with a type (a
        struct of this file: the field's type; else a field hint the resolver reads)."""
        if val.type != "selector_expression":
            return ""
        operand, fld = val.child_by_field_name("operand"), val.child_by_field_name("field")
        if operand is None or fld is None or operand.type != "identifier":
            return ""
        owner = hints.get(text(operand, src), "")
        if not owner or not _TYPE.match(owner):
            return ""
        fields = per_file(src, "go.structs", lambda: self._structs(root, src))
        if owner in fields:
            return fields[owner].get(text(fld, src), "")
        return self.field_hint(owner, text(fld, src))

    def field_hint(self, owner: str, field: str) -> str:
        """The hint of receiver ``x.field`` when ``x`` is hinted ``owner`` (a type name) and the
        field is not known in this file (its struct is declared in another): a field hint, so
        the resolver reads the field's declared type from the struct's signature."""
        return field_hint(owner, field) if _TYPE.match(owner) else ""

    @staticmethod
    def _return_hint(call: Node, src: bytes, hints: dict[str, str], declared: set[str], index: int,
                     element: bool = False) -> str:
        """``x := pkg.F()`` / ``cmd, flags, err := c.Find(args)`` where the function is not in
        this file: a return hint, so the resolver types ``x`` by the result the function
        declares. The call's receiver must be hinted with a type, or a name no parameter or
        local binds (a package); else none."""
        if call.type != "call_expression":
            return ""
        fn = call.child_by_field_name("function")
        if fn is None or fn.type not in ("identifier", "selector_expression"):
            return ""
        callee = _norm(fn, src)
        if "?" in callee or "()" in callee or "[]" in callee:
            return ""
        inner = ""
        if fn.type == "selector_expression":
            recv = callee.rsplit(".", 1)[0]
            if recv in hints:
                inner = hints[recv]
                if inner.startswith((RETURN_HINT, FIELD_HINT)):
                    return ""
            elif recv.split(".", 1)[0] in declared:
                return ""  # a parameter or local of unknown type
        elif callee in declared:
            return ""  # a local func value
        return return_hint(callee, inner, index, element)

    def receiver_hints(self, unit: Node, src: bytes) -> dict[str, str]:
        if unit.type not in ("function_declaration", "method_declaration", "func_literal"):
            return {}
        hints: dict[str, str] = {}
        conflicts: set[str] = set()
        declared: set[str] = set()  # every parameter and local, typed or not

        def put(var: str, typ: str) -> None:
            declared.add(var)
            if not var or var == "_" or var in conflicts:
                return
            if not typ or not (_TYPE.match(typ) or typ.startswith((RETURN_HINT, FIELD_HINT))):
                if var in hints:
                    conflicts.add(var)
                    del hints[var]
                return
            if var in hints and hints[var] != typ:
                conflicts.add(var)
                del hints[var]
                return
            hints[var] = typ

        root = self._file_root(unit)
        recv_fields: list[tuple[str, str]] = []
        for field in ("receiver", "parameters"):
            plist = unit.child_by_field_name(field)
            for p in plist.named_children if plist is not None else ():
                if p.type != "parameter_declaration":
                    continue
                typ = _type_of(p.child_by_field_name("type"), src)
                for n in p.children_by_field_name("name"):
                    put(text(n, src), typ)
                    if field == "receiver" and typ:
                        recv_fields.append((text(n, src), typ))
        for var, typ in recv_fields:
            for fname, ftyp in self._struct_fields(root, typ, src).items():
                put(f"{var}.{fname}", ftyp)
        body = unit.child_by_field_name("body")
        stack = [body] if body is not None else []
        while stack:
            n = stack.pop()
            t = n.type
            if t in ("short_var_declaration", "assignment_statement"):
                left = n.child_by_field_name("left")
                right = n.child_by_field_name("right")
                lefts = [c for c in left.named_children] if left is not None else []
                rights = [c for c in right.named_children] if right is not None else []
                op = n.child_by_field_name("operator")
                if t == "assignment_statement" and (op is None or text(op, src) != "="):
                    pass  # ``x += 1`` and the like bind no value of another type
                elif len(lefts) == len(rights):
                    for lnode, rnode in zip(lefts, rights):
                        if lnode.type == "selector_expression":
                            continue  # ``v.snapshot = ...``: a field keeps the type its struct declares
                        put(text(lnode, src), self._value_type(root, rnode, src)
                            or self._field_value(root, rnode, src, hints)
                            or self._return_hint(rnode, src, hints, declared, 0))
                else:
                    # ``cmd, rest, err := c.Find(args)``: each name takes its result's type when
                    # the function (or the method on a receiver of known type) is in this file,
                    # else the type the called function declares for that result (return hint)
                    types = self._call_results(root, rights[0], src, hints) if len(rights) == 1 else []
                    for i, lnode in enumerate(lefts):
                        if lnode.type == "selector_expression":
                            continue  # ``v.snapshot, ok = ...``: as above
                        typ = types[i] if len(types) == len(lefts) else ""
                        if not typ and len(rights) == 1 and not types:
                            typ = self._return_hint(rights[0], src, hints, declared, i)
                        put(text(lnode, src), typ)
            elif t == "range_clause":
                # ``for _, pgf := range pkg.CompiledGoFiles()``: the value is an element of the
                # slice the function declares (a return hint); the key, and anything else, binds
                # no known type
                left = n.child_by_field_name("left")
                right = n.child_by_field_name("right")
                lefts = [c for c in left.named_children] if left is not None else []
                for i, lnode in enumerate(lefts):
                    typ = ""
                    if i == 1 and len(lefts) == 2 and right is not None:
                        typ = self._return_hint(right, src, hints, declared, 0, element=True)
                    put(text(lnode, src), typ)
            elif t == "var_spec":
                typ = _type_of(n.child_by_field_name("type"), src)
                val = n.child_by_field_name("value")
                vals = val.named_children if val is not None else []
                for i, name in enumerate(n.children_by_field_name("name")):
                    put(text(name, src), typ or (self._value_type(root, vals[i], src) if i < len(vals) else ""))
            for c in reversed(n.named_children):
                if c.type not in _SCOPES:
                    stack.append(c)
                elif c.type == "func_literal":
                    # a closure's typed parameters (``func(ctx context.Context, deps commandDeps)``),
                    # its calls being the enclosing function's: a name the function already
                    # binds with no known type, or with another, gets none
                    plist = c.child_by_field_name("parameters")
                    for p in plist.named_children if plist is not None else ():
                        typ = _type_of(p.child_by_field_name("type"), src) \
                            if p.type == "parameter_declaration" else ""
                        for nm in p.children_by_field_name("name"):
                            var = text(nm, src)
                            if var in declared and var not in hints:
                                conflicts.add(var)
                            put(var, typ)
                    # and its locals (``snapshot := deps.snapshot``), by the same rules
                    body = c.child_by_field_name("body")
                    if body is not None:
                        stack.append(body)
        # the fields of parameters and locals whose struct is declared in this file, as for the
        # receiver's (``req.snapshot.View()`` with ``req *request``)
        receivers = {v for v, _ in recv_fields}
        for var, typ in [(v, t) for v, t in hints.items() if "." not in v and v not in receivers]:
            for fname, ftyp in self._struct_fields(root, typ, src).items():
                put(f"{var}.{fname}", ftyp)
        # package-level variables of this file, unless a parameter or local shadows the name
        for var, typ in per_file(src, "go.vars", lambda: self._package_vars(root, src)).items():
            if var not in declared:
                hints[var] = typ
        return hints
