"""Call, base-type and import resolution over an in-memory symbol index.

Resolution is a pure function of (the call site, its file's imports, the global symbol
table, resolved bases): the same tree always gives the same edges, whether it was indexed
in one pass or through any sequence of incremental updates.

Rules, most certain first (confidence in brackets):
- a name defined in an enclosing function, the class body (for class-level code) or the
  module [local, 1.0];
- a name bound by an import, followed through re-exports (``from .base import reverse`` in
  a package ``__init__``) and aliases [import, 0.95]; when Python code binds one name by
  several imports (``try: from _c import f`` / ``except ImportError: from _py import f``,
  ``if posix: import posixpath as path`` / ``else: import ntpath as path``), the first
  binding the graph knows wins — a pure function of the file, never of indexing order;
- ``self.m`` / ``cls.m`` / ``this.m`` through the enclosing class and its bases [self, 0.95];
- ``super().m`` through the bases [super, 0.9];
- ``x.m`` where the extractor saw ``x = Cls(...)``, ``x: Cls`` or a typed parameter (also
  ``self.x`` set in any method or declared ``x: Cls`` in the class body, and ``obj = cls()``
  in a classmethod, read as the enclosing class), and ``Cls().m`` [inferred, 0.85];
- a builtin [external, no edge]; anything else stays unresolved with its name, so callers
  can report "N resolved, M unresolved candidates". A method call on an unknown receiver is
  never bound to a same-named function elsewhere.
"""

from __future__ import annotations

import builtins
import re
from collections import defaultdict
from collections.abc import Iterable

from codesynapse.extract.model import TYPE_KINDS, ImportRef
from codesynapse.graph.model import Resolution

UNRESOLVED = Resolution("", "unresolved", 0.0)
EXTERNAL = Resolution("", "external", 0.0)

PY_BUILTINS = frozenset(dir(builtins))
SELF_NAMES = {"python": ("self", "cls"), "javascript": ("this",), "typescript": ("this",), "tsx": ("this",),
              "java": ("this",), "csharp": ("this",), "kotlin": ("this",), "cpp": ("this",), "php": ("$this",),
              "ruby": ("self",), "rust": ("self", "Self")}
_SEPS = {"rust": "::", "cpp": "::", "php": "\\"}
_CALLISH = re.compile(r"\(\)|\[\]")

# -- language rules beside Python's (kept apart so Python resolution is untouched) ----------
# Languages where a method body does not see its class's members as bare names (``this.``,
# ``self.``, a receiver or ``$this->`` is required); Python's rule is the same.
_CLASS_SCOPE_HIDDEN = frozenset({"python", "javascript", "typescript", "tsx", "go", "rust", "php"})
_JS = frozenset({"javascript", "typescript", "tsx"})
# Languages where a bare call inside a method may be a method of the class or of a base class
# (implicit ``this``/``self``): Java, C#, Kotlin, C++, Ruby.
_IMPLICIT_THIS = frozenset({"java", "csharp", "kotlin", "cpp", "ruby"})
# Names that are the language's own when nothing in scope defines them: calls through them
# are "external", not "unresolved".
_GLOBALS = {
    "go": frozenset({"append", "cap", "clear", "close", "complex", "copy", "delete", "imag", "len", "make", "max",
                     "min", "new", "panic", "print", "println", "real", "recover", "bool", "byte", "rune", "string",
                     "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64",
                     "uintptr", "float32", "float64", "complex64", "complex128", "error", "any"}),
    "javascript": frozenset({"console", "JSON", "Math", "Object", "Array", "Promise", "String", "Number", "Boolean",
                             "Symbol", "Date", "RegExp", "Error", "TypeError", "RangeError", "Map", "Set", "WeakMap",
                             "WeakSet", "Reflect", "Proxy", "BigInt", "Intl", "parseInt", "parseFloat", "isNaN",
                             "isFinite", "setTimeout", "clearTimeout", "setInterval", "clearInterval",
                             "queueMicrotask", "structuredClone", "encodeURIComponent", "decodeURIComponent",
                             "encodeURI", "decodeURI", "fetch", "require", "process", "Buffer", "globalThis",
                             "window", "document", "URL", "URLSearchParams", "TextEncoder", "TextDecoder",
                             "AbortController", "expect", "jest", "vi", "beforeEach", "afterEach", "beforeAll",
                             "afterAll"}),
}
_GLOBALS["typescript"] = _GLOBALS["tsx"] = _GLOBALS["javascript"]
_GLOBALS["java"] = frozenset({"System", "String", "Math", "Integer", "Long", "Double", "Float", "Boolean",
                              "Character", "Byte", "Short", "Object", "Thread", "StringBuilder", "Objects",
                              "Exception", "RuntimeException", "IllegalArgumentException",
                              "IllegalStateException", "NullPointerException", "UnsupportedOperationException",
                              "Runtime", "Class", "Enum", "Iterable", "Record"})
_GLOBALS["kotlin"] = frozenset({"println", "print", "listOf", "mutableListOf", "mapOf", "mutableMapOf", "setOf",
                                "mutableSetOf", "arrayOf", "emptyList", "emptyMap", "require", "requireNotNull",
                                "check", "checkNotNull", "error", "TODO", "lazy", "repeat", "run", "let", "also",
                                "apply", "with", "String", "Int", "Long", "Math", "System", "Exception",
                                "IllegalArgumentException", "IllegalStateException", "StringBuilder", "Pair",
                                "maxOf", "minOf"})
_GLOBALS["csharp"] = frozenset({"Console", "Math", "String", "Convert", "Guid", "DateTime", "Task", "Exception",
                                "ArgumentException", "ArgumentNullException", "InvalidOperationException",
                                "NotImplementedException", "List", "Dictionary", "HashSet", "Enumerable", "nameof",
                                "string", "int", "object"})
_GLOBALS["c"] = frozenset({"printf", "fprintf", "sprintf", "snprintf", "puts", "putchar", "malloc", "calloc",
                           "realloc", "free", "memcpy", "memmove", "memset", "memcmp", "strlen", "strcmp",
                           "strncmp", "strcpy", "strncpy", "strcat", "strdup", "strchr", "strstr", "exit", "abort",
                           "assert", "fopen", "fclose", "fread", "fwrite", "fgets", "atoi", "atol", "strtol",
                           "qsort", "abs", "sizeof", "isdigit", "isalpha", "isalnum", "isspace", "isupper",
                           "islower", "toupper", "tolower"})
_GLOBALS["cpp"] = _GLOBALS["c"] | frozenset({"std"})
_GLOBALS["ruby"] = frozenset({"puts", "print", "p", "pp", "require", "require_relative", "raise", "attr_reader",
                              "attr_writer", "attr_accessor", "include", "extend", "lambda", "proc", "loop",
                              "format", "sprintf", "Integer", "Float", "String", "Array", "Hash", "freeze",
                              "private", "protected", "public", "assert", "assert_equal", "refute",
                              "assert_nil", "assert_raises", "expect", "eq", "describe", "it", "before"})
_GLOBALS["php"] = frozenset({"count", "strlen", "sprintf", "printf", "implode", "explode", "array_map",
                             "array_filter", "array_keys", "array_values", "in_array", "isset", "unset", "empty",
                             "json_encode", "json_decode", "str_replace", "strtolower", "strtoupper", "trim",
                             "intdiv", "round", "max", "min", "var_dump", "print_r", "array_sum", "number_format",
                             "Exception", "InvalidArgumentException", "RuntimeException", "LogicException",
                             "DomainException", "TypeError", "DateTimeImmutable", "ArrayObject"})


def _is_global(lang: str, head: str) -> bool:
    return head in _GLOBALS.get(lang, ())


class FileInfo:
    __slots__ = ("path", "module", "language", "bindings", "alternatives", "stars", "symbols")

    def __init__(self, path: str, module: str, language: str):
        self.path = path
        self.module = module
        self.language = language
        self.bindings: dict[str, str] = {}  # local name → target text (module or module.name)
        # Python: later imports of a name already bound (``try: from _c import f`` / ``except
        # ImportError: from _py import f``, ``if posix: import posixpath as path`` / ``else:
        # import ntpath as path``), in source order after ``bindings[name]``.
        self.alternatives: dict[str, list[str]] = {}
        self.stars: list[str] = []
        self.symbols: list[tuple[str, str]] = []  # (qname, kind)

    def targets(self, name: str) -> list[str]:
        """Every import target bound to ``name``, first binding first."""
        first = self.bindings.get(name)
        if first is None:
            return []
        return [first, *self.alternatives.get(name, ())]


class SymbolIndex:
    """Everything resolution needs, kept in memory and updated file by file."""

    def __init__(self) -> None:
        self.kinds: dict[str, dict[str, int]] = {}  # qname → {kind: count}
        self.parents: dict[str, str] = {}  # qname → parent qname
        self.files: dict[str, FileInfo] = {}
        self.module_files: dict[str, set[str]] = defaultdict(set)
        self.bases: dict[str, list[str]] = {}  # class qname → resolved base qnames (in order)
        self._cache: dict[str, str | None] = {}

    # -- maintenance -------------------------------------------------------------------
    def add_file(self, path: str, module: str, language: str,
                 symbols: Iterable[tuple[str, str, str]], imports: Iterable[ImportRef]) -> None:
        """``symbols`` as (qname, kind, parent)."""
        self.remove_file(path)
        fi = FileInfo(path, module, language)
        for qname, kind, parent in symbols:
            fi.symbols.append((qname, kind))
            k = self.kinds.setdefault(qname, {})
            k[kind] = k.get(kind, 0) + 1
            if parent:
                self.parents[qname] = parent
        for im in imports:
            if im.name == "*":
                fi.stars.append(im.module)
            else:
                target = f"{im.module}{_sep(language)}{im.name}" if im.name else im.module
                if language == "python" and not im.name and not im.alias:
                    # ``import a.b.c`` binds ``a``, the top package (``a.b.c.f()`` goes through it)
                    target = im.module.split(".", 1)[0]
                if language == "python" and im.binding in fi.bindings:
                    if target != fi.bindings[im.binding]:
                        fi.alternatives.setdefault(im.binding, []).append(target)
                else:
                    fi.bindings[im.binding] = target
        self.files[path] = fi
        if module:
            self.module_files[module].add(path)
        self._cache.clear()

    def remove_file(self, path: str) -> None:
        fi = self.files.pop(path, None)
        if fi is None:
            return
        for qname, kind in fi.symbols:
            k = self.kinds.get(qname)
            if k is None:
                continue
            k[kind] -= 1
            if k[kind] <= 0:
                del k[kind]
            if not k:
                del self.kinds[qname]
                self.parents.pop(qname, None)
                # bases stay until set_bases(): the indexer compares old and new bases
        if fi.module:
            s = self.module_files.get(fi.module)
            if s is not None:
                s.discard(path)
                if not s:
                    del self.module_files[fi.module]
        self._cache.clear()

    def set_bases(self, bases: dict[str, list[str]]) -> None:
        self.bases = bases
        self._cache.clear()

    # -- queries -----------------------------------------------------------------------
    def exists(self, qname: str) -> bool:
        return qname in self.kinds

    def kind(self, qname: str) -> str:
        k = self.kinds.get(qname)
        if not k:
            return ""
        for pref in ("class", "struct", "interface", "trait", "enum", "type", "function", "method", "test",
                     "constant", "module"):
            if pref in k:
                return pref
        return next(iter(k))

    def is_module(self, qname: str) -> bool:
        return qname in self.module_files

    def is_type(self, qname: str) -> bool:
        k = self.kinds.get(qname)
        return bool(k) and any(x in TYPE_KINDS for x in k)

    def module_bindings(self, module: str) -> Iterable[FileInfo]:
        for p in sorted(self.module_files.get(module, ())):
            yield self.files[p]

    def mro(self, cls: str) -> list[str]:
        out: list[str] = []
        seen: set[str] = set()
        stack = [cls]
        while stack and len(out) < 64:
            c = stack.pop(0)
            if c in seen:
                continue
            seen.add(c)
            out.append(c)
            stack.extend(self.bases.get(c, ()))
        return out

    def member(self, cls: str, name: str, sep: str = ".", skip_self: bool = False) -> str | None:
        for c in self.mro(cls)[1 if skip_self else 0:]:
            q = f"{c}{sep}{name}"
            if q in self.kinds:
                return q
        return None

    def resolve_qname(self, q: str, sep: str = ".", depth: int = 0) -> str | None:
        """Canonical symbol qname for a dotted reference, following re-exports and bases."""
        key = q if sep == "." else sep + q
        if key in self._cache:
            return self._cache[key]
        self._cache[key] = None  # cycle guard
        res = self._resolve_qname(q, sep, depth)
        self._cache[key] = res
        return res

    def _resolve_qname(self, q: str, sep: str, depth: int) -> str | None:
        if depth > 8:
            return None
        if q in self.kinds:
            return q
        if sep not in q:
            return None
        prefix, last = q.rsplit(sep, 1)
        p = self.resolve_qname(prefix, sep, depth + 1)
        if p is None:
            return None
        if self.is_module(p):
            direct = f"{p}{sep}{last}"
            if direct in self.kinds:
                return direct
            for fi in self.module_bindings(p):
                for target in fi.targets(last):
                    if target != q:
                        r = self.resolve_qname(target, sep, depth + 1)
                        if r is not None:
                            return r
                for star in fi.stars:
                    r = self.resolve_qname(f"{star}{sep}{last}", sep, depth + 1)
                    if r is not None:
                        return r
            return None
        if self.is_type(p):
            return self.member(p, last, sep)
        direct = f"{p}{sep}{last}"
        return direct if direct in self.kinds else None


def _sep(language: str) -> str:
    return _SEPS.get(language, ".")


def _rust_path_head(head: str, caller: str, fi: FileInfo, idx: SymbolIndex) -> str:
    """Rust ``crate::`` → the crate root module; ``super::`` → the parent of the module (file
    or inline ``mod``) that holds the caller."""
    if head == "crate":
        return fi.module.split("::", 1)[0]
    q: str | None = caller
    while q and q != fi.module and idx.kind(q) != "module":
        q = idx.parents.get(q)
    q = q or fi.module
    return q.rsplit("::", 1)[0] if "::" in q else q


class Resolver:
    """Resolves call sites and base-type expressions against a SymbolIndex."""

    def __init__(self, index: SymbolIndex):
        self.index = index

    # The enclosing class of a unit, walking parents.
    def enclosing_class(self, qname: str) -> str | None:
        q: str | None = qname
        idx = self.index
        while q:
            if idx.is_type(q):
                return q
            q = idx.parents.get(q)
        return None

    def scope_lookup(self, name: str, caller: str, fi: FileInfo) -> tuple[str, str] | None:
        """Resolve a bare name as the language's scoping would: enclosing units, the module,
        imports, star imports."""
        idx = self.index
        sep = _sep(fi.language)
        q: str | None = caller
        first = True
        while q and q != fi.module:
            # Java/C#/Kotlin/C++: inside class C, the name C is the class, not its constructor.
            if fi.language in _IMPLICIT_THIS and idx.is_type(q) and q.rsplit(sep, 1)[-1] == name:
                return q, "local"
            # Python, JS/TS, Go, Rust, PHP: class scope is not visible from methods, only from
            # the class body itself. An object literal held by a constant (JS/TS
            # ``const provider = { f() {…} }``) is no scope at all: its methods are not names.
            if first or not (fi.language in _CLASS_SCOPE_HIDDEN and idx.is_type(q)
                             or idx.kind(q) in ("constant", "variable")):
                cand = f"{q}{sep}{name}"
                if cand in idx.kinds:
                    return cand, "local"
            first = False
            q = idx.parents.get(q)
        if fi.module:
            cand = f"{fi.module}{sep}{name}"
            if cand in idx.kinds:
                return cand, "local"
        targets = fi.targets(name)
        if targets:
            # the first binding that the graph knows (a C accelerator or the other platform's
            # module is not in it); none known: the first binding, outside the graph
            for target in targets:
                r = idx.resolve_qname(target, sep)
                if r is not None:
                    return r, "import"
            return targets[0], "import-external"
        for star in fi.stars:
            r = idx.resolve_qname(f"{star}{sep}{name}", sep)
            if r is not None:
                return r, "import"
        return None

    def resolve_type(self, text: str, caller: str, fi: FileInfo) -> str | None:
        sep = _sep(fi.language)
        parts = text.split(".") if sep == "." else text.replace(".", sep).split(sep)
        head = self.scope_lookup(parts[0], caller, fi)
        if head is None or head[1] == "import-external":
            return None
        full = sep.join([head[0], *parts[1:]])
        r = self.index.resolve_qname(full, sep)
        if r is not None and len(parts) == 1 and self.index.is_module(r):
            r = self._js_default(r, fi) or r
        return r if r is not None and self.index.is_type(r) else None

    def _external_type(self, hint: str, caller: str, fi: FileInfo) -> bool:
        """True when the hinted type is named through an import from outside the graph, or is
        one of the language's own (Java ``String``, Go ``error``)."""
        sep = _sep(fi.language)
        head = hint.replace(sep, ".").split(".")[0]
        found = self.scope_lookup(head, caller, fi)
        if found is None:
            return _is_global(fi.language, head)
        return found[1] == "import-external"

    def _js_default(self, module: str, fi: FileInfo) -> str | None:
        """JS/TS: the default export of ``module`` (``export default X``, ``module.exports = X``)."""
        if fi.language not in _JS or not self.index.is_module(module):
            return None
        r = self.index.resolve_qname(f"{module}.default", ".")
        return r if r is not None and not self.index.is_module(r) else None

    def resolve_call(self, path: str, caller: str, callee: str, hint: str) -> Resolution:
        fi = self.index.files.get(path)
        if fi is None:
            return UNRESOLVED
        idx = self.index
        sep = _sep(fi.language)
        lang = fi.language
        if sep != "." and sep in callee:
            callee_n = callee.replace(sep, ".")
        else:
            callee_n = callee
        parts = callee_n.split(".")
        last = parts[-1]
        if not last or last == "?":
            return UNRESOLVED
        selfs = SELF_NAMES.get(lang, ())
        # super().m
        if parts[0] == "super()" and len(parts) == 2:
            cls = self.enclosing_class(caller)
            if cls:
                m = idx.member(cls, last, sep, skip_self=True)
                if m:
                    return Resolution(m, "super", 0.9)
            return UNRESOLVED
        # receiver type hints from the extractor
        if hint and len(parts) >= 2:
            # ``obj = cls(...)`` in a classmethod: the hint names the enclosing class itself
            t = self.enclosing_class(caller) if lang == "python" and hint in selfs else \
                self.resolve_type(hint, caller, fi)
            if t:
                m = idx.member(t, last, sep)
                if m:
                    return Resolution(m, "inferred", 0.85)
            elif lang != "python" and self._external_type(hint, caller, fi):
                return EXTERNAL  # a method of an imported library type (Go ``t *testing.T``)
        # self.m / this.m
        if parts[0] in selfs and len(parts) == 2:
            cls = self.enclosing_class(caller)
            if cls:
                m = idx.member(cls, last, sep)
                if m:
                    return Resolution(m, "self", 0.95)
            return UNRESOLVED
        # Cls().m — a method on a fresh instance
        if len(parts) >= 2 and parts[-2].endswith("()") and all(not _CALLISH.search(p) for p in parts[:-2]):
            t = self.resolve_type(".".join(parts[:-2] + [parts[-2][:-2]]), caller, fi)
            if t:
                m = idx.member(t, last, sep)
                if m:
                    return Resolution(m, "inferred", 0.85)
            return UNRESOLVED
        if any(_CALLISH.search(p) or p == "?" for p in parts):
            return UNRESOLVED
        if len(parts) == 1 and lang in _IMPLICIT_THIS:
            cls = self.enclosing_class(caller)
            if cls:
                m = idx.member(cls, last, sep)
                # a constructor (a method named like its class) is reached by naming the class
                if m and idx.kind(m) not in TYPE_KINDS and m.rsplit(sep, 2)[-2] != last:
                    return Resolution(m, "self", 0.95)
        if lang == "rust" and parts[0] in ("crate", "super") and len(parts) >= 2:
            r = idx.resolve_qname(sep.join([_rust_path_head(parts[0], caller, fi, idx), *parts[1:]]), sep)
            if r is None or idx.kind(r) == "module":
                return UNRESOLVED
            return Resolution(r, "module", 0.95)
        head = self.scope_lookup(parts[0], caller, fi)
        if head is None:
            if len(parts) == 1 and lang == "python" and parts[0] in PY_BUILTINS:
                return EXTERNAL
            if _is_global(lang, parts[0]):
                return EXTERNAL
            return UNRESOLVED
        target, how = head
        if how == "import-external":
            return EXTERNAL
        if len(parts) == 1:
            kind = idx.kind(target)
            if kind in ("module",):
                # JS/TS: a module bound whole (``const f = require('./f')``) and called or
                # instantiated means its default export.
                d = self._js_default(target, fi)
                return Resolution(d, how, 0.95) if d else UNRESOLVED
            return Resolution(target, how, 1.0 if how == "local" else 0.95)
        full = sep.join([target, *parts[1:]])
        r = idx.resolve_qname(full, sep)
        if r is None:
            return UNRESOLVED
        if idx.kind(r) == "module":
            return UNRESOLVED
        return Resolution(r, "module" if idx.is_module(target) else how, 0.95 if how != "local" else 1.0)

    def resolve_base(self, path: str, child: str, base: str) -> Resolution:
        fi = self.index.files.get(path)
        if fi is None:
            return UNRESOLVED
        base = re.sub(r"[<\[].*$", "", base)  # generics: List[int], Foo<T>
        parent = self.index.parents.get(child, fi.module)
        t = self.resolve_type(base, parent, fi)
        if t and t != child:
            return Resolution(t, "import" if base.split(".")[0] in fi.bindings else "local", 0.95)
        return UNRESOLVED

    def resolve_import(self, path: str, im: ImportRef) -> str:
        fi = self.index.files.get(path)
        sep = _sep(fi.language) if fi else "."
        if im.name and im.name != "*":
            r = self.index.resolve_qname(f"{im.module}{sep}{im.name}", sep)
            if r:
                return r
        return im.module if self.index.is_module(im.module) else ""
