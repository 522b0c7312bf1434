"""Call-graph accuracy against an independent oracle: ``codesynapse bench accuracy``.

For every target (a function, method or class named in ``fixtures/accuracy/<corpus>.yaml``)
the harness compares our direct callers — the ``codesynapse/callGraph`` answer, depth 1 —
with the call sites Jedi finds, both reduced to *units*: (file, enclosing function, method
or class body; module-level code is the module's unit). Precision and recall are computed
per target and micro-averaged per corpus (summed counts, never averaged ratios).

The oracle
----------
``jedi.Project(corpus)`` + ``Script.get_references(scope="project")`` on the target's
definition, with Jedi's search limits raised (it normally opens at most 2,000 files and
parses 30) and its folder filter replaced by the benchmark's own exclusions. Only call
sites are kept: the reference is the called expression's last name and is followed by
``(...)``. The unit of a site is computed from the parse tree with Python's scoping:
lambdas and comprehensions belong to the function around them; decorators, default
values, annotations and base lists to the scope the ``def``/``class`` statement runs in.

``get_references`` alone misses calls: it searches only the target's own name (an aliased
import ``from x import y as z; z()`` is never looked at) and it loses methods that typeshed
declares (it reports one call of ``argparse._ActionsContainer.add_argument``). So the oracle
also asks Jedi's ``goto`` (imports followed) at every syntactic call site whose called name
is the target's name or an import alias of it, and at every call site of ours; where
``goto`` lands on the target's definition, the site's unit is the oracle's too. The
candidate sites are all calls of that name, whatever we resolved them to; the decision is
Jedi's.

A unit we report that the oracle lacks is a **false positive** (``goto`` at our site lands
elsewhere, or on the target but in another unit than the one Python runs the call in),
unless the oracle has a documented blind spot there; a unit the oracle lists that we lack
is a **miss**, reported with what we did at that site (unresolved, bound elsewhere, or no
call extracted).

Blind spots (excluded openly, every one listed in the report):

* ``no-inference`` — ``goto`` at our call site finds no definition at all (an untyped
  parameter, a dynamic attribute, a value the inference gives up on): the oracle cannot
  decide, so the edge counts as neither right nor wrong;
* ``platform-module`` — Jedi resolves ``os.path`` to ``ntpath`` (typeshed's platform
  branches) where we say ``posixpath``; and the other way round, it sends ntpath's own
  calls of its own functions to ``posixpath`` (through typeshed's ``ntpath`` stub);
* ``c-accelerator`` — Jedi resolves the site to a typeshed stub of a C module (for example
  ``_warnings.warn``) whose pure-Python twin is our target;
* ``oracle-ambiguous`` — a miss where ``goto`` at the oracle's own site yields several
  definitions and we bound the site to one of them.

Jedi is slow (minutes per common name), so its answers are cached in
``<data dir>/accuracy/oracle-<corpus>-<key>.json``, keyed by the corpus version, a digest
of the corpus's Python files (path, size, mtime), the Jedi version and the oracle
settings. The report records how long every stage took and whether the oracle came from
the cache.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codesynapse.bench.accuracy_base import CorpusRun, micro, open_corpus_app, score
from codesynapse.bench.accuracy_lsp import SECTION, render_section
from codesynapse.bench.report import say

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[3]
TARGETS_DIR = REPO_ROOT / "fixtures" / "accuracy"
ORACLE_SCHEMA = 3  # bump when the oracle's output or settings change
JEDI_OPEN_LIMIT = 1_000_000
JEDI_PARSE_LIMIT = 1_000_000
CATEGORIES = ("module-function", "self-method", "class", "local-instance", "private-helper", "ambiguous-name",
              "many-callers")
MODULE_UNIT = "<module>"
TARGET_FILES = {"python-stdlib": "stdlib.yaml", "stdlib": "stdlib.yaml", "django": "django.yaml"}
QUICK_TARGETS = 8


# -- targets ------------------------------------------------------------------------------------

@dataclass
class Target:
    symbol: str
    categories: tuple[str, ...]
    note: str = ""


@dataclass
class TargetList:
    corpus: str
    description: str
    targets: list[Target]
    path: str = ""


def load_targets(path: Path | str) -> TargetList:
    """Read a target list (YAML). Unknown categories and duplicate symbols are errors."""
    import yaml

    path = Path(path)
    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f) or {}
    if not isinstance(data, dict) or not isinstance(data.get("targets"), list):
        raise ValueError(f"{path}: expected a mapping with a 'targets' list")
    out: list[Target] = []
    seen: set[str] = set()
    for i, t in enumerate(data["targets"]):
        if not isinstance(t, dict) or not isinstance(t.get("symbol"), str) or not t["symbol"].strip():
            raise ValueError(f"{path}: target {i} needs a 'symbol'")
        sym = t["symbol"].strip()
        if sym in seen:
            raise ValueError(f"{path}: target {sym!r} is listed twice")
        seen.add(sym)
        cats = t.get("category", ())
        cats = (cats,) if isinstance(cats, str) else tuple(cats or ())
        bad = [c for c in cats if c not in CATEGORIES]
        if not cats or bad:
            raise ValueError(f"{path}: target {sym!r} needs categories from {', '.join(CATEGORIES)} (got {cats})")
        out.append(Target(sym, cats, str(t.get("note", "") or "").strip()))
    return TargetList(str(data.get("corpus", "")), str(data.get("description", "") or "").strip(), out, str(path))


# -- the arithmetic (score, micro: bench/accuracy_base.py) ------------------------------------

def unit_key(path: str, line: int | None) -> str:
    return f"{path}:{MODULE_UNIT}" if line is None else f"{path}:{line}"


# -- the oracle (runs in worker processes) -----------------------------------------------------

_JEDI: dict[str, Any] = {}


def _jedi_setup(root: str, skip_dirs: tuple[str, ...]) -> Any:
    """Raise Jedi's search limits and make its folder filter the benchmark's exclusions.
    Each process parses into its own cache folder: parso's shared on-disk cache is not
    safe for two writers (a half-written pickle reads as EOFError)."""
    import tempfile

    import jedi
    import jedi.inference.references as refs
    import parso.cache

    # parso drops parsed modules unused for 10 minutes once 600 are cached, while Jedi may
    # still hold names in them (KeyError in get_parso_cache_node on long searches)
    parso.cache._CACHED_SIZE_TRIGGER = 10**9
    if "cache" not in _JEDI:
        _JEDI["cache"] = tempfile.mkdtemp(prefix="codesynapse-jedi-")
        jedi.settings.cache_directory = _JEDI["cache"]
    refs._OPENED_FILE_LIMIT = JEDI_OPEN_LIMIT
    refs._PARSED_FILE_LIMIT = JEDI_PARSE_LIMIT
    refs._IGNORE_FOLDERS = tuple(skip_dirs)
    if _JEDI.get("root") != root:
        _JEDI["root"] = root
        _JEDI["project"] = jedi.Project(root, smart_sys_path=True)
    return _JEDI["project"]


def _call_unit(leaf) -> tuple[int | None, str] | None:
    """If ``leaf`` (a parso Name) is the called name of a call, the unit that runs the call:
    (line of the def/class name, its name) or (None, "<module>"); else None."""
    node = leaf
    if leaf.parent is not None and leaf.parent.type == "trailer" and leaf.get_previous_sibling() == ".":
        node = leaf.parent
    nxt = node.get_next_sibling()
    if nxt is None or nxt.type != "trailer" or nxt.children[0] != "(":
        return None
    child, cur = leaf, leaf.parent
    while cur is not None:
        if cur.type in ("funcdef", "classdef") and child is cur.children[-1]:
            return cur.name.line, cur.name.value
        child, cur = cur, cur.parent
    return None, MODULE_UNIT


def _definition_column(path: str, line: int, name: str) -> int | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for i, text in enumerate(f, 1):
                if i == line:
                    m = re.search(r"\b(?:def|class)\s+(" + re.escape(name) + r")\b", text)
                    return m.start(1) if m else None
    except OSError:
        return None
    return None


def oracle_references(root: str, skip_dirs: tuple[str, ...], rel: str, line: int, name: str) -> dict[str, Any]:
    """Jedi's call sites of the definition ``name`` at ``rel:line``."""
    import jedi

    t0 = time.perf_counter()
    project = _jedi_setup(root, skip_dirs)
    path = os.path.join(root, rel)
    col = _definition_column(path, line, name)
    if col is None:
        return {"error": f"no 'def/class {name}' on {rel}:{line}", "sites": [], "seconds": 0.0}
    script = jedi.Script(path=path, project=project)
    sites = []
    for ref in script.get_references(line, col, scope="project"):
        tree_name = getattr(ref._name, "tree_name", None)
        if tree_name is None or ref.module_path is None or ref.is_definition():
            continue
        unit = _call_unit(tree_name)
        if unit is None:
            continue
        try:
            rp = os.path.relpath(str(ref.module_path), root).replace(os.sep, "/")
        except ValueError:
            continue
        if rp.startswith("../"):
            continue
        sites.append({"path": rp, "line": ref.line, "col": ref.column, "unitLine": unit[0], "unitName": unit[1]})
    sites.sort(key=lambda s: (s["path"], s["line"], s["col"]))
    return {"sites": sites, "seconds": round(time.perf_counter() - t0, 2), "column": col}


def oracle_goto(root: str, skip_dirs: tuple[str, ...], rel: str, sites: Sequence[tuple[int, int]]) -> dict[str, Any]:
    """``goto`` (imports followed) at each (line, col) of one file: the definitions found,
    as (path relative to the corpus or absolute outside it, line, full name)."""
    import jedi

    project = _jedi_setup(root, skip_dirs)
    out: dict[str, Any] = {}
    try:
        script = jedi.Script(path=os.path.join(root, rel), project=project)
    except (OSError, UnicodeDecodeError) as e:
        return {f"{ln}:{c}": {"error": str(e)} for ln, c in sites}
    for ln, c in sites:
        try:
            defs = script.goto(ln, c, follow_imports=True)
        except Exception as e:  # Jedi can fail on odd code; that site stays undecided
            out[f"{ln}:{c}"] = {"error": f"{e.__class__.__name__}: {e}"}
            continue
        found = []
        for d in defs:
            mp = str(d.module_path) if d.module_path else ""
            if mp:
                r = os.path.relpath(mp, root).replace(os.sep, "/")
                mp = mp if r.startswith("../") else r
            found.append([mp, d.line, d.full_name or d.name, d.type])
        entry: dict[str, Any] = {"defs": found, "unit": None}
        try:
            leaf = _leaf_at(script._module_node, ln, c)
            unit = _call_unit(leaf) if leaf is not None and leaf.type == "name" else None
        except Exception:  # a position parso cannot place: no unit, the site is not a call
            unit = None
        if unit is not None:
            entry["unit"] = [unit[0], unit[1]]
        out[f"{ln}:{c}"] = entry
    return out


def _fill_units(root: str, rel: str, positions, gcache: dict[str, Any]) -> None:
    import parso

    try:
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            module = parso.parse(f.read())
    except OSError:
        return
    for ln, c in positions:
        leaf = _leaf_at(module, ln, c)
        unit = _call_unit(leaf) if leaf is not None and leaf.type == "name" else None
        gcache[f"{rel}:{ln}:{c}"]["unit"] = [unit[0], unit[1]] if unit is not None else None


def _leaf_at(module, line: int, col: int):
    """The leaf that starts at (line, col): parso's lookup returns the leaf *ending* there
    when two touch (``t.render``: the ``.`` at the column of ``render``)."""
    leaf = module.get_leaf_for_position((line, col), include_prefixes=True)
    if leaf is not None and leaf.start_pos != (line, col):
        nxt = leaf.get_next_leaf()
        if nxt is not None and nxt.start_pos == (line, col):
            return nxt
    return leaf


# Crashes that come from parso's caches rather than from the code: retried on the next run.
_TRANSIENT = ("oracle failed: KeyError", "oracle failed: EOFError", "oracle failed: OSError")


def _oracle_refs_task(args):
    try:
        return args[2], oracle_references(*args[:2], *args[3:])
    except Exception as e:  # one target's failure is reported, the run goes on
        log.exception("oracle failed for %s", args[2])
        return args[2], {"error": f"oracle failed: {e.__class__.__name__}: {e}", "sites": [], "seconds": 0.0}


def _oracle_goto_task(args):
    try:
        return args[2], oracle_goto(*args)
    except Exception as e:
        log.exception("oracle goto failed in %s", args[2])
        return args[2], {f"{ln}:{c}": {"error": f"{e.__class__.__name__}: {e}", "crash": True} for ln, c in args[3]}


# -- the oracle cache ---------------------------------------------------------------------------

def tree_digest(root: Path, skip_dirs: Iterable[str]) -> str:
    """A digest of the corpus's Python files (relative path, size, mtime)."""
    skip = set(skip_dirs)
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in skip)
        for fn in sorted(filenames):
            if fn.endswith(".py"):
                p = os.path.join(dirpath, fn)
                try:
                    st = os.stat(p)
                except OSError:
                    continue
                h.update(f"{os.path.relpath(p, root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


class OracleCache:
    """One JSON file per corpus version: reference answers by target, goto answers by site."""

    def __init__(self, path: Path, key: dict[str, Any]):
        self.path = path
        self.key = key
        self.data: dict[str, Any] = {"key": key, "refs": {}, "sites": {}}
        self.dirty = False
        if path.exists():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                if data.get("key") == key:
                    self.data = data
            except (OSError, ValueError):
                log.warning("ignoring an unreadable oracle cache %s", path)

    def save(self) -> None:
        if not self.dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.path)
        self.dirty = False


# -- our side -------------------------------------------------------------------------------------

def our_callers(app, qname: str) -> dict[str, Any]:
    """Our depth-1 callers of ``qname`` through ``codesynapse/callGraph``, as units, every
    page of it (the answer's ``cursor``). The sites of each caller are read from the graph
    store with the query the request itself uses (a unit's file is its call's); a caller the
    pages did not list would be counted in ``fromStore`` (0 since callGraph pages)."""
    from codesynapse.methods import call_method

    params = {"selector": qname, "direction": "callers", "depth": 1, "limit": 200}
    ans = call_method(app, "codesynapse/callGraph", params)
    if not ans.get("found"):
        return {"found": False, "answer": {k: ans.get(k) for k in ("hint", "candidates", "suggestions")}}
    sec = ans.get("callers", {})
    first_omitted = sec.get("omittedNodes", 0)
    listed = {n["qualifiedName"] for n in sec.get("nodes", [])}
    pages = 1
    while sec.get("cursor"):
        sec = call_method(app, "codesynapse/callGraph", {**params, "cursor": sec["cursor"]}).get("callers", {})
        listed |= {n["qualifiedName"] for n in sec.get("nodes", [])}
        pages += 1
    store = app.store
    rows = store.callers(qname, limit=10**7)
    # Units come from the call rows (the rows the request is built from): a caller's
    # qualified name can belong to several files (modules outside any package, such as
    # migrations named 0001_initial), so its file is the call's, not the first symbol's.
    units: dict[str, dict[str, Any]] = {}
    sym_cache: dict[str, list] = {}
    from_store: set[str] = set()
    for r in rows:
        syms = sym_cache.get(r.caller)
        if syms is None:
            syms = sym_cache[r.caller] = store.symbols_by_qname(r.caller)
        if not syms:
            continue
        # the definition of that name in the call's file whose lines hold the call
        same = [x for x in syms if x.path == r.path] or syms
        sym = next((x for x in same if x.start_line <= r.line <= x.end_line), same[0])
        k = unit_key(sym.path, None if sym.kind == "module" else sym.start_line)
        units.setdefault(k, {"qname": r.caller, "sites": []})["sites"].append(
            (r.path, r.line, r.col, r.callee, r.resolution))
        if r.caller not in listed:
            from_store.add(r.caller)
    return {"found": True, "root": ans.get("root", {}), "units": units, "unresolvedCandidates":
            sec.get("unresolvedCandidates", 0), "callSites": len(rows), "fromStore": len(from_store),
            "answerNodes": len(listed), "omittedNodes": first_omitted, "pages": pages}


def _name_position(src_lines: list[str], line: int, col: int, name: str) -> tuple[int, int] | None:
    """Where ``name(`` is called in the call expression starting at (line, col): the last
    ``name`` followed by ``(`` on the call's first lines (1-based line, 0-based column)."""
    pat = re.compile(r"\b" + re.escape(name) + r"\b(?=\s*(?:\)\s*)?\()")
    for ln in range(line, min(line + 6, len(src_lines) + 1)):
        text = src_lines[ln - 1]
        start = col if ln == line else 0
        hits = list(pat.finditer(text, start))
        if hits:
            return ln, hits[0].start()
    return None


# -- running ---------------------------------------------------------------------------------------

def _resolve_corpus(spec: str) -> CorpusRun:
    try:
        from codesynapse.bench.corpora import resolve
    except ImportError:  # the corpora module is not in this build: a path only
        p = Path(spec).expanduser().resolve()
        return CorpusRun(p.name, p, "directory", exclude=("site-packages/",))
    c = resolve(spec)
    return CorpusRun(c.name, Path(c.path), c.version, tuple(c.exclude), tuple(c.include))


def _targets_for(corpus: CorpusRun, targets_file: str | Path | None) -> Path:
    if targets_file:
        return Path(targets_file)
    name = TARGET_FILES.get(corpus.name, f"{corpus.name}.yaml")
    return TARGETS_DIR / name


def run_accuracy(corpus_root: str | Path, targets_file: str | Path | None = None, *, data_dir: str | Path | None = None,
                 corpus: CorpusRun | None = None, quick: bool = False, workers: int = 2, reindex: bool = True,
                 progress=None) -> dict[str, Any]:
    """Index the corpus, ask for every target's callers, ask the oracle, compare.

    Returns the corpus's result: per-target rows, the micro-average, misses, false
    positives, excluded blind spots and the time every stage took."""
    t_start = time.perf_counter()
    say = progress or (lambda msg: log.info("%s", msg))
    if corpus is None:
        corpus = _resolve_corpus(str(corpus_root))
    tl = load_targets(_targets_for(corpus, targets_file))
    targets = tl.targets
    if quick:
        targets = _quick_subset(targets)
    if data_dir is None:
        from codesynapse.workspace import default_data_root

        data_dir = default_data_root() / "bench"
    data_dir = Path(data_dir)
    acc_dir = data_dir / "accuracy"
    index_dir = acc_dir / f"index-{corpus.name}"
    if reindex and index_dir.exists():
        for f in index_dir.glob("graph.db*"):
            f.unlink()
    index_dir.mkdir(parents=True, exist_ok=True)

    # 1. our graph
    app = open_corpus_app(corpus, index_dir)
    try:
        say(f"[{corpus.name}] indexing {corpus.path}")
        t0 = time.perf_counter()
        cpu0 = _cpu()
        report = app.index()
        index_s = time.perf_counter() - t0
        index_cpu = _cpu() - cpu0
        t0 = time.perf_counter()
        ours: dict[str, dict[str, Any]] = {}
        defs: dict[str, tuple[str, int, str]] = {}
        for t in targets:
            ours[t.symbol] = our_callers(app, t.symbol)
            rows = app.store.symbols_by_qname(t.symbol)
            if rows:
                defs[t.symbol] = (rows[0].path, rows[0].start_line, rows[0].name)
        query_s = time.perf_counter() - t0
        policy_fp = getattr(app.policy, "fingerprint", "") or ""
        indexed = {f.path for f in app.store.files() if f.status != "skipped"}
        stats = app.store.stats()
        index_info = {"files": report.files, "parsed": report.parsed, "lines": report.lines,
                      "symbols": report.symbols, "edges": report.edges, "seconds": round(index_s, 2),
                      "cpuSeconds": round(index_cpu, 2), "calls": stats.calls, "resolvedCalls": stats.resolved_calls,
                      "languages": dict(report.languages)}
        # 2. the oracle's references (cached)
        import jedi

        key = {"schema": ORACLE_SCHEMA, "corpus": corpus.name, "version": corpus.version,
               "tree": tree_digest(corpus.path, corpus.skip_dirs), "jedi": jedi.__version__,
               "limits": [JEDI_OPEN_LIMIT, JEDI_PARSE_LIMIT], "skip": list(corpus.skip_dirs)}
        cache = OracleCache(acc_dir / f"oracle-{corpus.name}-{hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]}.json", key)
        root = str(corpus.path)
        todo = []
        for t in targets:
            d = defs.get(t.symbol)
            ck = f"{t.symbol}@{d[0]}:{d[1]}" if d else ""
            if d and ck not in cache.data["refs"]:
                todo.append((root, corpus.skip_dirs, ck, d[0], d[1], d[2]))
        t0 = time.perf_counter()
        failed: dict[str, dict[str, Any]] = {}
        oracle_cached = len(targets) - len(todo)
        if todo:
            say(f"[{corpus.name}] Jedi reference search for {len(todo)} targets ({oracle_cached} cached)")
            for ck, res in _pool_map(_oracle_refs_task, todo, workers):
                if "error" in res and res["error"].startswith(_TRANSIENT):
                    say(f"[{corpus.name}]   {ck}: {res['error']} (not cached: asked again next run)")
                    cache.data["refs"].pop(ck, None)
                    failed[ck] = res
                    continue
                cache.data["refs"][ck] = res
                cache.dirty = True
                say(f"[{corpus.name}]   {ck}: {len(res['sites'])} call sites in {res['seconds']} s")
                cache.save()
        refs_s = time.perf_counter() - t0

        # 3. the goto sweep (cached per site): Jedi's goto at every call site named like a
        # target or like an import alias of it, and at every call site of ours
        src_cache: dict[str, list[str]] = {}

        def lines_of(rel: str) -> list[str]:
            if rel not in src_cache:
                try:
                    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                        src_cache[rel] = f.read().split("\n")
                except OSError:
                    src_cache[rel] = []
            return src_cache[rel]

        aliases: dict[str, set[tuple[str, str]]] = {}  # target name → {(file, alias)}
        for im in app.store.imports():
            if im.name and im.alias and im.alias != im.name:
                aliases.setdefault(im.name, set()).add((im.path, im.alias))
        by_name: dict[str, list] = {}
        for c in app.store.calls_touching(sorted({d[2] for d in defs.values()} |
                                                 {a for v in aliases.values() for _, a in v})):
            by_name.setdefault(c.name, []).append(c)
        sweep: dict[str, list[tuple[str, int, int]]] = {}  # target → name positions to check
        pending: dict[str, set[tuple[int, int]]] = {}
        for t in targets:
            d = defs.get(t.symbol)
            if not d:
                continue
            rows = [c for c in by_name.get(d[2], ())]
            for path, alias in aliases.get(d[2], ()):
                rows += [c for c in by_name.get(alias, ()) if c.path == path]
            for u in ours[t.symbol].get("units", {}).values():
                rows += [_Site(*x) for x in u["sites"]]
            pos_list = []
            for c in rows:
                if c.path not in indexed:
                    continue
                pos = _name_position(lines_of(c.path), c.line, c.col, c.callee.rsplit(".", 1)[-1])
                if pos is not None:
                    pos_list.append((c.path, pos[0], pos[1]))
                    pending.setdefault(c.path, set()).add(pos)
            sweep[t.symbol] = sorted(set(pos_list))
        gcache = cache.data.setdefault("sites", {})  # goto answers (with the site's unit) by path:line:col
        jobs = []
        for path in sorted(pending):
            # an answer without "unit" is from before units were recorded: its unit is read
            # from the parse tree here, Jedi's answer is kept
            stale = [p for p in pending[path] if "defs" in gcache.get(f"{path}:{p[0]}:{p[1]}", {})
                     and "unit" not in gcache[f"{path}:{p[0]}:{p[1]}"]]
            if stale:
                _fill_units(root, path, stale, gcache)
                cache.dirty = True
            need = sorted(p for p in pending[path] if f"{path}:{p[0]}:{p[1]}" not in gcache)
            for i in range(0, len(need), 400):  # big files in slices: a crash loses little
                jobs.append((root, corpus.skip_dirs, path, need[i:i + 400]))
        t0 = time.perf_counter()
        if jobs:
            say(f"[{corpus.name}] Jedi goto at {sum(len(j[3]) for j in jobs)} call sites in {len(pending)} files "
                f"({sum(len(v) for v in pending.values()) - sum(len(j[3]) for j in jobs)} cached)")
            for i, (path, res) in enumerate(_pool_map(_oracle_goto_task, jobs, workers)):
                for k, v in res.items():
                    if "crash" not in v:  # a crashed worker's sites are asked again next run
                        gcache[f"{path}:{k}"] = v
                cache.dirty = True
                if i % 50 == 49:
                    cache.save()
                    say(f"[{corpus.name}]   goto: {i + 1}/{len(jobs)} files")
        cache.save()  # also keeps units filled in above
        goto_s = time.perf_counter() - t0

        plans = []
        for t in targets:
            d = defs.get(t.symbol)
            o = ours[t.symbol]
            if not d or not o.get("found"):
                plans.append((t, None, None))
                continue
            ck = f"{t.symbol}@{d[0]}:{d[1]}"
            ref = dict(cache.data["refs"].get(ck) or failed.get(ck) or {"error": "no oracle answer"})
            if "error" in ref and not ref["error"].startswith("oracle failed"):
                plans.append((t, ref, {}))
                continue
            if "error" in ref:  # Jedi crashed in get_references: the goto sweep alone is the oracle
                ref = {"sites": [], "seconds": 0.0, "referencesError": ref.pop("error")}
            sites = ref.get("sites", [])
            # the oracle sees every .py file; compare only files that the index holds
            ref["sites"] = [x for x in sites if x["path"] in indexed]
            ref["outsideIndex"] = len(sites) - len(ref["sites"])
            oracle_units = _oracle_units(ref["sites"], "references")
            swept = 0
            for path, ln, col in sweep.get(t.symbol, ()):
                g = gcache.get(f"{path}:{ln}:{col}") or {}
                if g.get("unit") is None or not any(_is_target(x, d[0], d[1], t.symbol) for x in g.get("defs") or ()):
                    continue
                k = unit_key(path, g["unit"][0])
                if k not in oracle_units:
                    swept += 1
                ou = oracle_units.setdefault(k, {"name": g["unit"][1], "sites": [], "found": "goto"})
                if not any(x["line"] == ln and x["col"] == col for x in ou["sites"]):
                    ou["sites"].append({"path": path, "line": ln, "col": col, "unitLine": g["unit"][0],
                                        "unitName": g["unit"][1]})
            ref["sweepOnlyUnits"] = swept
            ref["sweepSites"] = len(sweep.get(t.symbol, ()))
            plans.append((t, ref, oracle_units))

        # 4. compare
        rows = []
        for t, ref, oracle_units in plans:
            rows.append(_compare(t, defs.get(t.symbol), ours[t.symbol], ref, oracle_units, gcache, lines_of,
                                 app.store))
        scored = [r for r in rows if r["status"] == "ok"]
        result = {
            "corpus": {"name": corpus.name, "path": str(corpus.path), "version": corpus.version,
                       "policyFingerprint": policy_fp, "exclude": list(corpus.exclude),
                       "include": list(corpus.include), "oracleSkips": list(corpus.skip_dirs)},
            "targetsFile": _display_path(tl.path), "quick": quick,
            "index": index_info,
            "micro": micro(scored),
            "microStrict": micro({"tp": r["tp"], "fp": r["fp"] + r["excludedCount"], "fn": r["fn"]} for r in scored),
            "byCategory": {c: micro(r for r in scored if c in r["categories"]) for c in CATEGORIES
                           if any(c in r["categories"] for r in scored)},
            "targets": rows,
            "blindSpots": dict(sorted(Counter(e["reason"] for r in rows for e in r.get("excluded", ())).items())),
            "timing": {"indexSeconds": round(index_s, 2), "querySeconds": round(query_s, 2),
                       "oracleReferenceSeconds": round(refs_s, 2), "oracleGotoSeconds": round(goto_s, 2),
                       "oracleTargetsFromCache": oracle_cached, "oracleTargetsComputed": len(todo),
                       "oracleSecondsWhenComputed": round(sum(cache.data["refs"].get(
                           f"{t.symbol}@{defs[t.symbol][0]}:{defs[t.symbol][1]}", {}).get("seconds", 0)
                           for t in targets if t.symbol in defs), 1),
                       "totalSeconds": round(time.perf_counter() - t_start, 2)},
            "oracleCache": str(cache.path),
            "jedi": jedi.__version__,
        }
        return result
    finally:
        app.close()


def _quick_subset(targets: list[Target]) -> list[Target]:
    """The first target of each category, then the list's order, up to QUICK_TARGETS."""
    chosen: list[Target] = []
    for c in CATEGORIES:
        for t in targets:
            if c in t.categories and t not in chosen:
                chosen.append(t)
                break
    for t in targets:
        if len(chosen) >= QUICK_TARGETS:
            break
        if t not in chosen:
            chosen.append(t)
    return chosen[:max(QUICK_TARGETS, len(chosen))]


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _pool_map(fn, jobs: list, workers: int):
    if workers <= 1 or len(jobs) <= 1:
        for j in jobs:
            yield fn(j)
        return
    import multiprocessing as mp

    from concurrent.futures import as_completed

    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futs = [pool.submit(fn, j) for j in jobs]
        for f in as_completed(futs):  # saved as they finish: a long target does not hold the rest
            yield f.result()


def _oracle_units(sites: list[dict[str, Any]], found: str = "references") -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for s in sites:
        k = unit_key(s["path"], s["unitLine"])
        out.setdefault(k, {"name": s["unitName"], "sites": [], "found": found})["sites"].append(s)
    return out


@dataclass
class _Site:
    path: str
    line: int
    col: int
    callee: str
    resolution: str


def _display_path(p: str) -> str:
    try:
        return str(Path(p).resolve().relative_to(REPO_ROOT))
    except ValueError:
        return p


def _is_target(defn: list, target_path: str, target_line: int, symbol: str) -> bool:
    """Jedi's definition is the target: the same place, or a stub (``.pyi``: typeshed, the
    django-stubs Jedi ships) declaring the same qualified name."""
    if defn[0] == target_path and defn[1] == target_line:
        return True
    return str(defn[0]).endswith(".pyi") and defn[2] == symbol


def _platform_twins(a: str, b: str) -> bool:
    """``posixpath.f`` and ``ntpath.f``: the two platforms' versions of one os.path function."""
    ma, _, na = a.rpartition(".")
    mb, _, nb = b.rpartition(".")
    return na == nb and {ma, mb} == {"posixpath", "ntpath"}


def _blind_spot(defs: list[list], target: str) -> str | None:
    """The oracle's documented blind spot for one site's goto answer, if any."""
    if not defs:
        return "no-inference"
    tmod, _, tname = target.rpartition(".")
    for d in defs:
        full = d[2] or ""
        if tmod.startswith("posixpath") and full in (f"ntpath.{tname}", f"os.path.{tname}") and \
                "ntpath" in d[0]:
            return "platform-module"
        if d[0].endswith(".pyi") and "typeshed" in d[0] and full.rpartition(".")[2] == tname and \
                full.split(".")[0].lstrip("_") == tmod.split(".")[0].lstrip("_"):
            return "c-accelerator"
    return None


def _location(store, qname: str) -> tuple[str, int] | None:
    rows = store.symbols_by_qname(qname)
    return (rows[0].path, rows[0].start_line) if rows else None


def _compare(t: Target, d, o: dict[str, Any], ref, oracle_units, gcache: dict[str, Any], lines_of,
             store) -> dict[str, Any]:
    row: dict[str, Any] = {"symbol": t.symbol, "categories": list(t.categories), "note": t.note}
    if not o.get("found"):
        row.update(status="not-found", detail=o.get("answer"))
        return row
    if d is None or ref is None or "error" in (ref or {}):
        row.update(status="no-oracle", detail=(ref or {}).get("error", "definition not located"))
        return row
    tpath, tline, tname = d
    ours_units = o["units"]
    confirmed: dict[str, str] = {}
    excluded: list[dict[str, Any]] = []
    fps: list[dict[str, Any]] = []
    for k, u in sorted(ours_units.items()):
        if k in oracle_units:
            continue
        verdicts = []
        for (path, line, col, callee, res) in u["sites"]:
            pos = _name_position(lines_of(path), line, col, callee.rsplit(".", 1)[-1])
            g = gcache.get(f"{path}:{pos[0]}:{pos[1]}") if pos else None
            defs = (g or {}).get("defs")
            if defs is None:
                verdicts.append(("no-inference", path, line, callee, res, []))
            elif any(_is_target(x, tpath, tline, t.symbol) for x in defs):
                gu = (g or {}).get("unit")
                if gu is not None and unit_key(path, gu[0]) != k:
                    # the right target, credited to another unit than Python runs it in
                    verdicts.append(("wrong", path, line, callee, res,
                                     [[path, gu[0], f"unit {gu[1]}", "unit"]]))
                else:
                    verdicts.append(("confirmed", path, line, callee, res, defs))
            else:
                verdicts.append((_blind_spot(defs, t.symbol) or "wrong", path, line, callee, res, defs))
        kinds = {v[0] for v in verdicts}
        first = verdicts[0] if verdicts else ("wrong", "", 0, "", "", [])
        if "confirmed" in kinds:
            confirmed[k] = "goto"
        elif "wrong" in kinds or not verdicts:
            w = next((v for v in verdicts if v[0] == "wrong"), first)
            fps.append({"unit": u["qname"], "site": f"{w[1]}:{w[2]}", "callee": w[3], "resolution": w[4],
                        "oracle": [f"{x[2]} ({x[0]}:{x[1]})" for x in w[5][:3]]})
        else:
            excluded.append({"unit": u["qname"], "site": f"{first[1]}:{first[2]}", "callee": first[3],
                             "resolution": first[4], "reason": first[0], "side": "ours",
                             "oracle": [f"{x[2]} ({x[0]}:{x[1]})" for x in first[5][:3]]})
    misses: list[dict[str, Any]] = []
    excluded_misses: set[str] = set()
    for k, ou in sorted(oracle_units.items()):
        if k in ours_units:
            continue
        s = ou["sites"][0]
        in_file = store.calls_in_files([s["path"]])
        # the call row starts where the call expression starts (a chain may begin lines above)
        named = [c for c in in_file if c.name == tname and c.line <= s["line"]]
        ours_there = [max(named, key=lambda c: (c.line, c.col))] if named else \
            [c for c in in_file if c.line == s["line"]]
        what = ("no call extracted" if not ours_there else
                "unresolved" if not ours_there[0].target else f"bound to {ours_there[0].target}")
        g = gcache.get(f"{s['path']}:{s['line']}:{s['col']}") or {}
        gdefs = g.get("defs") or []
        other = ours_there[0].target if ours_there and ours_there[0].target else ""
        if other and _platform_twins(other, t.symbol):
            # Jedi follows typeshed's ntpath stub to posixpath even for ntpath's own `join`
            excluded.append({"unit": f"{ou['name']} ({k})", "site": f"{s['path']}:{s['line']}",
                             "callee": ours_there[0].callee, "resolution": ours_there[0].resolution,
                             "reason": "platform-module", "side": "oracle",
                             "oracle": [f"{x[2]} ({x[0]}:{x[1]})" for x in gdefs[:3]]})
            excluded_misses.add(k)
            continue
        if len(gdefs) > 1 and other and _location(store, other) in {(x[0], x[1]) for x in gdefs}:
            # Jedi itself lands on several definitions here, ours among them
            excluded.append({"unit": f"{ou['name']} ({k})", "site": f"{s['path']}:{s['line']}",
                             "callee": ours_there[0].callee, "resolution": ours_there[0].resolution,
                             "reason": "oracle-ambiguous", "side": "oracle",
                             "oracle": [f"{x[2]} ({x[0]}:{x[1]})" for x in gdefs[:3]]})
            excluded_misses.add(k)
            continue
        misses.append({"unit": f"{ou['name']} ({k})", "site": f"{s['path']}:{s['line']}",
                       "ours": what, "callee": ours_there[0].callee if ours_there else ""})
    oracle_set = set(oracle_units) - excluded_misses
    excl_ours = {k for k, u in ours_units.items() if any(e["unit"] == u["qname"] and e["side"] == "ours"
                                                          for e in excluded)}
    sc = score(set(ours_units), oracle_set, set(confirmed), excl_ours)
    row.update(status="ok", definition=f"{tpath}:{tline}", **sc,
               ours=len(ours_units), oracle=len(oracle_units), confirmedByGoto=len(confirmed),
               sweepOnlyUnits=ref.get("sweepOnlyUnits", 0), sweepSites=ref.get("sweepSites", 0),
               referencesError=ref.get("referencesError", ""),
               excludedCount=len(excluded), callSites=o["callSites"], oracleCallSites=len(ref.get("sites", [])),
               oracleSitesOutsideIndex=ref.get("outsideIndex", 0),
               unresolvedCandidates=o["unresolvedCandidates"], answerNodes=o["answerNodes"],
               completedFromStore=o["fromStore"], oracleSeconds=ref.get("seconds"),
               falsePositives=fps, misses=misses, excluded=excluded)
    return row


# -- the report -------------------------------------------------------------------------------------

def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def render_markdown(results: list[dict[str, Any]], machine: dict[str, Any] | None = None,
                    max_list: int = 40) -> str:
    out: list[str] = ["# Call-graph accuracy", "",
                      "Generated by `codesynapse bench accuracy`; do not edit by hand.", ""]
    if machine:
        try:
            from codesynapse.bench.machine import machine_line

            out += [f"Measured on: {machine_line(machine)}.", ""]
        except Exception:
            out += [f"Measured on: {json.dumps(machine)}.", ""]
    out += ["## Results", "",
            "| corpus | targets | precision | recall | TP | FP | FN | excluded (blind spots) | strict precision | "
            "index s (CPU s) | oracle s (cached?) | run s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        m, s, tm = r["micro"], r["microStrict"], r["timing"]
        n_ok = sum(1 for t in r["targets"] if t["status"] == "ok")
        excl = sum(t.get("excludedCount", 0) for t in r["targets"])
        cached = ("cached" if tm["oracleTargetsComputed"] == 0 else
                  f"{tm['oracleTargetsComputed']} computed, {tm['oracleTargetsFromCache']} cached")
        out.append(f"| {r['corpus']['name']} ({r['corpus']['version']}) | {n_ok}/{len(r['targets'])} | "
                   f"{_fmt(m['precision'])} | {_fmt(m['recall'])} | {m['tp']} | {m['fp']} | {m['fn']} | {excl} | "
                   f"{_fmt(s['precision'])} | {r['index']['seconds']} ({r['index']['cpuSeconds']}) | "
                   f"{tm['oracleReferenceSeconds'] + tm['oracleGotoSeconds']:.1f} ({cached}; "
                   f"{tm['oracleSecondsWhenComputed']} s when computed) | {tm['totalSeconds']} |")
    out += ["", "TP, FP and FN count caller units (file, enclosing function, method or class body). Precision "
            "and recall are micro-averaged over the targets (summed counts). *Excluded* units sit at the "
            "oracle's blind spots (listed per corpus below) and count on neither side; *strict precision* "
            "counts each of them as a false positive. *Oracle s* is the Jedi time of this run and, in brackets, "
            "what computing every answer took (the answers are cached per corpus version); *run s* is the "
            "whole run, index included.", ""]
    for r in results:
        c = r["corpus"]
        out += [f"## {c['name']}", "",
                f"Corpus `{c['path']}` — {c['version']}; policy fingerprint `{c['policyFingerprint'] or 'none'}`; "
                f"excluded from the index: {', '.join(c['exclude']) or 'nothing'}"
                f"{'; re-included: ' + ', '.join(c['include']) if c['include'] else ''}. "
                f"Index: {r['index']['files']} files, {r['index']['lines']} lines, {r['index']['symbols']} symbols, "
                f"{r['index']['calls']} call sites ({r['index']['resolvedCalls']} resolved), "
                f"{r['index']['seconds']} s wall / {r['index']['cpuSeconds']} s CPU. Targets: `{r['targetsFile']}`"
                f"{' (quick subset)' if r['quick'] else ''}.", "",
                "| category | precision | recall | TP | FP | FN |", "|---|---|---|---|---|---|"]
        for cat, m in r["byCategory"].items():
            out.append(f"| {cat} | {_fmt(m['precision'])} | {_fmt(m['recall'])} | {m['tp']} | {m['fp']} | {m['fn']} |")
        out += ["", "| target | categories | precision | recall | ours | oracle | TP | FP | FN | oracle units from "
                "goto only | excluded | call sites (ours/references) | unresolved same-name | references s |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for t in r["targets"]:
            if t["status"] != "ok":
                out.append(f"| `{t['symbol']}` | {', '.join(t['categories'])} | {t['status']}: {t.get('detail')} "
                           "| | | | | | | | | | | |")
                continue
            note = " (get_references crashed: goto sweep only)" if t.get("referencesError") else ""
            out.append(f"| `{t['symbol']}`{note} | {', '.join(t['categories'])} | {_fmt(t['precision'])} | "
                       f"{_fmt(t['recall'])} | {t['ours']} | {t['oracle']} | {t['tp']} | {t['fp']} | {t['fn']} | "
                       f"{t['sweepOnlyUnits']} | {t['excludedCount']} | {t['callSites']}/{t['oracleCallSites']} | "
                       f"{t['unresolvedCandidates']} | {t['oracleSeconds']} |")
        fps = [(t["symbol"], f) for t in r["targets"] if t["status"] == "ok" for f in t["falsePositives"]]
        misses = [(t["symbol"], f) for t in r["targets"] if t["status"] == "ok" for f in t["misses"]]
        excl = [(t["symbol"], f) for t in r["targets"] if t["status"] == "ok" for f in t["excluded"]]
        out += ["", f"### False positives ({len(fps)})", ""]
        out += [f"- `{s}` ← `{f['unit']}` at {f['site']} (`{f['callee']}`, {f['resolution']}); Jedi: "
                f"{', '.join(f['oracle']) or 'nothing'}" for s, f in fps[:max_list]]
        if len(fps) > max_list:
            out.append(f"- … {len(fps) - max_list} more in accuracy.json")
        by_kind = Counter(("bound elsewhere" if f["ours"].startswith("bound to") else f["ours"]) for _, f in misses)
        out += ["", f"### Misses ({len(misses)})", "",
                "What we did at the oracle's call site: " +
                (", ".join(f"{k} {v}" for k, v in sorted(by_kind.items())) or "nothing to report") + ".", ""]
        out += [f"- `{s}` ← `{f['unit']}` at {f['site']}: ours {f['ours']}"
                f"{' (`' + f['callee'] + '`)' if f['callee'] else ''}" for s, f in misses[:max_list]]
        if len(misses) > max_list:
            out.append(f"- … {len(misses) - max_list} more in accuracy.json")
        out += ["", f"### Excluded: the oracle's blind spots ({len(excl)})", "",
                "By reason: " + (", ".join(f"{k} {v}" for k, v in r["blindSpots"].items()) or "none") + ".", ""]
        out += [f"- `{s}` ← `{f['unit']}` at {f['site']} (`{f['callee']}`, ours {f['resolution']}): "
                f"{f['reason']}; Jedi: {', '.join(f['oracle']) or 'nothing'}" for s, f in excl[:max_list]]
        if len(excl) > max_list:
            out.append(f"- … {len(excl) - max_list} more in accuracy.json")
        out.append("")
    out += ["## Known gaps", "", *_GAPS, "", "## Method", "", *_METHOD, ""]
    return "\n".join(out)


_GAPS = [
    "- **Return values across files**: a local set from a function or method of *another* file takes the "
    "class that function declares (`-> Cls`, `Optional[Cls]`, `-> Self`) or, unannotated, the one class every "
    "`return` of its body builds (`return Cls(...)`, `return self` / `cls(...)`; return hints, issue 18 #4). "
    "A function that returns what another function returns (`return engine.get_template(name)`), a "
    "parameter, or several classes gives nothing: `template = engine.get_template(name)`, "
    "`loop = events.get_event_loop()` get no class, and calls on them stay unresolved (counted as same-name "
    "candidates).",
    "- **Parameters**: an untyped parameter is typed by the one class that every in-project call of its "
    "function passes (a constructor, a name or `self.x` of known class, `self`; parameter hints, issue 18 "
    "#4; `inferred`, 0.75). Left untyped: a call passing a parameter or a call's result (`request_handler` "
    "handed on from another parameter), two classes, `*args`, a method called through its class, a method "
    "that overrides a base's, any unresolved call of the function's name anywhere, closures and decorated "
    "functions, and a function whose name some call hands on as a value (`executor.submit(f, x)`, "
    "`Thread(target=self.run)`: it may be called elsewhere with anything; by name). Not detected: a function "
    "handed on other than as an argument (`handlers = {'a': f}`, `return f`).",
    "- **Attributes set in another method from a call**: `self._loop = events.get_event_loop()` in `__init__` "
    "then `self._loop.call_soon()` elsewhere stays unresolved (`__init__`'s parameters are not typed by "
    "the class's constructor calls).",
    "- **Module-level receivers**: `parser = argparse.ArgumentParser()` followed by `parser.parse_args()` at "
    "module level (scripts' `if __name__ == '__main__':` blocks) stays unresolved: the extraction engine "
    "asks for receiver classes only inside functions and classes (the Python hooks already accept a module).",
    "- **Assignments that alias a class**: `TestCase = unittest.TestCase` at module level is not followed, so "
    "`self.subTest()` in `class T(TestCase)` stays unresolved.",
    "- **Bare calls through a parameter or local** that shadows an imported name (`def f(deepcopy=deepcopy): "
    "deepcopy(x)`) are bound to the import (the false positives of `copy.deepcopy`).",
    "- **Flow**: receiver classes are per function, not per statement: a name bound to two classes, or "
    "rebound by a loop, gets none.",
    "- **Files with syntax errors** the grammar cannot place are extracted partially; a method can then "
    "land outside its class (`test/test_compile.py`).",
]

_METHOD = [
    "- **Our side**: the corpus is indexed from scratch (full index = incremental update from an empty graph) "
    "and every target is asked for with `codesynapse/callGraph` (`direction: callers`, `depth: 1`, "
    "`limit: 200`). When the answer is cut by its node limit or token budget, the remaining callers are read "
    "from the graph store with the same query the request uses; the table's *call sites* column is the number "
    "of resolved call edges. *Unresolved same-name* is the request's count of unresolved call sites with the "
    "target's name (what an agent is told it may be missing).",
    "- **Units**: a caller is (file, enclosing function/method/class body), module-level code being the "
    "module's unit. Lambdas and comprehensions belong to the function around them; decorators, default "
    "values, annotations and base lists to the scope where the `def`/`class` statement runs.",
    "- **Oracle, part 1**: Jedi (`jedi.Project` on the corpus root, `Script.get_references(scope='project')` on the "
    f"target's definition) with its file limits raised to {JEDI_OPEN_LIMIT:,} opened / {JEDI_PARSE_LIMIT:,} "
    "parsed files and its folder filter set to the benchmark's exclusions; definitions, imports and "
    "non-call references are dropped; call sites in files the index does not hold are not compared.",
    "- **goto sweep**: `get_references` misses calls (it looks only for the target's own name, so "
    "`from x import y as z; z()` is never searched, and it loses methods declared in typeshed stubs: it "
    "reports 1 call of `argparse._ActionsContainer.add_argument`). So Jedi's `goto` (imports followed) is "
    "also asked at every call site whose called name is the target's name or an import alias of it, and at "
    "every call site of ours; a site where `goto` lands on the target's definition adds its unit to the "
    "oracle's. The candidate sites are the syntactic calls of that name (all of them, whatever we resolved "
    "them to); the decision is Jedi's. *Oracle units from goto only* counts the units only the sweep found.",
    "- **Stubs**: where Jedi lands on a stub (`.pyi`: typeshed, or the django-stubs it ships) that declares "
    "the target's own qualified name, that is the target.",
    "- **Disputes**: a unit of ours that the oracle lacks is a false positive when `goto` at our call site "
    "lands elsewhere (or on the target but in another unit than the one Python runs the call in), unless a "
    "blind spot applies.",
    "- **Blind spots, excluded from both precision and recall and listed above**: `no-inference` (`goto` "
    "finds no definition: untyped parameters, dynamic attributes), `platform-module` (Jedi resolves "
    "`os.path` to `ntpath`, we to `posixpath`; and it sends `ntpath`'s calls of its own functions to "
    "`posixpath`), `c-accelerator` (Jedi lands on a typeshed stub of the C "
    "module, e.g. `_warnings.warn`), `oracle-ambiguous` (a miss where `goto` at the oracle's own site yields "
    "several definitions and we bound the site to one of them). Jedi also misses methods reached through "
    "untyped arguments and aliases; those appear as `no-inference` or are confirmed by `goto`.",
    "- **Scores**: per target, TP = our units the oracle lists or confirms, FP = our other units (blind spots "
    "aside), FN = the oracle's units we lack; per corpus, micro-averaged from summed counts; *strict "
    "precision* charges every excluded edge as a false positive.",
    "- **Cache**: Jedi's answers are cached per corpus version (corpus version, a digest of its Python files, "
    "Jedi version, oracle settings) in the data directory; the results table says when they were reused "
    "and how long computing them took.",
]


NOTES = "<!-- notes written by hand: bench accuracy keeps this part when it rewrites the file -->"


def kept_notes(text: str) -> str:
    """The hand-written part of an existing ACCURACY.md: from the ``NOTES`` marker up to the
    language-server section (which is written again from accuracy-lsp.json) or the end."""
    start = text.find(NOTES)
    if start < 0:
        return ""
    end = text.find(SECTION, start)
    return text[start:end if end >= 0 else len(text)].rstrip("\n") + "\n"


def run_accuracy_cli(args) -> int:
    """``codesynapse bench accuracy --corpus PATH [--corpus PATH] [--out DIR] [--quick]``:
    writes ``<out>/ACCURACY.md`` and ``<out>/accuracy.json``."""
    if getattr(args, "lang", None) == "java":  # JavaParser's symbol solver (bench/accuracy_java.py)
        from codesynapse.bench.accuracy_java import run_cli

        return run_cli(args, say)
    corpora = list(getattr(args, "corpus", None) or []) or ["python-stdlib", "django"]
    out_dir = Path(getattr(args, "out", None) or "docs")
    quick = bool(getattr(args, "quick", False))
    data_dir = getattr(args, "data_dir", None)
    workload = getattr(args, "workload", None)
    targets_file = workload if workload and str(workload).endswith((".yaml", ".yml")) else None
    try:
        from codesynapse.bench.machine import machine_info

        machine = machine_info()
    except Exception:
        machine = None
    results = []
    for spec in corpora:
        results.append(run_accuracy(spec, targets_file, data_dir=data_dir, quick=quick,
                                    progress=say))
        r = results[-1]
        say(f"{r['corpus']['name']}: precision {_fmt(r['micro']['precision'])}, recall "
              f"{_fmt(r['micro']['recall'])} ({r['micro']['tp']} TP, {r['micro']['fp']} FP, {r['micro']['fn']} FN); "
              f"{r['timing']['totalSeconds']} s")
    out_dir.mkdir(parents=True, exist_ok=True)
    payload = {"machine": machine, "results": results}
    (out_dir / "accuracy.json").write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    md = render_markdown(results, machine)
    doc = out_dir / "ACCURACY.md"
    notes = kept_notes(doc.read_text(encoding="utf-8") if doc.exists() else "")
    if notes:
        md = md.rstrip("\n") + "\n\n" + notes
    lsp = out_dir / "accuracy-lsp.json"
    if lsp.exists():  # Go / TypeScript against their language servers (bench/accuracy_lsp.py)
        md = md.rstrip("\n") + "\n\n" + render_section(json.loads(lsp.read_text(encoding="utf-8")))
    doc.write_text(md, encoding="utf-8")
    say(f"wrote {out_dir / 'ACCURACY.md'} and {out_dir / 'accuracy.json'}")
    return 0
