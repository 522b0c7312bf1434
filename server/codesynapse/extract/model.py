"""What extraction produces for one file: metadata only, never source bodies.

Lines are 1-based and inclusive; columns are 0-based byte offsets within the line. The LSP
layer converts to UTF-16 positions at the edge.

The fact structs (Symbol, CallSite, ImportRef, Inherit) hold strings, numbers and flags only, so
they can never be part of a reference cycle: they are declared ``gc=False`` (not tracked by the
garbage collector, and a tuple of them is untracked once collected). The daemon keeps the
extraction of recently edited large files (extract/incremental.py); tracked, a few kernel
headers' worth made each full collection take 0.3-1.1 s inside a save (issue 24).
"""

from __future__ import annotations

import msgspec

# Symbol kinds. Code units: function, method, class, struct, interface, trait, enum, type,
# constant, variable (a package-level Go ``var``), module, test. Documents: section (markdown heading), key (config key path).
CODE_KINDS = frozenset(
    {"function", "method", "class", "struct", "interface", "trait", "enum", "type", "constant",
     "variable", "module", "test"}
)
UNIT_KINDS = frozenset({"function", "method", "test"})  # calls inside are attributed to them
TYPE_KINDS = frozenset({"class", "struct", "interface", "trait", "enum", "type"})
DOC_KINDS = frozenset({"section", "key"})


class Symbol(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    qname: str
    name: str
    kind: str
    signature: str
    start_line: int
    end_line: int
    start_col: int
    end_col: int
    hash: str  # sha1 of the definition's bytes: changes when the symbol changes
    summary: str = ""  # redacted one-liner (docstring first sentence / leading comment)
    parent: str = ""  # qname of the containing symbol ("" at module level)
    is_test: bool = False
    exported: bool = True


class CallSite(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    caller: str  # qname of the innermost unit (function/method/class body/module)
    callee: str  # callee expression as written, whitespace removed: "self.save", "os.path.join"
    name: str  # last segment: "save", "join"
    line: int
    col: int
    receiver_hint: str = ""  # type the extractor inferred for the receiver, as written ("ArgumentParser")
    kind: str = "call"  # call | new
    args: str = ""  # what each argument is, when the language says (see ``call_args``); "" unknown


class ImportRef(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    module: str  # absolute module as the language names it ("os.path", "net/http", "./util" resolved)
    name: str = ""  # imported name ("" for the whole module); "*" for a star import
    alias: str = ""  # local binding if different
    line: int = 0

    @property
    def binding(self) -> str:
        """The local name this import binds."""
        if self.alias:
            return self.alias
        if self.name and self.name != "*":
            return self.name
        return self.module.split(".")[0] if "/" not in self.module else self.module.rsplit("/", 1)[-1]


class Inherit(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    child: str  # qname of the class/type
    base: str  # base expression as written
    kind: str = "inherits"  # inherits | implements
    line: int = 0


class Delta(msgspec.Struct, frozen=True, kw_only=True):
    """How an incremental extraction (extract/incremental.py) differs from the extraction of
    the file's version whose content hash is ``base_hash``: the definitions and call sites that
    start on lines ``first_line``..``last_line`` of that version are replaced by ``symbols`` and
    ``calls`` (lines of the new version), and those that start after ``last_line`` move by
    ``shift`` lines. The module symbol is the new extraction's first symbol. A store holding
    the base version can apply this instead of comparing every row (SqliteGraphStore)."""

    base_hash: str
    first_line: int
    last_line: int
    shift: int
    symbols: list[Symbol] = []
    calls: list[CallSite] = []


class FileExtraction(msgspec.Struct, kw_only=True):
    path: str  # relative to the repository root, '/' separated
    language: str
    hash: str
    size: int
    lines: int
    module: str = ""  # the module/package qname this file defines
    symbols: list[Symbol] = []
    calls: list[CallSite] = []
    imports: list[ImportRef] = []
    inherits: list[Inherit] = []
    partial: bool = False  # the parse had syntax errors; what parsed is kept
    error: str = ""
    delta: Delta | None = None  # set by an incremental extraction (see Delta)


# A receiver hint naming no type but a call whose result the receiver holds
# (``h = self.getConnection(...)``; Go ``cmd, flags, err := c.Find(args)``): the resolver binds
# the call and reads the type from the called function's declared (or inferred) result.
# ``=>{inner}=>{index}.{callee}``: ``inner`` is the hint of the call's own receiver ("" when
# none is needed), ``index`` the result taken (Go multi-value assignments), written ``[]{index}``
# for an element of that result (Go ``for _, v := range f()`` over a slice). The text after the
# last dot is the called function's name, so stores index the hint under it.
RETURN_HINT = "=>"


def return_hint(callee: str, inner: str = "", index: int = 0, element: bool = False) -> str:
    """The hint of a receiver bound to result ``index`` of calling ``callee``; "" when it
    cannot be written (a nested return hint: one level only, so stores can find the rows
    that depend on a function's result by its name)."""
    if not callee or inner.startswith(RETURN_HINT) or RETURN_HINT in callee or "?" in callee:
        return ""
    return f"{RETURN_HINT}{inner}{RETURN_HINT}{'[]' if element else ''}{index}.{callee}"


def parse_return_hint(hint: str) -> tuple[str, int, str, bool] | None:
    """(inner, index, callee, element) of a return hint, else None."""
    if not hint.startswith(RETURN_HINT):
        return None
    inner, sep, rest = hint[len(RETURN_HINT):].partition(RETURN_HINT)
    num, dot, callee = rest.partition(".")
    element = num.startswith("[]")
    num = num[2:] if element else num
    if not sep or not dot or not num.isdigit() or not callee:
        return None
    return inner, int(num), callee, element


# A receiver hint naming a struct field (Go ``c.snapshot.View()`` where ``c`` is of type
# ``completer`` and the struct is declared in another file): ``->{field}.{type}``, ``type`` the
# hint of the field's owner (a type name as written). The resolver reads the field's declared
# type from the owner's signature. The text after the last dot is the owner type's name, so
# stores index the hint under it (a change to the struct re-resolves the rows).
FIELD_HINT = "->"


def field_hint(owner_type: str, field: str) -> str:
    """The hint of receiver ``x.field`` where ``x`` is hinted ``owner_type``; "" when it cannot
    be written (the owner's hint is itself a return or field hint)."""
    if not owner_type or not field or owner_type.startswith((RETURN_HINT, FIELD_HINT)) or "." in field:
        return ""
    return f"{FIELD_HINT}{field}.{owner_type}"


def parse_field_hint(hint: str) -> tuple[str, str] | None:
    """(field, owner type) of a field hint, else None."""
    if not hint.startswith(FIELD_HINT) or hint.startswith(RETURN_HINT):
        return None
    field, dot, owner = hint[len(FIELD_HINT):].partition(".")
    if not dot or not field or not owner:
        return None
    return field, owner


# A receiver hint naming an untyped parameter of a function (Python ``def transfer(source,
# amount): source.withdraw(amount)``): ``<-{pos}:{param}:{mode}.{function}``, ``pos`` the
# position a bound call passes it at (-1 keyword-only), ``mode`` how the function is called
# (``f`` a function or staticmethod: any call; ``m`` a method: bound calls only, ``self`` not
# counted; ``c`` a classmethod). The resolver gives the parameter the one class that every
# in-project call site of the function passes there (each site's ``CallSite.args``); any other
# or unknown argument leaves it untyped. The text after the last dot is the function's short
# name, so stores index the hint under it (a change to a call of that name re-resolves it).
PARAM_HINT = "<-"
PARAM_MODES = frozenset({"f", "m", "c"})


def param_hint(pos: int, param: str, mode: str, function: str) -> str:
    """The hint of receiver ``param`` of ``function`` ("" when it cannot be written)."""
    if not param.isidentifier() or not function.isidentifier() or mode not in PARAM_MODES:
        return ""
    return f"{PARAM_HINT}{pos}:{param}:{mode}.{function}"


def parse_param_hint(hint: str) -> tuple[int, str, str, str] | None:
    """(pos, param, mode, function) of a parameter hint, else None."""
    if not hint.startswith(PARAM_HINT):
        return None
    head, dot, function = hint[len(PARAM_HINT):].rpartition(".")
    parts = head.split(":")
    if not dot or len(parts) != 3 or parts[2] not in PARAM_MODES or not parts[1].isidentifier() \
            or not function.isidentifier():
        return None
    try:
        pos = int(parts[0])
    except ValueError:
        return None
    return pos, parts[1], parts[2], function


# ``CallSite.args``: what a call passes, for parameter hints. Entries are joined by ";":
# positional arguments in order, then ``name=entry`` keyword arguments. An entry is a type as
# written (``Account``, ``bank.Account``: an instance of it), ``self`` (the caller's own
# instance), ``-`` (``None``), ``&name`` (a name or attribute of no known class, not a local:
# perhaps a function handed on as a value, whose parameters are then not typed) or ``?``
# (anything else: unknown). ``*`` alone: the call unpacks
# ``*args`` / ``**kwargs`` or was too long to write, so every argument is unknown; ``()``: no
# arguments. "" (a language that does not write them): unknown.
ARGS_UNKNOWN = "*"
ARGS_NONE = "()"
ARGS_MAX = 256


def call_args(positional: list[str], keywords: list[tuple[str, str]], splat: bool = False) -> str:
    """``CallSite.args`` of a call (``()`` when it passes nothing)."""
    if splat:
        return ARGS_UNKNOWN
    s = ";".join([*positional, *(f"{k}={v}" for k, v in keywords)])
    return (s or ARGS_NONE) if len(s) <= ARGS_MAX else ARGS_UNKNOWN


def value_refs(args: str) -> list[str]:
    """The names ``CallSite.args`` hands on as values (its ``&name`` entries)."""
    if "&" not in args:
        return []
    return [v[1:] for e in args.split(";") for v in (e.partition("=")[2] if "=" in e and
                                                        e.partition("=")[0].isidentifier() else e,)
            if v.startswith("&")]


def parse_call_args(args: str) -> tuple[list[str], dict[str, str]] | None:
    """(positional entries, keyword entries) of ``CallSite.args``; None when unknown."""
    if args in (ARGS_UNKNOWN, ""):
        return None
    pos: list[str] = []
    kw: dict[str, str] = {}
    for e in args.split(";") if args != ARGS_NONE else ():
        k, eq, v = e.partition("=")
        if eq and k.isidentifier():  # (a return hint entry starts with "=>")
            kw[k] = v
        elif kw:  # a positional entry after a keyword one: not written by call_args
            return None
        else:
            pos.append(e)
    return pos, kw
