"""Python: packages by ``__init__.py``, docstrings, relative imports, constructor hints."""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import PurePosixPath

from tree_sitter import Node

from codesynapse.extract.hooks import LanguageHooks, first_sentence, squash, text
from codesynapse.extract.model import (
    ARGS_UNKNOWN,
    PARAM_HINT,
    RETURN_HINT,
    ImportRef,
    call_args,
    param_hint,
    return_hint,
)

_CONST = re.compile(r"^_*[A-Z][A-Z0-9_]*$")
_HEADER_END = re.compile(r":\s*(#[^\n]*\s*)*$")


def _norm(node: Node, src: bytes, depth: int) -> str:
    t = node.type
    if depth > 12:
        return "?"
    if t == "identifier":
        return text(node, src)
    if t == "attribute":
        obj = node.child_by_field_name("object")
        attr = node.child_by_field_name("attribute")
        return f"{_norm(obj, src, depth + 1) if obj is not None else '?'}.{text(attr, src)}"
    if t == "call":
        fn = node.child_by_field_name("function")
        return f"{_norm(fn, src, depth + 1) if fn is not None else '?'}()"
    if t == "subscript":
        val = node.child_by_field_name("value")
        return f"{_norm(val, src, depth + 1) if val is not None else '?'}[]"
    if t == "parenthesized_expression" and node.named_children:
        return _norm(node.named_children[0], src, depth + 1)
    return "?"


_SKIP = frozenset({"function_definition", "class_definition", "lambda", "decorated_definition"})
# Nodes whose children may be statements (or the parts of one that bind names); the hint walk
# descends only into these, never into expressions.
_STATEMENT_HOLDERS = frozenset({
    "block", "expression_statement", "assignment", "if_statement", "elif_clause", "else_clause", "for_statement",
    "while_statement", "try_statement", "except_clause", "except_group_clause", "finally_clause",
    "with_statement", "with_clause", "match_statement", "case_clause",
})
_OPTIONAL = re.compile(r"^(Optional\[|typing\.Optional\[)(.*)\]$")
_TYPE_NAME = re.compile(r"^[A-Za-z_][\w.]*$")


@lru_cache(maxsize=65536)
def _has_init(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "__init__.py"))


def _string_value(node: Node, src: bytes) -> str:
    raw = text(node, src)
    m = re.match(r"^[rRbBuUfF]*('''|\"\"\"|'|\")", raw)
    if not m:
        return raw
    q = m.group(1)
    body = raw[m.end():]
    if body.endswith(q):
        body = body[: -len(q)]
    return body


_BINDING_PATTERNS = frozenset({"pattern_list", "tuple_pattern", "list_pattern", "list_splat_pattern",
                               "parenthesized_expression", "tuple", "list"})


def _pattern_names(node: Node | None, src: bytes, out: set[str]) -> None:
    if node is None:
        return
    if node.type == "identifier":
        out.add(text(node, src))
    elif node.type in _BINDING_PATTERNS:
        for c in node.named_children:
            _pattern_names(c, src, out)


def _bound_names(unit: Node, src: bytes, with_params: bool = True) -> set[str]:
    """Every name a function binds: its parameters, assignment and loop targets, ``as``
    names, walrus targets, local imports, nested definitions, ``global``/``nonlocal`` names
    (over-approximated: a name in doubt is bound, so nothing is guessed through it).
    ``with_params`` False: the names its body binds (a parameter bound again is among them)."""
    out: set[str] = set()
    params = unit.child_by_field_name("parameters") if with_params else None
    for p in params.named_children if params is not None else ():
        if p.type == "identifier":
            out.add(text(p, src))
        else:
            n = p.child_by_field_name("name")
            if n is None:
                n = next((c for c in p.named_children if c.type == "identifier"), None)
            if n is not None:
                out.add(text(n, src))
    body = unit if unit.type == "module" else unit.child_by_field_name("body")
    stack = list(body.named_children) if body is not None else []
    while stack:
        n = stack.pop()
        t = n.type
        if t in ("function_definition", "class_definition"):
            nm = n.child_by_field_name("name")
            if nm is not None:
                out.add(text(nm, src))
            continue
        if t == "lambda":
            continue
        if t in ("assignment", "augmented_assignment", "for_statement", "for_in_clause"):
            _pattern_names(n.child_by_field_name("left"), src, out)
        elif t == "as_pattern":
            _pattern_names(n.child_by_field_name("alias"), src, out)
            for c in n.named_children:
                if c.type == "as_pattern_target":
                    for x in c.named_children:
                        _pattern_names(x, src, out)
        elif t == "named_expression":
            _pattern_names(n.child_by_field_name("name"), src, out)
        elif t in ("import_statement", "import_from_statement", "global_statement", "nonlocal_statement"):
            for x in n.named_children:
                if x.type == "dotted_name" and x.named_children:
                    out.add(text(x.named_children[0], src))
                elif x.type == "aliased_import":
                    out.add(text(x.child_by_field_name("alias"), src))
                elif x.type == "identifier":
                    out.add(text(x, src))
        stack.extend(n.named_children)
    return out


def _unwrap(st: Node) -> Node | None:
    """The function or class a statement defines (through decorators), else None."""
    if st.type == "decorated_definition":
        st = st.child_by_field_name("definition") or st
    return st if st.type in ("function_definition", "class_definition") else None


def _enclosing_class(node: Node) -> Node | None:
    """The class whose method (or a function nested in one) holds ``node``."""
    n = node.parent
    while n is not None:
        if n.type == "class_definition":
            return n
        n = n.parent
    return None


def _class_path(fdef: Node, src: bytes) -> str:
    """``Outer.Inner`` for a method of a class nested only in classes; else ""."""
    names: list[str] = []
    n = fdef.parent
    while n is not None:
        if n.type == "class_definition":
            names.append(text(n.child_by_field_name("name"), src))
        elif n.type in ("function_definition", "lambda") and names:
            return ""  # a class local to a function: not nameable from elsewhere
        n = n.parent
    return ".".join(reversed(names))


# The marker of a result inferred from an unannotated function's body, appended to its
# signature (``def make(host)  # -> Connection``); index/resolve.py declared_results reads it.
INFERRED_RETURN = "# -> "
# Decorators that leave what calling the function returns as it is.
_TRANSPARENT_DECORATORS = frozenset({
    "staticmethod", "classmethod", "abstractmethod", "abc.abstractmethod", "cache", "lru_cache",
    "functools.cache", "functools.lru_cache", "override", "typing.override",
})


def _inferred_return(fdef: Node, src: bytes) -> str:
    """The class every ``return`` of an unannotated function builds, read from its own body
    only (so the answer changes only with the function's text): ``return Cls(...)``,
    ``return self`` / ``cls(...)`` / ``type(self)(...)`` (``Self``: the function's class), or a
    local assigned only ``Cls(...)``; a bare ``return`` / ``return None`` is allowed beside
    them (Optional). "" when any return is something else, when the function is ``async``, a
    generator or wrapped by a decorator that may change its result, or when it returns nothing."""
    if fdef.child_by_field_name("return_type") is not None:
        return ""  # declared: the annotation speaks
    if fdef.children and fdef.children[0].type == "async":
        return ""
    parent = fdef.parent
    if parent is not None and parent.type == "decorated_definition":
        for dec in parent.named_children:
            if dec.type != "decorator" or not dec.named_children:
                continue
            d = dec.named_children[0]
            if d.type == "call":
                d = d.child_by_field_name("function") or d
            if text(d, src) not in _TRANSPARENT_DECORATORS:
                return ""
    holder = parent if parent is not None and parent.type == "decorated_definition" else fdef
    body_of = holder.parent
    # a method of a class nameable from elsewhere (``Self`` is read as the method's class)
    in_class = body_of is not None and body_of.parent is not None and \
        body_of.parent.type == "class_definition" and _class_path(fdef, src) != ""
    body = fdef.child_by_field_name("body")
    if body is None:
        return ""
    params: set[str] = set()
    _bound_params(fdef, src, params)
    returns: list[Node] = []
    ctor_of: dict[str, set[str]] = {}  # local → classes its plain assignments build ("" other)
    other: set[str] = set()  # names bound some other way (loops, with, walrus, tuples, ...)
    stack = list(body.named_children)
    while stack:
        n = stack.pop()
        t = n.type
        if t in _SKIP:
            if t in ("function_definition", "class_definition"):
                nm = n.child_by_field_name("name")
                if nm is not None:
                    other.add(text(nm, src))
            elif t == "decorated_definition":
                stack.append(n.child_by_field_name("definition") or n)
            continue
        if t in ("yield", "await"):
            return ""
        if t == "return_statement":
            returns.append(n)
        elif t == "assignment":
            left = n.child_by_field_name("left")
            right = n.child_by_field_name("right")
            if left is not None and left.type == "identifier":
                ctor_of.setdefault(text(left, src), set()).add(_ctor_text(right, src))
            else:
                _pattern_names(left, src, other)
        elif t in ("augmented_assignment", "for_statement", "for_in_clause"):
            _pattern_names(n.child_by_field_name("left"), src, other)
        elif t == "as_pattern":
            _pattern_names(n.child_by_field_name("alias"), src, other)
            for c in n.named_children:
                if c.type == "as_pattern_target":
                    for x in c.named_children:
                        _pattern_names(x, src, other)
        elif t == "named_expression":
            _pattern_names(n.child_by_field_name("name"), src, other)
        elif t in ("global_statement", "nonlocal_statement", "import_statement", "import_from_statement",
                   "delete_statement"):
            stack.extend(n.named_children)
            for x in n.named_children:
                if x.type == "identifier":
                    other.add(text(x, src))
                elif x.type == "dotted_name" and x.named_children:
                    other.add(text(x.named_children[0], src))
                elif x.type == "aliased_import":
                    other.add(text(x.child_by_field_name("alias"), src))
            continue
        stack.extend(n.named_children)
    found: set[str] = set()
    for r in returns:
        e = r.named_children[0] if r.named_children else None
        if e is None or e.type == "none":
            continue
        if e.type == "identifier":
            v = text(e, src)
            if v == "self" and in_class and "self" not in other and "self" not in ctor_of:
                found.add("Self")
                continue
            if v in params or v in other or len(ctor_of.get(v, ())) != 1:
                return ""
            t = next(iter(ctor_of[v]))
        else:
            t = _ctor_text(e, src)
        if t in ("cls", "type(self)", "self.__class__"):
            if not in_class:
                return ""
            t = "Self"
        if not t or not _TYPE_NAME.match(t):
            return ""
        head = t.split(".", 1)[0]
        if t != "Self" and (head in params or head in other or head in ctor_of):
            return ""  # ``def make(Kind): return Kind()``: a parameter or local, not the module's class
        found.add(t)
        if len(found) > 1:
            return ""
    return next(iter(found)) if found else ""


def _ctor_text(node: Node | None, src: bytes) -> str:
    """``Cls`` of ``Cls(...)`` / ``mod.Cls(...)`` (a capitalized callee), ``cls`` /
    ``type(self)`` / ``self.__class__`` of such a call; else ""."""
    if node is None or node.type != "call":
        return ""
    f = node.child_by_field_name("function")
    if f is None:
        return ""
    ftext = text(f, src) if f.type in ("identifier", "attribute", "call") else ""
    if ftext in ("cls", "type(self)", "self.__class__"):
        return ftext
    if f.type in ("identifier", "attribute") and ftext.rsplit(".", 1)[-1][:1].isupper():
        return ftext
    return ""


def _bound_params(fdef: Node, src: bytes, out: set[str]) -> None:
    params = fdef.child_by_field_name("parameters")
    for p in params.named_children if params is not None else ():
        if p.type == "identifier":
            out.add(text(p, src))
            continue
        n = p.child_by_field_name("name")
        if n is None:
            n = next((c for c in p.named_children if c.type == "identifier"), None)
        if n is not None:
            out.add(text(n, src))


def _param_hints(fdef: Node, src: bytes) -> dict[str, str]:
    """Parameter hints (extract/model.py ``param_hint``) of the untyped parameters of ``fdef``
    that its body never binds again: a plain parameter, or one whose default is ``None``.
    None for a function nested in another one or in a lambda (a closure is handed around as a
    value), one wrapped by a decorator that may call it some other way, and a dunder method
    (the runtime calls those; ``__init__`` gets the arguments of calls of its class, which
    are not calls of it)."""
    out: dict[str, str] = {}
    name_node = fdef.child_by_field_name("name")
    fname = text(name_node, src) if name_node is not None else ""
    if not fname or (fname.startswith("__") and fname.endswith("__")):
        return out
    holder = fdef
    decorators: set[str] = set()
    if fdef.parent is not None and fdef.parent.type == "decorated_definition":
        holder = fdef.parent
        for dec in holder.named_children:
            if dec.type != "decorator" or not dec.named_children:
                continue
            d = dec.named_children[0]
            if d.type == "call":
                d = d.child_by_field_name("function") or d
            decorators.add(text(d, src))
        if decorators - _TRANSPARENT_DECORATORS:
            return out
    n = holder.parent
    in_class = n is not None and n.type == "block" and n.parent is not None and n.parent.type == "class_definition"
    while n is not None:
        if n.type in ("function_definition", "lambda"):
            return out
        n = n.parent
    if in_class and _class_path(fdef, src) == "":
        return out
    if not in_class or "staticmethod" in decorators:
        mode = "f"
    elif "classmethod" in decorators:
        mode = "c"
    else:
        mode = "m"
    params = fdef.child_by_field_name("parameters")
    if params is None:
        return out
    rebound = _bound_names(fdef, src, with_params=False)
    pos = 0
    skip_first = mode in ("m", "c")
    keyword_only = False
    for p in params.named_children:
        t = p.type
        if t in ("list_splat_pattern", "keyword_separator"):
            keyword_only = True
            continue
        if t in ("dictionary_splat_pattern", "positional_separator", "comment"):
            continue
        if skip_first:
            skip_first = False
            continue
        name = ""
        if t == "identifier":
            name = text(p, src)
        elif t == "default_parameter":
            val = p.child_by_field_name("value")
            nm = p.child_by_field_name("name")
            if val is not None and val.type == "none" and nm is not None and nm.type == "identifier":
                name = text(nm, src)
        at = -1 if keyword_only else pos
        if not keyword_only:
            pos += 1
        if name and name not in rebound and name not in ("self", "cls"):
            h = param_hint(at, name, mode, fname)
            if h:
                out[name] = h
    return out


def _arg_entry(e: Node, src: bytes, lookup, bound) -> str:
    """A ``CallSite.args`` entry for argument ``e`` (extract/model.py ``call_args``)."""
    t = e.type
    if t == "none":
        return "-"
    if t == "identifier" and text(e, src) == "self":
        return "self"
    if t in ("identifier", "attribute"):
        h = lookup(_norm(e, src, 0))
        if h and (_TYPE_NAME.match(h) or h.startswith(RETURN_HINT)) and h not in ("cls", "self"):
            return h
        # a function handed on as a value (``submit(f, x)``, ``Thread(target=self.run)``): it
        # may be called elsewhere with anything, so its parameters are not typed (``&name``)
        name = text(e, src) if t == "identifier" else text(e.child_by_field_name("attribute"), src)
        if t == "attribute" or name not in bound():
            return "&" + name if name.isidentifier() else "?"
        return "?"
    if t == "call":
        f = e.child_by_field_name("function")
        if f is not None and f.type in ("identifier", "attribute"):
            ftext = text(f, src)
            if _TYPE_NAME.match(ftext) and ftext.rsplit(".", 1)[-1][:1].isupper() \
                    and ftext.split(".", 1)[0] not in bound():
                return ftext
    return "?"


class PythonHooks(LanguageHooks):
    sep = "."
    comment_types = frozenset({"comment"})

    traces_file_facts = True
    comment_lines = (b"#",)
    comment_marks = (b"#",)
    offside_rule = True

    def __init__(self) -> None:
        self._file_tables: tuple[bytes, dict, Node] | None = None
        self._bound_cache: tuple[bytes, int, int, set[str]] | None = None
        # while tracing: one set of looked-up names per returns computation in progress, the
        # outermost the unit's (a name looked up deep in a chain counts for every level)
        self._trace: list[set[str]] | None = None

    def trace_begin(self) -> None:
        self._trace = [set()]

    def trace_end(self) -> frozenset[str]:
        names = frozenset(self._trace[0]) if self._trace else frozenset()
        self._trace = None
        return names

    def _consult(self, names) -> None:
        if self._trace is not None:
            for s in self._trace:
                s.update(names)

    def table_names(self, node: Node, src: bytes) -> tuple[str, ...]:
        d = _unwrap(node)
        return (text(d.child_by_field_name("name"), src),) if d is not None else ()

    def module_name(self, relpath: str, root: str) -> str:
        p = PurePosixPath(relpath)
        parts = list(p.parent.parts)
        stem = p.stem
        names = [] if stem == "__init__" else [stem]
        # climb while the directory is a package
        while parts and _has_init(os.path.join(root, *parts)):
            names.insert(0, parts.pop())
        if not names:  # __init__.py of a directory that is not itself a package
            names = [p.parent.name or stem]
        return ".".join(names)

    def is_package(self, relpath: str) -> bool:
        return relpath.endswith("__init__.py")

    def refine_kind(self, kind: str, node: Node, parent_kind: str) -> str:
        if kind == "function" and parent_kind == "class":
            return "method"
        return kind

    def constant_ok(self, name: str, node: Node) -> bool:
        return bool(_CONST.match(name))

    def signature(self, node: Node, src: bytes) -> str:
        if node.type == "assignment":  # constant: the name (and annotation), never the value
            left = node.child_by_field_name("left")
            typ = node.child_by_field_name("type")
            return text(left, src) + (f": {text(typ, src)}" if typ is not None else "")
        body = node.child_by_field_name("body")
        end = body.start_byte if body is not None else node.end_byte
        sig = src[node.start_byte:end].decode("utf-8", "replace")
        sig = _HEADER_END.sub("", sig)
        sig = squash(sig)
        if node.type == "function_definition" and not sig.endswith("…"):
            inferred = _inferred_return(node, src)
            if inferred:
                # what every return builds, read from the body alone (the resolver reads it as a
                # declared result, so a caller in another file can type ``h = f(); h.m()``)
                sig = f"{sig}  {INFERRED_RETURN}{inferred}"
        return sig

    def callee_text(self, callee: Node, src: bytes) -> str:
        """``a.b.c`` for plain chains; calls in the receiver become ``()``, other
        expressions ``?`` (so ``Foo(x).run`` → ``Foo().run``, ``xs[0].f`` → ``xs[].f``)."""
        return _norm(callee, src, 0)

    def _docstring(self, body: Node | None, src: bytes) -> str:
        if body is None:
            return ""
        for child in body.named_children:
            if child.type == "comment":
                continue
            if child.type == "string":
                return first_sentence(_string_value(child, src))
            if child.type == "expression_statement" and child.named_children and \
                    child.named_children[0].type == "string":
                return first_sentence(_string_value(child.named_children[0], src))
            return ""
        return ""

    def summary(self, node: Node, src: bytes) -> str:
        if node.type in ("function_definition", "class_definition"):
            doc = self._docstring(node.child_by_field_name("body"), src)
            if doc:
                return doc
        target = node.parent if node.parent is not None and node.parent.type == "decorated_definition" else node
        return super().summary(target, src)

    def summary_module(self, root: Node, src: bytes) -> str:
        return self._docstring(root, src)

    def is_test(self, name: str, kind: str, relpath: str, node: Node, src: bytes, parent: str) -> bool:
        if kind not in ("function", "method") or not name.startswith("test"):
            return False
        base = relpath.rsplit("/", 1)[-1]
        return (
            base.startswith("test_") or base.endswith("_test.py") or base == "tests.py"
            or parent.startswith("Test") or "/tests/" in f"/{relpath}" or "/test/" in f"/{relpath}"
        )

    def exported(self, name: str, node: Node, src: bytes) -> bool:
        return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))

    def imports(self, nodes: list[Node], src: bytes, module: str, relpath: str) -> list[ImportRef]:
        out: list[ImportRef] = []
        package = module if self.is_package(relpath) else module.rpartition(".")[0]
        for node in nodes:
            line = node.start_point[0] + 1
            if node.type == "import_statement":
                for child in node.named_children:
                    if child.type == "dotted_name":
                        out.append(ImportRef(module=text(child, src), line=line))
                    elif child.type == "aliased_import":
                        out.append(ImportRef(
                            module=text(child.child_by_field_name("name"), src),
                            alias=text(child.child_by_field_name("alias"), src), line=line))
            elif node.type == "import_from_statement":
                mod_node = node.child_by_field_name("module_name")
                mod = ""
                if mod_node is not None and mod_node.type == "relative_import":
                    dots = 0
                    rel = ""
                    for c in mod_node.children:
                        if c.type == "import_prefix":
                            dots = len(text(c, src).strip())
                        elif c.type == "dotted_name":
                            rel = text(c, src)
                    base = package.split(".") if package else []
                    if dots > 1:
                        base = base[: len(base) - (dots - 1)] if dots - 1 <= len(base) else []
                    mod = ".".join([*base, rel] if rel else base)
                elif mod_node is not None:
                    mod = text(mod_node, src)
                for child in node.named_children:
                    if child == mod_node or child.start_byte == (mod_node.start_byte if mod_node else -1):
                        continue
                    if child.type == "wildcard_import":
                        out.append(ImportRef(module=mod, name="*", line=line))
                    elif child.type == "dotted_name":
                        out.append(ImportRef(module=mod, name=text(child, src), line=line))
                    elif child.type == "aliased_import":
                        out.append(ImportRef(
                            module=mod, name=text(child.child_by_field_name("name"), src),
                            alias=text(child.child_by_field_name("alias"), src), line=line))
        return out

    def receiver_hints(self, unit: Node, src: bytes) -> dict[str, str]:
        """Receiver → class (as written) for one unit: ``x = Foo(...)``, ``x: Foo``,
        ``def f(x: Foo)``, ``with Foo() as x``, ``self.x = Foo()``, ``self.x = x`` (a typed
        parameter or local); for a class, its annotated attributes. A name bound to two
        different classes, or also to something else, gets no hint."""
        if unit.type == "class_definition":
            return self._class_hints(unit, src)
        hints: dict[str, str] = {}
        conflicts: set[str] = set()

        def put(var: str, typ: str) -> None:
            typ = typ.strip().strip("'\"")
            if not var or not typ or var in conflicts:
                return
            typ = _OPTIONAL.sub(r"\2", typ)
            if not _TYPE_NAME.match(typ) and not typ.startswith((RETURN_HINT, PARAM_HINT)):
                return
            if var in hints and hints[var] != typ:
                drop(var)
                return
            hints[var] = typ

        def drop(var: str) -> None:
            conflicts.add(var)
            hints.pop(var, None)

        if unit.type == "function_definition":
            # untyped parameters: typed by what every call site passes (the resolver decides)
            hints.update(_param_hints(unit, src))
        params = unit.child_by_field_name("parameters")
        if params is not None:
            for p in params.named_children:
                if p.type in ("typed_parameter", "typed_default_parameter"):
                    t = p.child_by_field_name("type")
                    name_node = p.child_by_field_name("name")
                    if name_node is None:
                        name_node = next((c for c in p.named_children if c.type == "identifier"), None)
                    put(text(name_node, src), text(t, src))
        # a module (module-level code such as ``if __name__ == "__main__":``) is its own body
        body = unit if unit.type == "module" else unit.child_by_field_name("body")
        if body is None:
            return hints
        stack = list(reversed(body.named_children))
        while stack:
            n = stack.pop()
            if n.type in _SKIP:
                continue
            if n.type == "assignment":
                left = n.child_by_field_name("left")
                right = n.child_by_field_name("right")
                typ = n.child_by_field_name("type")
                if left is not None and left.type in ("identifier", "attribute"):
                    var = text(left, src)
                    if typ is not None:
                        put(var, text(typ, src))
                    elif right is not None and right.type == "call":
                        fn = right.child_by_field_name("function")
                        if fn is not None and fn.type in ("identifier", "attribute"):
                            ctor = text(fn, src)
                            if ctor.rsplit(".", 1)[-1][:1].isupper() or ctor == "cls":
                                put(var, ctor)  # ``cls``: the resolver reads it as the enclosing class
                            else:
                                ret = self._returned_class(unit, fn, src) or \
                                    self.call_result_hint(unit, _norm(fn, src, 0), hints, src)
                                if ret:
                                    # x = self._make() / make(), defined in this file; else the
                                    # result type the called function declares (another file's)
                                    put(var, ret)
                                else:
                                    drop(var)
                        else:
                            drop(var)
                    elif right is not None and right.type == "identifier" and text(right, src) in hints:
                        put(var, hints[text(right, src)])  # self.loop = loop (loop: Loop)
                    elif right is not None:
                        drop(var)
                elif left is not None and left.type in ("pattern_list", "tuple_pattern", "list_pattern"):
                    for c in left.named_children:  # a, b = ...: rebinds both
                        if c.type in ("identifier", "attribute"):
                            drop(text(c, src))
            elif n.type == "for_statement":
                left = n.child_by_field_name("left")
                if left is not None:
                    for c in (left, *left.named_children):
                        if c.type == "identifier":
                            drop(text(c, src))
            elif n.type == "with_item":
                val = n.child_by_field_name("value")
                if val is not None and val.type == "as_pattern":
                    call = val.named_children[0] if val.named_children else None
                    alias = val.child_by_field_name("alias")
                    if call is not None and call.type == "call" and alias is not None:
                        fn = call.child_by_field_name("function")
                        ctor = text(fn, src)
                        if ctor.rsplit(".", 1)[-1][:1].isupper():
                            put(text(alias, src).strip(), ctor)
            if n.type in _STATEMENT_HOLDERS:  # assignments are statements: expressions hold none
                stack.extend(reversed(n.named_children))
        # ``cls.factory = RequestFactory()`` in a classmethod is ``self.factory`` in the methods
        for var, typ in list(hints.items()):
            for a, b in (("self.", "cls."), ("cls.", "self.")):
                if var.startswith(a) and var.count(".") == 1:
                    other = b + var[len(a):]
                    if other not in conflicts:
                        hints.setdefault(other, typ)
        return hints

    def call_result_hint(self, unit: Node, callee: str, hints: dict[str, str], src: bytes) -> str:
        """``x = f(...)`` / ``x = obj.m(...)`` / ``x = self.m(...)``: a return hint naming the
        call, so the resolver gives ``x`` the class the called function declares. The call's
        own receiver must be ``self``/``cls``, a hinted name (a plain class, not another return
        hint), or a name no parameter or local of the unit shadows (an import, a module
        global); else none (a receiver of unknown type is never guessed)."""
        if "?" in callee or "[]" in callee or "()" in callee:
            return ""
        head = callee.split(".", 1)[0]
        recv = callee.rsplit(".", 1)[0] if "." in callee else ""
        inner = ""
        if recv and recv in hints:
            inner = hints[recv]
            if inner.startswith((RETURN_HINT, PARAM_HINT)):
                return ""
        elif head not in ("self", "cls") and (head in hints or head in self._bound(unit, src)):
            return ""  # a parameter or local of unknown type, or the name of one
        return return_hint(callee, inner)

    def call_args(self, call: Node, src: bytes, unit: Node | None, lookup) -> str:
        """``CallSite.args`` of ``call`` (extract/model.py ``call_args``): per argument the
        class it is an instance of when known here (``Cls(...)``, a name or ``self.x`` with a
        receiver hint, ``self``), ``-`` for ``None``, else ``?``; ``lookup`` gives a receiver's
        hint as seen from the call's unit."""
        if call.type != "call":
            return ""
        a = call.child_by_field_name("arguments")
        if a is None:
            return ARGS_UNKNOWN
        if a.type != "argument_list":
            return "?"  # f(x for x in xs)
        positional: list[str] = []
        keywords: list[tuple[str, str]] = []
        bound_cache: list[set[str]] = []

        def bound() -> set[str]:
            if not bound_cache:
                bound_cache.append(self._bound(unit, src) if unit is not None and unit.type == "function_definition"
                                   else set())
            return bound_cache[0]

        for e in a.named_children:
            t = e.type
            if t == "comment":
                continue
            if t in ("list_splat", "dictionary_splat", "parenthesized_list_splat"):
                return ARGS_UNKNOWN
            if t == "keyword_argument":
                k = e.child_by_field_name("name")
                v = e.child_by_field_name("value")
                if k is None or v is None:
                    return ARGS_UNKNOWN
                keywords.append((text(k, src), _arg_entry(v, src, lookup, bound)))
            elif keywords:
                return ARGS_UNKNOWN
            else:
                positional.append(_arg_entry(e, src, lookup, bound))
        return call_args(positional, keywords)

    def _bound(self, unit: Node, src: bytes) -> set[str]:
        c = self._bound_cache
        if c is not None and c[0] is src and c[1] == unit.start_byte and c[2] == unit.end_byte:
            return c[3]
        names = _bound_names(unit, src)
        n = unit.parent
        while n is not None:  # names of enclosing functions, seen from a nested one
            if n.type == "function_definition":
                names |= _bound_names(n, src)
            n = n.parent
        self._bound_cache = (src, unit.start_byte, unit.end_byte, names)
        return names

    # -- classes returned by functions of the same file ----------------------------------------
    def _tables(self, node: Node, src: bytes) -> dict:
        """Per file (per tree: a file over the engine's CHUNK_BYTES is parsed a piece at a
        time): module-level functions and classes by name, methods by class."""
        root = node
        while root.parent is not None:
            root = root.parent
        cached = self._file_tables
        if cached is not None and cached[0] is src and cached[2] == root:
            return cached[1]
        funcs: dict[str, Node | None] = {}
        classes: dict[str, Node | None] = {}
        for st in root.named_children:
            d = _unwrap(st)
            if d is None:
                continue
            table = funcs if d.type == "function_definition" else classes
            name = text(d.child_by_field_name("name"), src)
            table[name] = None if name in table else d  # defined twice: unknown
        tables = {"funcs": funcs, "classes": classes, "methods": {}, "returns": {}, "consulted": {}}
        self._file_tables = (src, tables, root)
        return tables

    def _methods(self, cls: Node, src: bytes, tables: dict) -> dict[str, Node | None]:
        m = tables["methods"].get(cls.start_byte)
        if m is None:
            m = {}
            body = cls.child_by_field_name("body")
            for st in body.named_children if body is not None else ():
                d = _unwrap(st)
                if d is not None and d.type == "function_definition":
                    name = text(d.child_by_field_name("name"), src)
                    m[name] = None if name in m else d
            tables["methods"][cls.start_byte] = m
        return m

    def _returned_class(self, unit: Node, fn: Node, src: bytes) -> str:
        """The class that ``fn(...)`` returns, when ``fn`` names a function of this file
        (``make``, ``self._make``, ``cls.make``, ``Cls.make``) whose returns all build or
        hand back one class (``-> Cls``, ``return Cls(...)``, ``return self``, a hinted
        local); else ""."""
        tables = self._tables(unit, src)
        target: Node | None = None
        if fn.type == "identifier":
            name = text(fn, src)
            self._consult((name,))
            target = tables["funcs"].get(name)
        else:
            obj = fn.child_by_field_name("object")
            attr = text(fn.child_by_field_name("attribute"), src)
            if obj is None or obj.type != "identifier":
                return ""
            head = text(obj, src)
            if head in ("self", "cls"):
                cls = _enclosing_class(unit)
            else:
                self._consult((head,))
                cls = tables["classes"].get(head)
            if cls is not None:
                target = self._methods(cls, src, tables).get(attr)
        if target is None:
            return ""
        returns = tables["returns"]
        key = target.start_byte
        if key in returns:
            self._consult(tables["consulted"].get(key, ()))  # what the answer was learnt from
            return returns[key] or ""
        returns[key] = None  # recursion guard
        if self._trace is None:
            returns[key] = self._returns_of(target, src) or None
        else:
            self._trace.append(set())
            try:
                returns[key] = self._returns_of(target, src) or None
            finally:
                tables["consulted"][key] = self._trace.pop()
        return returns[key] or ""

    def _returns_of(self, fdef: Node, src: bytes) -> str:
        if fdef.children and fdef.children[0].type == "async":
            return ""  # calling it gives a coroutine
        own = _class_path(fdef, src)
        ann = fdef.child_by_field_name("return_type")
        if ann is not None:
            t = _OPTIONAL.sub(r"\2", text(ann, src).strip().strip("'\""))
            if t in ("Self", "typing.Self", "typing_extensions.Self"):
                return own
            return t if _TYPE_NAME.match(t) and t != "None" else ""
        body = fdef.child_by_field_name("body")
        if body is None:
            return ""
        found: set[str] = set()
        hints: dict[str, str] | None = None
        stack = list(body.named_children)
        while stack:
            n = stack.pop()
            if n.type in _SKIP:
                continue
            if n.type in ("yield", "await"):
                return ""
            if n.type == "return_statement":
                e = n.named_children[0] if n.named_children else None
                if e is None or e.type == "none":
                    continue
                t = ""
                if e.type == "call":
                    f = e.child_by_field_name("function")
                    ftext = text(f, src) if f is not None and f.type in ("identifier", "attribute") else ""
                    if ftext in ("cls", "type(self)", "self.__class__"):
                        t = own
                    elif ftext.rsplit(".", 1)[-1][:1].isupper() and \
                            ftext.split(".", 1)[0] not in self._bound(fdef, src):
                        t = ftext  # (a parameter or local named like a class is not the class)
                elif e.type == "identifier":
                    v = text(e, src)
                    if v == "self":
                        t = own
                    else:
                        if hints is None:
                            hints = self.receiver_hints(fdef, src)
                        t = hints.get(v, "")
                if not t or not _TYPE_NAME.match(t):
                    return ""
                found.add(t)
                if len(found) > 1:
                    return ""
                continue
            if n.type in _STATEMENT_HOLDERS:
                stack.extend(n.named_children)
        return next(iter(found)) if found else ""

    def _class_hints(self, cls: Node, src: bytes) -> dict[str, str]:
        """Class attributes seen from the methods as ``self.x`` / ``cls.x``: annotations
        ``x: Foo`` (dataclass fields, declared attributes) and ``x = Foo(...)`` (a shared
        ``factory = RequestFactory()`` in a test case) unless a method assigns ``self.x``
        too (its own hint decides there). ``x = models.CharField()`` gives a hint as well;
        a model instance's ``self.x`` is the field's value, but the value's methods are not
        the field's, so such a call stays unresolved."""
        hints: dict[str, str] = {}
        body = cls.child_by_field_name("body")
        if body is None:
            return hints
        seen: set[str] = set()
        class_text: str | None = None
        for st in body.named_children:
            a = st.named_children[0] if st.type == "expression_statement" and st.named_children else st
            if a.type != "assignment":
                continue
            left = a.child_by_field_name("left")
            typ = a.child_by_field_name("type")
            right = a.child_by_field_name("right")
            if left is None or left.type != "identifier":
                continue
            var = text(left, src)
            t = ""
            if typ is not None:
                t = _OPTIONAL.sub(r"\2", text(typ, src).strip().strip("'\""))
            elif right is not None and right.type == "call":
                fn = right.child_by_field_name("function")
                ctor = text(fn, src) if fn is not None and fn.type in ("identifier", "attribute") else ""
                if ctor.rsplit(".", 1)[-1][:1].isupper():
                    if class_text is None:
                        class_text = src[cls.start_byte:cls.end_byte].decode("utf-8", "replace")
                    if not re.search(r"\b(?:self|cls)\." + re.escape(var) + r"\s*=[^=]", class_text):
                        t = ctor
            if var in seen or not t or not _TYPE_NAME.match(t):
                seen.add(var)
                for k in (f"self.{var}", f"cls.{var}"):
                    hints.pop(k, None)
                continue
            seen.add(var)
            hints[f"self.{var}"] = t
            hints[f"cls.{var}"] = t
        return hints
