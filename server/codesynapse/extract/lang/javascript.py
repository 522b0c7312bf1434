"""JavaScript (and the shared ECMAScript behaviour TypeScript builds on).

Module qnames are module-style, the way the package is imported: the ``name`` of the nearest
``package.json`` above the file (one without a ``name`` is passed over) plus the file's path
relative to the package's source root, without the extension; the source root is the
package's ``src/`` folder for files under it, else the package folder; an ``index`` file names
its folder. So ``packages/query-core/src/queryObserver.ts`` of ``@tanstack/query-core`` is
``@tanstack/query-core/queryObserver``, its ``src/index.ts`` is ``@tanstack/query-core`` and
``rxjs``'s ``src/internal/Observable.ts`` is ``rxjs/internal/Observable``. A file under no
named ``package.json`` keeps its repository path without the extension (``src/util``;
``src/lib/index.js`` → ``src/lib``). Relative specifiers (``./lib``, ``../lib/index.js``) are
resolved to the module of the file they reach; bare specifiers (``react``, ``node:fs``,
``@tanstack/query-core``) stay as written, so a package of the same repository imported by
its name lands on its ``index`` module. A ``package.json`` is read once per process (renaming a
package needs a fresh index).

Imports (ES modules and CommonJS) become ImportRefs whose ``binding`` is the local name:

- ``import x from './m'`` → (``src/m``, ``default``, alias ``x``);
- ``import * as m from './m'`` / ``const m = require('./m')`` → (``src/m``, alias ``m``);
- ``import {a, b as c}`` / ``const {a, b: c} = require(…)`` → one ref per name;
- ``export {a} from './m'`` / ``export * from './m'`` are re-exports, so they are bindings of
  the exporting module and the resolver follows them (an ``index`` that re-exports works);
- ``export default Foo`` / ``export default class Foo`` / ``module.exports = Foo`` bind
  ``default`` in the exporting module to ``Foo`` (a ref to the file's own module), which is how
  ``import Foo from './foo'`` reaches the class.

Test blocks: ``it(...)`` / ``test(...)`` / ``describe(...)`` calls in ``*.test.*``,
``*.spec.*`` or ``__tests__/`` files become ``test`` symbols named by their title; calls in
the callback are attributed to them.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import threading
from functools import lru_cache

from tree_sitter import Node

from codesynapse.extract.hooks import LanguageHooks, squash, text
from codesynapse.extract.lang._filecache import per_file
from codesynapse.extract.model import RETURN_HINT, ImportRef, return_hint

_EXTS = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts")
_CONST = re.compile(r"^[A-Z][A-Z0-9_]*$")
_TYPE = re.compile(r"^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$")
_TEST_FILE = re.compile(r"(\.(test|spec)\.[cm]?[jt]sx?$)|(^|/)__tests__/")
TEST_FNS = frozenset({"it", "test", "describe", "suite", "context", "specify"})
_FUNC_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})
_SCOPES = frozenset({
    "function_declaration", "generator_function_declaration", "function_expression", "function",
    "arrow_function", "method_definition", "class_declaration", "class", "abstract_class_declaration",
    "generator_function",
})
_FUNCTION_LIKE = frozenset({"arrow_function", "function_expression", "function", "generator_function"})


def strip_ext(path: str) -> str:
    for ext in _EXTS:
        if path.endswith(ext):
            path = path[: -len(ext)]
            break
    if path.endswith(".d"):  # foo.d.ts
        path = path[:-2]
    return path


def module_of_path(path: str) -> str:
    path = strip_ext(path)
    if path.endswith("/index"):
        return path[: -len("/index")]
    return path


@lru_cache(maxsize=4096)
def _package_name(directory: str) -> str | None:
    """The ``name`` of ``directory/package.json``, or None (no file, no name, not JSON)."""
    try:
        with open(os.path.join(directory, "package.json"), encoding="utf-8", errors="replace") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    name = data.get("name") if isinstance(data, dict) else None
    return name.strip() if isinstance(name, str) and name.strip() else None


def package_module(root: str, relpath: str) -> str:
    """The module-style qname of the file ``relpath`` under ``root`` (see the module doc)."""
    if root:
        d = posixpath.dirname(relpath)
        parts = d.split("/") if d else []
        for i in range(len(parts), -1, -1):
            name = _package_name(os.path.join(root, *parts[:i]))
            if name is None:
                continue
            rest = [*parts[i:], strip_ext(posixpath.basename(relpath))]
            if rest[0] == "src":  # the source root ('../src' from a test names the package too)
                rest = rest[1:]
            if rest and rest[-1] == "index":
                rest = rest[:-1]
            return "/".join([name, *rest])
    return module_of_path(relpath) or relpath


# the root of the file being extracted on this thread (module_name is asked first), so
# relative import specifiers resolve to module-style names
_current = threading.local()


def string_value(node: Node | None, src: bytes) -> str:
    if node is None:
        return ""
    for c in node.named_children:
        if c.type == "string_fragment":
            return text(c, src)
    raw = text(node, src)
    return raw[1:-1] if len(raw) >= 2 and raw[0] in "'\"`" else raw


def _norm(node: Node | None, src: bytes, depth: int = 0) -> str:
    """``a.b.c`` for member chains; calls in the receiver become ``()``, ``new T()`` becomes
    ``T()``, ``super.m`` becomes ``super().m``, other expressions ``?``."""
    if node is None or depth > 16:
        return "?"
    t = node.type
    if t in ("identifier", "property_identifier", "private_property_identifier", "type_identifier",
             "shorthand_property_identifier"):
        return text(node, src)
    if t == "this":
        return "this"
    if t == "super":
        return "super()"
    if t == "member_expression":
        obj = node.child_by_field_name("object")
        prop = node.child_by_field_name("property")
        return f"{_norm(obj, src, depth + 1)}.{text(prop, src)}"
    if t == "call_expression":
        return f"{_norm(node.child_by_field_name('function'), src, depth + 1)}()"
    if t == "new_expression":
        return f"{_norm(node.child_by_field_name('constructor'), src, depth + 1)}()"
    if t == "subscript_expression":
        return f"{_norm(node.child_by_field_name('object'), src, depth + 1)}[]"
    if t in ("parenthesized_expression", "non_null_expression", "as_expression", "satisfies_expression",
             "type_assertion"):
        kids = [c for c in node.named_children if c.type not in ("type_arguments",)]
        return _norm(kids[0], src, depth + 1) if kids else "?"
    if t == "generic_type":  # a base type: Store<T> → Store
        return _norm(node.child_by_field_name("name") or (node.named_children[0] if node.named_children else None),
                     src, depth + 1)
    if t in ("nested_identifier", "nested_type_identifier"):
        return re.sub(r"\s+", "", text(node, src))
    return "?"


def type_name(node: Node | None, src: bytes) -> str:
    """A type annotation's simple nominal type (``Repo``, ``ns.Repo``, ``Map`` of ``Map<K, V>``),
    or "" for unions, arrays, literals and the like."""
    if node is None:
        return ""
    if node.type == "type_annotation":
        kids = node.named_children
        return type_name(kids[0], src) if kids else ""
    if node.type in ("type_identifier", "identifier"):
        return text(node, src)
    if node.type == "nested_type_identifier":
        return re.sub(r"\s+", "", text(node, src))
    if node.type == "generic_type":
        return type_name(node.child_by_field_name("name") or (node.named_children[0] if node.named_children else None), src)
    return ""


def _ctor_name(node: Node | None, src: bytes) -> str:
    """``new T(...)`` / ``new ns.T<X>(...)`` → the constructor as written."""
    if node is None or node.type != "new_expression":
        return ""
    c = node.child_by_field_name("constructor")
    s = _norm(c, src)
    return s if _TYPE.match(s) else ""


def _commonjs_exports(src: bytes) -> frozenset[str]:
    s = src.decode("utf-8", "replace")
    names = set(re.findall(r"\bexports\.([A-Za-z_$][\w$]*)\s*=", s))
    names.update(re.findall(r"\bmodule\.exports\s*=\s*([A-Za-z_$][\w$]*)\s*;?\s*$", s, re.M))
    for body in re.findall(r"\bmodule\.exports\s*=\s*\{([^}]*)\}", s):
        names.update(re.findall(r"(?:^|,)\s*([A-Za-z_$][\w$]*)", body))
    return frozenset(names)


_BINDING_NAMES = frozenset({"identifier", "shorthand_property_identifier_pattern"})


def _bound_names(fn: Node, src: bytes) -> set[str]:
    """Every name a function (and the functions inside it) binds: parameters, variables,
    destructured names, function and class declarations, catch parameters; over-approximated,
    so a name in doubt counts as bound and nothing is guessed through it."""
    out: set[str] = set()
    stack = [fn]
    while stack:
        n = stack.pop()
        t = n.type
        target = None
        if t in ("required_parameter", "optional_parameter"):
            target = n.child_by_field_name("pattern")
        elif t in ("variable_declarator", "function_declaration", "generator_function_declaration",
                   "class_declaration", "abstract_class_declaration"):
            target = n.child_by_field_name("name")
        elif t in ("catch_clause", "arrow_function"):
            target = n.child_by_field_name("parameter")
        elif t == "formal_parameters":
            for c in n.named_children:
                if c.type == "identifier":
                    out.add(text(c, src))
        if target is not None:
            sub = [target]
            while sub:
                x = sub.pop()
                if x.type in _BINDING_NAMES:
                    out.add(text(x, src))
                elif x.type not in ("type_annotation",):
                    sub.extend(x.named_children)
        stack.extend(n.named_children)
    return out


def _call_return_hint(call: Node, src: bytes, h: _Hints) -> str:
    """``const x = f()`` / ``this.m()`` / ``obj.m()``: a return hint, so the resolver types
    ``x`` by the return type the called function declares (``function f(): Foo``)."""
    if call.type != "call_expression":
        return ""
    fn = call.child_by_field_name("function")
    if fn is None or fn.type not in ("identifier", "member_expression"):
        return ""
    return _result_hint(_norm(fn, src), h.hints, lambda: h.conflicts | h.bound(src))


def _result_hint(callee: str, hints: dict[str, str], bound) -> str:
    """The return hint of calling ``callee``: its receiver must be ``this``, a hinted name (a
    type, not another return hint), or a name no parameter or local of the function or of
    those around it binds (an import, a module-level name); else none."""
    if "?" in callee or "()" in callee or "[]" in callee:
        return ""
    head = callee.split(".", 1)[0]
    recv = callee.rsplit(".", 1)[0] if "." in callee else ""
    inner = ""
    if recv and recv in hints:
        inner = hints[recv]
        if inner.startswith(RETURN_HINT):
            return ""
    elif head != "this" and (head in hints or head in bound()):
        return ""
    return return_hint(callee, inner)


def _scope_names(fn: Node | None, src: bytes) -> set[str]:
    """The names bound in ``fn`` and in every function around it."""
    out: set[str] = set()
    n = fn
    while n is not None:
        if n is fn or n.type in _SCOPES:
            out |= _bound_names(n, src)
        n = n.parent
    return out


class _Hints:
    def __init__(self) -> None:
        self.hints: dict[str, str] = {}
        self.conflicts: set[str] = set()
        # names declared with a type annotation (TypeScript): every later assignment is checked
        # against that type, so an assignment of an unknown value does not unbind them
        self.declared: set[str] = set()
        self.scope: Node | None = None  # the function whose names return hints must not go through
        self._bound: set[str] | None = None

    def bound(self, src: bytes) -> set[str]:
        if self._bound is None:
            self._bound = _scope_names(self.scope, src) if self.scope is not None else set()
        return self._bound

    def put(self, var: str, typ: str) -> None:
        if not var or var in self.conflicts:
            return
        if not typ or not (_TYPE.match(typ) or typ.startswith(RETURN_HINT)):
            return
        if var in self.hints and self.hints[var] != typ:
            self.conflicts.add(var)
            del self.hints[var]
            return
        self.hints[var] = typ

    def kill(self, var: str) -> None:
        self.conflicts.add(var)
        self.hints.pop(var, None)


class JavaScriptHooks(LanguageHooks):
    sep = "."
    comment_types = frozenset({"comment"})

    # -- naming ----------------------------------------------------------------------
    def module_name(self, relpath: str, root: str) -> str:
        _current.file = (root, relpath)
        return package_module(root, relpath)

    def resolve_specifier(self, spec: str, relpath: str) -> str:
        if spec.startswith("./") or spec.startswith("../") or spec in (".", ".."):
            joined = posixpath.normpath(posixpath.join(posixpath.dirname(relpath), spec))
            if joined in (".", ""):
                return ""
            if joined.startswith("../"):  # outside the tree: a module no file has
                return module_of_path(joined)
            root, current = getattr(_current, "file", ("", ""))
            return package_module(root if current == relpath else "", joined)
        return spec

    # -- kinds ---------------------------------------------------------------------------
    def refine_kind(self, kind: str, node: Node, parent_kind: str) -> str:
        if kind == "function" and parent_kind in ("class", "interface"):
            return "method"
        return kind

    def constant_ok(self, name: str, node: Node) -> bool:
        if node.type == "variable_declarator":  # ``const provider = { get() {…} }``, ``export const x = …``
            return self._object_of_methods(node) or self._exported_value(node)
        return bool(_CONST.match(name)) and not self._declares_function(node) and \
            not any(self._object_of_methods(d) for d in node.named_children if d.type == "variable_declarator")

    @staticmethod
    def _exported_value(declarator: Node) -> bool:
        """An exported module-level ``const`` whose value is no function (functions are
        captured as functions)."""
        decl = declarator.parent
        if decl is None or decl.type != "lexical_declaration" or not decl.children \
                or decl.children[0].type != "const":
            return False
        if decl.parent is None or decl.parent.type != "export_statement":
            return False
        v = declarator.child_by_field_name("value")
        while v is not None and v.type == "parenthesized_expression" and v.named_children:
            v = v.named_children[0]
        return v is not None and v.type not in _FUNC_VALUES and v.type != "arrow_function"

    @staticmethod
    def _object_of_methods(declarator: Node) -> bool:
        """A ``const`` declarator whose value is an object literal with at least one method:
        its methods are qualified by it (the declarator is kept as a constant)."""
        decl = declarator.parent
        if decl is None or decl.type != "lexical_declaration" or not decl.children \
                or decl.children[0].type != "const":
            return False
        v = declarator.child_by_field_name("value")
        return v is not None and v.type == "object" and \
            any(c.type == "method_definition" for c in v.named_children)

    @staticmethod
    def _declares_function(decl: Node) -> bool:
        for d in decl.named_children:
            if d.type == "variable_declarator":
                v = d.child_by_field_name("value")
                if v is not None and v.type in _FUNC_VALUES:
                    return True
        return False

    def is_test(self, name: str, kind: str, relpath: str, node: Node, src: bytes, parent: str) -> bool:
        return kind == "test" and bool(_TEST_FILE.search(relpath))

    def exported(self, name: str, node: Node, src: bytes) -> bool:
        p = node
        while p is not None and p.type != "program":
            if p.type == "export_statement":
                return True
            if p.type in ("class_body", "interface_body", "object_type"):
                return not name.startswith(("#", "_"))
            p = p.parent
        # CommonJS: module.exports = { name } / module.exports = name / exports.name = …
        if not per_file(src, "js.has_exports", lambda: b"exports" in src):  # once a file, not once a definition
            return False
        return name in per_file(src, "js.cjs", lambda: _commonjs_exports(src))

    # -- bodies, signatures, summaries -----------------------------------------------
    @staticmethod
    def _callback(node: Node) -> Node | None:
        args = node.child_by_field_name("arguments")
        if args is None:
            return None
        for a in args.named_children:
            if a.type in _FUNCTION_LIKE:
                return a
        return None

    def body(self, node: Node) -> Node | None:
        t = node.type
        if t == "variable_declarator":
            v = node.child_by_field_name("value")
            return v.child_by_field_name("body") if v is not None and v.type in _FUNC_VALUES else None
        if t in ("public_field_definition", "field_definition"):
            v = node.child_by_field_name("value")
            return v.child_by_field_name("body") if v is not None and v.type in _FUNC_VALUES else None
        if t == "call_expression":  # a test block: the callback's body
            cb = self._callback(node)
            return cb.child_by_field_name("body") if cb is not None else None
        if t in ("lexical_declaration", "variable_declaration"):
            return None
        return node.child_by_field_name("body")

    def signature(self, node: Node, src: bytes) -> str:
        t = node.type
        if t == "call_expression":
            fn = text(node.child_by_field_name("function"), src)
            args = node.child_by_field_name("arguments")
            title = args.named_children[0] if args is not None and args.named_children else None
            return squash(f"{fn}({text(title, src)})") if title is not None else fn
        if t in ("lexical_declaration", "variable_declaration"):  # constant: name and type, never the value
            kw = text(node.children[0], src) if node.children else "const"
            for d in node.named_children:
                if d.type == "variable_declarator":
                    typ = d.child_by_field_name("type")
                    return squash(f"{kw} {text(d.child_by_field_name('name'), src)}{text(typ, src) if typ is not None else ''}")
            return kw
        if t == "variable_declarator" and (self._object_of_methods(node) or self._exported_value(node)):
            # a constant: name and type, never the value
            typ = node.child_by_field_name("type")
            return squash(f"const {text(node.child_by_field_name('name'), src)}{text(typ, src) if typ is not None else ''}")
        if t in ("variable_declarator", "public_field_definition", "field_definition"):
            v = node.child_by_field_name("value")
            body = v.child_by_field_name("body") if v is not None else None
            start = node.start_byte
            if t == "variable_declarator" and node.parent is not None and node.parent.named_children \
                    and node.parent.named_children[0] == node:
                start = node.parent.start_byte
            end = body.start_byte if body is not None else node.end_byte
            sig = src[start:end].decode("utf-8", "replace").rstrip()
            if sig.endswith("=>"):
                sig = sig[:-2]
            return squash(sig.rstrip().rstrip("{").rstrip())
        if t == "type_alias_declaration":
            return squash(text(node, src).split("\n", 1)[0].rstrip(";"))
        return super().signature(node, src)

    def _comment_anchor(self, node: Node) -> Node:
        n = node
        if n.type == "variable_declarator" and n.parent is not None:
            n = n.parent
        if n.type == "call_expression" and n.parent is not None and n.parent.type == "expression_statement":
            n = n.parent
        while n.parent is not None and n.parent.type in ("export_statement",):
            n = n.parent
        return n

    def summary(self, node: Node, src: bytes) -> str:
        """The doc comment above the definition, seen through what may stand between them:
        its decorators (``/** doc */ @Log() run() {}``) and, in TypeScript, the overload
        signatures of the same name above its implementation (the doc comment is written
        once, above the first overload)."""
        anchor = self._comment_anchor(node)
        name_node = node.child_by_field_name("name")
        name = text(name_node, src) if name_node is not None else ""
        while True:
            prev = anchor.prev_sibling
            while prev is not None and prev.type == ";":
                prev = prev.prev_sibling
            if prev is None or prev.end_point[0] < anchor.start_point[0] - 1:
                break
            if prev.type == "decorator" or (name and self._overload_of(prev, src) == name):
                anchor = prev
                continue
            break
        return super().summary(anchor, src)

    @staticmethod
    def _overload_of(node: Node, src: bytes) -> str:
        """The name an overload signature (``function f(a: string): void;``, a class's
        ``f(a: string): void;``, either exported) declares, else ""."""
        if node.type == "export_statement":
            decl = node.child_by_field_name("declaration")
            if decl is None:
                return ""
            node = decl
        if node.type not in ("function_signature", "method_signature"):
            return ""
        n = node.child_by_field_name("name")
        return text(n, src) if n is not None else ""

    # -- calls -------------------------------------------------------------------------
    def callee_text(self, callee: Node, src: bytes) -> str:
        parent = callee.parent
        if callee.type == "identifier" and parent is not None and parent.type == "call_expression":
            name = text(callee, src)
            if name == "require":
                return ""
            if name in TEST_FNS and self._callback(parent) is not None:
                return ""  # the test block itself: a definition, not a call
        if callee.type == "super" and parent is not None and parent.type == "call_expression":
            return ""  # super(...) in a constructor
        s = _norm(callee, src)
        return "" if s == "?" else s

    # -- receiver hints --------------------------------------------------------------
    def _param_hints(self, params: Node | None, src: bytes, h: _Hints, this_too: bool) -> None:
        if params is None:
            return
        for p in params.named_children:
            if p.type not in ("required_parameter", "optional_parameter"):
                continue
            pat = p.child_by_field_name("pattern")
            if pat is None or pat.type != "identifier":
                continue
            typ = type_name(p.child_by_field_name("type"), src)
            name = text(pat, src)
            h.put(name, typ)
            if typ:
                h.declared.add(name)
            if this_too and any(c.type == "accessibility_modifier" or text(c, src) == "readonly" for c in p.children):
                h.put("this." + name, typ)

    def _walk_body(self, body: Node | None, src: bytes, h: _Hints) -> None:
        if body is None:
            return
        stack = [body]
        while stack:
            n = stack.pop()
            t = n.type
            if t == "variable_declarator":
                name = n.child_by_field_name("name")
                if name is not None and name.type == "identifier":
                    var = text(name, src)
                    typ = type_name(n.child_by_field_name("type"), src)
                    val = n.child_by_field_name("value")
                    if typ:
                        h.put(var, typ)
                        h.declared.add(var)
                    elif val is not None and val.type == "new_expression":
                        h.put(var, _ctor_name(val, src))
                    elif val is not None and (ret := _call_return_hint(val, src, h)):
                        h.put(var, ret)  # const x = f(): the return type f declares
                    elif val is not None:
                        h.kill(var)
            elif t == "assignment_expression":
                left = n.child_by_field_name("left")
                right = n.child_by_field_name("right")
                if left is not None and left.type in ("identifier", "member_expression"):
                    var = _norm(left, src)
                    if var in h.declared:
                        pass  # its declared type stands (TypeScript checks the assignment against it)
                    elif right is not None and right.type == "new_expression":
                        h.put(var, _ctor_name(right, src))
                    elif right is not None and (ret := _call_return_hint(right, src, h)):
                        h.put(var, ret)
                    elif var.startswith("this.") or left.type == "identifier":
                        h.kill(var)
            for c in reversed(n.named_children):
                if c.type in _SCOPES and c is not body:
                    # nested functions keep their own locals, but `this.x = new T()` inside an
                    # arrow function still describes the instance
                    if c.type != "arrow_function":
                        continue
                stack.append(c)

    def receiver_hints(self, unit: Node, src: bytes) -> dict[str, str]:
        h = _Hints()
        t = unit.type
        if t in ("class_declaration", "class", "abstract_class_declaration"):
            body = unit.child_by_field_name("body")
            for m in body.named_children if body is not None else ():
                if m.type in ("public_field_definition", "field_definition"):
                    name = m.child_by_field_name("name") or m.child_by_field_name("property")
                    if name is None:
                        continue
                    var = "this." + text(name, src)
                    typ = type_name(m.child_by_field_name("type"), src)
                    val = m.child_by_field_name("value")
                    if typ:
                        h.put(var, typ)
                    elif val is not None and val.type == "new_expression":
                        h.put(var, _ctor_name(val, src))
                elif m.type == "method_definition" and text(m.child_by_field_name("name"), src) == "constructor":
                    self._param_hints(m.child_by_field_name("parameters"), src, h, this_too=True)
                    mh = _Hints()
                    mh.scope = m
                    self._param_hints(m.child_by_field_name("parameters"), src, mh, this_too=True)
                    self._walk_body(m.child_by_field_name("body"), src, mh)
                    for k, v in mh.hints.items():
                        if k.startswith("this."):
                            h.put(k, v)
            return h.hints
        fn = unit
        if t == "variable_declarator" or t in ("public_field_definition", "field_definition"):
            fn = unit.child_by_field_name("value")
        elif t == "call_expression":
            fn = self._callback(unit)
        if fn is None:
            return {}
        self._param_hints(fn.child_by_field_name("parameters"), src, h,
                          this_too=text(fn.child_by_field_name("name"), src) == "constructor")
        h.scope = fn
        self._walk_body(fn.child_by_field_name("body"), src, h)
        return h.hints

    def call_result_hint(self, unit: Node, callee: str, hints: dict[str, str], src: bytes) -> str:
        """The hint of a receiver that is a call's result (``fromEvent(...).pipe(...)``)."""
        fn = unit
        if unit.type in ("variable_declarator", "public_field_definition", "field_definition"):
            fn = unit.child_by_field_name("value")
        elif unit.type == "call_expression":
            fn = self._callback(unit)
        if fn is None or fn.type not in _SCOPES:
            return ""
        return _result_hint(callee, hints, lambda: _scope_names(fn, src))

    # -- imports -----------------------------------------------------------------------
    def imports(self, nodes: list[Node], src: bytes, module: str, relpath: str) -> list[ImportRef]:
        out: list[ImportRef] = []
        for node in nodes:
            line = node.start_point[0] + 1
            t = node.type
            if t == "import_statement":
                mod = self.resolve_specifier(string_value(node.child_by_field_name("source"), src), relpath)
                if not mod:
                    continue
                clause = next((c for c in node.named_children if c.type == "import_clause"), None)
                if clause is None:
                    out.append(ImportRef(module=mod, line=line))
                    continue
                for c in clause.named_children:
                    if c.type == "identifier":
                        out.append(ImportRef(module=mod, name="default", alias=text(c, src), line=line))
                    elif c.type == "namespace_import":
                        ident = next((x for x in c.named_children if x.type == "identifier"), None)
                        out.append(ImportRef(module=mod, alias=text(ident, src), line=line))
                    elif c.type == "named_imports":
                        out.extend(self._specifiers(c, src, mod, line))
            elif t == "export_statement":
                source = node.child_by_field_name("source")
                if source is not None:
                    mod = self.resolve_specifier(string_value(source, src), relpath)
                    if not mod:
                        continue
                    clause = next((c for c in node.named_children if c.type == "export_clause"), None)
                    ns = next((c for c in node.named_children if c.type == "namespace_export"), None)
                    if clause is not None:
                        out.extend(self._specifiers(clause, src, mod, line))
                    elif ns is not None:
                        ident = next((x for x in ns.named_children if x.type in ("identifier", "string")), None)
                        out.append(ImportRef(module=mod, alias=text(ident, src), line=line))
                    else:
                        out.append(ImportRef(module=mod, name="*", line=line))
                    continue
                # export default Foo / export default class Foo / export { a as b }
                if any(c.type == "default" for c in node.children) or b"default" in src[node.start_byte:node.start_byte + 40]:
                    decl = node.child_by_field_name("declaration")
                    val = node.child_by_field_name("value")
                    target = decl if decl is not None else val
                    name = ""
                    if target is not None:
                        if target.type == "identifier":
                            name = text(target, src)
                        else:
                            nn = target.child_by_field_name("name")
                            name = text(nn, src) if nn is not None else ""
                    if name:
                        out.append(ImportRef(module=module, name=name, alias="default", line=line))
                    continue
                clause = next((c for c in node.named_children if c.type == "export_clause"), None)
                if clause is not None:
                    for ref in self._specifiers(clause, src, module, line):
                        if ref.alias:
                            out.append(ref)
            elif t in ("lexical_declaration", "variable_declaration"):
                for d in node.named_children:
                    if d.type != "variable_declarator":
                        continue
                    val = d.child_by_field_name("value")
                    if val is None or val.type != "call_expression" or \
                            text(val.child_by_field_name("function"), src) != "require":
                        continue
                    args = val.child_by_field_name("arguments")
                    arg = args.named_children[0] if args is not None and args.named_children else None
                    if arg is None or arg.type != "string":
                        continue
                    mod = self.resolve_specifier(string_value(arg, src), relpath)
                    name = d.child_by_field_name("name")
                    if not mod or name is None:
                        continue
                    if name.type == "identifier":
                        out.append(ImportRef(module=mod, alias=text(name, src), line=line))
                    elif name.type == "object_pattern":
                        for p in name.named_children:
                            if p.type == "shorthand_property_identifier_pattern":
                                out.append(ImportRef(module=mod, name=text(p, src), line=line))
                            elif p.type == "pair_pattern":
                                k = p.child_by_field_name("key")
                                v = p.child_by_field_name("value")
                                if k is not None and v is not None and v.type == "identifier":
                                    alias = text(v, src)
                                    key = text(k, src)
                                    out.append(ImportRef(module=mod, name=key, alias=alias if alias != key else "",
                                                         line=line))
            elif t == "expression_statement":  # module.exports = Foo
                a = node.named_children[0] if node.named_children else None
                if a is not None and a.type == "assignment_expression":
                    right = a.child_by_field_name("right")
                    if right is not None and right.type == "identifier":
                        out.append(ImportRef(module=module, name=text(right, src), alias="default", line=line))
        return out

    @staticmethod
    def _specifiers(clause: Node, src: bytes, mod: str, line: int) -> list[ImportRef]:
        out = []
        for s in clause.named_children:
            if s.type not in ("import_specifier", "export_specifier"):
                continue
            name = text(s.child_by_field_name("name"), src)
            alias = text(s.child_by_field_name("alias"), src)
            if name:
                out.append(ImportRef(module=mod, name=name, alias=alias if alias and alias != name else "", line=line))
        return out
