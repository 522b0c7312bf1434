"""Rust: ``::`` paths from the crate name, impl blocks, traits, ``#[test]``, doc comments.

Module qname = the crate name from the nearest ``Cargo.toml`` (``-`` → ``_``; ``crate`` when
there is none) plus the file's module path: ``src/lib.rs`` / ``src/main.rs`` are the crate
root, ``src/store.rs`` and ``src/store/mod.rs`` are ``shop::store``; other files keep their
directories (``tests/api.rs`` → ``shop::tests::api``). Inline ``mod x { … }`` blocks are
``module`` symbols nested in the file's module.

Functions in ``impl T`` / ``impl Trait for T`` blocks are methods of ``T`` wherever the block
is (``shop::store::Store::get``); ``impl Trait for T`` records ``T`` implements ``Trait`` and
supertraits are bases, so default trait methods are found through them. ``use`` paths are
made absolute (``crate::``, ``self::``, ``super::`` expanded, inline modules included).
Receiver hints: ``self.field`` from the struct declared in the same file, typed parameters
and lets (``&T``, ``&mut T``, ``Box/Rc/Arc<T>``), ``let x = T::new()`` / ``T::default()`` /
``T { … }``.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

from tree_sitter import Node

from codesynapse.extract.hooks import LanguageHooks, first_sentence, squash, strip_comment, text
from codesynapse.extract.lang._filecache import per_file
from codesynapse.extract.model import ImportRef

_TYPE = re.compile(r"^[A-Za-z_]\w*(::[A-Za-z_]\w*)*$")
_WRAPPERS = frozenset({"Box", "Rc", "Arc", "RefCell", "Mutex", "RwLock"})
_CTORS = frozenset({"new", "default"})
_SCOPES = frozenset({"function_item", "closure_expression", "impl_item", "mod_item", "trait_item"})


@lru_cache(maxsize=1024)
def _crate_name(directory: str) -> str | None:
    path = os.path.join(directory, "Cargo.toml")
    if not os.path.isfile(path):
        return None
    try:
        import tomllib

        with open(path, "rb") as f:
            data = tomllib.load(f)
        name = (data.get("package") or {}).get("name") or (data.get("lib") or {}).get("name")
        return str(name).replace("-", "_") if name else "crate"
    except (OSError, ValueError):
        return "crate"


def _type_of(node: Node | None, src: bytes) -> str:
    if node is None:
        return ""
    t = node.type
    if t in ("type_identifier", "identifier"):
        return text(node, src)
    if t == "scoped_type_identifier":
        return re.sub(r"\s+", "", text(node, src))
    if t == "reference_type":
        return _type_of(node.child_by_field_name("type"), src)
    if t == "generic_type":
        base = _type_of(node.child_by_field_name("type"), src)
        if base in _WRAPPERS:
            args = node.child_by_field_name("type_arguments")
            kids = args.named_children if args is not None else []
            return _type_of(kids[0], src) if kids else ""
        return base
    return ""


def _norm(node: Node | None, src: bytes, depth: int = 0) -> str:
    if node is None or depth > 16:
        return "?"
    t = node.type
    if t in ("identifier", "field_identifier", "type_identifier", "self", "crate", "super",
             "primitive_type", "metavariable"):
        return text(node, src)
    if t in ("scoped_identifier", "scoped_type_identifier"):
        path = node.child_by_field_name("path")
        name = text(node.child_by_field_name("name"), src)
        return f"{_norm(path, src, depth + 1)}::{name}" if path is not None else name
    if t == "field_expression":
        return f"{_norm(node.child_by_field_name('value'), src, depth + 1)}.{text(node.child_by_field_name('field'), src)}"
    if t == "call_expression":
        return f"{_norm(node.child_by_field_name('function'), src, depth + 1)}()"
    if t == "generic_function":
        return _norm(node.child_by_field_name("function"), src, depth + 1)
    if t == "generic_type":
        return _norm(node.child_by_field_name("type"), src, depth + 1)
    if t == "struct_expression":
        name = _norm(node.child_by_field_name("name"), src, depth + 1)
        return f"{name}()" if name != "?" else "?"
    if t == "index_expression":
        kids = node.named_children
        return f"{_norm(kids[0], src, depth + 1)}[]" if kids else "?"
    if t in ("parenthesized_expression", "reference_expression", "try_expression", "unary_expression",
             "await_expression"):
        kids = [c for c in node.named_children if c.type != "mutable_specifier"]
        return _norm(kids[0], src, depth + 1) if kids else "?"
    return "?"


def _impl_of(node: Node) -> Node | None:
    p = node.parent
    if p is not None and p.type == "declaration_list" and p.parent is not None and p.parent.type == "impl_item":
        return p.parent
    return None


class RustHooks(LanguageHooks):
    sep = "::"
    comment_types = frozenset({"line_comment", "block_comment"})

    def module_name(self, relpath: str, root: str) -> str:
        parts = relpath.split("/")
        crate = "crate"
        rel = parts
        for i in range(len(parts) - 1, -1, -1):
            name = _crate_name(os.path.join(root, *parts[:i]))
            if name is not None:
                crate = name
                rel = parts[i:]
                break
        rel = list(rel)
        if rel and rel[0] == "src":
            rel = rel[1:]
        if not rel:
            return crate
        stem = rel[-1].rsplit(".", 1)[0]
        rel = rel[:-1] + ([] if stem == "mod" or (len(rel) == 1 and stem in ("lib", "main")) else [stem])
        return "::".join([crate, *rel])

    # -- kinds, owners ---------------------------------------------------------------
    def refine_kind(self, kind: str, node: Node, parent_kind: str) -> str:
        if kind == "function" and (parent_kind in ("trait", "struct", "enum") or _impl_of(node) is not None):
            return "method"
        return kind

    def owner(self, node: Node, src: bytes) -> str:
        impl = _impl_of(node)
        if impl is None:
            return ""
        return _type_of(impl.child_by_field_name("type"), src).rsplit("::", 1)[-1]

    def base_owner(self, base: Node, src: bytes) -> str:
        p = base.parent
        if p is not None and p.type == "impl_item":
            return _type_of(p.child_by_field_name("type"), src).rsplit("::", 1)[-1]
        return ""

    def body(self, node: Node) -> Node | None:
        if node.type in ("const_item", "static_item", "function_signature_item", "type_item"):
            return None
        return node.child_by_field_name("body")

    def signature(self, node: Node, src: bytes) -> str:
        if node.type in ("const_item", "static_item"):  # name and type, never the value
            value = node.child_by_field_name("value")
            end = value.start_byte if value is not None else node.end_byte
            return squash(src[node.start_byte:end].decode("utf-8", "replace").rstrip().rstrip("=;").rstrip())
        if node.type in ("function_signature_item", "type_item"):
            return squash(text(node, src).rstrip(";"))
        return super().signature(node, src)

    def summary(self, node: Node, src: bytes) -> str:
        """``///`` and ``/** */`` doc comments (and plain comments) above the item, across
        attributes such as ``#[derive]`` and ``#[test]``."""
        prev = node.prev_sibling
        line = node.start_point[0]
        while prev is not None and prev.type == "attribute_item" and prev.end_point[0] >= line - 1:
            line = prev.start_point[0]
            prev = prev.prev_sibling
        comments: list[str] = []
        while prev is not None and prev.type in self.comment_types:
            end_row = prev.end_point[0] - (1 if prev.end_point[1] == 0 else 0)
            if end_row < line - 1:
                break
            c = text(prev, src)
            if c.startswith("//!") or c.startswith("/*!"):
                break
            comments.append(strip_comment(c))
            line = prev.start_point[0]
            prev = prev.prev_sibling
        comments.reverse()
        return first_sentence("\n".join(comments))

    def summary_module(self, root: Node, src: bytes) -> str:
        lines = []
        for c in root.children:
            if c.type in self.comment_types and text(c, src).startswith(("//!", "/*!")):
                t = text(c, src)
                lines.append(t[3:].strip() if t.startswith("//!") else strip_comment("/*" + t[3:]))
            elif c.type not in self.comment_types:
                break
        return first_sentence("\n".join(lines))

    def is_test(self, name: str, kind: str, relpath: str, node: Node, src: bytes, parent: str) -> bool:
        if kind not in ("function", "method"):
            return False
        prev = node.prev_sibling
        while prev is not None and prev.type in ("attribute_item", "line_comment", "block_comment"):
            if prev.type == "attribute_item" and re.search(r"(^|::|\[)test\]?$|::test\b|#\[test\]",
                                                           text(prev, src).replace(" ", "")):
                return True
            prev = prev.prev_sibling
        return False

    def exported(self, name: str, node: Node, src: bytes) -> bool:
        if any(c.type == "visibility_modifier" for c in node.children):
            return True
        impl = _impl_of(node)
        if impl is not None and impl.child_by_field_name("trait") is not None:
            return True
        p = node.parent
        return p is not None and p.parent is not None and p.parent.type == "trait_item"

    def callee_text(self, callee: Node, src: bytes) -> str:
        s = _norm(callee, src)
        return "" if s == "?" else s

    # -- imports ---------------------------------------------------------------------
    @staticmethod
    def _scope_module(node: Node, module: str, src: bytes) -> str:
        mods = []
        p = node.parent
        while p is not None:
            if p.type == "mod_item":
                mods.append(text(p.child_by_field_name("name"), src))
            p = p.parent
        return "::".join([module, *reversed(mods)])

    @staticmethod
    def _absolute(path: str, here: str) -> str:
        segs = path.split("::")
        crate = here.split("::", 1)[0]
        cur = here.split("::")
        out: list[str] = []
        i = 0
        if segs and segs[0] == "crate":
            out = [crate]
            i = 1
        elif segs and segs[0] == "self":
            out = list(cur)
            i = 1
        elif segs and segs[0] == "super":
            out = list(cur)
            while i < len(segs) and segs[i] == "super":
                out = out[:-1] if len(out) > 1 else out
                i += 1
        return "::".join(out + segs[i:])

    @staticmethod
    def _child_mods(node: Node, src: bytes) -> frozenset[str]:
        """Names of the modules declared (``mod x;`` / ``mod x { … }``) beside a use item:
        a 2018-edition ``use x::Y`` starting with one of them is relative to this module."""
        scope = node.parent
        names = set()
        for c in scope.named_children if scope is not None else ():
            if c.type == "mod_item":
                names.add(text(c.child_by_field_name("name"), src))
        return frozenset(names)

    def imports(self, nodes: list[Node], src: bytes, module: str, relpath: str) -> list[ImportRef]:
        out: list[ImportRef] = []
        for node in nodes:
            here = self._scope_module(node, module, src)
            arg = node.child_by_field_name("argument")
            if arg is None:
                continue
            refs: list[ImportRef] = []
            self._use(arg, "", here, src, node.start_point[0] + 1, refs)
            local = self._child_mods(node, src)
            for r in refs:
                first = r.module.split("::", 1)[0] if r.module else r.name
                if first in local:
                    mod = f"{here}::{r.module}" if r.module else here
                    r = ImportRef(module=mod, name=r.name if r.module else r.name, alias=r.alias, line=r.line)
                out.append(r)
        return out

    def _use(self, n: Node, prefix: str, here: str, src: bytes, line: int, out: list[ImportRef]) -> None:
        def join(a: str, b: str) -> str:
            return f"{a}::{b}" if a and b else (a or b)

        t = n.type
        if t in ("scoped_identifier", "identifier", "crate", "self", "super"):
            full = self._absolute(join(prefix, re.sub(r"\s+", "", text(n, src))), here)
            if t == "self" and prefix:  # use a::b::{self} binds b
                full = self._absolute(prefix, here)
            mod, _, name = full.rpartition("::")
            out.append(ImportRef(module=mod, name=name, line=line) if mod else ImportRef(module=name, line=line))
        elif t == "use_as_clause":
            full = self._absolute(join(prefix, re.sub(r"\s+", "", text(n.child_by_field_name("path"), src))), here)
            mod, _, name = full.rpartition("::")
            alias = text(n.child_by_field_name("alias"), src)
            if mod:
                out.append(ImportRef(module=mod, name=name, alias=alias if alias != name else "", line=line))
            else:
                out.append(ImportRef(module=name, alias=alias, line=line))
        elif t == "use_wildcard":
            path = next((c for c in n.named_children), None)
            full = self._absolute(join(prefix, re.sub(r"\s+", "", text(path, src)) if path is not None else ""), here)
            out.append(ImportRef(module=full, name="*", line=line))
        elif t == "scoped_use_list":
            path = n.child_by_field_name("path")
            lst = n.child_by_field_name("list")
            newp = join(prefix, re.sub(r"\s+", "", text(path, src)) if path is not None else "")
            if lst is not None:
                self._use(lst, newp, here, src, line, out)
        elif t == "use_list":
            for c in n.named_children:
                self._use(c, prefix, here, src, line, out)

    # -- receiver hints ----------------------------------------------------------------
    @staticmethod
    def _structs(root: Node, src: bytes) -> dict[str, dict[str, str]]:
        """Struct name → {field: type} for the structs declared in this file (first wins)."""
        out: dict[str, dict[str, str]] = {}
        stack = [root]
        while stack:
            n = stack.pop()
            if n.type == "struct_item":
                name = text(n.child_by_field_name("name"), src)
                body = n.child_by_field_name("body")
                fields: dict[str, str] = {}
                for f in body.named_children if body is not None else ():
                    if f.type == "field_declaration":
                        typ = _type_of(f.child_by_field_name("type"), src)
                        if typ:
                            fields[text(f.child_by_field_name("name"), src)] = typ
                out.setdefault(name, fields)
            elif n.type in ("source_file", "declaration_list", "mod_item"):
                stack.extend(reversed(n.named_children))
        return out

    def _struct_fields(self, root: Node, type_name: str, src: bytes) -> dict[str, str]:
        return per_file(src, "rust.structs", lambda: self._structs(root, src)).get(type_name, {})

    def _value_type(self, val: Node | None, src: bytes) -> str:
        while val is not None and val.type in ("reference_expression", "try_expression", "parenthesized_expression"):
            kids = [c for c in val.named_children if c.type != "mutable_specifier"]
            val = kids[0] if kids else None
        if val is None:
            return ""
        if val.type == "struct_expression":
            return _type_of(val.child_by_field_name("name"), src)
        if val.type == "call_expression":
            fn = val.child_by_field_name("function")
            if fn is not None and fn.type == "scoped_identifier":
                name = text(fn.child_by_field_name("name"), src)
                path = fn.child_by_field_name("path")
                if name in _CTORS and path is not None:
                    p = _norm(path, src)
                    return p if p != "Self" else ""
        return ""

    def receiver_hints(self, unit: Node, src: bytes) -> dict[str, str]:
        if unit.type != "function_item":
            return {}
        hints: dict[str, str] = {}
        conflicts: set[str] = set()

        def put(var: str, typ: str) -> None:
            if not var or var in conflicts:
                return
            if not typ or not _TYPE.match(typ) or typ == "Self":
                if var in hints:
                    conflicts.add(var)
                    del hints[var]
                return
            if var in hints and hints[var] != typ:
                conflicts.add(var)
                del hints[var]
                return
            hints[var] = typ

        impl = _impl_of(unit)
        if impl is not None:
            root = impl
            while root.parent is not None:
                root = root.parent
            self_type = _type_of(impl.child_by_field_name("type"), src)
            for fname, ftyp in self._struct_fields(root, self_type, src).items():
                put(f"self.{fname}", ftyp)
        params = unit.child_by_field_name("parameters")
        for p in params.named_children if params is not None else ():
            if p.type == "parameter":
                pat = p.child_by_field_name("pattern")
                if pat is not None and pat.type == "identifier":
                    put(text(pat, src), _type_of(p.child_by_field_name("type"), src))
        body = unit.child_by_field_name("body")
        stack = [body] if body is not None else []
        while stack:
            n = stack.pop()
            if n.type == "let_declaration":
                pat = n.child_by_field_name("pattern")
                if pat is not None and pat.type == "identifier":
                    typ = _type_of(n.child_by_field_name("type"), src)
                    put(text(pat, src), typ or self._value_type(n.child_by_field_name("value"), src))
            for c in reversed(n.named_children):
                if c.type not in _SCOPES:
                    stack.append(c)
        return hints
