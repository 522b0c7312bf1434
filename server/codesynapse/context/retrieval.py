"""Retrieval for tasks in plain words (DESIGN "Retrieval for tasks in plain words").

``minimalContext`` and plain-English ``search`` run legs over code-symbol metadata, never
bodies:

- exact: the task's identifiers, by qualified name and by name (case and punctuation kept);
  a name many definitions share singles out less than a rare one, and homonyms are told apart
  by the task's other identifiers (``_disambiguate``);
- literal: phrases quoted in the task, and identifiers no symbol is named by, where the code
  writes them (context/literals.py);
- lexical: BM25 with field weights over stemmed sub-words of each symbol's name, qualified
  name, signature, summary and path (context/lexical.py; the store's full-text table);
- dense: the task embedded locally against the symbols' metadata vectors
  (``app.symbol_vectors``, context/dense.py), when present and ready;
- tested: the library code that the tests in the lexical and dense legs' pools call (a test is
  named in the words of the behaviour it checks, the function it tests for its mechanism;
  ``tested_leg``), with the graph stage, unless the task asks about tests.

Each leg gives at most ``LEG_LIMIT`` candidates (the role prior orders a leg before it is
cut); they are fused by reciprocal-rank fusion (k = 60), the ``tested`` leg's candidates each
weighing their evidence normalized to the leg's best (``fuse``). Exact current matches (a symbol
the task names, a phrase found where it is written) come before approximate ranks. Then the
graph stage, in two rounds (``_expand``): a share of a top candidate's score (``DECAY``, split
over its callees or its callers, and a callee's share over the calls that reach it) goes to
the function that does its work and to the dispatcher that calls it (a type's members count as
its callees), to the overrides of a method (the same method in the subtypes and supertypes of
its type, by the index's inheritance edges), for a type, to the functions taking one as a
parameter (``_takers``) and, for a constant or a variable, to the code of its file that uses
it; the second round expands the best candidates the first did not, so a
candidate the first hop raised passes its share on one more hop (never back to its sender). Role
priors put tests, examples, docs, config, generated and vendored code below library code
unless the task asks for them (``role_of``, ``asked_roles``); the test suite's harness kept
outside test folders ranks as tests, found from the import graph (``find_test_support``). ``RetrievalConfig`` turns legs,
expansion and priors off one by one (the evaluation's ablations).
"""

from __future__ import annotations

import functools
import logging
import math
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from codesynapse.context import lexical, literals
from codesynapse.context.budget import Deadline
from codesynapse.graph.model import SymbolRow
from codesynapse.memory.rrf import RRF_K

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetrievalConfig:
    exact: bool = True
    lexical: bool = True
    dense: bool = True
    expand: bool = True  # one-hop score propagation along call edges
    priors: bool = True  # role priors


LEG_LIMIT = 10  # candidates per leg (DESIGN: at most 10 per leg, fused with RRF k = 60)
LEG_POOL = 4  # a leg reads this many times LEG_LIMIT rows, so that the role prior can order them before the cut
EXPAND_FROM = 5  # the top candidates (not yet expanded) whose neighbours receive a share of their score, per round
EXPAND_ROUNDS = 2  # rounds of the graph stage (the second expands what the first raised: two hops from a hit)
# languages where a type's field and its method may share a name (a member read is no method's)
FIELD_METHOD_HOMONYMS = frozenset({"java", "rust"})
DATA_KINDS = frozenset({"constant", "variable"})  # symbols that hold a value and do no work: their users do
DECAY = 0.5  # the share of a hit's score that one hop carries (split over the hop's neighbours, by sqrt)
EXPAND_FANOUT = 16
CALLABLE_KINDS = frozenset({"function", "method", "constructor"})  # what takes a type as a parameter (``_takers``)
TAKER_READ = 4 * (EXPAND_FANOUT + 1)  # signatures read per type: the phrase also matches words no type name
TYPE_KINDS = frozenset({"class", "struct", "interface", "trait", "enum", "type", "object", "record"})  # a hop with more distinct neighbours only reinforces candidates already found
ROLE_PRIOR = 0.25  # the factor of a symbol in test, example, docs, config, generated or vendored code
PLAIN_NAME_DF = 50  # a plain word (no case change, digit or _) in more symbols' lexical fields is no name
LITERAL_SYMBOLS = 12  # a needle written in more symbols than this does not single anything out
DENSE_UNAVAILABLE = "dense leg not available"

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[.:]{1,2}[A-Za-z_][A-Za-z0-9_]*)*")
# a phrase quoted in a task ('unrecognized arguments: %s'): looked up where it is written
_QUOTED = re.compile(r"'([^'\n]{4,200})'|\"([^\"\n]{4,200})\"|`([^`\n]{4,200})`")
CODE_LIKE = re.compile(r"_|[a-z][A-Z]|[A-Z]{2}|[A-Za-z][0-9]|[.:]")
# a number of the task, of three digits or more (a status code, a limit), not part of a word,
# a version, a decimal or a number written with thousands separators (10,000: code writes 10000)
_NUMBER = re.compile(r"(?<![\w.,])[0-9]{3,}(?![\w.,]*[\w])")


def acronym(word: str) -> bool:
    """A word of capital letters only (``POST``, ``HTTP``, ``JSON``): how English writes an
    acronym, so in a task it is a word, not an identifier, unless a symbol is named so
    (``CDLL``); written in code it is mostly a string or part of a longer name."""
    return len(word) >= 2 and word.isalpha() and word.isupper()


def code_like(word: str) -> bool:
    """Whether a word of a task naming no symbol looks like code (``_``, camelCase, digits,
    dots); an acronym does not."""
    return bool(CODE_LIKE.search(word)) and not acronym(word)


# words of a task that are no identifier of it (the exact leg skips them)
_STOP = frozenset("""
a an the and or of to in on for with by is are be it this that from as at into how why what where
which when who do does did can should would could fix add make use using get set find show change
update remove new all any not no we i you they our my their its code file function method class
""".split())  # noqa: SIM905

# ---- roles ------------------------------------------------------------------------------------
LIBRARY, TEST, EXAMPLE, DOCS, CONFIG, GENERATED, VENDORED = (
    "library", "test", "example", "docs", "config", "generated", "vendored")
_DOC_LANGS = frozenset({"markdown", "rst", "asciidoc", "text"})
_CONFIG_LANGS = frozenset({"yaml", "json", "toml", "ini", "xml", "properties"})
_EXAMPLE_PATH = re.compile(r"(^|/)[_.]?(examples?|samples?|demos?|tutorials?)(/|$)", re.IGNORECASE)
_DOC_PATH = re.compile(r"(^|/)(docs?|documentation)(/|$)", re.IGNORECASE)
_VENDOR_PATH = re.compile(r"(^|/)(vendor|third[_-]?party|node_modules|external|extern)(/|$)", re.IGNORECASE)
_GENERATED_PATH = re.compile(r"(^|/)(gen|generated|__generated__)(/|$)|_pb2(_grpc)?\.py$|\.pb(\.gw)?\.go$"
                             r"|_generated\.\w+$|\.generated\.\w+$|\.g\.\w+$|\.min\.js$|_string\.go$",
                             re.IGNORECASE)
# the words by which a task asks about a role (lower case; matched whole or as their stem)
ROLE_WORDS: dict[str, frozenset[str]] = {
    TEST: frozenset({"test", "tests", "testing", "tested", "spec", "specs", "fixture", "fixtures", "mock", "mocks",
                     "unittest", "pytest", "assert", "assertion"}),
    EXAMPLE: frozenset({"example", "examples", "sample", "samples", "demo", "demos", "tutorial"}),
    DOCS: frozenset({"doc", "docs", "documentation", "documented", "readme", "guide", "manual", "docstring"}),
    CONFIG: frozenset({"config", "configs", "configuration", "configure", "configured", "settings", "setting",
                       "manifest", "yaml", "json", "toml", "ini"}),
    GENERATED: frozenset({"generated", "codegen", "generator"}),
    VENDORED: frozenset({"vendor", "vendored", "vendoring", "third-party"}),
}
_ROLE_STEMS = {role: frozenset(lexical.stem(w) for w in ws) for role, ws in ROLE_WORDS.items()}


@functools.lru_cache(maxsize=65_536)
def role_of(path: str, is_test: bool = False, kind: str = "", language: str = "") -> str:
    """What a symbol's code is for, from its path, test flag, kind and language: ``test``,
    ``example``, ``docs``, ``config``, ``generated``, ``vendored`` or ``library`` (everything
    else). One definition for ranking and for choosing among homonyms. Memoized: a request
    asks it of the same rows again and again (~300 times per minimalContext), and up to six
    path patterns are searched each time."""
    if _VENDOR_PATH.search(path):
        return VENDORED
    if is_test or kind == "test" or literals.is_test_path(path):
        return TEST
    if language in _DOC_LANGS or kind == "section":
        return DOCS
    if language in _CONFIG_LANGS or kind == "key":
        return CONFIG
    if _GENERATED_PATH.search(path):
        return GENERATED
    if _EXAMPLE_PATH.search(path):
        return EXAMPLE
    if _DOC_PATH.search(path):
        return DOCS
    return LIBRARY


def row_role(r: SymbolRow) -> str:
    return role_of(r.path, r.is_test, r.kind, r.language)


def find_test_support(store) -> frozenset[str]:
    """The library-path files that are the test suite's harness, found from the import graph
    (a path says nothing of them: urllib3's ``dummyserver/``). A seed imports test code kept
    outside its own folder (library code does not depend on the test suite; a package that
    imports its own tests, to run them as a script, does not count) and only tests import it
    (at least one); then, until nothing changes, a file of a harness file's folder that a
    harness file imports and that only tests and harness files import. A module counts as test
    code when all its files are; a file at the repository's root is never a seed. On the
    CPython standard library it finds none (``multiprocessing/util.py`` imports ``test`` but
    library code imports it), on Go's the ``testing`` helpers of ``crypto/internal/cryptotest``
    and ``internal/trace/testtrace``. A store without the import reads answers none."""
    files = [f for f in store.files() if f.status != "skipped"]
    touching = getattr(store, "imports_touching", None)
    if touching is None or not files:
        return frozenset()
    role = {f.path: role_of(f.path, language=f.language) for f in files}
    by_module: dict[str, set[str]] = {}
    for f in files:
        if f.module:
            by_module.setdefault(f.module, set()).add(f.path)
    test_modules = [m for m, ps in by_module.items() if all(role[p] == TEST for p in ps)]
    if not test_modules:
        return frozenset()

    def folder(p: str) -> str:
        return p.rpartition("/")[0]

    seeds = {row.path for _id, row in touching((), (), test_modules)
             if role.get(row.path) == LIBRARY and folder(row.path)
             and any(not t.startswith(folder(row.path) + "/") for t in by_module.get(row.module, ()))}
    if not seeds:
        return frozenset()
    folders = {folder(p) for p in seeds}
    module_of = {f.path: f.module for f in files}
    in_folder = [f for f in files if folder(f.path) in folders and role[f.path] == LIBRARY and f.module]
    importers: dict[str, set[str]] = {}
    for _id, row in touching((), (), [f.module for f in in_folder]):
        importers.setdefault(row.module, set()).add(row.path)

    def who(p: str) -> set[str]:  # the files importing p's module, its own files left out
        return importers.get(module_of[p], set()) - by_module.get(module_of[p], set())

    out = {p for p in seeds if who(p) and all(role.get(q) == TEST for q in who(p))}
    changed = bool(out)
    while changed:
        changed = False
        for f in in_folder:
            if f.path in out or folder(f.path) not in {folder(p) for p in out}:
                continue
            w = who(f.path)
            if w & out and all(role.get(q) == TEST or q in out for q in w):
                out.add(f.path)
                changed = True
    return frozenset(out)


def test_support_of(app, store) -> frozenset[str]:
    """``find_test_support`` of ``store``, computed once per index version (kept on the App,
    keyed by the store and the App's last update). It reads every file row and the imports of
    the test modules (1.3-2.8 s on the kernel's 58,911 files): after an update the answer of the
    version before is served while a background thread computes the new one (what is the
    harness changes only when imports do), so no request after a save waits for it; only the
    first request of a store computes it in place."""
    key = (id(store), getattr(app, "last_update", None))
    cached = getattr(app, "_test_support", None)
    if cached is not None and cached[0][0] == key[0]:
        if cached[0] != key:
            _refresh_test_support(app, store, key)
        return cached[1]
    cached = (key, find_test_support(store))
    try:
        app._test_support = cached
    except AttributeError:
        pass
    return cached[1]


_support_lock = threading.Lock()


def _refresh_test_support(app, store, key) -> None:
    """Compute ``find_test_support`` for ``key`` in a background thread (one at a time per App)."""
    with _support_lock:
        if getattr(app, "_test_support_busy", False):
            return
        app._test_support_busy = True

    def run() -> None:
        try:
            app._test_support = (key, find_test_support(store))
        except Exception:  # a store closed under it: the next request tries again
            log.debug("test support refresh failed", exc_info=True)
        finally:
            app._test_support_busy = False

    threading.Thread(target=run, name="codesynapse-test-support", daemon=True).start()


def asked_roles(text: str) -> set[str]:
    """The roles a task asks about by name ("why does the retry test fail" asks about tests)."""
    raw = {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z-]*", text)}
    stems = {lexical.stem(w) for w in raw}
    return {role for role, ws in ROLE_WORDS.items() if raw & ws or stems & _ROLE_STEMS[role]}


def prior(role: str, asked: set[str]) -> float:
    return 1.0 if role == LIBRARY or role in asked else ROLE_PRIOR


def fuse(rankings: list[list[int]], weights: list[dict[int, float] | None] | None = None,
         k: int = RRF_K) -> dict[int, float]:
    """Reciprocal-rank fusion (k = 60) of the legs' id lists (best first; an id counts once
    per leg, at its best rank): each candidate gets ``1 / (k + rank)`` from every leg that
    holds it. A leg may weigh its candidates (``weights``, one map per leg or None): a
    candidate then gets ``w / (k + rank)``, ``w`` in (0, 1] (1 when the map does not name it).
    The ``tested`` leg does: its candidates are not retrieved for the task's words but
    inferred from the tests the other legs found, and its scores (how many of those tests
    call a function, how high they ranked) span orders of magnitude — the function only the
    best tests exercise and one that a single test deep in a pool calls are not the same
    evidence, as their ranks 1 and 2 would say. Their scores are normalized to the leg's best
    (max normalization), so the best keeps a full rank share and the others their fraction of it."""
    out: dict[int, float] = {}
    for li, ids in enumerate(rankings):
        w = weights[li] if weights is not None and li < len(weights) else None
        seen: set[int] = set()
        for rank, i in enumerate(ids, 1):
            if i in seen:
                continue
            seen.add(i)
            out[i] = out.get(i, 0.0) + (w.get(i, 1.0) if w else 1.0) / (k + rank)
    return out


# ---- the answer of the legs -----------------------------------------------------------------------
@dataclass
class Ranked:
    """Candidates, best first: ``order`` lists ``sure`` ones (exact current matches) first."""

    rows: dict[int, SymbolRow] = field(default_factory=dict)
    order: list[int] = field(default_factory=list)
    sure: set[int] = field(default_factory=set)
    score: dict[int, float] = field(default_factory=dict)
    legs: dict[int, set[str]] = field(default_factory=dict)
    lines: dict[int, int] = field(default_factory=dict)  # where a literal needle is written
    set_back: set[int] = field(default_factory=set)  # homonyms the task's other identifiers did not mean
    # candidates the role prior set back (tests, examples, docs... the task did not ask about)
    role_back: set[int] = field(default_factory=set)
    provenance: list[Any] = field(default_factory=list)  # legs that ran; a dict for a leg that did not
    unread: int = 0  # files the literal leg left unread (time budget)


class Retriever:
    """The legs, fusion, expansion and priors over one store, for one request."""

    def __init__(self, app, store, config: RetrievalConfig | None = None):
        self.app = app
        self.store = store
        self.config = config or getattr(app, "retrieval_config", None) or RetrievalConfig()
        self._module_rep: dict[str, int] = {}
        # each approximate leg's pool, best first, before the role prior's cut (the tests in it
        # lead to the code they exercise: ``tested_leg``)
        self._pools: dict[str, list[SymbolRow]] = {}
        # the tested leg's candidates' scores, normalized to its best (``fuse``)
        self.tested_weight: dict[int, float] = {}
        self._support: frozenset[str] | None = None
        self._lines: dict[str, list[str]] = {}  # the files _member_reads read, by path (both rounds of _expand)

    def support_paths(self) -> frozenset[str]:
        """``find_test_support`` of the store (``test_support_of``), read once per request."""
        if self._support is None:
            self._support = test_support_of(self.app, self.store)
        return self._support

    def role(self, r: SymbolRow) -> str:
        """``row_role``, with the test suite's harness (``support_paths``) as test code."""
        role = row_role(r)
        return TEST if role == LIBRARY and r.path in self.support_paths() else role

    # -- helpers ------------------------------------------------------------------------------
    def _key(self, r: SymbolRow, rows: dict[int, SymbolRow]) -> int:
        """A package's module symbol counts once, not once per file."""
        if r.kind == "module":
            rid = self._module_rep.setdefault(r.qname, r.id)
            if rid != r.id and rid in rows:
                return rid
        rows.setdefault(r.id, r)
        return r.id

    def _prior(self, r: SymbolRow, asked: set[str]) -> float:
        return prior(self.role(r), asked) if self.config.priors else 1.0

    # -- exact ----------------------------------------------------------------------------------
    def exact_leg(self, task: str, rows: dict[int, SymbolRow], dl: Deadline):
        """(score by id, sure ids, what each identifier gave each symbol, identifiers naming
        no symbol). A qualified name or a code-like name (``_``, camelCase, dots) the task
        writes in full is a sure match; a plain word that is a name counts less, and a name
        many definitions share less than a rare one."""
        store = self.store
        scores: Counter[int] = Counter()
        sure: set[int] = set()
        by_ident: dict[str, dict[int, float]] = {}
        unnamed: list[str] = []
        idents = list(dict.fromkeys(m.group(0) for m in _IDENT.finditer(task)))
        for ident in idents[:64]:
            dl.check()
            if ident.lower() in _STOP:
                continue
            hit = False
            modules: set[str] = set()  # a package of many files counts once per identifier
            named = store.symbols_by_name(ident.split(".")[-1].split("::")[-1], limit=20)
            # an acronym ("POST", "HTTP") is a name only when a symbol is named so, in that case
            is_code = bool(CODE_LIKE.search(ident)) and (not acronym(ident) or any(r.name == ident for r in named))
            for r in store.symbols_by_qname(ident):
                hit = True
                if r.kind == "module":
                    if r.qname in modules:
                        continue
                    modules.add(r.qname)
                rid = self._key(r, rows)
                scores[rid] += 3.0 if r.kind == "module" else 10.0
                if r.kind != "module":
                    sure.add(rid)
                    got = by_ident.setdefault(ident, {})
                    got[rid] = got.get(rid, 0.0) + 10.0
            # a name many definitions share ("error", "run") singles out less than a rare one
            n_named = len({r.qname for r in named if r.kind != "module"})
            rarity = 1.0 / (1.0 + math.log2(max(1, n_named)))
            if not is_code:
                rarity *= 0.5
                if named and self.count_lexical(ident, PLAIN_NAME_DF + 1) > PLAIN_NAME_DF:
                    # a plain word that the metadata of many symbols uses ("input", "headers",
                    # "connection") is a word of the task, not a name: the lexical leg weighs it.
                    # A rare one names what it names ("dlopen")
                    named = []
                    hit = True
            for r in named:
                hit = True
                if r.kind == "module":
                    if r.qname in modules:
                        continue
                    modules.add(r.qname)
                full = ident in (r.qname, r.name) or r.qname.endswith("." + ident)
                w = 1.0 if r.kind == "module" else (6.0 if full else 2.0) * rarity
                rid = self._key(r, rows)
                scores[rid] += w
                if r.kind != "module":
                    if full and is_code:
                        sure.add(rid)
                    got = by_ident.setdefault(ident, {})
                    got[rid] = got.get(rid, 0.0) + w
            if not hit:
                unnamed.append(ident)
        return scores, sure, by_ident, unnamed

    def disambiguate(self, by_ident: dict[str, dict[int, float]], rows: dict[int, SymbolRow],
                     scores: Counter[int], dl: Deadline) -> set[int]:
        """Homonyms told apart by the task's other identifiers: when a name of the task is
        shared by several symbols (``requestAsyncId`` in five scheduler actions) and some of
        them call, are called by or are members of a symbol another identifier of the task
        names (``setInterval``), the others lose what that name gave them: the task's words
        together say which one is meant. Nothing changes when none or all of them are linked.
        Returns the symbols set back."""
        store = self.store
        demoted: set[int] = set()
        for ident, got in by_ident.items():
            homonyms = [rows[i] for i in got]
            if len({r.qname for r in homonyms}) < 2:
                continue
            others = {rows[i].qname for other, g in by_ident.items() if other != ident for i in g}
            others -= {r.qname for r in homonyms}
            if not others:
                continue
            linked: set[int] = set()
            qs = [r.qname for r in homonyms]
            callees_of, callers_of = store.callees_many(qs, limit=200), store.callers_many(qs, limit=200)
            for r in homonyms:
                dl.check()
                near = {c.target for c in callees_of.get(r.qname, []) if c.target}
                near |= {c.caller for c in callers_of.get(r.qname, [])}
                if r.parent:
                    near.add(r.parent)
                if near & others:
                    linked.add(r.id)
            if 0 < len(linked) < len(homonyms):
                for r in homonyms:
                    if r.id not in linked:
                        scores[r.id] -= got[r.id]
                        demoted.add(r.id)
        return demoted

    # -- literal -----------------------------------------------------------------------------
    def literal_rows(self, needles: list[literals.Needle], dl: Deadline, keep_saturated: bool = True
                     ) -> tuple[list[tuple[literals.Needle, SymbolRow, list[int], int]], int]:
        """(needle, enclosing symbol, hit lines in it, hits of that needle in all) for each
        symbol in whose range a needle is written (context/literals.py); production code
        first, then path and line. A hit outside every symbol counts for the file's module."""
        store = self.store
        files = [(f.path, f.language) for f in store.files() if f.status != "skipped"]
        policy = self.app.policy
        extra = getattr(policy, "redact_patterns", ()) if policy is not None else ()
        scan = literals.find(str(self.app.workspace.root), files, needles, extra,
                             seconds=min(literals.BUDGET_S, dl.remaining))
        hits = scan.hits
        if not keep_saturated:
            hits = [h for h in hits if h.needle not in scan.saturated]
        by: dict[tuple[str, int], tuple[literals.Needle, SymbolRow, list[int]]] = {}
        total: Counter[str] = Counter()
        modules: dict[str, SymbolRow | None] = {}
        kinds = {n.text: n for n in needles}
        for h in hits:
            total[h.needle] += 1
            r = store.symbol_at(h.path, h.line)
            if r is None:
                if h.path not in modules:
                    modules[h.path] = next((x for x in store.symbols_in_file(h.path) if x.kind == "module"), None)
                r = modules[h.path]
            if r is None:
                continue
            key = (h.needle, r.id)
            if key not in by:
                by[key] = (kinds[h.needle], r, [])
            by[key][2].append(h.line)
        out = [(n, r, lines, total[n.text]) for n, r, lines in by.values()]
        out.sort(key=lambda x: (literals.is_test_path(x[1].path), x[1].path, x[2][0]))
        return out, scan.unread

    def literal_leg(self, task: str, unnamed: list[str], described: set[str], rows: dict[int, SymbolRow],
                    dl: Deadline, known=lambda w: False):
        """(score by id, sure ids, first line by id, unread files). Phrases quoted in the task
        and words no symbol is named by, where the code writes them; code-like words first;
        a word written in many symbols singles nothing out. A plain word that is a word of the
        names the identifiers found ("scheduler action" for ``AsyncAction.requestAsyncId``)
        describes them: it is not looked up; nor is a plain word the lexical leg finds in
        the symbols' metadata (``known``): the files are read only for what it cannot find."""
        needles = [literals.Needle(next(g for g in m.groups() if g), word=False) for m in _QUOTED.finditer(task)]
        words = [literals.Needle(x, word=True) for x in sorted(unnamed, key=lambda x: not code_like(x))
                 if len(x) >= literals.MIN_NEEDLE
                 and (code_like(x) or (x.lower() not in described and not known(x)))]
        # the numbers of the task (a status a server answers, a limit): code writes them as they
        # are, and a number the task writes, written in few places, points at them. After the
        # code-like words, before the plain ones; weighed as a plain word
        numbers = [literals.Needle(x, word=True) for x in dict.fromkeys(_NUMBER.findall(task))]
        needles += [n for n in words if code_like(n.text)] + numbers + [n for n in words if not code_like(n.text)]
        needles = [n for n in needles if literals.long_enough(n.text)][:literals.MAX_NEEDLES]
        scores: Counter[int] = Counter()
        sure: set[int] = set()
        lines: dict[int, int] = {}
        if not needles:
            return scores, sure, lines, 0
        found, unread = self.literal_rows(needles, dl, keep_saturated=False)
        spread = Counter(n.text for n, _r, _l, _t in found)
        for n, r, hit_lines, total in found:
            if spread[n.text] > LITERAL_SYMBOLS:
                continue  # written everywhere: it singles nothing out
            code = not n.word or code_like(n.text)
            w = 16.0 if not n.word else 8.0 if code else 4.0  # a plain word: less
            rid = self._key(r, rows)
            scores[rid] += w * math.sqrt(len(hit_lines) / total)
            lines.setdefault(rid, hit_lines[0])
            if code and r.kind != "module":
                sure.add(rid)  # a quoted phrase or an identifier, where the code writes it
        return scores, sure, lines, unread

    # -- lexical -------------------------------------------------------------------------------
    def lexical_search(self, text: str, limit: int, offset: int = 0) -> list[tuple[SymbolRow, float]]:
        """The store's BM25 over the stemmed fields for the query terms of ``text``; a store
        without them (Neo4j, HugeGraph) answers from its name search over the words of the
        text (unstemmed, as its index holds them) and their stems."""
        terms = lexical.query_terms(text)
        if not terms:
            return []
        fn = getattr(self.store, "lexical_search", None)
        if fn is not None:
            return fn(terms, limit, offset)
        return self.store.search(_fallback_query(text, terms), limit, offset)

    def count_lexical(self, text: str, cap: int | None = None) -> int:
        terms = lexical.query_terms(text)
        if not terms:
            return 0
        fn = getattr(self.store, "count_lexical", None)
        if fn is not None:
            return fn(terms, cap)
        n = self.store.count_search(_fallback_query(text, terms))
        return n if cap is None else min(n, cap)

    def lexical_pool(self, task: str, got: list[tuple[SymbolRow, float]]) -> list[tuple[SymbolRow, float]]:
        """The lexical leg's pool (its first ``LEG_POOL`` times ``LEG_LIMIT`` rows) scored by BM25
        times the coordination factor of classic Lucene scoring: the share of the task's
        distinct query terms that the symbol's lexical fields hold. BM25 sums over the terms a
        symbol matches, so a name holding one word of the task that is rare ("finish") can
        outrank the symbol whose fields hold four of its words; the factor, parameter-free,
        prefers the symbol that covers more of what the task says. Best first (ties keep the
        BM25 order)."""
        terms = set(lexical.query_terms(task))
        if not terms:
            return got

        def coverage(r: SymbolRow) -> float:
            held = set(" ".join(lexical.symbol_fields(r.name, r.qname, r.signature, r.summary, r.path)).split())
            return len(terms & held) / len(terms)

        scored = [(r, s * coverage(r)) for r, s in got]
        return [x for _k, x in sorted(enumerate(scored), key=lambda y: (-y[1][1], y[0]))]

    def lexical_leg(self, task: str, rows: dict[int, SymbolRow], asked: set[str]) -> list[int]:
        got = self.lexical_pool(task, self.lexical_search(task, LEG_LIMIT * LEG_POOL))
        self._pools["lexical"] = [r for r, _s in got]
        ranked = sorted(enumerate(got), key=lambda x: (-x[1][1] * self._prior(x[1][0], asked), x[0]))
        out: list[int] = []
        for _i, (r, _s) in ranked:
            rid = self._key(r, rows)
            if rid not in out:
                out.append(rid)
            if len(out) >= LEG_LIMIT:
                break
        return out

    # -- dense -----------------------------------------------------------------------------------
    def dense_leg(self, task: str, rows: dict[int, SymbolRow], dl: Deadline,
                  asked: set[str] = frozenset()) -> tuple[list[int], Any]:
        """(ids, provenance entry): the metadata vectors' nearest symbols, mapped to current
        rows by (qualified name, path) — a hit whose symbol is gone or moved is dropped. Like
        the lexical leg it reads ``LEG_POOL`` times ``LEG_LIMIT`` hits and lets the role prior
        order them before the cut (rank times prior), so that tests near the task's words do
        not fill the leg's ten places ahead of the library code they exercise. The entry is
        ``"dense"`` when the leg is ready, else ``{leg, state, reason}``."""
        sv = getattr(self.app, "symbol_vectors", None)
        if sv is None:
            return [], {"leg": "dense", "state": "unavailable", "reason": DENSE_UNAVAILABLE}
        try:
            res = sv.search(task, LEG_LIMIT * LEG_POOL, timeout=min(2.0, max(0.1, dl.remaining)))
        except Exception as e:  # a broken model or store must not fail the request
            log.warning("dense leg failed: %s", e, exc_info=True)
            return [], {"leg": "dense", "state": "unavailable", "reason": f"{e.__class__.__name__}: {e}"[:200]}
        hits = list(getattr(res, "hits", []))[:LEG_LIMIT * LEG_POOL]
        current = self.store.symbols_by_qnames(h.qname for h in hits)
        found: list[tuple[float, SymbolRow]] = []
        for h in hits:
            match = next((r for r in current.get(h.qname, []) if r.path == h.path), None)
            if match is None:
                continue  # stale: the symbol is gone or moved since it was embedded
            found.append((float(h.score), match))
        self._pools["dense"] = [m for _s, m in found]
        found.sort(key=lambda x: -max(x[0], 0.0) * self._prior(x[1], asked))  # stable: ties keep the vector rank
        out: list[int] = []
        for _s, match in found:
            rid = self._key(match, rows)
            if rid not in out:
                out.append(rid)
            if len(out) >= LEG_LIMIT:
                break
        state = getattr(res, "state", "ready")
        if state == "ready":
            return out, "dense"
        entry = {"leg": "dense", "state": state}
        if getattr(res, "reason", ""):
            entry["reason"] = res.reason
        return out, entry

    # -- tested ---------------------------------------------------------------------------------
    def tested_leg(self, rows: dict[int, SymbolRow], dl: Deadline) -> list[int]:
        """The library code that the tests found by the lexical and dense legs exercise (their
        resolved callees). A test is written in the words of the behaviour it checks ("should
        return the previous value when the next value is an equal object", ``test_put_conn_when
        _pool_is_full_blocking``), the words a task uses, while the function under test is
        often named for its mechanism (``replaceEqualDeep``): the role prior sets the test
        back, and this leg hands its place on to what it tests. Each test weighs as its best
        place in a leg pool, 1 / (k + rank) as in RRF, split over its distinct library callees
        by the square root of their number (a test of one function says more about it than
        one calling twenty), each callee's share divided by the square root of how many calls
        in the graph reach it (a constructor or fixture helper every test calls singles nothing
        out: the symmetric normalization of ``_expand``, over call sites, counted without
        reading them: reading 200 callers of each callee cost ~30 ms a request on the stdlib,
        and the tune half ranked the same). At most ``LEG_LIMIT`` ids, best first; each one's
        score over the best one's is kept in ``tested_weight`` (fusion weighs it by that)."""
        self.tested_weight = {}
        weight: dict[str, float] = {}
        for pool in self._pools.values():
            for rank, r in enumerate(pool, 1):
                if self.role(r) == TEST and r.kind != "module":
                    weight[r.qname] = weight.get(r.qname, 0.0) + 1.0 / (RRF_K + rank)
        if not weight:
            return []
        store = self.store
        callees_of = store.callees_many(list(weight), limit=200)
        targets = {q: list(dict.fromkeys(c.target for c in callees_of.get(q, []) if c.target and c.target != q))
                   for q in weight}
        all_targets = list(dict.fromkeys(t for ts in targets.values() for t in ts))
        if not all_targets:
            return []
        dl.check()
        named = store.symbols_by_qnames(all_targets)
        lib = {t: x for t in all_targets
               for x in [next((y for y in named.get(t, []) if y.kind != "module" and self.role(y) == LIBRARY), None)]
               if x is not None}
        raw: Counter[str] = Counter()  # each callee's share before its fan-in divides it
        for q, w in weight.items():
            subjects = [t for t in targets[q] if t in lib]
            for t in subjects:
                raw[t] += w / math.sqrt(len(subjects))
        # the fan-in: how many calls of the whole graph reach the callee (one counting read
        # per callee, no call row built)
        dl.check()
        calls_of = store.relation_counts(list(raw))[0] if raw else {}
        gain = {t: r / math.sqrt(max(1, calls_of.get(t, 1))) for t, r in raw.items()}
        best = sorted(gain, key=lambda t: (-gain[t], t))[:LEG_LIMIT]
        ids: list[int] = []
        for t in best:
            rid = self._key(lib[t], rows)
            if rid not in self.tested_weight:
                ids.append(rid)
                self.tested_weight[rid] = gain[t] / gain[best[0]] if gain[best[0]] > 0 else 1.0
        return ids

    # -- everything -----------------------------------------------------------------------------
    def rank(self, task: str, dl: Deadline, paths: list[str] = ()) -> Ranked:
        cfg = self.config
        self._pools = {}  # this ranking's pools only (the legs below fill them)
        self.tested_weight = {}
        out = Ranked()
        rows = out.rows
        asked = asked_roles(task) if cfg.priors else set()
        rankings: list[list[int]] = []
        leg_names: list[str] = []
        sure_score: Counter[int] = Counter()

        def add_leg(name: str, ids: list[int]) -> None:
            rankings.append(ids)
            leg_names.append(name)
            for i in ids:
                out.legs.setdefault(i, set()).add(name)

        def cut(scores: Counter[int]) -> list[int]:
            live = [i for i, s in scores.items() if s > 0]
            live.sort(key=lambda i: (-scores[i] * self._prior(rows[i], asked), rows[i].qname, rows[i].path))
            return live[:LEG_LIMIT]

        if cfg.exact:
            escores, sure, by_ident, unnamed = self.exact_leg(task, rows, dl)
            out.set_back = self.disambiguate(by_ident, rows, escores, dl)
            sure -= out.set_back
            out.provenance.append("exact")
            add_leg("exact", cut(escores))
            for i in sure:
                sure_score[i] += escores[i]
            described = {w for got in by_ident.values() for rid in got for w in _name_words(rows[rid])}
            known = (lambda w: self.count_lexical(w, 1) > 0) if cfg.lexical else (lambda w: False)
            lscores, lsure, out.lines, out.unread = self.literal_leg(task, unnamed, described, rows, dl, known)
            if lscores:
                out.provenance.append("literal")
                add_leg("literal", cut(lscores))
                for i in lsure:
                    sure_score[i] += lscores[i]
            # a test (example, doc...) that the task names or that writes its phrase is no exact
            # answer to a task about library code: it ranks with the approximate candidates
            out.sure = {i for i in sure | lsure if sure_score[i] > 0 and self._prior(rows[i], asked) == 1.0}
        if cfg.lexical:
            dl.check()
            out.provenance.append("lexical")
            add_leg("lexical", self.lexical_leg(task, rows, asked))
        if cfg.dense:
            dl.check()
            ids, entry = self.dense_leg(task, rows, dl, asked)
            out.provenance.append(entry)
            if ids:
                add_leg("dense", ids)
        if cfg.expand and TEST not in asked and self._pools:
            # a task about tests is answered by the tests themselves
            dl.check()
            ids = self.tested_leg(rows, dl)
            if ids:
                out.provenance.append("tested")
                add_leg("tested", ids)
        if paths:
            # the files the request names are its scope, not a search: all their symbols
            ids = [self._key(r, rows) for rel in paths for r in self.store.symbols_in_file(rel) if r.kind != "module"]
            out.provenance.append("path")
            add_leg("path", list(dict.fromkeys(ids)))
        fused = fuse(rankings, [self.tested_weight if name == "tested" else None for name in leg_names])
        score = {i: v * self._prior(rows[i], asked) for i, v in fused.items()}
        if cfg.expand and score and self._expand(score, rows, out.legs, asked, dl):
            out.provenance.append("graph")
        out.score = score
        out.role_back = {i for i in score if self._prior(rows[i], asked) < 1.0}
        sure_order = sorted(out.sure, key=lambda i: (-sure_score[i] * self._prior(rows[i], asked), -score.get(i, 0.0),
                                                     rows[i].qname, rows[i].path))
        rest = sorted((i for i in score if i not in out.sure),
                      key=lambda i: (-score[i], rows[i].qname, rows[i].path, rows[i].start_line))
        out.order = sure_order + rest
        return out

    def _expand(self, score: dict[int, float], rows: dict[int, SymbolRow], legs: dict[int, set[str]],
                asked: set[str], dl: Deadline) -> bool:
        """Scores pushed along the graph in ``EXPAND_ROUNDS`` rounds: each round, the
        ``EXPAND_FROM`` best candidates not yet expanded send a share of their score to their
        neighbours, so the second round expands what the first one raised (the function two
        calls away from the hit: a wrapper's callee's callee, the dispatcher above a
        helper's caller). What a candidate sends a neighbour leaves out what that neighbour
        sent it (a non-backtracking walk: a score does not come back to where it started).

        The neighbours: callees, callers, a type's members, overrides (the same method in the
        subtypes and supertypes of the candidate's type), the functions taking a type as a
        parameter (``_takers``) and, for a constant or a variable, the code of its file that
        uses it (``_users``). Each gets ``DECAY`` times the score,
        divided by the square root of the number of neighbours of that kind — the one
        function a wrapper calls gets much, one of thirty gets little. A callee's share is
        also divided by the square root of the number of calls that reach it (the
        symmetric normalization of a graph's adjacency, D^-1/2 A D^-1/2): the helper every
        function calls (a logger, a context getter) is no more the work of this hit than of
        any other, while the function only this hit calls is. Callers that the role prior
        sets back (tests calling the hit) count for their prior in the split. A hop with more
        than ``EXPAND_FANOUT`` neighbours (so counted) only reinforces candidates already
        found. Returns whether anything changed."""
        by_qname: dict[str, list[int]] = {}
        for i in score:
            by_qname.setdefault(rows[i].qname, []).append(i)
        expanded: set[int] = set()
        came: dict[int, dict[int, float]] = {}  # what the last round brought each candidate, by sender
        changed = False
        for _round in range(EXPAND_ROUNDS):
            top = sorted((i for i in score if i not in expanded and score[i] > 0 and rows[i].kind != "module"),
                         key=lambda i: (-score[i], rows[i].qname, rows[i].path))[:EXPAND_FROM]
            if not top:
                break
            expanded.update(top)
            gain, came = self._push(top, score, rows, by_qname, asked, came, dl)
            for i, g in gain.items():
                score[i] = score.get(i, 0.0) + g
                legs.setdefault(i, set()).add("graph")
            changed = changed or bool(gain)
        return changed

    def _push(self, top: list[int], score: dict[int, float], rows: dict[int, SymbolRow],
              by_qname: dict[str, list[int]], asked: set[str], came: dict[int, dict[int, float]], dl: Deadline
              ) -> tuple[Counter[int], dict[int, dict[int, float]]]:
        """One round of ``_expand``: what the candidates of ``top`` send their neighbours
        (gain by id), and who sent each what (the next round sends none of it back)."""
        store = self.store
        gain: Counter[int] = Counter()
        sent: dict[int, dict[int, float]] = {}
        # the neighbours of every hit, then the symbols they name, each in one batch read
        qs = [rows[h].qname for h in top]
        callees_of, callers_of = store.callees_many(qs, limit=200), store.callers_many(qs, limit=200)
        in_files = self._kin_in_files([rows[h] for h in top])
        reads, readers = self._member_reads([rows[h] for h in top], in_files)
        hops: list[tuple[int, list[list[Any]], list[float]]] = []  # a neighbour: a qname, or an id
        for h in top:
            r = rows[h]
            callees = list(dict.fromkeys([*(c.target for c in callees_of.get(r.qname, [])
                                            if c.target and c.target != r.qname), *reads.get(r.id, ())]))
            caller_path = {c.caller: c.path for c in callers_of.get(r.qname, []) if c.caller != r.qname}
            for q in readers.get(r.id, ()):
                caller_path.setdefault(q, r.path)
            callers = list(caller_path)
            # a type's members do its work (a call of the class runs its constructor)
            members = list(dict.fromkeys(x.qname for x in in_files.get(r.path, []) if x.parent == r.qname
                                         and x.id != r.id)) if r.kind in TYPE_KINDS else []
            # the callers the role prior sets back (tests calling the hit) count for their prior
            # in how many share the hop: thirty tests do not thin out the one library caller
            support = self.support_paths()
            n_callers = sum(prior(TEST if pth in support else role_of(pth), asked) if self.config.priors else 1.0
                            for pth in caller_path.values())
            hops.append((h, [callees, callers, members], [len(callees), n_callers, len(members)]))
        # overrides: the same method in the subtypes and supertypes of the hit's type (the
        # subclass's override does the work the base's method names, or the reverse); the code
        # using a constant or a variable
        hit_rows = [rows[h] for h, _l, _n in hops]
        for (h, lists, sizes), over, users, takers in zip(hops, self._overrides(hit_rows),
                                                          self._users(hit_rows, rows, dl),
                                                          self._takers(hit_rows, rows)):
            lists.append(over)
            sizes.append(len(over))
            lists.append(users)
            sizes.append(len(users))
            lists.append(takers)
            sizes.append(len(takers))
        named = store.symbols_by_qnames(q for _, lists, sizes in hops for names, n in zip(lists, sizes)
                                        if n <= EXPAND_FANOUT for q in names
                                        if isinstance(q, str) and q not in by_qname)
        # how many calls reach each callee: one counting read per callee, no call row built (reading
        # up to 200 callers of each to count the distinct ones cost ~3 ms a request on the stdlib)
        callee_qs = list(dict.fromkeys(q for _, lists, _n in hops for q in lists[0]))
        fan_in = store.relation_counts(callee_qs)[0]  # one batch read a round, even of nothing
        for h, lists, sizes in hops:
            dl.check()
            back = came.get(h, {})  # what each neighbour sent h is not sent back to it
            for li, (names, n) in enumerate(zip(lists, sizes)):
                if not names:
                    continue
                split = DECAY / math.sqrt(max(1.0, n))
                for q in names:
                    ids = [q] if isinstance(q, int) else by_qname.get(q)  # an id: the symbol itself
                    if isinstance(q, int) and n > EXPAND_FANOUT and q not in score:
                        continue  # a hop with many neighbours only reinforces candidates already found
                    if ids is None:
                        if n > EXPAND_FANOUT:
                            continue
                        found = [x for x in named.get(q, []) if x.kind != "module"][:1]
                        ids = by_qname[q] = [self._key(x, rows) for x in found]
                    # a callee many functions call is a shared helper, not the work of this hit
                    norm = 1.0 / math.sqrt(max(1, fan_in.get(q, 1))) if li == 0 else 1.0
                    for i in ids:
                        if i != h:
                            g = split * max(0.0, score[h] - back.get(i, 0.0)) * norm * self._prior(rows[i], asked)
                            if g > 0:
                                gain[i] += g
                                got = sent.setdefault(i, {})
                                got[h] = got.get(h, 0.0) + g
        return gain, sent

    def _kin_in_files(self, hits: list[SymbolRow]) -> dict[str, list[SymbolRow]]:
        """For the types and members among ``hits``, the symbols of their files that are a
        type's members or a member's siblings (whose parent is the type, or the member's
        parent), by path, in each file's order (``symbols_in_files``): what ``_push`` and
        ``_member_reads`` look for there. One read, the parent checked by the store when it
        can (``members_in_files``)."""
        kin = [r for r in hits if r.kind in TYPE_KINDS or _member_sep(r) is not None]
        paths = list(dict.fromkeys(r.path for r in kin))
        parents = list(dict.fromkeys(r.qname if r.kind in TYPE_KINDS else r.parent for r in kin))
        fn = getattr(self.store, "members_in_files", None)
        if fn is not None:
            return fn(paths, parents)
        wanted = set(parents)
        found = {p: [x for x in got if x.parent in wanted] for p, got in self.store.symbols_in_files(paths).items()}
        return {p: got for p, got in found.items() if got}

    def _member_reads(self, hits: list[SymbolRow], in_files: dict[str, list[SymbolRow]]
                      ) -> tuple[dict[int, list[str]], dict[int, list[str]]]:
        """For each hit that is a member of a type, the methods of the same type that it reads
        without calling them, and those reading it so (``self.eta``, ``this.size``: a
        property, a getter, a bound method handed on), by qualified name. The index keeps call
        edges only, and a property is a function the code runs without parentheses; so the
        hit's file is read, as ``_users`` reads one, and a member's name after a dot, not
        followed by ``(``, in a member's lines is a read of it (a call is a call edge already).
        Not in the languages where a field may share a method's name (``FIELD_METHOD_HOMONYMS``:
        Java's ``this.size = size`` beside ``size()``, Rust's ``self.len``): there a name read
        is a field's as often as not. One read per file and request (``_lines``)."""
        reads: dict[int, list[str]] = {}
        readers: dict[int, list[str]] = {}
        members = [r for r in hits if _member_sep(r) is not None and r.path in in_files
                   and r.language not in FIELD_METHOD_HOMONYMS]
        if not members:
            return reads, readers
        root = self.app.workspace.root
        lines_of = self._lines
        for r in members:
            if r.path not in lines_of:
                try:
                    lines_of[r.path] = (root / r.path).read_text(encoding="utf-8", errors="replace").splitlines()
                except OSError:
                    lines_of[r.path] = []
            lines = lines_of[r.path]
            if not lines:
                continue
            siblings = [x for x in in_files[r.path] if x.parent == r.parent and x.id != r.id
                        and x.kind in CALLABLE_KINDS and len(x.name) >= 2]
            if not siblings:
                continue
            mine = _body(lines, r)
            read = _reads_in(mine)
            reads[r.id] = list(dict.fromkeys(x.qname for x in siblings
                                             if x.qname != r.qname and _is_read(x.name, read, mine)))
            readers[r.id] = list(dict.fromkeys(x.qname for x in siblings if x.qname != r.qname
                                               and _is_read(r.name, None, _body(lines, x))))
        return reads, readers

    def _users(self, hits: list[SymbolRow], rows: dict[int, SymbolRow], dl: Deadline) -> list[list[int]]:
        """For each hit that is a constant or a variable (data: it does no work itself), the
        symbols of its own file that write its name (read or assign it), where the index keeps
        no reference edge: the file is read, as the literal leg reads files, a word on its
        boundaries, not in a comment. At most one file per hit."""
        data = [(r.path, r.language, r.name) for r in hits
                if r.kind in DATA_KINDS and len(r.name) >= literals.MIN_NEEDLE]
        if not data:
            return [[] for _ in hits]
        policy = getattr(self.app, "policy", None)
        extra = getattr(policy, "redact_patterns", ()) if policy is not None else ()
        found: dict[tuple[str, str], list[int]] = {}
        for pth, lang in dict.fromkeys((p, lang) for p, lang, _n in data):
            needles = [literals.Needle(n, word=True) for p, _l, n in data if p == pth]
            scan = literals.find(str(self.app.workspace.root), [(pth, lang)], needles, extra,
                                 seconds=min(literals.BUDGET_S, dl.remaining))
            for h in scan.hits:
                r = self.store.symbol_at(h.path, h.line)
                if r is not None and r.kind != "module" and r.name != h.needle:
                    got = found.setdefault((pth, h.needle), [])
                    rid = self._key(r, rows)
                    if rid not in got:
                        got.append(rid)
        return [found.get((r.path, r.name), []) if r.kind in DATA_KINDS else [] for r in hits]

    def _takers(self, hits: list[SymbolRow], rows: dict[int, SymbolRow]) -> list[list[int]]:
        """For each hit that is a type, the functions and methods whose parameter list names it
        (the code that takes one: ``isValidSince(Since annotation)`` for ``Since``), its own
        members left out (they are its members' hop). The index keeps no reference edge for a
        parameter's type, so the signatures are read: those whose words hold the type name's
        (one store read for all hits), then the name itself, whole, in the parameters; a
        return type does not count (the tune half measured it: it made ``Mux.handle``, which
        returns a tree node, outrank the tree's own helper), nor does a name qualified by a
        module (``context.Context``, another package's type). At most ``EXPAND_FANOUT + 1``
        each (more only reinforce)."""
        types = [r for r in hits if r.kind in TYPE_KINDS and r.name]
        fn = getattr(self.store, "signature_mentions", None)
        if not types or fn is None:
            return [[] for _ in hits]
        # the phrase also matches words that are no type name (a parameter "since"): read more
        got = fn([r.name for r in types], TAKER_READ)
        out: dict[int, list[int]] = {}
        for r in types:
            word = re.compile(r"(?<![\w$.])" + re.escape(r.name) + r"(?![\w$])")
            ids: list[int] = []
            for x in got.get(r.name, []):
                if x.kind not in CALLABLE_KINDS or x.id == r.id or x.parent == r.qname \
                        or not word.search(_params(x.signature or "", x.name)):
                    continue
                rid = self._key(x, rows)
                if rid not in ids:
                    ids.append(rid)
                if len(ids) > EXPAND_FANOUT:
                    break
            out[r.id] = ids
        return [out.get(r.id, []) for r in hits]

    def _overrides(self, hits: list[SymbolRow]) -> list[list[str]]:
        """For each hit, the qualified names of the methods that override it (the same name
        in a subtype of its type) or that it overrides (in a supertype), as the index's
        inheritance edges resolve them; only those defined. Two reads: the subtypes of the
        hits' types, and the inheritance rows of the hits' files (where a type's bases are
        written beside its methods)."""
        seps = [_member_sep(r) for r in hits]
        parents = list(dict.fromkeys(r.parent for r, sep in zip(hits, seps) if sep is not None))
        if not parents:
            return [[] for _ in hits]
        store = self.store
        wanted = set(parents)
        subs = store.subtypes_many(parents, limit=EXPAND_FANOUT + 1)
        sups: dict[str, list[str]] = {}
        paths = list(dict.fromkeys(r.path for r, sep in zip(hits, seps) if sep is not None))
        # one read for every file (a read per file was a round trip each on a server backend),
        # in each file's inherits() order
        rows = sorted((row for _id, row in store.inherits_touching(paths, ())),
                      key=lambda row: (paths.index(row.path), row.line, row.child, row.base))
        for row in rows:
            if row.target and row.child in wanted:
                sups.setdefault(row.child, []).append(row.target)
        cands: list[list[str]] = []
        for r, sep in zip(hits, seps):
            if sep is None:
                cands.append([])
                continue
            types = [x.child for x in subs.get(r.parent, [])] + sups.get(r.parent, [])
            cands.append(list(dict.fromkeys(t + sep + r.name for t in types if t != r.parent)))
        defined = store.symbols_by_qnames(q for qs in cands for q in qs)
        return [[q for q in qs if any(x.kind != "module" for x in defined.get(q, []))] for qs in cands]


def method_key(r: SymbolRow) -> tuple[str, str] | None:
    """A method's name and parameter list (whitespace normalized), the same for the
    implementations of one interface method and for an override and the method it overrides;
    None for what is no method (a function, a constructor: another type's constructor builds
    something else)."""
    if r.kind != "method" or _member_sep(r) is None:
        return None
    return r.name, " ".join(_params(r.signature or "", r.name).split())


def supertypes(store, types: dict[str, str], depth: int = 4) -> dict[str, set[str]]:
    """For each type (qualified name -> the file it is written in), the qualified names of its
    supertypes, as the index's inheritance edges resolve them, up to ``depth`` levels: one read
    of the inheritance rows of the files a level's types are written in, one of the new
    supertypes' rows to find their files."""
    out: dict[str, set[str]] = {t: set() for t in types}
    where = dict(types)
    frontier: dict[str, set[str]] = {t: {t} for t in types}
    for _level in range(depth):
        paths = list(dict.fromkeys(where[q] for fr in frontier.values() for q in fr if q in where))
        if not paths:
            break
        base_of: dict[str, set[str]] = {}
        for _id, row in store.inherits_touching(paths, ()):
            if row.target:
                base_of.setdefault(row.child, set()).add(row.target)
        for t, fr in frontier.items():
            frontier[t] = {b for q in fr for b in base_of.get(q, ())} - out[t] - {t}
            out[t] |= frontier[t]
        unknown = {b for fr in frontier.values() for b in fr if b not in where}
        if unknown:
            for q, found in store.symbols_by_qnames(unknown).items():
                x = next((x for x in found if x.kind in TYPE_KINDS), None)
                if x is not None:
                    where[q] = x.path
        if not any(frontier.values()):
            break
    return out


def _body(lines: list[str], r: SymbolRow) -> str:
    """The lines of ``r`` in its file's ``lines``."""
    return "\n".join(lines[max(0, r.start_line - 1):r.end_line])


def _read_of(name: str) -> re.Pattern[str]:
    """A member read without a call: ``.name`` not followed by ``(`` (``self.eta``)."""
    return re.compile(r"\.\s*" + re.escape(name) + r"(?![\w$])(?!\s*\()")


# every member read without a call in a text, in one pass: a name of word characters after a
# dot, whole, not followed by ``(`` (what ``_read_of(name)`` finds, for all such names at once;
# compiling a pattern per name cost a quarter of minimalContext on the stdlib: 1,900 compiles
# for 40 requests, past the re module's cache)
_MEMBER_READ = re.compile(r"\.\s*([\w$]+)(?![\w$])(?!\s*\()")
_PLAIN_NAME = re.compile(r"[\w$]+")


def _reads_in(text: str) -> set[str]:
    return set(_MEMBER_READ.findall(text))


def _is_read(name: str, read: set[str] | None, text: str) -> bool:
    """Whether ``text`` reads member ``name`` without calling it (``read``: ``_reads_in(text)``
    when already found)."""
    if _PLAIN_NAME.fullmatch(name):
        return name in (read if read is not None else _reads_in(text))
    return _read_of(name).search(text) is not None


# what follows a name to make it a definition's parameter list: its type parameters, if any,
# then "(" (one pattern for every name: a pattern compiled per name cost ~175 us each, for the
# new names of nearly every request)
_CALL_TAIL = re.compile(r"\s*(?:<[^()]*>|\[[^()]*\])?\s*\(")
_NAME_CHAR = re.compile(r"[\w$]")


def _name_call(name: str, signature: str) -> re.Match[str] | None:
    """The first place where ``name``, not preceded by a word character or ``$``, is followed
    by its parameter list's ``(`` (type parameters between): the match of that tail, None when
    there is none (what ``(?<![\\w$])`` + the name escaped + the tail, searched, finds)."""
    i = signature.find(name)
    while i >= 0:
        if i == 0 or not _NAME_CHAR.match(signature, i - 1):
            m = _CALL_TAIL.match(signature, i + len(name))
            if m is not None:
                return m
        i = signature.find(name, i + 1)
    return None


def _params(signature: str, name: str) -> str:
    """The parameter list of a signature: the parenthesized text after the symbol's name and
    its type parameters, if any (``func (n *node) insert(key string, child *node) *node`` →
    ``key string, child *node``; ``fn get<T>(x: T)`` → ``x: T``); the whole signature when
    the name is not followed by one."""
    m = _name_call(name, signature)
    if m is None:
        return signature
    i = m.end()
    depth = 1
    for j in range(i, len(signature)):
        ch = signature[j]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return signature[i:j]
    return signature[i:]


def _member_sep(r: SymbolRow) -> str | None:
    """The separator between a member's type and its name in its qualified name (``.``,
    ``::``), or None when ``r`` is no member of a type."""
    if not r.parent or r.kind in TYPE_KINDS or r.kind == "module":
        return None
    if not (r.qname.startswith(r.parent) and r.qname.endswith(r.name)):
        return None
    sep = r.qname[len(r.parent):len(r.qname) - len(r.name)]
    return sep if sep in (".", "::", "#", "/") else None


_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")


def _name_words(s: SymbolRow) -> set[str]:
    """The words of a symbol's name and its container's (``AsyncAction.requestAsyncId``:
    async, action, request, id), lower case."""
    names = [s.name, re.split(r"\.|::|/", s.parent)[-1] if s.parent else ""]
    return {w.lower() for n in names for w in _WORD.findall(n)}


def _fallback_query(text: str, terms: list[str]) -> str:
    """The words of ``text`` (function words left out) and the stemmed terms, for a store's
    own name search."""
    raw = [w for w in re.findall(r"[^\W_]+", text) if w.lower() not in lexical.STOP_WORDS]
    return " ".join(dict.fromkeys(raw + terms))


def quoted(task: str) -> bool:
    return bool(_QUOTED.search(task))
