"""The indexer: walk → policy → extract (process pool) → resolve → store.

Full and incremental indexing share one path, ``Indexer.apply``: a full index is an
incremental update from an empty graph. That is what makes "incremental equals full" hold.

Every update is one store transaction (``GraphStore.transaction()``): its symbols, calls and
re-resolved edges elsewhere become visible together, a crash leaves the version before it,
and it holds the index's one-writer lock, so daemons sharing an index take turns. A writer
that finds the index written by another process since it last looked (``GENERATION``)
rebuilds its in-memory SymbolIndex from the store before it resolves anything.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import stat
import threading
import time
import uuid
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from codesynapse.extract import content_hash, extract_source, incremental, reset_caches
from codesynapse.extract.languages import BY_NAME, available, detect
from codesynapse.extract.manifests import is_dependency_file
from codesynapse.extract.model import (
    PARAM_HINT,
    CallSite,
    FileExtraction,
    ImportRef,
    value_refs,
)
from codesynapse.findings.sarif import sync_policy_findings
from codesynapse.graph import deps
from codesynapse.graph.model import CallRow, FileRow, Resolution
from codesynapse.index import delta as delta_mod
from codesynapse.index.resolve import Resolver, SymbolIndex
from codesynapse.index.state import IndexState
from codesynapse.index.workers import WorkerOutput
from codesynapse.index.workers import start as start_worker
from codesynapse.policy.model import redaction_key
# REDACTION_META: a digest of the policy's redaction patterns the stored text was extracted
# under (summaries and signatures hold what they redact): another digest re-extracts every file
from codesynapse.store.graph import REDACTION_META, VALUE_REFS_META, GraphStore, base_keys, module_keys
from codesynapse.store.text import callee_head

log = logging.getLogger(__name__)

Progress = Callable[[int, int, str], None]

POOL_THRESHOLD = 16  # fewer changed files than this are parsed in-process
WRITE_BATCH = 256
LIVE_BATCH = 64  # updates this small write calls with their symbols (one transaction)
RESOLVED_FILES = 64  # live-written files whose call resolutions are noted (Indexer._resolved)
MAX_DEFERRED_CALLS = 1_500_000  # at most this many call sites held for resolution (≈ 300 B each)
DEFAULT_MEMORY_BUDGET_MB = 1024  # index.memoryBudget
STREAM_FILES = 256  # files whose stored calls (or symbols, imports) are read and resolved at a time
COUNTS_META = "index_counts"  # meta key: the report's symbol and edge counts, with the generation counted
GENERATION = "index_generation"  # meta key: a new random value after every update that wrote


@dataclass(frozen=True)
class MemoryLimits:
    """What an index may hold in memory beside its symbol table, from ``index.memoryBudget``
    (MB): call sites held back from the bulk write until resolution (inserted resolved, no
    second write; the rest are written unresolved and updated), and the entries of the
    resolver's qualified-name cache (SymbolIndex.resolve_qname)."""

    deferred_calls: int
    qname_cache: int

    @classmethod
    def of(cls, budget_mb: int) -> MemoryLimits:
        budget = max(64, int(budget_mb)) * 1_000_000
        # 15% of the budget each: a held call site ≈ 300 B, a cache entry ≈ 200 B
        return cls(deferred_calls=min(MAX_DEFERRED_CALLS, budget * 15 // 100 // 300),
                   qname_cache=max(10_000, budget * 15 // 100 // 200))


@dataclass
class Candidate:
    path: str
    language: str
    size: int
    mtime_ns: int


@dataclass
class WalkResult:
    candidates: list[Candidate] = field(default_factory=list)
    skipped: list[FileRow] = field(default_factory=list)
    ignored: Counter = field(default_factory=Counter)  # not stored: unsupported, excluded
    manifests: list[str] = field(default_factory=list)  # dependency manifests and lockfiles (graph/deps.py)


@dataclass
class IndexReport:
    files: int = 0
    parsed: int = 0
    unchanged: int = 0
    deleted: int = 0
    skipped: Counter = field(default_factory=Counter)
    languages: Counter = field(default_factory=Counter)
    symbols: int = 0
    edges: int = 0
    seconds: float = 0.0
    lines: int = 0


@dataclass
class _UpdateRun:
    """What one ``Indexer._update`` gathers while it runs, step to step."""

    changed: list[Candidate]
    force: set[str]  # files re-extracted because a package __init__.py came or went
    stored: dict[str, FileRow]  # the stored rows of the update's paths
    overlays: dict[str, bytes]
    mtimes: dict[str, int]
    removed: list[str]  # deleted and newly skipped files
    affected: set[str] = field(default_factory=set)  # names whose resolution may move
    changed_paths: list[str] = field(default_factory=list)  # files extracted and written
    batch: list[tuple[FileExtraction, int]] = field(default_factory=list)  # waiting to be written
    late_skips: list[FileRow] = field(default_factory=list)
    # calls held back for resolution (bulk writes), and how many
    deferred: list[tuple[str, list]] = field(default_factory=list)
    deferred_n: int = 0
    fresh: set[str] = field(default_factory=set)  # files whose calls went in resolved against this index
    exports_changed: set[str] = field(default_factory=set)  # files whose symbols, bindings or module changed
    vanished: set[str] = field(default_factory=set)  # indexed files that are skipped now
    retargeted: set[str] = field(default_factory=set)  # bindings of live-written imports whose target changed
    flushed: bool = False  # a bulk write happened
    noted: dict[str, dict[tuple[str, str, str], Resolution]] = field(default_factory=dict)  # live resolutions
    reused: set[str] = field(default_factory=set)  # live-written files whose calls re-used noted resolutions
    # files whose star imports or module changed: what a bare name of theirs resolves to may
    # change for any name, so none of their stored resolutions is re-used
    unsettled: set[str] = field(default_factory=set)
    # every file is new (nothing stored, nothing indexed before): every edge is resolved from
    # scratch, so no name is "affected" (on a kernel, the set of all names: ~120 MB)
    whole: bool = False
    # the stored calls of a live update's files, read whole before the write that replaces
    # them (Indexer._count_before, Indexer._diffed)
    stored_calls: dict[str, list] = field(default_factory=dict)
    # a bulk update's: its files' stored call resolutions by (caller, callee, hint), read with
    # their calls (Indexer._stored_call_names); their held-back calls re-use them (_resolve)
    stored_res: dict[str, dict[tuple[str, str, str], Resolution]] = field(default_factory=dict)
    # files written by their delta (SqliteGraphStore.write_delta), counted by the lines it
    # replaced (Indexer._write_deltas): the base lines it replaced (first, last), the lines
    # the rows below them moved by, and the _call_key of each call it wrote; the parameter
    # pass counts the file's calls from these instead of reading them all again (a
    # 4,100-call file: ~45 ms of each save)
    deltas: dict[str, tuple[int, int, int, list[tuple]]] = field(default_factory=dict)
    # a live update's stored files whose calls the parameter pass's "before" count
    # (Indexer._param_names) has yet to take: taken as each is written (all its stored calls,
    # or a delta's replaced lines only: the rest are stored again as they were) and never for
    # a file whose bytes did not change (nothing of it is written)
    calls_lazy: set[str] = field(default_factory=set)
    # files the symbol table patched (SymbolIndex._patch): the names of the symbols their
    # update added, removed or re-extracted, which is all the listeners are told of them
    touched_names: dict[str, set[str]] = field(default_factory=dict)


def _policy_excluded(policy, rel: str, is_dir: bool) -> str | None:
    return policy.excluded(rel, is_dir=is_dir) if policy is not None else None


def walk(root: Path, policy=None) -> WalkResult:
    """Every indexable file under root. Never follows symlinked directories (no loops);
    symlinked files are kept only when they resolve inside the root."""
    out = WalkResult()
    max_bytes = getattr(policy, "max_file_bytes", 1_048_576) if policy is not None else 1_048_576
    root_real = os.path.realpath(root)
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        abs_dir = os.path.join(root, rel_dir) if rel_dir else str(root)
        try:
            entries = sorted(os.scandir(abs_dir), key=lambda e: e.name)
        except OSError as e:
            out.ignored[f"unreadable directory ({e.__class__.__name__})"] += 1
            continue
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                rel.encode("utf-8")
            except UnicodeEncodeError:  # a name that is not UTF-8 cannot be stored or asked for
                out.ignored["name not UTF-8"] += 1
                continue
            try:
                is_link = entry.is_symlink()
                if entry.is_dir(follow_symlinks=False):
                    if _policy_excluded(policy, rel, True):
                        out.ignored["excluded"] += 1
                        continue
                    stack.append(rel)
                    continue
                if is_link:
                    target = os.path.realpath(entry.path)
                    if not (target + os.sep).startswith(root_real + os.sep):
                        if detect(rel):
                            out.skipped.append(FileRow(path=rel, status="skipped", reason="symlink outside workspace"))
                        continue
                    if os.path.isdir(target):
                        out.ignored["symlinked directory"] += 1
                        continue
                    st = os.stat(entry.path)
                else:
                    st = entry.stat(follow_symlinks=False)
            except OSError as e:
                if detect(rel):
                    out.skipped.append(FileRow(path=rel, status="skipped",
                                               reason=f"unreadable ({e.__class__.__name__})"))
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            if is_dependency_file(rel) and not _policy_excluded(policy, rel, False):
                out.manifests.append(rel)
            override = policy.language_override(rel) if policy is not None else None
            spec = BY_NAME.get(override) if override else detect(rel)
            if spec is None:
                out.ignored["unsupported language"] += 1
                continue
            reason = _policy_excluded(policy, rel, False)
            if reason:
                out.ignored["excluded"] += 1
                continue
            if st.st_size > max_bytes:
                out.skipped.append(FileRow(path=rel, language=spec.name, size=st.st_size, mtime_ns=st.st_mtime_ns,
                                           status="skipped", reason=f"too large ({st.st_size} > {max_bytes} bytes)"))
                continue
            out.candidates.append(Candidate(rel, spec.name, st.st_size, st.st_mtime_ns))
    out.candidates.sort(key=lambda c: c.path)
    out.skipped.sort(key=lambda s: s.path)
    return out


# tree-sitter's YAML and Markdown scanners keep nesting in a fixed-size stack and crash the
# process (SIGSEGV) at about 255 levels (indentation, "- - -", "> > >"). Every level costs at
# least one character of a line's leading run of markers and blanks, so a file with a shorter
# run than this is safe; a longer one is skipped before it reaches the parser.
NESTED_LANGUAGES = frozenset({"yaml", "markdown"})
MAX_NESTING_PREFIX = 200
_NESTING_PREFIX = re.compile(rb"^[ \t>\-*+?.)0-9]{%d,}" % MAX_NESTING_PREFIX, re.M)


def too_deeply_nested(data: bytes) -> bool:
    """A leading run of nesting markers long enough to crash the YAML/Markdown scanners (a
    run without a blank or '>' is a rule or a number, not nesting)."""
    return any(set(m.group()) & {32, 9, 62} for m in _NESTING_PREFIX.finditer(data))


def read_and_extract(root: str, rel: str, language: str, redact_patterns: Sequence[str] = (),
                     data: bytes | None = None, keep_dir: str | None = None,
                     incremental: bool = False) -> FileExtraction | FileRow:
    """Worker entry point: read a file and extract it, or say why it is skipped.
    ``incremental``: an update of a few files in the daemon's own process, which may re-use
    a large file's last extraction where an edit did not reach (extract/incremental.py).
    ``keep_dir``: where extractions of large files are kept for their first live update."""
    try:
        if data is None:
            with open(os.path.join(root, rel), "rb") as f:
                data = f.read()
    except OSError as e:
        return FileRow(path=rel, language=language, status="skipped", reason=f"unreadable ({e.__class__.__name__})")
    if b"\x00" in data[:8192]:
        return FileRow(path=rel, language=language, size=len(data), hash=content_hash(data), status="skipped",
                       reason="binary (NUL byte)")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return FileRow(path=rel, language=language, size=len(data), hash=content_hash(data), status="skipped",
                       reason="not UTF-8")
    if language in NESTED_LANGUAGES and too_deeply_nested(data):
        return FileRow(path=rel, language=language, size=len(data), hash=content_hash(data), status="skipped",
                       reason="too deeply nested")
    if not available(language):
        return FileRow(path=rel, language=language, size=len(data), hash=content_hash(data), status="skipped",
                       reason=f"no extractor for {language}")
    extra = _compiled(tuple(redact_patterns))
    try:
        return extract_source(root, rel, data, language, extra, incremental=incremental, keep_dir=keep_dir)
    except RecursionError:
        return FileRow(path=rel, language=language, size=len(data), hash=content_hash(data), status="skipped",
                       reason="too deeply nested")
    except Exception as e:  # a grammar or hook bug must not stop the index
        log.exception("extraction failed for %s", rel)
        return FileRow(path=rel, language=language, size=len(data), hash=content_hash(data), status="skipped",
                       reason=f"extraction error ({e.__class__.__name__})")


_PAT_CACHE: dict[tuple[str, ...], tuple] = {}


def _compiled(patterns: tuple[str, ...]):
    import re

    if patterns not in _PAT_CACHE:
        _PAT_CACHE[patterns] = tuple(re.compile(p) for p in patterns)
    return _PAT_CACHE[patterns]


def _worker(args):
    return read_and_extract(*args)


EXTRACT_CHUNK = 4  # files a worker extracts per task
EXTRACT_AHEAD = 8  # tasks in flight per worker: finished extractions wait only this long to be written


def _worker_chunk(chunk):
    return [read_and_extract(*a) for a in chunk]


def _pool_context():
    """How to start extraction workers. ``fork`` is fast but only safe from a single-threaded
    process: forked from the daemon, a worker inherits locks that other threads hold (the
    LSP reader thread holds stdin's buffer lock while it waits for input, and the child's
    multiprocessing bootstrap closes stdin first), deadlocks before it starts, and the
    index never finishes. A multi-threaded process spawns its workers instead."""
    import multiprocessing

    return multiprocessing.get_context("fork" if threading.active_count() == 1 else "spawn")


def _die_with_parent(parent: int) -> None:
    """Pool initializer: an extraction worker dies with the process that started it. After
    a kill -9 of the daemon or of ``codesynapse index`` the workers would otherwise wait
    forever on the task pipe, which their siblings keep open (Linux: PR_SET_PDEATHSIG).
    ``parent`` is the starting process' pid, taken before the worker exists: a parent that
    dies while a spawned worker is still importing is noticed too."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: nothing to ask for
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def _names_of(fx_symbols: Iterable[str]) -> set[str]:
    out = set()
    for q in fx_symbols:
        for sep in ("::", "."):
            if sep in q:
                q = q.rsplit(sep, 1)[-1]
        out.add(q.rsplit("/", 1)[-1])
    return out


def _changed_names(old_state, new) -> set[str]:
    """The names whose resolution a file's new version may change: symbols added, removed or
    re-kinded and import bindings retargeted. A body-only edit changes none, so no edge
    elsewhere is re-resolved for it."""
    if old_state is None:
        return _names_of(q for q, _ in new.symbols) | set(new.bindings)
    old_syms, old_bindings, old_alternatives, old_stars, old_module, old_results, old_fields = old_state
    if old_module != new.module or old_stars != new.stars:
        return (_names_of(q for q, _ in old_syms) | _names_of(q for q, _ in new.symbols)
                | set(old_bindings) | set(new.bindings))
    names = _names_of(q for q, _ in old_syms ^ set(new.symbols))
    names |= _type_names(old_results, new.results, old_fields, new.fields)
    for key in set(old_bindings) | set(new.bindings):
        if old_bindings.get(key) != new.bindings.get(key) or old_alternatives.get(key) != new.alternatives.get(key):
            names.add(key)
            # a struct of this file whose field's type is named through the binding
            names |= _names_of(q for flds in (old_fields, new.fields) for q, f in flds.items()
                               if any(t.lstrip("*").split(".", 1)[0] == key for t in f.values()))
    return names


def _type_names(old_results, new_results, old_fields, new_fields) -> set[str]:
    """The names of the qnames whose declared results or fields differ."""
    # a declared result changed: the receivers that return hints bind to it change type
    names = _names_of(q for q in set(old_results) | set(new_results) if old_results.get(q) != new_results.get(q))
    # a struct's declared field types changed: the receivers field hints bind through it
    names |= _names_of(q for q in set(old_fields) | set(new_fields) if old_fields.get(q) != new_fields.get(q))
    return names


def _file_state(fi) -> tuple:
    """What ``_changed_names`` compares: a file's symbols, import bindings and module."""
    return (set(fi.symbols), dict(fi.bindings), {k: list(v) for k, v in fi.alternatives.items()}, list(fi.stars),
            fi.module, dict(fi.results), {k: dict(v) for k, v in fi.fields.items()})


class Indexer:
    """Keeps one GraphStore and its SymbolIndex in step with a workspace tree."""

    def __init__(self, root: Path, store: GraphStore, policy=None, workers: int | None = None,
                 keep_dir: Path | str | None = None, memory_budget_mb: int = DEFAULT_MEMORY_BUDGET_MB,
                 state: IndexState | None = None):
        self.root = Path(root)
        self.limits = MemoryLimits.of(memory_budget_mb)
        # where large files' extractions are kept for their first live update (extract/incremental.py)
        self.keep_dir = str(keep_dir) if keep_dir else None
        self.store = store
        # the policy in force: the shared IndexState's when given (replaced there, under its
        # lock, by the live updater), else this indexer's own
        self._state = state
        self._policy = policy
        self.workers = workers or min(2, os.cpu_count() or 1)
        self.index = SymbolIndex(cache_limit=self.limits.qname_cache)
        self.resolver = Resolver(self.index)
        self.lock = threading.RLock()  # one apply at a time
        self._inherits_by_file: dict[str, list[tuple[str, str]]] = {}
        self._bases_dirty = False  # _inherits_by_file changed since idx.bases was computed
        self._overlaid: set[str] = set()  # paths whose stored graph comes from an unsaved buffer
        self._suspect: set[str] = set()  # after a crash: files whose held-back calls may be lost
        self._loaded = False
        self._generation: str | None = None  # the store's GENERATION when this index last matched it
        # per recently live-written file: its calls' resolutions as stored, by (caller, callee,
        # hint). A stored resolution changes only when an update re-resolves the row (its
        # path is dropped here then) or moves the bases (all dropped); the next live write of
        # the file re-uses them and _resolve re-checks those that name what changed.
        self._resolved: OrderedDict[str, dict[tuple[str, str, str], Resolution]] = OrderedDict()
        # called once an update is committed, with (files it touched, names of the symbols now
        # in its changed files): memory anchors are checked against the new graph there
        self.listeners: list[Callable[[set[str], set[str]], None]] = []
        self._touched: tuple[set[str], set[str]] = (set(), set())
        # the unsaved buffers the last update indexed (path -> bytes): a listener reading a
        # file as it was indexed looks here before the disk
        self.last_overlays: dict[str, bytes] = {}
        # the calls an update's files held before it rewrote them (``_call_key``; None: too
        # many files), for the parameter pass (_resolve_params)
        self._param_names: Counter | None = Counter()
        # how many stored calls hand each name on as a value (``&name`` arguments); None: not
        # counted since this process loaded the index (the next parameter pass counts)
        self._value_refs: Counter | None = None
        self._in_tree = False

    @property
    def policy(self):
        return self._state.policy if self._state is not None else self._policy

    @policy.setter
    def policy(self, policy) -> None:
        if self._state is not None:
            self._state.policy = policy
        else:
            self._policy = policy

    def resolve_alias(self, qname: str) -> str | None:
        """Where a re-exported or aliased qualified name (``os.path.join`` →
        ``posixpath.join``) is defined, by the symbol index ("." then "::" paths); None when
        it resolves to nothing. Loads the index from the store the first time."""
        self.load()  # no-op once loaded
        idx = self.index
        return idx.resolve_qname(qname) or idx.resolve_qname(qname, "::")

    # -- loading -----------------------------------------------------------------------
    def load(self) -> None:
        """Build the in-memory index from what the store already holds (one snapshot)."""
        if self._loaded:  # every selector asks: no lock (an update may hold it) once loaded
            return
        with self.lock, self.store.snapshot():
            if self._loaded:
                return
            self._generation = self.store.get_meta(GENERATION)
            table = getattr(self.store, "symbol_table", None)
            if table is not None:  # a team graph: its base's table is kept with the base (store/symtable.py)
                table().fill(self.index, self._inherits_by_file)
            else:
                self._load_rows()
            self.index.set_bases(self._bases())
            self._loaded = True
        if self.store.get_meta("resolution_pending") == "1":
            log.warning("the last update stopped before resolution finished; re-resolving every edge")
            # Bulk writes hold a file's calls back until they are resolved: a crash in between
            # leaves the file stored without calls. Such files are re-extracted by the next
            # index_tree (a file that really has no calls costs one parse); until then the flag
            # stays set, so a second crash recovers again.
            with self.lock:
                has_calls = {c.path for c in self.store.all_calls()}
                self._suspect = {f.path for f in self.store.files()
                                 if f.status != "skipped" and f.path not in has_calls}
            self.resolve_all()
            if self._suspect:
                self.store.set_meta({"resolution_pending": "1"})

    def warm_resolver(self) -> None:
        """Load the symbol table if it is not, then make the resolver's star graph and its
        tables (SymbolIndex.warm_stars): a daemon's worker calls it before its first edit,
        so a save's new calls resolve as fast as a full index's did."""
        self.load()
        with self.lock:
            self.index.warm_stars()

    def _load_rows(self) -> None:
        """The in-memory index from the store's rows, file by file, STREAM_FILES at a time:
        only the symbol table stays, never every stored symbol and import row at once."""
        stream = getattr(self.store, "symbol_table_rows", None)
        if stream is not None:  # SQLite: two path-ordered reads, streamed (store/sqlite/graph.py)
            for f, syms, refs in stream():
                self.index.add_file(f.path, f.module, f.language, syms, refs)
            indexed = []
        else:
            indexed = [f for f in self.store.files() if f.status != "skipped"]
        for i in range(0, len(indexed), STREAM_FILES):
            chunk = indexed[i:i + STREAM_FILES]
            paths = [f.path for f in chunk]
            syms = self.store.symbols_in_files(paths)
            imps: dict[str, list] = {}
            for _, im in self.store.imports_touching(paths, ()):
                imps.setdefault(im.path, []).append(im)
            for f in chunk:
                # the order all_symbols()/imports() gave: (qname, start line), (line, module, name)
                rows = sorted(syms.get(f.path, ()), key=lambda s: (s.qname, s.start_line))
                refs = [ImportRef(module=im.module, name=im.name, alias=im.alias, line=im.line)
                        for im in sorted(imps.get(f.path, ()), key=lambda im: (im.line, im.module, im.name))]
                self.index.add_file(f.path, f.module, f.language,
                                    [(s.qname, s.kind, s.parent, s.signature) for s in rows], refs)
        for ih in self.store.inherits():
            if ih.target:
                self._inherits_by_file.setdefault(ih.path, []).append((ih.child, ih.target))

    def _follow_store(self) -> None:
        """Called inside the update's transaction (the index's writer lock held): when another
        process sharing the index wrote it since this one last read or wrote it, rebuild the
        in-memory index from the store, so resolution sees what is stored."""
        if not self._loaded or self.store.get_meta(GENERATION) == self._generation:
            return
        log.info("the index was written by another process: reloading the symbol index")
        self.index = SymbolIndex(cache_limit=self.limits.qname_cache)
        self.resolver = Resolver(self.index)
        self._inherits_by_file = {}
        self._resolved.clear()
        self._value_refs = None
        self._loaded = False

    def _stamp(self) -> None:
        """Record that this update changed the index (other writers reload)."""
        self._generation = uuid.uuid4().hex
        self.store.set_meta({GENERATION: self._generation})

    def _bases(self) -> dict[str, list[str]]:
        bases: dict[str, list[str]] = {}
        for path in sorted(self._inherits_by_file):
            for child, target in self._inherits_by_file[path]:
                bases.setdefault(child, []).append(target)
        return bases

    # -- planning ----------------------------------------------------------------------
    def _same_bytes(self, changed: list[Candidate], stored: dict[str, FileRow], skip: Iterable[str] = ()
                    ) -> tuple[list[Candidate], list[tuple[str, str, int]]]:
        """Of a catch-up's changed files, those of their stored size whose bytes hash as
        stored (touched, or written back as they were by a checkout): (the files still to
        extract, (path, hash, mtime_ns) to restamp). A read and a hash per such file, before
        anything loads the symbol table; a file whose stored version came from an unsaved
        buffer, or whose resolution is suspect, or in ``skip``, is extracted as before. A
        file skipped for its bytes (binary, not UTF-8) is the same file again: skipped for the
        same reason."""
        if not changed:
            return changed, []
        skip = set(skip)
        keep: list[Candidate] = []
        same: list[tuple[str, str, int]] = []
        for c in changed:
            f = stored.get(c.path)
            if f is None or not f.hash or f.size != c.size or f.language != c.language \
                    or c.path in self._suspect or c.path in self._overlaid or c.path in skip:
                keep.append(c)
                continue
            try:
                with open(self.root / c.path, "rb") as fh:
                    data = fh.read()
            except OSError:
                keep.append(c)  # the extraction says why
                continue
            if content_hash(data) == f.hash:
                same.append((c.path, f.hash, c.mtime_ns))
            else:
                keep.append(c)
        return keep, same

    def plan(self, walked: WalkResult, rows: Sequence[FileRow] | None = None
             ) -> tuple[list[Candidate], list[str], list[FileRow]]:
        """(changed or new candidates, deleted paths, skipped rows to store); ``rows``: the
        store's file rows when already read."""
        stored = {f.path: f for f in (self.store.files() if rows is None else rows)}
        changed = []
        for c in walked.candidates:
            f = stored.get(c.path)
            # a row skipped for its bytes holds their hash (binary, not UTF-8): the same bytes
            # are skipped again; one without (unreadable) is tried again; a file whose language
            # the policy now says otherwise is extracted again
            if f is not None and (f.status != "skipped" or f.hash) and f.size == c.size \
                    and f.mtime_ns == c.mtime_ns and f.language == c.language and c.path not in self._suspect:
                continue
            changed.append(c)
        present = {c.path for c in walked.candidates} | {s.path for s in walked.skipped}
        deleted = sorted(p for p in stored if p not in present)
        skipped = [s for s in walked.skipped
                   if not (s.path in stored and stored[s.path].status == "skipped"
                           and stored[s.path].reason == s.reason and stored[s.path].mtime_ns == s.mtime_ns)]
        return changed, deleted, skipped

    # -- the one update path ---------------------------------------------------------------
    def index_tree(self, progress: Progress | None = None) -> IndexReport:
        """Bring the store in line with the tree on disk (full index, or catch-up)."""
        t0 = time.perf_counter()
        with self.lock, self.store.transaction():  # the plan and the update see one version
            self._follow_store()
            if self._loaded or self.store.get_meta("resolution_pending") == "1":
                self.load()  # (a recovery re-resolves, and names the files to extract again)
            walked = walk(self.root, self.policy)
            rows = self.store.files()
            redaction = redaction_key(self.policy)
            kept = self.store.get_meta(REDACTION_META) or None
            if rows and kept != redaction and (kept is not None or redaction != redaction_key(None)):
                # the stored text was extracted under other redaction patterns (or unknown
                # ones, and some are in force now): every file is extracted again, whatever its
                # stat (a pattern added must reach what was stored before it)
                log.info("the redaction patterns changed: every file is extracted again")
                self._suspect |= {f.path for f in rows if f.status != "skipped"}
            changed, deleted, skipped = self.plan(walked, rows)
            wanted = {c.path for c in changed}
            changed, same = self._same_bytes(changed, {f.path: f for f in rows if f.path in wanted})
            if same:  # touched, not changed: stamped, and the symbol table stays unread
                self.store.restamp_files([x for x in same if x[2] > 0])
            if skipped:  # a file skipped before and now moves no edge: its row is written as it is
                was = {f.path for f in rows if f.status == "skipped"}
                if quiet := [s for s in skipped if s.path in was]:
                    self.store.write_files([], quiet)
                    skipped = [s for s in skipped if s.path not in was]
                    rows = self.store.files()  # the report counts their reasons as written
            self._in_tree = True
            try:
                if changed or deleted or skipped:
                    self.load()  # the symbol table, read only when something is to be resolved
                    report = self.update(changed, deleted, skipped, progress=progress)
                    rows = None
                else:  # the tree is as stored (stat-only): no symbol table read, nothing written
                    report = IndexReport()
                    self.last_overlays = {}
                report.unchanged += len(same)
            finally:
                self._in_tree = False
            if kept != redaction:
                self.store.set_meta({REDACTION_META: redaction})
            deps.sync_manifests(self.store, self.root, walked.manifests, self.policy)
            sync_policy_findings(self.store, self.root, self.policy)
        self._notify()  # committed
        if report.parsed > 200 and hasattr(self.store, "optimize"):
            self.store.optimize()
        report.files = len(walked.candidates)
        for reason, n in walked.ignored.items():
            report.skipped[reason] += n
        for f in self.store.files() if rows is None else rows:
            if f.status == "skipped":
                report.skipped[f.reason.split(" (")[0]] += 1
            else:
                report.languages[f.language] += 1
                report.lines += f.lines
        report.symbols, report.edges = self._counts()
        report.seconds = time.perf_counter() - t0
        return report

    def _counts(self) -> tuple[int, int]:
        """(symbols, edges) of the stored graph, for the report: counted (a scan of the
        symbol and call tables: seconds on a kernel) once per index generation and kept in
        the meta with the generation they counted."""
        gen = self.store.get_meta(GENERATION) or ""
        raw = self.store.get_meta(COUNTS_META)
        if raw:
            try:
                kept = json.loads(raw)
                if kept.get("generation") == gen:
                    return int(kept["symbols"]), int(kept["edges"])
            except (ValueError, KeyError, TypeError, AttributeError):
                pass
        st = self.store.stats()
        counts = (st.symbols, st.resolved_calls + st.imports + st.inherits)
        try:
            self.store.set_meta({COUNTS_META: json.dumps({"generation": gen, "symbols": counts[0],
                                                          "edges": counts[1]})})
        except Exception:  # a read-only view keeps none: counted again next time
            log.debug("index counts not kept", exc_info=True)
        return counts

    def extract(self, changed: Sequence[Candidate], progress: Progress | None = None,
                overlays: dict[str, bytes] | None = None, known: set[str] = frozenset()
                ) -> Iterable[FileExtraction | FileRow]:
        """Results in order, streamed: memory stays bounded by the write batch, not the tree.
        A few ``known`` (already stored) files are extracted incrementally when they can be."""
        patterns = tuple(p.pattern for p in getattr(self.policy, "redact_patterns", ())) if self.policy else ()
        overlays = overlays or {}
        args = [(str(self.root), c.path, c.language, patterns, overlays.get(c.path), self.keep_dir) for c in changed]
        total = len(args)
        if total < POOL_THRESHOLD or self.workers <= 1:
            for i, a in enumerate(args):
                yield read_and_extract(*a, incremental=total < POOL_THRESHOLD and a[1] in known)
                if progress and (i % 50 == 0 or i == total - 1):
                    progress(i + 1, total, a[1])
            return
        # a bounded window of tasks, not Executor.map (which submits every file at once: when
        # the writer is slower than the workers, every finished extraction of the tree waited
        # in memory for it)
        # what a worker writes (a warning, a library's note) goes into logging: index/workers.py
        with WorkerOutput() as out, ProcessPoolExecutor(
                max_workers=self.workers, mp_context=_pool_context(),
                initializer=start_worker, initargs=(out, os.getpid(), _die_with_parent)) as pool:
            ahead: deque = deque()
            done = 0
            start = 0
            while start < total or ahead:
                while start < total and len(ahead) < self.workers * EXTRACT_AHEAD:
                    ahead.append(pool.submit(_worker_chunk, args[start:start + EXTRACT_CHUNK]))
                    start += EXTRACT_CHUNK
                for r in ahead.popleft().result():
                    yield r
                    done += 1
                    if progress and (done % 25 == 1 or done == total):
                        progress(done, total, r.path)

    def update(self, changed: Sequence[Candidate], deleted: Sequence[str], skipped: Sequence[FileRow] = (),
               progress: Progress | None = None, overlays: dict[str, bytes] | None = None) -> IndexReport:
        """Re-extract ``changed``, drop ``deleted``, store ``skipped``; then re-resolve every
        edge whose resolution may depend on what changed."""
        report = IndexReport()
        reset_caches()
        with self.lock:
            self.last_overlays = dict(overlays or {})
            try:
                self._update(changed, deleted, skipped, progress, overlays, report)
            except BaseException:
                self._resolved.clear()  # the transaction rolled back: what was noted may not be stored
                self._touched = (set(), set())
                raise
        if self.keep_dir:  # once the update is queryable
            incremental.flush()
        if not self._in_tree:  # a full index tells its listeners once its transaction commits
            self._notify()
        return report

    def _notify(self) -> None:
        paths, names = self._touched
        self._touched = (set(), set())
        if not (paths or names):
            return
        for fn in list(self.listeners):
            try:
                fn(paths, names)
            except Exception:  # a listener never fails the update
                log.warning("an index update listener failed", exc_info=True)

    def _update(self, changed, deleted, skipped, progress, overlays, report: IndexReport) -> IndexReport:
        """One update, in one transaction: plan, drop what left, extract and write what
        changed, re-resolve what it may move, remember the live-written resolutions."""
        with self.store.transaction():
            self._follow_store()
            self.load()
            run = self._plan_update(changed, deleted, skipped, overlays)
            same: list = []
            if not self._in_tree:  # (index_tree looked already) a file touched, not changed: not extracted
                run.changed, same = self._same_bytes(run.changed, run.stored, run.force | set(run.overlays))
            self._param_names = self._stored_call_names(run)
            self.store.set_meta({"resolution_pending": "1"})
            self._drop_removed(run, deleted, skipped)
            self._extract_and_write(run, progress, report)
            if skipped:
                run.late_skips.extend(skipped)
            self._flush(run, final=True)
            run.affected |= run.retargeted
            run.affected.discard("")
            report.parsed = len(run.changed_paths)
            report.deleted = len(deleted)
            rewritten = self._resolve(set(run.changed_paths), set(run.removed) | run.vanished, run.affected,
                                      run.deferred, run.fresh, run.exports_changed, run.reused,
                                      {p: m for p, m in run.stored_res.items() if p not in run.unsettled},
                                      run)
            run.stored_res.clear()
            if len(run.changed_paths) > LIVE_BATCH:  # a bulk update's answers: not kept after it
                self.index.drop_cache()
            # after resolving: the names of a whole tree's symbols are not held beside its peak
            self._note_touched(run)
            self._remember_resolutions(run, rewritten)
            if same:  # their rows take the new mtime: a catch-up stats them unchanged
                self.store.restamp_files([x for x in same if x[2] > 0])
            self._suspect -= {c.path for c in run.changed} | set(run.removed)
            if not self._suspect:
                self.store.set_meta({"resolution_pending": "0"})
            if run.removed or report.unchanged < len(run.changed):  # something was written
                self._stamp()
            report.unchanged += len(same)
        return report

    def _plan_update(self, changed, deleted, skipped, overlays) -> _UpdateRun:
        """The update's stored rows and its files to extract (with the package moves)."""
        stored = self._stored(changed, deleted)
        changed, force = self._with_package_moves(list(changed), deleted, stored)
        return _UpdateRun(changed=changed, force=force, stored=stored, overlays=overlays or {},
                          mtimes={c.path: c.mtime_ns for c in changed},
                          removed=sorted(set(deleted) | {s.path for s in skipped}),
                          whole=not stored and not self.index.files and not deleted)

    def _forget_file(self, run: _UpdateRun, path: str) -> bool:
        """Take ``path`` out of the in-memory index; its names become affected. True when
        it was indexed."""
        fi = self.index.files.get(path)
        if fi is not None:
            run.affected |= _names_of(q for q, _ in fi.symbols) | set(fi.bindings)
        self.index.remove_file(path)
        self._drop_inherits(path)
        return fi is not None

    def _drop_removed(self, run: _UpdateRun, deleted, skipped) -> None:
        """Deleted and newly skipped files leave the index, the store and the keep."""
        for p in run.removed:
            self._forget_file(run, p)
        if deleted:
            self.store.delete_files([p for p in deleted if p not in {s.path for s in skipped}])
        if self.keep_dir:
            for p in run.removed:
                incremental.discard(self.keep_dir, p)

    def _extract_and_write(self, run: _UpdateRun, progress: Progress | None, report: IndexReport) -> None:
        """Extract the changed files (streamed) into the in-memory index, writing them in
        batches; a file whose bytes did not change is counted and left as stored."""
        idx = self.index
        overlays = run.overlays
        known = {p for p, f in run.stored.items() if f.status != "skipped"}
        for r in self.extract(run.changed, progress, overlays, known):
            if isinstance(r, FileRow):
                if idx.files.get(r.path) is not None:
                    self._forget_file(run, r.path)
                    run.vanished.add(r.path)  # its module is gone from the graph, as if deleted
                run.late_skips.append(FileRow(path=r.path, language=r.language, size=r.size, hash=r.hash,
                                              mtime_ns=run.mtimes.get(r.path, 0), status="skipped",
                                              reason=r.reason))
                continue
            prev = run.stored.get(r.path)
            if prev is not None and prev.hash == r.hash and prev.status != "skipped" and prev.language == r.language \
                    and r.path not in run.force \
                    and not (overlays and r.path in overlays) and r.path not in self._overlaid \
                    and r.path not in self._suspect:
                report.unchanged += 1
                continue
            self._overlaid.discard(r.path)
            if overlays and r.path in overlays:
                self._overlaid.add(r.path)
            old = idx.files.get(r.path)  # add_file leaves it as it was (a new FileInfo replaces it)
            patched = idx.add_file(r.path, r.module, r.language,
                                   [(s.qname, s.kind, s.parent, s.signature) for s in r.symbols], r.imports)
            new = idx.files[r.path]
            if patched is not None:  # same module, star imports and bindings
                names = _names_of(patched) | _type_names(old.results, new.results, old.fields, new.fields)
                if r.delta is not None:  # what was re-extracted: any hash that changed
                    run.touched_names[r.path] = names | _names_of(s.qname for s in r.delta.symbols)
            else:
                names = _changed_names(_file_state(old) if old else None, new)
                if old is not None and (old.stars != new.stars or old.module != new.module):
                    run.unsettled.add(r.path)
            if not run.whole:
                run.affected |= names
            if names or old is None:
                run.exports_changed.add(r.path)
            run.changed_paths.append(r.path)
            run.batch.append((r, run.mtimes.get(r.path, 0)))
            if len(run.batch) >= WRITE_BATCH:
                self._flush(run)

    def _flush(self, run: _UpdateRun, final: bool = False) -> None:
        """Write the batch: a small (live) update, written once at the end, goes in with its
        resolved edges (``_write_live``); a large one in bulk (``_write_bulk``)."""
        if final and not run.flushed and len(run.batch) <= LIVE_BATCH:
            self._write_live(run)
        else:
            self._write_bulk(run)
        run.batch, run.late_skips = [], []

    def _write_live(self, run: _UpdateRun) -> None:
        """A small (live) update: its calls, imports and bases go in with their resolution in
        the same write as its symbols, so no reader sees the file without its edges;
        _resolve re-checks them once the bases are recomputed."""
        res = self.resolver
        imp_targets: dict[tuple[str, int], str] = {}
        for fx, _ in run.batch:
            before = {(im.module, im.name, im.alias, im.target) for im in self.store.imports(fx.path)}
            for i, im in enumerate(fx.imports):
                imp_targets[(fx.path, i)] = t = res.resolve_import(fx.path, im)
                if (im.module, im.name, im.alias, t) not in before:
                    run.retargeted.add(im.binding)  # as _resolve's fixpoint does for a row it changes
        inh_targets = {(fx.path, i): res.resolve_base(fx.path, ih.child, ih.base)
                       for fx, _ in run.batch for i, ih in enumerate(fx.inherits)}
        whole = self._write_deltas(run, imp_targets, inh_targets)
        for f in [fx for fx, _ in whole] + run.late_skips:  # (what the write replaces)
            self._count_before(run, f.path)
        targets: dict[tuple[str, int], Resolution] = {}
        for fx, _ in whole:
            before = {} if fx.path in run.unsettled else \
                self._resolved.get(fx.path) or self._stored_resolutions(fx.path, run)
            now = run.noted[fx.path] = {}
            for i, c in enumerate(fx.calls):
                key = (c.caller, c.callee, c.receiver_hint)
                r = now.get(key) or before.get(key)
                if r is None:
                    r = res.resolve_call(fx.path, c.caller, c.callee, c.receiver_hint)
                now[key] = targets[(fx.path, i)] = r
            if before:
                run.reused.add(fx.path)
        if whole or run.late_skips:
            self.store.write_files(whole, run.late_skips, call_targets=targets, inherit_targets=inh_targets,
                                   import_targets=imp_targets, with_calls=True)
        run.fresh.update(fx.path for fx, _ in whole)

    def _stored_resolutions(self, path: str, run: _UpdateRun) -> dict:
        """What ``_resolved`` would hold for a file no live write noted yet: its stored calls'
        resolutions by (caller, callee, hint), as current as the store (``_resolve`` rewrites
        the rows whose resolution moves). Re-used the same way: ``_resolve`` re-checks the
        calls that name what the update changed. Calls bound through a parameter hint are
        left out (the parameter pass sets their rows; resolve_call answers them at the
        write). A file's first save then resolves its new calls only, not all of them (a
        large C file: thousands of star searches)."""
        if path not in run.stored or run.stored[path].status == "skipped":
            return {}
        rows = run.stored_calls[path] if path in run.stored_calls else self._calls_of([path])
        return dict(_memo_entry(c) for c in rows if not c.hint.startswith(PARAM_HINT))

    def _count_before(self, run: _UpdateRun, path: str, rows: Sequence[CallRow] | None = None) -> None:
        """The parameter pass's "before" count takes a lazily counted file (``calls_lazy``),
        once, before the write that replaces its rows: ``rows`` (a delta's replaced lines), or
        all its stored calls, kept for ``_stored_resolutions``."""
        if path not in run.calls_lazy:
            return
        run.calls_lazy.discard(path)
        if rows is None:
            rows = run.stored_calls.get(path)
            if rows is None:
                rows = run.stored_calls[path] = list(self._calls_of([path]))
        if self._param_names is not None:
            for c in rows:
                self._param_names[_call_key(c, c.target)] += 1

    def _write_deltas(self, run: _UpdateRun, imp_targets, inh_targets) -> list[tuple[FileExtraction, int]]:
        """An incremental extraction of a file stored as its base version: only the lines it
        replaced are written (its other calls keep their stored resolution; _resolve
        re-checks those that name what changed). Returns the files to write whole."""
        res = self.resolver
        whole: list[tuple[FileExtraction, int]] = []
        write_delta = getattr(self.store, "write_delta", None)
        in_lines = getattr(self.store, "calls_in_lines", None)
        for fx, mtime in run.batch:
            if fx.delta is None and write_delta is not None:
                fx = self._diffed(fx, run)
            if fx.delta is None or write_delta is None:
                whole.append((fx, mtime))
                continue
            d = fx.delta
            settled = fx.path not in run.unsettled  # else _resolve re-resolves (and counts) all its calls
            # the stored calls of the lines it replaces, as the write deletes them
            replaced: list[CallRow] | None = None
            if fx.path in run.calls_lazy:
                if settled and in_lines is not None:
                    replaced = []
                else:
                    self._count_before(run, fx.path)
            targets = {i: res.resolve_call(fx.path, c.caller, c.callee, c.receiver_hint) for i, c in enumerate(d.calls)}
            if write_delta(fx, mtime, targets,
                           {i: inh_targets[(fx.path, i)] for i in range(len(fx.inherits))},
                           {i: imp_targets[(fx.path, i)] for i in range(len(fx.imports))},
                           replaced=replaced):
                self._resolved.pop(fx.path, None)
                if settled:
                    run.reused.add(fx.path)
                    run.fresh.add(fx.path)
                    if replaced is not None:  # counted by its delta: the rows it kept cancel out
                        self._count_before(run, fx.path, replaced)
                        run.deltas[fx.path] = (d.first_line, d.last_line, d.shift,
                                               [_site_key(fx.path, c, targets[i].target) for i, c in enumerate(d.calls)])
            else:  # the store does not hold the delta's base: the file is written whole
                whole.append((fx, mtime))
        return whole

    def _count_deltas(self, fresh: set[str], run: _UpdateRun, now: Counter, rows: dict[int, CallRow],
                      retargeted: Sequence[tuple[tuple, tuple]]) -> set[str]:
        """The parameter pass's count of the calls of ``fresh`` files written by their delta
        (``_UpdateRun.deltas``), as its "before" count took them (the lines the delta
        replaced: the rows it kept are in neither count, so they cancel out): the calls it
        wrote, and the rewrites of ``_resolve`` (``retargeted``: a kept row's key before goes
        below zero here, which the pass's difference of the counts reads as gone); their calls
        bound through a parameter hint are read from the written lines only (the rest keep
        the pass's stored answer, and a call elsewhere that moves one is found by its
        function's name). Returns the fresh files to read whole."""
        in_lines = getattr(self.store, "calls_in_lines", None)
        counted = {p for p in fresh if p in run.deltas} if in_lines is not None else set()
        for p in sorted(counted):
            first, last, shift, keys = run.deltas[p]
            now.update(keys)
            if any(k[5].startswith(PARAM_HINT) for k in keys):
                for c in in_lines(p, first, last + shift):
                    if c.hint.startswith(PARAM_HINT):
                        rows[c.id] = c
        for before, after in retargeted:
            now[before] -= 1
            now[after] += 1
        return fresh - counted

    def _diffed(self, fx: FileExtraction, run: _UpdateRun) -> FileExtraction:
        """A large file extracted whole, stored indexed: with the delta its stored rows give
        (index/delta.py), so that only its edited lines are written."""
        prev = run.stored.get(fx.path)
        if prev is None or prev.status != "indexed" or fx.size < incremental.MIN_BYTES:
            return fx
        calls = run.stored_calls.get(fx.path)
        if calls is None:
            calls = run.stored_calls[fx.path] = list(self._calls_of([fx.path]))  # as _count_before keeps them
        d = delta_mod.diff(fx, prev.hash, prev.lines, self.store.symbols_in_file(fx.path), calls)
        return fx if d is None else msgspec.structs.replace(fx, delta=d)

    def _write_bulk(self, run: _UpdateRun) -> None:
        """Calls are held back and inserted once resolved (no second write), unless there
        are so many that memory matters: then they are written unresolved and fixed up."""
        run.flushed = True
        for fx, _ in run.batch:
            self._resolved.pop(fx.path, None)
            self._count_before(run, fx.path)
        for f in run.late_skips:
            self._count_before(run, f.path)
        if run.batch or run.late_skips:
            defer = run.deferred_n < self.limits.deferred_calls
            self.store.write_files(run.batch, run.late_skips, with_calls=not defer)
            if defer:
                for fx, _ in run.batch:
                    run.deferred.append((fx.path, fx.calls))
                    run.deferred_n += len(fx.calls)

    def _note_touched(self, run: _UpdateRun) -> None:
        """What the listeners are told once the update commits: files touched and the names
        now in its changed files (of a patched file, the names its update added, removed or
        re-extracted: ``_UpdateRun.touched_names``)."""
        idx = self.index
        touched = set(run.changed_paths) | set(run.removed) | run.vanished
        names = self._touched[1]
        for p in run.changed_paths:
            if p in run.touched_names:
                names |= run.touched_names[p]
            elif p in idx.files:
                names |= _names_of(idx.files[p].sym_qnames)
        self._touched = (self._touched[0] | touched, names)
        for p in run.removed:
            self._resolved.pop(p, None)
        for p in run.vanished:
            self._resolved.pop(p, None)

    def _remember_resolutions(self, run: _UpdateRun, rewritten: set[str] | None) -> None:
        """Keep the live-written files' call resolutions for their next update (at most
        RESOLVED_FILES files), except those ``_resolve`` rewrote."""
        if rewritten is None:  # every resolution may have moved
            self._resolved.clear()
            return
        for p in rewritten:
            self._resolved.pop(p, None)
        for p, memo in run.noted.items():
            if p not in rewritten:
                self._resolved[p] = memo
                self._resolved.move_to_end(p)
        while len(self._resolved) > RESOLVED_FILES:
            self._resolved.popitem(last=False)

    def warm(self, rel: str, data: bytes) -> bool:
        """Prepare ``rel`` (opened in the editor with ``data``) for statement-level updates:
        when ``data`` is what is indexed, extract it into extract/incremental.py's keep
        without writing anything. True when it was extracted."""
        from codesynapse.extract.languages import load

        if len(data) < incremental.MIN_BYTES:
            return False
        with self.lock:
            f = self.store.file(rel)
            if f is None or f.status != "indexed" or f.hash != content_hash(data):
                return False
            if not available(f.language) or not getattr(load(f.language).hooks, "traces_file_facts", False):
                return False  # extracted whole at every update: nothing to prepare
            patterns = tuple(p.pattern for p in getattr(self.policy, "redact_patterns", ())) if self.policy else ()
            r = read_and_extract(str(self.root), rel, f.language, patterns, data, self.keep_dir, incremental=True)
        if self.keep_dir:  # extracted whole when nothing was kept of it
            incremental.flush()
        return isinstance(r, FileExtraction)

    def _stored(self, changed: Sequence[Candidate], deleted: Sequence[str]) -> dict[str, FileRow]:
        """The stored file rows an update needs: those of its paths, read one by one for a
        small (live) update; every row for a large one, or when a package ``__init__.py``
        comes or goes (``_with_package_moves`` looks at every file below it)."""
        paths = [c.path for c in changed] + list(deleted)
        if not paths:
            return {}
        if len(paths) > LIVE_BATCH or any(p.rsplit("/", 1)[-1] == "__init__.py" for p in paths):
            return {f.path: f for f in self.store.files()}
        return {p: f for p in paths if (f := self.store.file(p)) is not None}

    def _drop_inherits(self, path: str) -> None:
        if self._inherits_by_file.pop(path, None):
            self._bases_dirty = True

    @staticmethod
    def _with_package_moves(changed: list[Candidate], deleted: Sequence[str],
                            stored: dict[str, FileRow]) -> tuple[list[Candidate], set[str]]:
        """A Python ``__init__.py`` that appears or disappears renames every module below it:
        those files are re-extracted even though their bytes did not change."""
        inits = [c.path for c in changed if c.path.rsplit("/", 1)[-1] == "__init__.py" and c.path not in stored]
        inits += [p for p in deleted if p.rsplit("/", 1)[-1] == "__init__.py"]
        if not inits:
            return changed, set()
        have = {c.path for c in changed}
        force: set[str] = set()
        gone = set(deleted)
        for init in inits:
            prefix = init.rsplit("/", 1)[0] + "/" if "/" in init else ""
            for c in changed:
                if c.language == "python" and c.path.startswith(prefix):
                    force.add(c.path)
            for path, f in stored.items():
                if f.language == "python" and f.status != "skipped" and path.startswith(prefix) \
                        and path not in have and path not in gone:
                    changed.append(Candidate(path, "python", f.size, f.mtime_ns))
                    have.add(path)
                    force.add(path)
        changed.sort(key=lambda c: c.path)
        return changed, force

    def resolve_all(self) -> None:
        """Re-resolve every edge (after a crash between write and resolution)."""
        with self.lock, self.store.transaction():
            self.load()
            self._resolved.clear()
            self._resolve(set(self.index.files), set(), set())
            self.store.set_meta({"resolution_pending": "0"})
            self._stamp()

    def _calls_of(self, paths: Sequence[str]) -> Iterator:
        """The stored calls of ``paths``, read STREAM_FILES files at a time (each read whole
        before the caller writes anything)."""
        for i in range(0, len(paths), STREAM_FILES):
            yield from self.store.calls_in_files(paths[i:i + STREAM_FILES])

    def _imports_of(self, paths: Sequence[str]) -> Iterator:
        """(row id, import row) of ``paths``, STREAM_FILES files at a time."""
        for i in range(0, len(paths), STREAM_FILES):
            yield from self.store.imports_touching(paths[i:i + STREAM_FILES], ())

    def _resolve(self, changed: set[str], removed: set[str], affected: set[str],
                 deferred: Sequence[tuple[str, list]] = (), fresh: set[str] = frozenset(),
                 exports_changed: set[str] | None = None, reused: set[str] = frozenset(),
                 stored: dict[str, dict] | None = None, run: _UpdateRun | None = None) -> set[str] | None:
        """Re-resolve every stored edge whose target may depend on what changed: the edges of
        ``changed`` files and those elsewhere that name an ``affected`` name. ``fresh`` files'
        calls were stored resolved against the current index (only a change of bases can
        change them again); ``exports_changed`` (default: all of ``changed``) are the changed
        files whose symbols or bindings changed, whose module's importers are re-resolved.
        ``reused`` fresh files stored resolutions noted at their last write: their calls that
        name an ``affected`` name are re-checked as other files' are. ``stored``: the stored
        resolutions of ``deferred`` files (by caller, callee and hint), which a held-back call
        that names no ``affected`` name keeps, as a live write re-uses them (a 500-file branch
        switch on the kernel resolved its 40,000 calls from nothing: ~36 s). Returns the files
        whose stored call resolutions this changed (None: perhaps any, the bases moved)."""
        idx = self.index
        res = self.resolver
        # 1. imports, to a fixpoint: when an import's target changes (a re-exported name moved or
        # vanished), every call through that binding may change too, so its name joins `affected`.
        exporters = changed if exports_changed is None else exports_changed
        changed_modules = {fi.module for p in exporters if (fi := idx.files.get(p)) and fi.module}
        if removed:  # a vanished module changes every import of it: look at every row once
            import_rows = list(self.store.all_imports())
        elif changed and len(changed) >= len(idx.files):  # every file (a full index): read file by file
            import_rows = self._imports_of(sorted(changed))
        elif changed or affected:
            import_rows = self.store.imports_touching(sorted(changed), sorted(affected), sorted(changed_modules))
        else:
            import_rows = []
        done_rows: set[int] = set()
        for _round in range(12):
            imp_updates: list[tuple[int, str]] = []
            grown: set[str] = set()
            for row_id, im in import_rows:
                if row_id in done_rows:
                    continue
                if im.path not in changed and not (
                        {im.name, im.alias, *module_keys(im.module)} & affected
                        or im.module in changed_modules or removed):
                    continue
                done_rows.add(row_id)
                ref = ImportRef(module=im.module, name=im.name, alias=im.alias, line=im.line)
                t = res.resolve_import(im.path, ref)
                if t != im.target:
                    imp_updates.append((row_id, t))
                    grown.add(ref.binding)
            self.store.update_import_targets(imp_updates)
            grown -= affected
            if not grown:
                break
            affected |= grown
            if not removed:  # the rows that name the grown names (all rows were read already)
                import_rows = self.store.imports_touching((), sorted(grown))
        done_rows.clear()

        # 2. bases next: method lookup through bases depends on them
        inh_updates: list[tuple[int, Resolution]] = []
        touched: set[str] = set()
        inherit_rows = self.store.inherits_touching(sorted(changed), sorted(affected)) if changed or affected else []
        for row_id, ih in inherit_rows:
            if ih.path not in changed and not (set(base_keys(ih.base)) & affected):
                continue
            r = res.resolve_base(ih.path, ih.child, ih.base)
            if r.target != ih.target or r.resolution != ih.resolution or r.confidence != ih.confidence:
                inh_updates.append((row_id, r))
            touched.add(ih.path)
        self.store.update_inherit_targets(inh_updates)
        # the touched files' inherit rows in one read (a read per file was a round trip each
        # on a server backend), in inherits(path) order
        of_path: dict[str, list] = {}
        for _, ih in self.store.inherits_touching(sorted(touched), ()) if touched else ():
            of_path.setdefault(ih.path, []).append(ih)
        for path in touched | changed:
            rows = sorted(of_path.get(path, []), key=lambda ih: (ih.line, ih.child, ih.base))
            pairs = [(ih.child, ih.target) for ih in rows if ih.target] if path in touched else []
            if pairs:
                if self._inherits_by_file.get(path) != pairs:
                    self._inherits_by_file[path] = pairs
                    self._bases_dirty = True
            else:
                self._drop_inherits(path)
        old_bases = idx.bases
        if self._bases_dirty:
            new_bases = self._bases()
            idx.set_bases(new_bases)
            self._bases_dirty = False
        else:
            new_bases = old_bases
        bases_changed = new_bases != old_bases
        everything = bases_changed and len(changed) < len(idx.files)
        if bases_changed:
            fresh = frozenset()  # resolved before the bases moved

        # a receiver bound by a return hint takes the type a function declares: when that
        # type's name changes meaning, so may the calls on it (stored under the function's name)
        if affected:
            affected = affected | idx.names_returning(affected)

        # 3. calls: the changed files' own, and those elsewhere that name what changed
        items: list[tuple[str, CallSite, Resolution]] = []
        for path, sites in deferred:
            memo = stored.get(path) if stored and not bases_changed else None
            for c in sites:
                r = memo.get((c.caller, c.callee, c.receiver_hint)) if memo else None
                if r is None or _names_any(c, affected):
                    r = res.resolve_call(path, c.caller, c.callee, c.receiver_hint)
                items.append((path, c, r))
            if len(items) >= 20_000:
                self.store.insert_calls(items)
                items = []
        self.store.insert_calls(items)
        items = []
        held = {path for path, _ in deferred}
        if everything:
            calls: Iterable = self.store.all_calls()
        else:
            # not on a full index (every file changed, every call resolved anew), but on a live
            # update of every file too (a one-file workspace): its reused resolutions are re-checked
            touching = [c for c in self.store.calls_touching(affected)
                        if c.path not in changed or (c.path in reused and c.path in fresh)] \
                if affected and (len(changed) < len(idx.files) or reused) else []
            # the changed files' own calls are read STREAM_FILES files at a time (a full index:
            # every call of the tree, never all in memory); the touching rows lie in other files
            calls = itertools.chain(self._calls_of(sorted(changed - held - fresh)), touching)
        updates: list[tuple[int, Resolution]] = []
        rewritten: set[str] = set()
        deltas = run.deltas if run is not None and fresh else None
        retargeted: list[tuple[tuple, tuple]] = []  # (key before, key after) of a delta file's rewritten call
        param_rows: dict[int, CallRow] = {}  # bound through a parameter hint: the last pass's
        moved: set[str] = set()  # names of calls written or moved: their functions' parameters may move
        now: Counter = Counter()  # the changed files' calls (_call_key), to compare with what they held
        for path, sites in deferred:
            moved.update(c.name for c in sites)
        full = everything or bool(changed) and len(changed) >= len(idx.files)
        # ``now`` is read only by an update's parameter pass; a full index re-resolves every
        # parameter hint and keeps no key per call of the tree (millions on a kernel). A fresh
        # file's calls are counted there, all of them (here only those its touching rows
        # re-check would be: counted twice)
        count_now = not full
        for c in calls:
            counted = count_now and c.path in changed and c.path not in fresh
            if c.hint.startswith(PARAM_HINT):
                param_rows[c.id] = c
                if counted:
                    now[_call_key(c, c.target)] += 1
                continue
            r = res.resolve_call(c.path, c.caller, c.callee, c.hint)
            if counted:
                now[_call_key(c, r.target)] += 1
            if r.target != c.target or r.resolution != c.resolution or r.confidence != c.confidence:
                updates.append((c.id, r))
                rewritten.add(c.path)
                moved.add(c.name)
                if deltas and c.path in deltas:  # the file's calls are counted from its delta
                    retargeted.append((_call_key(c, c.target), _call_key(c, r.target)))
                if len(updates) >= 20_000:
                    self.store.update_call_targets(updates)
                    updates = []
        self.store.update_call_targets(updates)
        # calls held back (a bulk write) went in resolved without the parameter pass, as a
        # live-written file's did: the pass reads them back with its own files' (never every
        # call of the tree unless the update is the whole tree)
        rewritten |= self._resolve_params(full, fresh | held, param_rows, moved, now,
                                          run if deltas else None, retargeted)
        return None if bases_changed else rewritten

    def _stored_call_names(self, run: _UpdateRun) -> Counter | None:
        """The stored calls of an update's files before it rewrites them (``_call_key``): a
        call that goes away may leave a function's parameter with one class (None: too many
        files to read, every parameter hint is re-resolved)."""
        paths = sorted(p for p in {c.path for c in run.changed} | set(run.removed) if p in run.stored)
        if len(paths) > PARAM_NAMES_FILES:
            return None
        out: Counter = Counter()
        live = len(paths) <= LIVE_BATCH
        if live:  # the changed files are counted as they are written (calls_lazy); the removed now
            run.calls_lazy = set(paths) - set(run.removed)
            paths = [p for p in paths if p not in run.calls_lazy]
        # a bulk update's resolutions (fewer than the held call sites the memory budget allows)
        room = 0 if live else self.limits.deferred_calls
        res = run.stored_res
        for c in self._calls_of(paths):
            out[_call_key(c, c.target)] += 1
            if room > 0 and not c.hint.startswith(PARAM_HINT):  # (the parameter pass sets those)
                key, r = _memo_entry(c)
                res.setdefault(c.path, {})[key] = r
                room -= 1
        return out

    def _resolve_params(self, full: bool, fresh: set[str], param_rows: dict[int, CallRow],
                        moved: set[str], now: Counter, run: _UpdateRun | None = None,
                        retargeted: Sequence[tuple[tuple, tuple]] = ()) -> set[str]:
        """The parameter pass, after every other call is resolved: calls bound through a
        parameter hint (extract/model.py ``param_hint``) are resolved against the stored calls
        of their function (``Resolver.param_type``): those of the changed files, and those
        elsewhere whose function's name is the name of a call that came, went, changed its
        arguments or moved. Returns the files whose stored call resolutions this changed."""
        before = self._param_names
        self._param_names = Counter()
        rows = param_rows
        if self._value_refs is None and not (full or before is None):
            # kept with the graph by the last pass (a scan of every call otherwise)
            raw = self.store.get_meta(VALUE_REFS_META)
            if raw:
                self._value_refs = Counter(json.loads(raw))
        scanned = full or before is None or self._value_refs is None
        refs_moved = scanned
        if scanned:  # (counts the calls as stored now: what the update wrote included)
            refs: Counter = Counter()
            all_rows: dict[int, CallRow] = {}
            for c in self.store.all_calls():
                if c.args:
                    refs.update(value_refs(c.args))
                if c.hint.startswith(PARAM_HINT):
                    all_rows[c.id] = c
            self._value_refs = refs
            if full or before is None:
                rows = all_rows
        if not (full or before is None):
            if fresh:  # live-written: their calls went in with parameter hints unbound
                read = self._count_deltas(fresh, run, now, rows, retargeted) if run is not None else fresh
                for c in self._calls_of(sorted(read)):
                    now[_call_key(c, c.target)] += 1
                    if c.hint.startswith(PARAM_HINT):
                        rows[c.id] = c
            # a body-only edit changes no call: no other file's parameter moves
            gone, came = before - now, now - before
            names = moved | {k[3] for k in gone + came}
            for k, n in gone.items():  # a name no longer (or now) handed on as a value
                for v in value_refs(k[4]):
                    if not scanned:
                        self._value_refs[v] -= n
                    names.add(v)
                    refs_moved = True
            for k, n in came.items():
                for v in value_refs(k[4]):
                    if not scanned:
                        self._value_refs[v] += n
                    names.add(v)
                    refs_moved = True
            if names:  # (a parameter hint's hint name is its function's: the index answers)
                for c in self.store.calls_by_hint_name(names):
                    if c.hint.startswith(PARAM_HINT) and c.hint.rsplit(".", 1)[-1] in names:
                        rows[c.id] = c
        if refs_moved:
            self._value_refs = +self._value_refs  # (drops names no call hands on any more)
            self.store.set_meta({VALUE_REFS_META: json.dumps(self._value_refs, sort_keys=True)})
        if not rows:
            return set()
        res = self.resolver
        res.param_sites = _ParamSites(self.store, self._value_refs)
        res._param_cache = {}
        updates: list[tuple[int, Resolution]] = []
        rewritten: set[str] = set()
        try:
            for c in rows.values():
                r = res.resolve_call(c.path, c.caller, c.callee, c.hint)
                if r.target != c.target or r.resolution != c.resolution or r.confidence != c.confidence:
                    updates.append((c.id, r))
                    rewritten.add(c.path)
        finally:
            res.param_sites = None
            res._param_cache = {}
        self.store.update_call_targets(updates)
        return rewritten


def _memo_entry(c: CallRow) -> tuple[tuple[str, str, str], Resolution]:
    """A stored call's resolution, keyed as a written call site looks it up (caller, callee,
    hint): what a later write of its file re-uses unless the call names what changed."""
    return (c.caller, c.callee, c.hint), Resolution(c.target, c.resolution, c.confidence)


def _site_key(path: str, c: CallSite, target: str) -> tuple:
    """``_call_key`` of call site ``c`` of ``path`` stored with ``target``."""
    if c.receiver_hint.startswith(PARAM_HINT):
        return (path, c.caller, c.callee, c.name, c.args, c.receiver_hint)
    return (path, c.caller, c.callee, c.name, c.args, target)


def _names_any(c: CallSite, names: set[str]) -> bool:
    """Whether call site ``c`` names one of ``names`` as ``GraphStore.calls_touching`` finds
    stored calls: by its name, its callee's head or its receiver hint's last part."""
    return bool(names) and (c.name in names or callee_head(c.callee) in names
                            or bool(c.receiver_hint) and c.receiver_hint.rsplit(".", 1)[-1] in names)


def _call_key(c, target: str) -> tuple:
    """What of a stored call a parameter type may depend on: the call, its arguments and its
    target (a parameter-hinted call's target is the pass's own answer, so its hint instead)."""
    if c.hint.startswith(PARAM_HINT):
        return (c.path, c.caller, c.callee, c.name, c.args, c.hint)
    return (c.path, c.caller, c.callee, c.name, c.args, target)


# the parameter pass reads at most this many callers of one function (more: left untyped)
PARAM_SITES_MAX = 1000
# an update of more files than this re-resolves every parameter hint instead of reading the
# names of the calls its files held
PARAM_NAMES_FILES = 2000


class _ParamSites:
    """The stored calls the parameter pass reads (``Resolver.param_type``), cached for one pass."""

    def __init__(self, store: GraphStore, value_refs: Counter):
        self.store = store
        self._named: dict[str, bool] = {}
        self._value_refs = value_refs

    def handed_on(self, name: str) -> bool:
        """True when some stored call hands ``name`` on as a value (``submit(f, x)``)."""
        return self._value_refs.get(name, 0) > 0

    def callers(self, qname: str) -> list[CallRow] | None:
        rows = self.store.callers(qname, limit=PARAM_SITES_MAX + 1)
        return None if len(rows) > PARAM_SITES_MAX else rows

    def unresolved(self, name: str) -> bool:
        """True when a call named ``name`` is unresolved or bound through a parameter hint
        (either may call the function with anything)."""
        hit = self._named.get(name)
        if hit is None:
            # an unresolved call of the name is an index count; the calls of a common name
            # (thousands, over a server's connection) are read only when there is none
            hit = self._named[name] = self.store.count_unresolved_named(name) > 0 or any(
                c.name == name and (c.resolution == "unresolved" or c.hint.startswith(PARAM_HINT))
                for c in self.store.calls_touching([name]))
        return hit

