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
import sys
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable

from codesynapse.extract.model import (
    PARAM_HINT,
    RETURN_HINT,
    TYPE_KINDS,
    ImportRef,
    parse_call_args,
    parse_field_hint,
    parse_param_hint,
    parse_return_hint,
)
from codesynapse.graph.confidence import (
    CONFIDENCE,
    INFERRED_FROM_CALLERS,
    INFERRED_FROM_RESULT,
)
from codesynapse.graph.model import Resolution

UNRESOLVED = Resolution("", "unresolved", CONFIDENCE["unresolved"])
EXTERNAL = Resolution("", "external", CONFIDENCE["external"])

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


# -- declared results, read from signatures ----------------------------------------------
SELF_TYPE = "Self"  # a result that is the function's own class (Python ``-> Self``)
_PY_TYPE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_PY_OPTIONAL = re.compile(r"^(?:typing\.)?Optional\[(.*)\]$")
_PY_INFERRED = re.compile(r"\)\s+# -> ([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)$")
_GO_TYPE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)?$")
_TS_TYPE = re.compile(r"^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$")
_OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}


def _group_end(s: str, i: int) -> int:
    """Index just past the bracket group opening at ``s[i]`` (-1 when unbalanced); ``=>``
    inside a TypeScript type is no closing angle bracket."""
    stack: list[str] = []
    j = i
    while j < len(s):
        c = s[j]
        if c in _OPEN and (c != "<" or s[i] == "<"):
            stack.append(_OPEN[c])
        elif stack and c == stack[-1] and not (c == ">" and j > 0 and s[j - 1] == "="):
            stack.pop()
            if not stack:
                return j + 1
        j += 1
    return -1


def _split_top(s: str) -> list[str]:
    out, depth, cur = [], 0, []
    for c in s:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _go_type(t: str) -> str:
    t = t.strip().lstrip("*")
    if t.startswith("[]"):  # a slice: kept as []T, so a range over it types its elements
        elem = _go_type(t[2:])
        return "[]" + elem if elem and not elem.startswith("[]") else ""
    if "[" in t:  # Generic[T] is Generic; map[K]V is no named type
        t = t.split("[", 1)[0]
    return t if _GO_TYPE.match(t) else ""


_RESULT_KINDS = frozenset({"function", "method"})  # what declared_results reads a signature of
_FIELD_KINDS = frozenset({"struct"})  # what declared_fields reads a signature of
_TYPED_KINDS = _RESULT_KINDS | _FIELD_KINDS


def declared_results(language: str, kind: str, signature: str) -> tuple[str, ...]:
    """The result types a function's or method's signature declares, as written (one per
    value for Go; "" where a result is no named type); () when it declares none. Python:
    ``-> Cls`` (``Optional[Cls]`` is ``Cls``; ``-> Self`` is SELF_TYPE; ``async def`` returns a
    coroutine, so none); Go: the result list; TypeScript: ``): Foo`` (``Foo<T>`` is ``Foo``)."""
    if kind not in _RESULT_KINDS or not signature:
        return ()
    sig = signature.strip()
    if language == "python":
        if sig.startswith("async ") or not sig.startswith("def "):
            return ()
        # an unannotated function whose every return builds one class: the extractor appends
        # it (extract/lang/python.py INFERRED_RETURN, ``def make(host)  # -> Connection``)
        m = _PY_INFERRED.search(sig)
        if m:
            t = m.group(1)
            return (SELF_TYPE,) if t == "Self" else (t,)
        m = re.search(r"\)\s*->\s*(.+?)\s*$", sig)
        if not m:
            return ()
        t = m.group(1).strip().strip("'\"")
        t = _PY_OPTIONAL.sub(r"\1", t).strip().strip("'\"")
        if t in ("Self", "typing.Self", "typing_extensions.Self"):
            return (SELF_TYPE,)
        return (t,) if _PY_TYPE.match(t) and t != "None" else ()
    if language == "go":
        if not sig.startswith("func"):
            return ()
        i = 4
        rest = sig[i:].lstrip()
        if rest.startswith("("):  # the receiver
            e = _group_end(rest, 0)
            if e < 0:
                return ()
            rest = rest[e:].lstrip()
        m = re.match(r"[A-Za-z_]\w*\s*", rest)
        if not m:
            return ()
        rest = rest[m.end():]
        if rest.startswith("["):  # type parameters
            e = _group_end(rest, 0)
            if e < 0:
                return ()
            rest = rest[e:].lstrip()
        if not rest.startswith("("):
            return ()
        e = _group_end(rest, 0)
        if e < 0:
            return ()
        rest = rest[e:].strip()
        if not rest:
            return ()
        if not rest.startswith("("):
            return (_go_type(rest),)
        e = _group_end(rest, 0)
        if e < 0:
            return ()
        items = _split_top(rest[1:e - 1])
        if any(" " in it.strip() and not it.strip().startswith(("func", "map", "chan", "[", "*", "interface",
                                                                 "struct")) for it in items):
            # named results: ``(a, b T, err error)``; a bare name takes the next type
            out: list[str] = []
            pending = 0
            for it in items:
                parts = it.split(None, 1)
                if len(parts) == 1:
                    pending += 1
                    continue
                t = _go_type(parts[1])
                out += [t] * (pending + 1)
                pending = 0
            return tuple(out) if not pending else ()
        return tuple(_go_type(it) for it in items)
    if language in _JS:
        m = re.search(r"[(]", sig)
        if not m:
            return ()
        e = _group_end(sig, m.start())
        if e < 0:
            return ()
        rest = sig[e:].strip()
        if not rest.startswith(":"):
            return ()
        t = rest[1:].strip()
        if t.endswith("=>"):
            t = t[:-2].strip()
        if "<" in t:
            lt = t.index("<")
            end = _group_end(t, lt)
            if end != len(t):
                return ()
            t = t[:lt]
        return (t,) if _TS_TYPE.match(t) and t not in ("void", "any", "unknown", "never", "this") else ()
    return ()


def declared_fields(language: str, kind: str, signature: str) -> dict[str, str]:
    """Field → declared type as written (``*View``, ``cache.Snapshot``) of a Go struct, read
    from its signature (``type S struct {view *View; a, b pkg.T}``, written by the Go
    extractor with the named fields whose type is a named type); a field the signature's cap
    cut is left out. {} for anything else."""
    if language != "go" or kind not in _FIELD_KINDS or " struct {" not in signature:
        return {}
    body = signature.split(" struct {", 1)[1]
    pieces = body[:-1].split("; ") if body.endswith("}") else body.split("; ")[:-1]
    out: dict[str, str] = {}
    for piece in pieces:
        names, _, typ = piece.rpartition(" ")
        if not names or not _GO_TYPE.match(typ.lstrip("*")):
            continue
        for n in names.split(", "):
            out[n.strip()] = typ
    return out


class FileInfo:
    __slots__ = ("alternatives", "bindings", "fields", "language", "module", "path", "results", "stars", "sym_kinds",
                 "sym_qnames")

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
        # its symbols' qnames and kinds, in order: two tuples (a pair per symbol costs 64 bytes)
        self.sym_qnames: tuple[str, ...] = ()
        self.sym_kinds: tuple[str, ...] = ()
        self.results: dict[str, tuple[str, ...]] = {}  # function/method qname → declared result types
        self.fields: dict[str, dict[str, str]] = {}  # Go struct qname → {field: declared type}

    @property
    def symbols(self) -> list[tuple[str, str]]:
        """(qname, kind) of each symbol of the file, in order."""
        return list(zip(self.sym_qnames, self.sym_kinds))

    def targets(self, name: str) -> list[str]:
        """Every import target bound to ``name``, first binding first."""
        first = self.bindings.get(name)
        if first is None:
            return []
        return [first, *self.alternatives.get(name, ())]


_MAX_DEPTH = 8  # a qname lookup follows at most this many prefixes, re-exports and star imports
_NO_ANSWER = tuple((None, room) for room in range(_MAX_DEPTH + 2))  # shared cache values
_MISSING = object()
_NAMES_MASK = (1 << 24) - 1  # SymbolIndex._names: 16 M bits (2 MB)
_NAME_SEPS = (".", "::", "\\")
_PARTS = re.compile(r"::|[.\\]")  # what splits an import's text into the names a walk looks up
_MOVED_LIMIT = 4096  # names a star graph kept across edits may have moved before it is made again
_KEEP_ANSWERS = 50_000  # resolve_qname answers sorted through after a kept edit (else all go)
_PATCH_MIN = 256  # add_file patches a file of at least this many symbols (SymbolIndex._patch)


class SymbolIndex:
    """Everything resolution needs, kept in memory and updated file by file. Compact for
    large trees: a qname defined once holds its kind as a string (a {kind: count} dict only
    when it is defined more than once), qualified names, parents and kinds are interned (a
    parent is the same string as its own key), and ``resolve_qname``'s cache is emptied when
    it reaches ``cache_limit`` entries (index.memoryBudget)."""

    def __init__(self, cache_limit: int = 1_000_000) -> None:
        self.kinds: dict[str, str | dict[str, int]] = {}  # qname → kind, or {kind: count}
        self.cache_limit = cache_limit
        self.parents: dict[str, str] = {}  # qname → parent qname
        self.files: dict[str, FileInfo] = {}
        self.module_files: dict[str, set[str]] = defaultdict(set)
        self.bases: dict[str, list[str]] = {}  # class qname → resolved base qnames (in order)
        self.results: dict[str, dict[str, tuple[str, ...]]] = {}  # qname → {path: declared result types}
        self.fields: dict[str, dict[str, dict[str, str]]] = {}  # struct qname → {path: {field: type}}
        # names_returning's index of results and fields (a type's head or last segment → the
        # short names declaring it), made when asked after they changed
        self._returning: dict[str, set[str]] | None = None
        # resolve_qname's answers that neither its cycle guard nor its depth limit shaped:
        # qname -> (answer, room); a star search's (module, name, sep) -> (answer, room) and
        # (component, name, sep) -> (None, room); under None the star graph (_Stars) these
        # answers were computed on. Replaced, never emptied, when the table changes
        self._cache: dict = {}
        # a bit per hash of every last name of a qname and every name a file imports by name
        # (never cleared: a superset); a star search for a name with no bit finds nothing
        self._names = bytearray((_NAMES_MASK + 1) >> 3)
        # every star import's text and its prefixes (what makes a text name something: a
        # qname equal to one of them), and every part of a star import's or a named import's
        # text (the names a walk of such a text looks up), counted over the files: an edit
        # changing none of these qnames and names leaves the star graph as it is
        # (_Stars.keep_after)
        self.star_prefixes: Counter[str] = Counter()
        self.ref_parts: Counter[str] = Counter()

    # -- maintenance -------------------------------------------------------------------
    def add_file(self, path: str, module: str, language: str,
                 symbols: Iterable[tuple[str, ...]], imports: Iterable[ImportRef]) -> set[str] | None:
        """``symbols`` as (qname, kind, parent) or (qname, kind, parent, signature); a
        signature gives the declared result types return hints read. A file already in the
        table with at least ``_PATCH_MIN`` symbols, in the same module and language and with
        the same imports, is patched (``_patch``): the qnames whose (qname, kind) pairs it
        gained or lost are returned; otherwise None."""
        old = self.files.get(path)
        if old is not None and len(old.sym_qnames) >= _PATCH_MIN and old.module == module \
                and old.language == language:
            symbols = symbols if isinstance(symbols, list) else list(symbols)
            changed = self._patch(old, symbols, imports)
            if changed is not None:
                return changed
        old = self._remove(path)
        fi = FileInfo(path, module, language)
        seen: set[str] = set()
        qnames: list[str] = []
        kinds: list[str] = []
        for qname, kind, parent, *rest in symbols:
            qname, kind = _intern(qname), _intern(kind)
            qnames.append(qname)
            kinds.append(kind)
            res = declared_results(language, kind, rest[0]) if rest else ()
            if qname in seen:  # defined twice here (overloads, a redefinition): results differ → none
                if fi.results.get(qname, ()) != res and fi.results.get(qname) != ():
                    fi.results[qname] = ()
                    self.results.setdefault(qname, {})[path] = ()
            elif res:
                fi.results[qname] = res
                self.results.setdefault(qname, {})[path] = res
            seen.add(qname)
            flds = declared_fields(language, kind, rest[0]) if rest else {}
            if flds:
                fi.fields[qname] = flds
                self.fields.setdefault(qname, {})[path] = flds
            k = self.kinds.get(qname)
            if k is None:
                self.kinds[qname] = kind
            elif isinstance(k, str):
                self.kinds[qname] = {k: 2} if k == kind else {k: 1, kind: 1}
            else:
                k[kind] = k.get(kind, 0) + 1
            if parent:
                self.parents[qname] = _intern(parent)
        fi.sym_qnames, fi.sym_kinds = tuple(qnames), tuple(kinds)
        if fi.results or fi.fields:
            self._returning = None
        _bind(fi, imports)
        self.files[path] = fi
        if module:
            self.module_files[module].add(path)
        names = self._names
        for q in qnames:
            for sep in _NAME_SEPS:
                if sep in q:
                    h = hash(q.rsplit(sep, 1)[1]) & _NAMES_MASK
                    names[h >> 3] |= 1 << (h & 7)
        for b in fi.bindings:
            h = hash(b) & _NAMES_MASK
            names[h >> 3] |= 1 << (h & 7)
        self._count_stars(fi, 1)
        self._changed(old, fi)
        return None

    def _patch(self, old: FileInfo, rows: list[tuple[str, ...]], imports: Iterable[ImportRef]) -> set[str] | None:
        """``add_file`` of a file the table holds, by what changed: a one-line edit of a
        15,000-definition header changes a few of its (qname, kind) pairs, and counting every
        pair out and in again took ~100 ms of each save (issue 24). Only the pairs the file
        gained or lost are counted; parents, declared results and fields are set as a
        remove-then-add sets them (tests/unit/test_resolve_patch.py compares the two tables),
        and a name bit is set for each new qname (the bits are a superset). None, with
        nothing changed, when the imports differ (the star counts and bindings move: the
        whole way) or a name is not a plain string."""
        path, language = old.path, old.language
        fi = FileInfo(path, old.module, language)
        _bind(fi, imports)
        if fi.stars != old.stars or fi.bindings != old.bindings or fi.alternatives != old.alternatives:
            return None
        try:
            qnames = tuple(map(sys.intern, [r[0] for r in rows]))
            kinds = tuple(map(sys.intern, [r[1] for r in rows]))
        except TypeError:  # a str subclass, which _intern keeps as it is
            return None
        # the pairs gained and lost, with how often (C-level set and count passes: the
        # file's size in pairs, none of them costs a Python step per pair but the last)
        before, after = list(zip(old.sym_qnames, old.sym_kinds)), list(zip(qnames, kinds))
        sb, sa = set(before), set(after)
        if len(sb) == len(before) and len(sa) == len(after):  # no pair twice: sets will do
            gone, came = dict.fromkeys(sb - sa, 1), dict.fromkeys(sa - sb, 1)
        else:
            cb, ca = Counter(before), Counter(after)
            gone = {p: n - ca.get(p, 0) for p, n in cb.items() if n > ca.get(p, 0)}
            came = {p: n - cb.get(p, 0) for p, n in ca.items() if n > cb.get(p, 0)}
        for (q, k), n in gone.items():
            self._count_out(q, k, n)
        for (q, k), n in came.items():
            self._count_in(q, k, n)
        # parents: as add_file sets them, the last symbol of a qname that has one winning
        last = dict([(q, p) for q, p in zip(qnames, [r[2] for r in rows]) if p])
        table = self.parents
        for q, p in [(q, p) for q, p in last.items() if table.get(q) != p]:
            table[q] = _intern(p)
        # declared results and fields: replayed over the symbols sharing a qname with one that
        # can declare them (a second definition of the name voids its results, as in add_file)
        typed = {rows[i][0] for i, k in enumerate(kinds) if k in _TYPED_KINDS and len(rows[i]) > 3 and rows[i][3]}
        seen: set[str] = set()
        for q, kind, _parent, *rest in (r for r in rows if r[0] in typed):
            res = declared_results(language, kind, rest[0]) if rest else ()
            if q in seen:
                if fi.results.get(q, ()) != res and fi.results.get(q) != ():
                    fi.results[q] = ()
            elif res:
                fi.results[q] = res
            seen.add(q)
            flds = declared_fields(language, kind, rest[0]) if rest else {}
            if flds:
                fi.fields[q] = flds
        for q in old.results.keys() - fi.results.keys():
            _drop_path(self.results, q, path)
        for q, res in fi.results.items():
            self.results.setdefault(q, {})[path] = res
        for q in old.fields.keys() - fi.fields.keys():
            _drop_path(self.fields, q, path)
        for q, flds in fi.fields.items():
            self.fields.setdefault(q, {})[path] = flds
        if fi.results != old.results or fi.fields != old.fields:
            self._returning = None
        fi.sym_qnames, fi.sym_kinds = qnames, kinds
        self.files[path] = fi
        names = self._names
        for q, _k in came:
            for sep in _NAME_SEPS:
                if sep in q:
                    h = hash(q.rsplit(sep, 1)[1]) & _NAMES_MASK
                    names[h >> 3] |= 1 << (h & 7)
        self._changed(old, fi)
        return {q for q, _k in gone} | {q for q, _k in came}

    def _count_in(self, qname: str, kind: str, n: int) -> None:
        k = self.kinds.get(qname)
        if k is None:
            self.kinds[qname] = kind if n == 1 else {kind: n}
        elif isinstance(k, str):
            self.kinds[qname] = {k: 1 + n} if k == kind else {k: 1, kind: n}
        else:
            k[kind] = k.get(kind, 0) + n

    def _count_out(self, qname: str, kind: str, n: int) -> None:
        k = self.kinds.get(qname)
        if k is None:
            return
        if isinstance(k, str):
            k = {k: 1}
        k[kind] = k.get(kind, 0) - n
        if k[kind] <= 0:
            del k[kind]
        if len(k) == 1 and next(iter(k.values())) == 1:
            self.kinds[qname] = next(iter(k))
        elif k:
            self.kinds[qname] = k
        if not k:
            del self.kinds[qname]
            self.parents.pop(qname, None)

    def remove_file(self, path: str) -> None:
        fi = self._remove(path)
        if fi is not None:
            self._changed(fi, None)

    def _changed(self, old: FileInfo | None, new: FileInfo | None) -> None:
        """After a file's symbols or imports changed: the star graph stays when the change
        leaves it as it was (``_Stars.keep_after``), and then so do resolve_qname's answers
        that name none of the names whose definers may have moved (a qname walk looks up the
        names of its parts; the texts of imports, the other names a walk looks up, hold none
        of them, or the graph would not stay); the other answers go. A cache of more than
        ``_KEEP_ANSWERS`` answers is not sorted: it goes whole."""
        cache = self._cache
        stars = cache.get(None)
        if stars is None or not stars.keep_after(old, new):
            self._cache = {}
        elif len(cache) > _KEEP_ANSWERS:
            self._cache = {None: stars}
        else:  # the answers that name none of the names whose definers may have moved stay
            moved = stars.last_moved
            self._cache = {k: v for k, v in list(cache.items())
                           if k is None or not (moved.intersection(_PARTS.split(k.lstrip(":\\")))
                                                if isinstance(k, str) else k[1] in moved)}

    def _count_stars(self, fi: FileInfo, n: int) -> None:
        sep = _sep(fi.language)
        for text in fi.stars:
            parts = text.split(sep)
            for i in range(1, len(parts) + 1):
                _count(self.star_prefixes, sep.join(parts[:i]), n)
        for text in (*fi.stars, *fi.bindings.values(), *(t for ts in fi.alternatives.values() for t in ts)):
            for part in set(_PARTS.split(text)):
                _count(self.ref_parts, part, n)

    def _remove(self, path: str) -> FileInfo | None:
        """Take ``path`` out of the table (its caches are the caller's to invalidate)."""
        fi = self.files.pop(path, None)
        if fi is None:
            return None
        if fi.results or fi.fields:
            self._returning = None
        self._count_stars(fi, -1)
        for qname in fi.fields:
            f = self.fields.get(qname)
            if f is not None:
                f.pop(path, None)
                if not f:
                    del self.fields[qname]
        for qname in fi.results:
            r = self.results.get(qname)
            if r is not None:
                r.pop(path, None)
                if not r:
                    del self.results[qname]
        for qname, kind in zip(fi.sym_qnames, fi.sym_kinds):
            self._count_out(qname, kind, 1)  # bases stay until set_bases(): the indexer compares them
        if fi.module:
            s = self.module_files.get(fi.module)
            if s is not None:
                s.discard(path)
                if not s:
                    del self.module_files[fi.module]
        return fi

    def drop_cache(self) -> None:
        """Let go of resolve_qname's answers: after a bulk update they are up to
        ``cache_limit`` entries no lookup may ask for again. The star graph stays, with the
        tables the update's searches paid for (the next edits look their new calls up in
        them)."""
        stars = self._cache.get(None)
        self._cache = {} if stars is None else {None: stars}

    def warm_stars(self) -> None:
        """Make the star graph now, rather than in the lookups of the first edits after a
        load (a daemon that started on an index finds its tables only once its searches have
        paid for them): every module's component, the reachable-name map, and the definer
        tables of the components with the most modules (where a search is repeated from the
        most entries), while their entries, with those of the tables made before (by searches,
        or an earlier warm), add up to at most the symbol table's qnames (one more array pair
        per qname: 12 bytes each). The tables are made in one pass over the
        symbol table (``_Definers.build_many``)."""
        stars = self._cache.get(None)
        if stars is None:
            stars = self._cache.setdefault(None, _Stars(self))
        with stars.lock:
            for m in list(self.module_files):
                stars.component(m)
            if stars.reach_names is None:
                stars.reach_names = _ALL_NAMES  # no skipping while the map is computed
                stars.reach_names = stars._reach_names()
            per_module: Counter[str] = Counter()
            for q in self.kinds:
                for sep in _NAME_SEPS:
                    if sep in q:
                        per_module[q.rsplit(sep, 1)[0]] += 1
            # the tables already made (by an earlier warm, or by searches) count against it
            room = len(self.kinds) - sum(sum(per_module[m] for m in t.mods)
                                         for t in stars.tables.values() if t is not None)
            chosen: dict[str, list[tuple[int, list[str]]]] = {}
            for c in sorted(stars.members, key=lambda c: (-len(stars.members[c]), c)):
                for sep in sorted({_sep(fi.language) for m in stars.members[c] for fi in self.module_bindings(m)}):
                    if (c, sep) in stars.tables:
                        continue
                    closure = _Definers.closure(stars, c, sep)
                    if closure is None:
                        stars.tables[(c, sep)] = None
                        continue
                    size = sum(per_module[m] for m in closure)
                    if size > room:
                        continue
                    room -= size
                    chosen.setdefault(sep, []).append((c, closure))
            for sep, items in chosen.items():
                for (c, _), t in zip(items, _Definers.build_many(stars, [cl for _, cl in items], sep)):
                    stars.tables[(c, sep)] = t

    def set_bases(self, bases: dict[str, list[str]]) -> None:
        self.bases = bases
        stars = self._cache.get(None)  # the star graph does not depend on bases
        self._cache = {} if stars is None else {None: stars}

    # -- queries -----------------------------------------------------------------------
    def exists(self, qname: str) -> bool:
        return qname in self.kinds

    def kind(self, qname: str) -> str:
        k = self.kinds.get(qname)
        if not k:
            return ""
        if isinstance(k, str):
            return k
        for pref in ("class", "struct", "interface", "trait", "enum", "type", "function", "method", "test",
                     "constant", "module"):
            if pref in k:
                return pref
        return next(iter(k))

    def is_module(self, qname: str) -> bool:
        return qname in self.module_files

    def is_type(self, qname: str) -> bool:
        k = self.kinds.get(qname)
        if isinstance(k, str):
            return k in TYPE_KINDS
        return bool(k) and any(x in TYPE_KINDS for x in k)

    def result_of(self, qname: str, index: int) -> tuple[str, str] | None:
        """(path of the declaring file, result type as written) of result ``index`` of the
        function or method ``qname``; None when it declares none there, or when the files
        that define ``qname`` declare different ones."""
        by_path = self.results.get(qname)
        if not by_path:
            return None
        found = {r for r in by_path.values()}
        if len(found) != 1:
            return None
        res = next(iter(found))
        if index >= len(res) or not res[index]:
            return None
        return min(by_path), res[index]

    def field_of(self, qname: str, field: str) -> tuple[str, str] | None:
        """(path of the declaring file, declared type as written) of field ``field`` of the Go
        struct ``qname``; None when no file declares it or files declare it differently."""
        by_path = {p: f[field] for p, f in self.fields.get(qname, {}).items() if field in f}
        if len(set(by_path.values())) != 1:
            return None
        path = min(by_path)  # files declaring it alike (build-tagged twins): the first
        return path, by_path[path]

    def names_returning(self, names: set[str]) -> set[str]:
        """Short names of the functions and methods whose declared results name one of
        ``names`` (its head or last segment): what a return hint reads changes with them.
        Looked up in an index of every declared result and field type, made again only after
        one changed (a scan of them all on every save cost 6.5 ms on the stdlib)."""
        index = self._returning
        if index is None:
            index = self._returning = self._returning_index()
        out: set[str] = set()
        for n in names:
            hit = index.get(n)
            if hit:
                out |= hit
        return out

    def _returning_index(self) -> dict[str, set[str]]:
        index: dict[str, set[str]] = {}
        for qname, by_path in self.results.items():
            short = _names_last(qname)
            for res in by_path.values():
                for t in res:
                    if t:
                        index.setdefault(t.lstrip("[]").split(".", 1)[0], set()).add(short)
                        index.setdefault(t.rsplit(".", 1)[-1], set()).add(short)
        # and of the Go structs whose fields' declared types name one (field hints read them;
        # their rows are stored under the struct's name)
        for qname, by_path in self.fields.items():
            short = _names_last(qname)
            for flds in by_path.values():
                for t in flds.values():
                    index.setdefault(t.lstrip("*").split(".", 1)[0], set()).add(short)
                    index.setdefault(t.rsplit(".", 1)[-1], set()).add(short)
        return index

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

    def resolve_qname(self, q: str, sep: str = ".") -> str | None:
        """Canonical symbol qname for a dotted reference, following re-exports and bases.

        A pure function of (q, sep) and the symbol table, whatever was looked up before and
        whatever another thread looks up meanwhile. Two kinds of step:

        * a name of a module (``m.n``) is looked for as a C preprocessor with include guards
          would meet it: the module's own definition first, then, file by file in path order,
          the file's imports of that name (in source order) and its star imports (``#include``,
          ``from x import *``, in order), each star-imported module entered depth first and
          at most once (``_find``). Include and star chains have no depth limit; a cycle
          ends where the search meets a module it has entered. The answer for a module
          depends on where the search starts only inside a strongly connected component of
          the star-import graph (``_Stars``); it is kept index-wide per (module, name) for the
          module the search started from, and per (component, name) when nothing was found;
        * the rest (a prefix, a named import's target, a class member) is a walk with a depth
          limit and a cycle guard of its own: an answer shaped by either stays with its walk,
          only one that met neither is kept index-wide, with the room its walk used.

        The index-wide cache and the star graph are replaced, never emptied, when the table
        changes; a lookup keeps the ones it started with."""
        cache = self._cache
        stars = cache.get(None)  # the star graph of this table, kept with its cache
        if stars is None:
            stars = cache.setdefault(None, _Stars(self))
        if len(cache) >= self.cache_limit:  # bounded: a pure function, recomputed
            cache = self._cache = {None: stars}
        return self._walk(q, sep, 0, (cache, {}, set(), stars))[0]

    def _walk(self, q: str, sep: str, depth: int, walk: tuple) -> tuple[str | None, int, bool]:
        """(answer, room: how many levels below ``depth`` its walk went, tainted: whether the
        cycle guard or the depth limit shaped it)."""
        if depth > _MAX_DEPTH:
            return None, 0, True
        if q in self.kinds:
            return q, 0, False
        if sep not in q:
            return None, 0, False
        cache, local, path, _ = walk
        key = q if sep == "." else sep + q
        hit = cache.get(key)
        if hit is not None and depth + hit[1] <= _MAX_DEPTH:
            return hit[0], hit[1], False
        if key in path:  # the cycle guard: this walk's own
            return None, 0, True
        if key in local:
            return local[key], 0, True
        path.add(key)
        try:
            res, room, tainted = self._step(q, sep, depth, walk)
        finally:
            path.discard(key)
        if tainted:
            local[key] = res
        else:
            cache[key] = _NO_ANSWER[room] if res is None else (res, room)
        return res, room, tainted

    def _step(self, q: str, sep: str, depth: int, walk: tuple) -> tuple[str | None, int, bool]:
        prefix, last = q.rsplit(sep, 1)
        p, r, cut = self._walk(prefix, sep, depth + 1, walk)
        room = r + 1
        if p is None:
            return None, room, cut
        if self.is_module(p):
            t, r, c = self._find(p, last, sep, depth, walk)
            return t, max(room, r), cut or c
        if self.is_type(p):
            return self.member(p, last, sep), room, cut
        direct = f"{p}{sep}{last}"
        return (direct if direct in self.kinds else None), room, cut

    def _find(self, module: str, name: str, sep: str, depth: int, walk: tuple) -> tuple[str | None, int, bool]:
        """``name`` as seen from ``module`` (see resolve_qname): (answer, room, tainted).

        A depth-first search over the star-import graph with a set of entered modules. Why
        its answers can be kept: the search enters a component C of the graph only through
        a module x all of whose component is still unentered (a module reachable from x that
        was entered before has been searched completely, or is on the search's stack, and
        then x could reach back to it: the same component). Everything entered before found
        nothing, so from x on the search finds what a search starting at x finds: the
        answer for x. When the search leaves x with nothing found, nothing is reachable from
        any module of C (they all reach the same modules), so every module of C answers
        None. Inside C the answer depends on the entry (``a`` includes ``b`` and ``b``
        includes ``a``; both define ``f``): only entries are kept."""
        h = hash(name) & _NAMES_MASK
        if not self._names[h >> 3] & (1 << (h & 7)):  # nothing anywhere is called so
            return None, 0, False
        cache, local, _, stars = walk
        comp = stars.component
        name = _intern(name)  # one string for the cache keys of a name (and its qnames')
        key = (module, name, sep)
        whole = (comp(module), name, sep)
        hit = cache.get(key) or cache.get(whole) or stars.decide(whole, cache)
        if hit is not None and depth + hit[1] <= _MAX_DEPTH:
            return hit[0], hit[1], False
        if key in local:
            return local[key], 0, True
        if whole in local:
            return None, 0, True
        _, _, path, _ = walk
        if key in path:  # a star import resolved through a name led back here: this walk's guard
            return None, 0, True
        path.add(key)
        try:
            return self._search(module, name, sep, depth, walk, key)
        finally:
            path.discard(key)

    def _search(self, module: str, name: str, sep: str, depth: int, walk: tuple,
                key: tuple) -> tuple[str | None, int, bool]:
        cache, local, _, stars = walk
        comp = stars.component
        kinds = self.kinds
        room = 0
        tainted = False
        entered: set[str] = {module}
        # the search's stack: [module, its component, entered from another component (or the
        # start), iterator over its steps]
        stack: list = []
        found: str | None = None

        def enter(m: str, is_entry: bool) -> str | None:
            direct = f"{m}{sep}{name}"
            if direct in kinds:
                return direct
            stack.append((m, comp(m), is_entry, stars.steps(m)))
            return None

        found = enter(module, True)
        work = stars.work
        # the names something star-imported can answer (None until a table pays for itself)
        reach = stars.reach_names
        h = hash(name) & stars.reach_mask
        unreachable = reach is not None and not reach[h >> 3] & (1 << (h & 7))
        steps_taken = 0
        while stack and found is None:
            m, c, is_entry, steps = stack[-1]
            work[c] = work.get(c, 0) + 1
            steps_taken += 1
            step = next(steps, None)
            if step is None:  # searched completely: nothing is reachable from here
                stack.pop()
                if is_entry:  # for every module of its component: one entry
                    if tainted:
                        local[(c, name, sep)] = None
                    else:
                        cache[(c, name, sep)] = (None, room)
                continue
            kind, arg = step
            if kind == 0:  # a file's imports of ``name``, by name, in order
                own = f"{m}{sep}{name}"
                for target in arg.targets(name):
                    if target == own:
                        continue
                    t, r, tc = self._walk(target, sep, depth + 1, walk)
                    room, tainted = max(room, r + 1), tainted or tc
                    if t is not None:
                        found = t
                        break
            elif kind == 1:  # a star import of a module of the graph
                if arg in entered:
                    continue
                entered.add(arg)
                if unreachable:  # nothing star-imported anywhere answers the name
                    continue
                ac = comp(arg)
                if ac != c:
                    hit = cache.get((arg, name, sep)) or cache.get((ac, name, sep)) \
                        or stars.decide((ac, name, sep), cache)
                    if hit is not None and depth + hit[1] <= _MAX_DEPTH:
                        room = max(room, hit[1])
                        found = hit[0]
                        continue
                found = enter(arg, ac != c)
            else:  # a star import of anything else (``<linux/sched.h>``): what its text names
                direct = f"{arg}{sep}{name}"
                if direct in kinds:
                    found = direct
                    continue
                if depth + 1 > _MAX_DEPTH:
                    tainted = True
                    continue
                p = stars.named.get(arg, _MISSING)
                if p is _MISSING:
                    p, r, tc = self._walk(arg, sep, 0, walk)  # the text alone, as a lookup of its own
                    if tc:
                        tainted = True
                    else:
                        stars.named[arg] = p
                if p is None:
                    continue
                room = max(room, 1)
                if self.is_module(p):
                    t, r, tc = self._find(p, name, sep, depth + 1, walk)
                    room, tainted = max(room, r + 1), tainted or tc
                    found = t
                elif self.is_type(p):
                    found = self.member(p, name, sep)
                else:
                    direct = f"{p}{sep}{name}"
                    found = direct if direct in kinds else None
        stars.note_steps(steps_taken)
        # what the search found is the answer of every entry still on its stack (and of the
        # start, which may have answered before anything was pushed)
        if found is not None:
            store = local if tainted else cache
            value = found if tainted else (found, room)
            for m, _c, is_entry, _ in stack:
                if is_entry:
                    store[(m, name, sep)] = value
            store[key] = value
        return found, room, tainted


class _Stars:
    """The star-import graph of a SymbolIndex (module -> the modules of the graph its files
    star-import, ``#include`` in C) and its strongly connected components, computed on
    demand (Tarjan, iterative) and kept until the table changes. Shared by lookups running
    in several threads: a component is computed under a lock, and once computed it never
    changes."""

    def __init__(self, index: SymbolIndex):
        self.index = index
        self.plans: dict[str, tuple] = {}
        self.named: dict[str, str | None] = {}  # a star import's text -> what it names (not a module)
        self.comp: dict[str, int] = {}
        self.members: dict[int, list[str]] = {}  # a component of more than one module -> its modules
        self.work: dict[int, int] = {}  # steps searches took inside a component
        self.tables: dict[tuple[int, str], _Definers | None] = {}  # (component, sep) -> its table
        # a bit per hash of every name a star-imported module can answer (see note_steps)
        self.reach_names: bytearray | _AllNames | None = None
        self.reach_mask = _NAMES_MASK  # the hash bits reach_names is indexed by
        self.steps_taken = 0  # steps every search on this graph took
        self.lock = threading.RLock()  # re-entered: building a map or a table looks texts up
        self._next = 0
        # names whose definers an edit kept this graph across may have moved: no table decides them
        self.moved: set[str] = set()
        self.last_moved: set[str] = set()  # the names the last kept edit moved

    def keep_after(self, old: FileInfo | None, new: FileInfo | None) -> bool:
        """Whether this graph (components, plans, tables, reachable-name map) still holds
        after a file's symbols or imports changed from ``old`` to ``new`` (None: no file),
        updating it if so. It does when the file stays in the same module with the same star
        imports, the module set is unchanged, and no qname the change adds, removes or
        re-kinds is a star import's text or a prefix of one (what decides whether a text
        names a module, something else, or nothing). What may move is then who defines a
        name: the names of the qnames changed and of the bindings changed go into ``moved``,
        which no definer table decides, and into the reachable-name map (a superset); the
        module's plan is made again. What a star import's text names (the map and the tables
        rely on it) is looked up through the names of the parts of star and named imports'
        texts only: when none of those moved, it is what it was. A live edit then keeps the
        tables a full index paid for (issue 24: save-to-queryable on the kernel)."""
        if old is None or new is None or old.module != new.module or old.stars != new.stars:
            return False
        idx = self.index
        qs = {q for q, _ in set(zip(old.sym_qnames, old.sym_kinds)) ^ set(zip(new.sym_qnames, new.sym_kinds))}
        if any(q in idx.star_prefixes for q in qs):
            return False
        names = {q.rsplit(sep, 1)[1] for q in qs for sep in _NAME_SEPS if sep in q}
        names.update(b for b in old.bindings.keys() | new.bindings.keys()
                     if old.targets(b) != new.targets(b))
        if len(self.moved) + len(names) > _MOVED_LIMIT or any(n in idx.ref_parts for n in names):
            return False
        with self.lock:
            self.moved |= names
            self.last_moved = names
            self.plans.pop(new.module, None)
            reach = self.reach_names
            if isinstance(reach, bytearray):
                for n in names:
                    h = hash(n) & self.reach_mask
                    reach[h >> 3] |= 1 << (h & 7)
        return True

    def note_steps(self, n: int) -> None:
        """Count a search's steps; once they add up to a pass over the symbol table, compute
        ``reach_names``: what any module that some file star-imports can answer, by its own
        qnames (``module<sep>name``) and its files' imports by name. A search reaches other
        modules only through star imports, so a name without a bit is never found past the
        start module, and the search skips its star imports (in C: a call of a function that
        only a ``.c`` file defines walks none of the caller's headers). The map is computed
        once the searches cost what it costs (a full index, not a single edit's few lookups);
        a star import of a text that is not a module (``plan`` kind 2) can answer anything: no
        map."""
        self.steps_taken += n
        if self.reach_names is not None or self.steps_taken < len(self.index.kinds):
            return
        with self.lock:
            if self.reach_names is None:
                self.reach_names = _ALL_NAMES  # no skipping while the map is computed
                self.reach_names = self._reach_names()

    def text_names(self, text: str, sep: str) -> tuple[str | None, bool]:
        """What a star import's text that is not a module names, as the search's kind-2 step
        looks it up: (qname or None, whether the lookup was cut by the depth limit or a
        cycle guard); kept in ``named`` like the step's own lookups."""
        p = self.named.get(text, _MISSING)
        if p is not _MISSING:
            return p, False
        idx = self.index
        p, _r, tainted = idx._walk(text, sep, 0, (idx._cache, {}, set(), self))
        if not tainted:
            self.named[text] = p
        return p, tainted

    def _reach_names(self) -> bytearray | _AllNames:
        idx = self.index
        # 8 bits per qname (at least 64 K bits): 1 in 8 or fewer names not answerable passes
        size = 1 << 16
        while size < 8 * len(idx.kinds) and size <= _NAMES_MASK:
            size <<= 1
        mask = size - 1
        bits = bytearray(size >> 3)
        included: set[str] = set()
        for m in list(idx.module_files):
            for kind, arg in self.plan(m):
                if kind == 1:
                    included.add(arg)
                elif kind == 2:  # a text naming nothing (C ``<stdio.h>`` beside a stdio.c) is no step
                    for sep in _NAME_SEPS:
                        p, tainted = self.text_names(arg, sep)
                        if tainted:
                            return _ALL_NAMES
                        if p is not None and idx.is_type(p):  # its bases' members too: no map
                            return _ALL_NAMES
                        if p is not None:  # its qnames answer, as if star-imported
                            included.add(p)
        for q in idx.kinds:
            for sep in _NAME_SEPS:
                if sep in q:
                    pre, name = q.rsplit(sep, 1)
                    if pre in included:
                        h = hash(name) & mask
                        bits[h >> 3] |= 1 << (h & 7)
        for m in included:
            for fi in idx.module_bindings(m):
                for b in fi.bindings:
                    h = hash(b) & mask
                    bits[h >> 3] |= 1 << (h & 7)
        self.reach_mask = mask
        return bits

    def decide(self, whole: tuple, cache: dict) -> tuple | None:
        """The answer of every module of a component for a name, when the component's definer
        table decides it (``_Definers``): kept in ``cache`` under ``whole`` = (component, name,
        sep) and returned as (answer, 0); None when there is no table yet or it cannot decide.

        A table is built for a component of more than one module once the searches inside it
        have taken as many steps as the table costs to build (one pass over the symbol table):
        a search entering a large include cycle walks it from its own entry, and a different
        entry repeats the walk, so the table is paid for by the walks it saves (at most twice
        the cheaper of the two)."""
        c, name, sep = whole
        if name in self.moved:
            return None
        t = self.tables.get((c, sep), _MISSING)
        if t is _MISSING:
            if c not in self.members or self.work.get(c, 0) < len(self.index.kinds):
                return None
            with self.lock:
                t = self.tables.get((c, sep), _MISSING)
                if t is _MISSING:
                    self.tables[(c, sep)] = None  # none while it is built (its own lookups)
                    t = self.tables[(c, sep)] = _Definers.build(self, c, sep)
        if t is None:
            return None
        m = t.only(name)
        if m is _MULTI:
            return None
        q = None if m is None else f"{m}{sep}{name}"
        val = (q, 0) if q is not None and q in self.index.kinds else _NO_ANSWER[0]
        cache[whole] = val
        return val

    def plan(self, m: str) -> tuple:
        """The steps of a search in module ``m``, in order: for each of its files (by path), (0,
        file) when the file imports names, then (1, module) per star import of a module of the
        graph, (2, text) per any other star import whose text (or a prefix of it) is a qname;
        a star import of a text that names nothing (a C system header) has no step."""
        p = self.plans.get(m)
        if p is None:
            idx = self.index
            out: list = []
            kinds = idx.kinds
            for fi in idx.module_bindings(m):
                if fi.bindings:
                    out.append((0, fi))
                for star in fi.stars:
                    if star in kinds and idx.is_module(star):
                        out.append((1, star))
                    elif _names_something(star, kinds, fi.language):
                        out.append((2, star))
            p = self.plans[m] = tuple(out)
        return p

    def steps(self, m: str):
        return iter(self.plan(m))

    def _succ(self, m: str):
        return iter([arg for kind, arg in self.plan(m) if kind == 1])

    def component(self, m: str) -> int:
        c = self.comp.get(m)
        if c is not None:
            return c
        with self.lock:
            if m not in self.comp:
                self._tarjan(m)
            return self.comp[m]

    def _tarjan(self, root: str) -> None:
        comp = self.comp
        index: dict[str, int] = {root: 0}
        low: dict[str, int] = {root: 0}
        on: list[str] = [root]
        onset = {root}
        work = [(root, self._succ(root))]
        n = 1
        while work:
            v, it = work[-1]
            for w in it:
                if w in comp:
                    continue
                if w not in index:
                    index[w] = low[w] = n
                    n += 1
                    on.append(w)
                    onset.add(w)
                    work.append((w, self._succ(w)))
                    break
                if w in onset and index[w] < low[v]:
                    low[v] = index[w]
            else:
                work.pop()
                if work:
                    u = work[-1][0]
                    low[u] = min(low[u], low[v])
                if low[v] == index[v]:
                    cid = self._next
                    self._next += 1
                    if on[-1] != v:  # more than one module
                        self.members[cid] = on[on.index(v):]
                    while True:
                        w = on.pop()
                        onset.discard(w)
                        comp[w] = cid
                        if w == v:
                            break


_MULTI = object()

class _AllNames:
    """``reach_names`` when every name may be reachable: every bit set, no memory."""

    def __getitem__(self, i: int) -> int:
        return 0xFF


_ALL_NAMES = _AllNames()


class _Definers:
    """Who can answer a name for the modules of one star-import component: every module
    reachable from it (its closure) and, per name, the one closure module that defines it
    (a qname ``module<sep>name``), or ``_MULTI`` when more than one could answer (two
    definers, or a file of the closure importing the name by name).

    Why one definer decides the component: a search that enters the component at any module
    goes on until it finds something, and can reach the whole closure; modules of the closure
    it entered before were searched completely and found nothing. So with a single possible
    answer in the closure every entry finds it, and with none every entry finds nothing; only
    names with several possible answers need the search from their own entry. A closure with
    a star import of a text that is not a module (``_Stars.plan`` kind 2) could reach
    anything: no table (None).

    Open addressing over the names' hashes: ``keys`` holds the hash (0: empty), ``vals`` the
    module's position in ``mods`` or -1 (``_MULTI``). Two names with one hash share an entry:
    the entry can only become ``_MULTI`` or name a module that defines one of them, and the
    answer is checked against the symbol table, so a shared entry never gives a wrong answer."""

    __slots__ = ("keys", "mask", "mods", "vals")

    def __init__(self, mods: list[str], hashes: Iterable[tuple[int, int]], n: int):
        from array import array

        size = 8
        while size < 2 * n:
            size <<= 1
        self.mods = mods
        self.mask = size - 1
        self.keys = array("q", bytes(8 * size))
        self.vals = array("i", bytes(4 * size))
        keys, vals, mask = self.keys, self.vals, self.mask
        for h, i in hashes:
            h = h or 1
            j = h & mask
            while keys[j] and keys[j] != h:
                j = (j + 1) & mask
            if not keys[j]:
                keys[j], vals[j] = h, i
            elif vals[j] != i:
                vals[j] = -1

    @classmethod
    def build(cls, stars: _Stars, c: int, sep: str) -> _Definers | None:
        closure = cls.closure(stars, c, sep)
        return None if closure is None else cls.build_many(stars, [closure], sep)[0]

    @staticmethod
    def closure(stars: _Stars, c: int, sep: str) -> list[str] | None:
        """Every module component ``c`` reaches (its own first), or None when a star import
        of a text naming something could answer anything."""
        closure = list(stars.members[c])
        seen = set(closure)
        i = 0
        while i < len(closure):
            for kind, arg in stars.plan(closure[i]):
                if kind == 2:  # a text naming something could answer anything: no table
                    p, tainted = stars.text_names(arg, sep)
                    if p is not None or tainted:
                        return None
                if kind == 1 and arg not in seen:
                    seen.add(arg)
                    closure.append(arg)
            i += 1
        return closure

    @classmethod
    def build_many(cls, stars: _Stars, closures: list[list[str]], sep: str) -> list[_Definers]:
        """The tables of several closures, in one pass over the symbol table."""
        from array import array

        idx = stars.index
        where: dict[str, list[tuple[int, int]]] = {}  # module -> (table, its position in the closure)
        for t, closure in enumerate(closures):
            for i, m in enumerate(closure):
                where.setdefault(m, []).append((t, i))
        # (name hash, module position) per table: 12 bytes a pair
        pairs = [(array("q"), array("i")) for _ in closures]
        for q in idx.kinds:
            if sep in q:
                pre, name = q.rsplit(sep, 1)
                at = where.get(pre)
                if at is not None:
                    h = hash(name)
                    for t, i in at:
                        pairs[t][0].append(h)
                        pairs[t][1].append(i)
        for t, closure in enumerate(closures):
            hashes, pos = pairs[t]
            for m in closure:
                for fi in idx.module_bindings(m):
                    for b in fi.bindings:
                        hashes.append(hash(b))
                        pos.append(-1)
        out = []
        for t, closure in enumerate(closures):
            hashes, pos = pairs[t]
            out.append(cls(closure, zip(hashes, pos), len(hashes)))
            pairs[t] = (array("q"), array("i"))  # let go of the pairs as each table is made
        return out

    def only(self, name: str):
        """The closure's one module defining ``name``, None when none does, ``_MULTI``."""
        h = hash(name) or 1
        keys, mask = self.keys, self.mask
        j = h & mask
        while keys[j]:
            if keys[j] == h:
                v = self.vals[j]
                return _MULTI if v < 0 else self.mods[v]
            j = (j + 1) & mask
        return None


def _count(counter: Counter, key: str, n: int) -> None:
    c = counter[key] + n
    if c > 0:
        counter[key] = c
    else:
        counter.pop(key, None)


def _names_something(text: str, kinds, language: str) -> bool:
    """Whether a star import's text can name anything of the graph: it, or a prefix of it, is
    a qname. A text that cannot (C ``<linux/sched.h>``: a system header, by the C extractor's
    rule, never resolves) is left out of the search."""
    sep = _sep(language)
    parts = text.split(sep)
    return any(sep.join(parts[:i]) in kinds for i in range(1, len(parts) + 1))


def _bind(fi: FileInfo, imports: Iterable[ImportRef]) -> None:
    """A file's import bindings, alternatives and star imports, from its imports in order."""
    language = fi.language
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


def _drop_path(by_qname: dict[str, dict], qname: str, path: str) -> None:
    d = by_qname.get(qname)
    if d is not None:
        d.pop(path, None)
        if not d:
            del by_qname[qname]


def _intern(s: str) -> str:
    return sys.intern(s) if type(s) is str else s


def _names_last(qname: str) -> str:
    for sep in ("::", "."):
        if sep in qname:
            qname = qname.rsplit(sep, 1)[-1]
    return qname.rsplit("/", 1)[-1]


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
        # the stored calls of a function, for parameter hints (set by the indexer for its
        # parameter pass, see ``param_type``); None: parameter hints bind nothing
        self.param_sites = None
        self._param_cache: dict = {}

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
                    return Resolution(m, "super", CONFIDENCE["super"])
            return UNRESOLVED
        # the receiver is an untyped parameter: the class every call site passes
        par = parse_param_hint(hint) if hint else None
        if par is not None:
            t = self.param_type(caller, par, fi) if len(parts) >= 2 else None
            m = idx.member(t, last, sep) if t else None
            return Resolution(m, "inferred", INFERRED_FROM_CALLERS) if m else UNRESOLVED
        # the receiver holds a call's result: the type the called function declares
        ret = parse_return_hint(hint) if hint else None
        if ret is not None:
            if len(parts) < 2:
                return UNRESOLVED
            t = self.returned_type(path, caller, ret, fi)
            if t is None:
                return UNRESOLVED
            if t == "":
                return EXTERNAL if lang != "python" else UNRESOLVED
            m = idx.member(t, last, sep)
            if not m:
                return UNRESOLVED
            # a class called (``Foo().m``, Go ``T{}.m``) is as certain as a constructor hint
            return Resolution(m, "inferred", CONFIDENCE["inferred"] if self._constructs(path, caller, ret)
                              else INFERRED_FROM_RESULT)
        # the receiver is a struct's field (``c.snapshot.View()``): the type the field declares
        fld = parse_field_hint(hint) if hint else None
        if fld is not None:
            if len(parts) < 2:
                return UNRESOLVED
            t = self.field_type(caller, fld, fi)
            if t is None:
                return UNRESOLVED
            if t == "":
                return EXTERNAL
            m = idx.member(t, last, sep)
            return Resolution(m, "inferred", INFERRED_FROM_RESULT) if m else UNRESOLVED
        # receiver type hints from the extractor
        if hint and len(parts) >= 2:
            # ``obj = cls(...)`` in a classmethod: the hint names the enclosing class itself
            t = self.enclosing_class(caller) if lang == "python" and hint in selfs else \
                self.resolve_type(hint, caller, fi)
            if t:
                m = idx.member(t, last, sep)
                if m:
                    return Resolution(m, "inferred", CONFIDENCE["inferred"])
            elif lang != "python" and self._external_type(hint, caller, fi):
                return EXTERNAL  # a method of an imported library type (Go ``t *testing.T``)
        # self.m / this.m
        if parts[0] in selfs and len(parts) == 2:
            cls = self.enclosing_class(caller)
            if cls:
                m = idx.member(cls, last, sep)
                if m:
                    return Resolution(m, "self", CONFIDENCE["self"])
            return UNRESOLVED
        # Cls().m — a method on a fresh instance
        if len(parts) >= 2 and parts[-2].endswith("()") and all(not _CALLISH.search(p) for p in parts[:-2]):
            t = self.resolve_type(".".join(parts[:-2] + [parts[-2][:-2]]), caller, fi)
            if t:
                m = idx.member(t, last, sep)
                if m:
                    return Resolution(m, "inferred", CONFIDENCE["inferred"])
            return UNRESOLVED
        if any(_CALLISH.search(p) or p == "?" for p in parts):
            return UNRESOLVED
        if len(parts) == 1 and lang in _IMPLICIT_THIS:
            cls = self.enclosing_class(caller)
            if cls:
                m = idx.member(cls, last, sep)
                # a constructor (a method named like its class) is reached by naming the class
                if m and idx.kind(m) not in TYPE_KINDS and m.rsplit(sep, 2)[-2] != last:
                    return Resolution(m, "self", CONFIDENCE["self"])
        if lang == "rust" and parts[0] in ("crate", "super") and len(parts) >= 2:
            r = idx.resolve_qname(sep.join([_rust_path_head(parts[0], caller, fi, idx), *parts[1:]]), sep)
            if r is None or idx.kind(r) == "module":
                return UNRESOLVED
            return Resolution(r, "module", CONFIDENCE["module"])
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
                # a default export is as sure as an import, even one bound in the same file
                return Resolution(d, how, CONFIDENCE["import"]) if d else UNRESOLVED
            return Resolution(target, how, CONFIDENCE[how])
        full = sep.join([target, *parts[1:]])
        r = idx.resolve_qname(full, sep)
        if r is None:
            return UNRESOLVED
        if idx.kind(r) == "module":
            return UNRESOLVED
        return Resolution(r, "module" if idx.is_module(target) else how, CONFIDENCE[how])

    def param_type(self, caller: str, par: tuple[int, str, str, str], fi: FileInfo) -> str | None:
        """The class of an untyped parameter (``(pos, param, mode, function)`` of
        ``parse_param_hint``): the one class that every stored call of the function passes
        there, read from the calls' ``args`` (``param_sites``). None when unknown: no parameter
        pass is running, the function is not one definition, a method overrides a base's (the
        base's callers reach it too), some call of its name is unresolved or itself bound
        through a parameter hint, some call passes something else, unpacks arguments, calls
        a method through its class (``C.m(obj, x)``) or a closure, or no call passes anything."""
        sites = self.param_sites
        if sites is None or fi.language != "python":
            return None
        pos, pname, mode, fname = par
        idx = self.index
        fq: str | None = None
        q: str | None = caller
        while q:
            if q.rsplit(".", 1)[-1] == fname and idx.kind(q) in ("function", "method"):
                fq = q
                break
            q = idx.parents.get(q)
        if fq is None:  # ``self.x = param`` in one method, ``self.x.m()`` in another
            cls = self.enclosing_class(caller)
            cand = f"{cls}.{fname}" if cls else ""
            if cand and idx.kind(cand) in ("function", "method"):
                fq = cand
        if fq is None or not isinstance(idx.kinds.get(fq), str):
            return None
        key = (fq, pos, pname, mode)
        cache = self._param_cache
        if key not in cache:
            cache[key] = None
            cache[key] = self._param_type(fq, pos, pname, mode, fname, sites)
        return cache[key]

    def _param_type(self, fq: str, pos: int, pname: str, mode: str, fname: str, sites) -> str | None:
        idx = self.index
        if mode == "m":
            cls = idx.parents.get(fq)
            if not cls or not idx.is_type(cls) or idx.member(cls, fname, ".", skip_self=True):
                return None
        if sites.unresolved(fname) or sites.handed_on(fname):
            return None
        rows = sites.callers(fq)
        if not rows:
            return None
        found: set[str] = set()
        for r in rows:
            if r.hint.startswith(PARAM_HINT):
                return None
            if mode == "m" and r.resolution not in ("self", "super", "inferred"):
                return None  # ``Cls.m(obj, x)``: the arguments move by one
            parsed = parse_call_args(r.args)
            if parsed is None:
                return None
            positional, keywords = parsed
            if 0 <= pos < len(positional):
                e = positional[pos]
            else:
                e = keywords.get(pname, "-")
            if e == "-":
                continue  # None, or the default (None)
            rfi = idx.files.get(r.path)
            if e == "?" or rfi is None or rfi.language != "python":
                return None
            if e == "self":
                t = self.enclosing_class(r.caller)
            elif e.startswith(RETURN_HINT):
                ret = parse_return_hint(e)
                t = self.returned_type(r.path, r.caller, ret, rfi) if ret is not None else None
            else:
                t = self.resolve_type(e, r.caller, rfi)
            if not t:
                return None
            found.add(t)
            if len(found) > 1:
                return None
        return next(iter(found)) if found else None

    def field_type(self, caller: str, fld: tuple[str, str], fi: FileInfo) -> str | None:
        """The type a field hint's field declares (``(field, owner type)`` of
        ``parse_field_hint``): the owner type is resolved from the caller, the field's type
        where the struct is declared. "" when that type lies outside the graph; None when
        unknown (an embedded or promoted field, a field of no named type, an owner that is
        no struct of the graph)."""
        field, owner = fld
        o = self.resolve_type(owner, caller, fi)
        if o is None:
            return None
        found = self.index.field_of(o, field)
        if found is None:
            return None
        tpath, text = found
        tfi = self.index.files.get(tpath)
        if tfi is None:
            return None
        text = text.lstrip("*")
        t = self.resolve_type(text, o, tfi)
        if t is not None:
            return t
        return "" if self._external_type(text, o, tfi) else None

    def returned_type(self, path: str, caller: str, ret: tuple[str, int, str, bool], fi: FileInfo) -> str | None:
        """The class or type a return hint's call gives (``(inner, index, callee)`` of
        ``parse_return_hint``): the call is resolved as any call is, then the result its
        target declares is resolved where the target is declared. "" when that type lies
        outside the graph (an imported library's, the language's own); None when unknown.
        A call of a class (Python ``x = factory_cls()`` through a lowercase name) gives the class."""
        inner, index, callee, element = ret
        r = self.resolve_call(path, caller, callee, inner)
        if r.resolution == "external":
            return ""
        target = r.target
        if not target:
            return None
        idx = self.index
        if idx.is_type(target):
            return target if index == 0 and not element else None
        found = idx.result_of(target, index)
        if found is None:
            return None
        tpath, text = found
        if text.startswith("[]") != element:  # a slice where one value is read, or the reverse
            return None
        text = text[2:] if element else text
        if text == SELF_TYPE:
            return self.enclosing_class(target)
        tfi = idx.files.get(tpath)
        if tfi is None:
            return None
        t = self.resolve_type(text, target, tfi)
        if t is not None:
            return t
        return "" if self._external_type(text, target, tfi) else None

    def _constructs(self, path: str, caller: str, ret: tuple[str, int, str, bool]) -> bool:
        r = self.resolve_call(path, caller, ret[2], ret[0])
        return bool(r.target) and self.index.is_type(r.target)

    def resolve_base(self, path: str, child: str, base: str) -> Resolution:
        fi = self.index.files.get(path)
        if fi is None:
            return UNRESOLVED
        base = re.sub(r"[<\[].*$", "", base)  # generics: List[int], Foo<T>
        parent = self.index.parents.get(child, fi.module)
        t = self.resolve_type(base, parent, fi)
        if t and t != child:
            # a base class named is as sure as an import, even one defined in the same file
            return Resolution(t, "import" if base.split(".")[0] in fi.bindings else "local", CONFIDENCE["import"])
        return UNRESOLVED

    def resolve_import(self, path: str, im: ImportRef) -> str:
        fi = self.index.files.get(path)
        sep = _sep(fi.language) if fi else "."
        if im.name and im.name != "*":
            r = self.index.resolve_qname(f"{im.module}{sep}{im.name}", sep)
            if r:
                return r
        return im.module if self.index.is_module(im.module) else ""
