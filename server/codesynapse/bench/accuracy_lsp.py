"""Caller accuracy against a language server's call hierarchy (Go: gopls; TypeScript: the
TypeScript language service through typescript-language-server), issue 18 #5.

For each target (a function or method of the corpus, drawn in a fixed order by a hash of its
qualified name among those whose name is called somewhere — a criterion blind to how a call
was resolved), the oracle's ``callHierarchy/incomingCalls`` and our ``codesynapse/callGraph``
(every page) give the caller units; both are keyed on our symbol table: the innermost function,
method or class of that file whose lines hold the call (the oracle's first ``fromRanges``; the
module when none does), so what is measured is the call edges, not symbol extraction. Micro-averaged precision and recall over the units.

Run: ``python -m codesynapse.bench.accuracy_lsp --lang go --root DIR --oracle gopls [--under
SUBDIR] [--targets 40] [--out FILE.json]``. The oracle binary is installed by the user
(``go install golang.org/x/tools/gopls@v0.23.0``; ``npm install typescript@5.9
typescript-language-server@4``), never downloaded here.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import logging
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from codesynapse.bench.accuracy_base import CorpusRun, micro, open_corpus_app, score

log = logging.getLogger(__name__)

LANG_IDS = {"go": "go", "typescript": "typescript", "java": "java"}  # java: any LSP server with call hierarchy
KINDS = ("function", "method")
# what a caller unit is, on both sides: the innermost function, method, test or class holding
# the call; elsewhere (a top-level constant's initializer, a module statement) the module
UNIT_KINDS = ("function", "method", "test", "class", "struct", "interface")
REQUEST_TIMEOUT = 300.0


class LspOracle:
    """A language server on pipes: requests by id from a reader thread; the server's own
    requests are answered (configuration with nulls, everything else with null)."""

    def __init__(self, argv: list[str], root: Path, env: dict[str, str] | None = None):
        self.root = root
        self.proc = subprocess.Popen(argv, cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})})
        self._ids = itertools.count(1)
        self._pending: dict[int, Future] = {}
        self._lock = threading.Lock()
        self._wlock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _write(self, msg: dict[str, Any]) -> None:
        body = json.dumps(msg).encode()
        with self._wlock:
            self.proc.stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            self.proc.stdin.flush()

    def _read(self) -> None:
        out = self.proc.stdout
        try:
            while True:
                n = 0
                while True:
                    line = out.readline()
                    if not line:
                        return
                    if line in (b"\r\n", b"\n"):
                        break
                    if line.lower().startswith(b"content-length:"):
                        n = int(line.split(b":", 1)[1])
                msg = json.loads(out.read(n))
                if "method" in msg and "id" in msg:
                    result: Any = None
                    if msg["method"] == "workspace/configuration":
                        result = [None] * len(msg.get("params", {}).get("items", []))
                    self._write({"jsonrpc": "2.0", "id": msg["id"], "result": result})
                elif "id" in msg:
                    with self._lock:
                        fut = self._pending.pop(msg["id"], None)
                    if fut is not None:
                        if "error" in msg:
                            fut.set_exception(RuntimeError(str(msg["error"])))
                        else:
                            fut.set_result(msg.get("result"))
        finally:
            with self._lock:
                for fut in self._pending.values():
                    if not fut.done():
                        fut.set_exception(RuntimeError("the oracle closed its output"))

    def request(self, method: str, params: Any, timeout: float = REQUEST_TIMEOUT) -> Any:
        i = next(self._ids)
        fut: Future = Future()
        with self._lock:
            self._pending[i] = fut
        self._write({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        return fut.result(timeout)

    def notify(self, method: str, params: Any) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    def start(self) -> None:
        uri = self.root.as_uri()
        self.request("initialize", {"processId": os.getpid(), "rootUri": uri,
                                    "workspaceFolders": [{"uri": uri, "name": self.root.name}],
                                    "capabilities": {"textDocument": {"callHierarchy": {}, "references": {}},
                                                     "workspace": {"configuration": True}}})
        self.notify("initialized", {})

    def open(self, rel: str, lang: str) -> str:
        path = self.root / rel
        uri = path.as_uri()
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": LANG_IDS[lang], "version": 1,
            "text": path.read_text(encoding="utf-8", errors="replace")}})
        return uri

    def close(self) -> None:
        try:
            self.request("shutdown", None, timeout=30)
            self.notify("exit", None)
            self.proc.wait(10)
        except Exception:
            self.proc.kill()
            self.proc.wait(10)


def _utf16_col(line: str, name: str) -> int | None:
    i = line.find(name)
    return None if i < 0 else len(line[:i].encode("utf-16-le")) // 2


def _innermost(store, rel: str, line: int, cache: dict[str, list], kinds: tuple[str, ...] | None = None) -> Any:
    syms = cache.get(rel)
    if syms is None:
        syms = cache[rel] = [s for s in store.symbols_in_file(rel) if s.kind != "module"]
    best = None
    for s in syms:
        if kinds is not None and s.kind not in kinds:
            continue
        if s.start_line <= line <= s.end_line and (best is None or s.end_line - s.start_line < best.end_line - best.start_line):
            best = s
    return best


def unit_key(store, rel: str, line: int, cache: dict[str, list]) -> str:
    u = _innermost(store, rel, line, cache, UNIT_KINDS)
    return f"{rel}:{u.start_line}" if u is not None else f"{rel}:<module>"


def pick_targets(app, lang: str, n: int, under: str = "") -> list[Any]:
    """``n`` functions/methods of ``lang`` (under ``under``), outside test files, in the order
    of a hash of their qualified name, among those whose name some call in the corpus uses."""
    from codesynapse.context.retrieval import LIBRARY, row_role

    langs = {f.path for f in app.store.files() if getattr(f, "language", "") == lang}
    rows = [s for s in app.store.all_symbols() if s.kind in KINDS and s.path in langs and s.path.startswith(under)
            and row_role(s) == LIBRARY and len(s.name) > 2 and not s.name.startswith(("Test", "Benchmark", "Example"))]
    rows.sort(key=lambda s: hashlib.blake2b(s.qname.encode(), digest_size=8).hexdigest())
    out, seen = [], set()
    for s in rows:
        if s.qname in seen:
            continue
        if any(c.name == s.name for c in app.store.calls_touching([s.name])):
            out.append(s)
            seen.add(s.qname)
        if len(out) >= n:
            break
    return out


def our_units(app, s, cache: dict[str, list]) -> dict[str, str]:
    from codesynapse.methods import call_method

    params = {"selector": s.qname, "direction": "callers", "limit": 200}
    units: dict[str, str] = {}
    ans = call_method(app, "codesynapse/callGraph", params)
    if not ans.get("found"):
        return units
    sec = ans.get("callers", {})
    while True:
        for node in sec.get("nodes", []):
            if "path" not in node:
                continue
            # the unit holding each call site (overloads share a qualified name: the node's
            # range is the first one's, the call may sit in another)
            sites = [x for x in node.get("sites", []) if "line" in x]
            for x in sites or [{"line": node["range"][0]}]:
                units[unit_key(app.store, x.get("path", node["path"]), x["line"], cache)] = node["qualifiedName"]
        if not sec.get("cursor"):
            return units
        sec = call_method(app, "codesynapse/callGraph", {**params, "cursor": sec["cursor"]}).get("callers", {})


def _direct(oracle: LspOracle, root: Path, rel: str, ranges: list[dict], s, lang: str, cache: dict[str, list]) -> bool:
    """Whether one of the call sites goes to ``s`` by the oracle's own go-to-definition: a
    site whose definition is another declaration (the base-class or interface member the
    receiver is typed as) reaches ``s`` only by dynamic dispatch, which the oracle's
    reference search counts and a static call graph cannot decide (excluded, counted)."""
    uri = oracle.open(rel, lang)
    for r in ranges:
        locs = oracle.request("textDocument/definition", {"textDocument": {"uri": uri}, "position": r["start"]}) or []
        if isinstance(locs, dict):
            locs = [locs]
        for loc in locs:
            target_uri = loc.get("targetUri") or loc.get("uri", "")
            rng = loc.get("targetSelectionRange") or loc.get("range")
            path = unquote(urlparse(target_uri).path)
            if not rng or Path(path).resolve() != (root / s.path).resolve():
                continue
            line = rng["start"]["line"] + 1
            if s.start_line <= line <= s.end_line:
                return True
            # an overload signature of the same function (TypeScript writes them above the
            # implementation): the lines from it to the implementation hold only signatures
            # of that name, no other symbol of ours
            if line < s.start_line and s.name in lines_of(root, s.path)[line - 1] and not any(
                    o.start_line <= s.start_line and o.end_line >= line and o.qname != s.qname and o.end_line < s.start_line
                    for o in cache.get(s.path, [])):
                return True
    return False


def lines_of(root: Path, rel: str, _cache: dict[str, list[str]] = {}) -> list[str]:  # noqa: B006 (a per-run cache)
    if rel not in _cache:
        _cache[rel] = (root / rel).read_text(encoding="utf-8", errors="replace").splitlines()
    return _cache[rel]


def oracle_units(oracle: LspOracle, app, s, lang: str, cache: dict[str, list], under: str,
                 excluded: dict[str, str] | None = None) -> dict[str, str] | None:
    root = oracle.root
    _innermost(app.store, s.path, s.start_line, cache)  # the target file's symbols, for _direct
    lines = (root / s.path).read_text(encoding="utf-8", errors="replace").splitlines()
    col = _utf16_col(lines[s.start_line - 1], s.name) if s.start_line <= len(lines) else None
    if col is None:
        return None
    uri = oracle.open(s.path, lang)
    items = oracle.request("textDocument/prepareCallHierarchy",
                           {"textDocument": {"uri": uri}, "position": {"line": s.start_line - 1, "character": col}})
    if not items:
        return None
    calls = oracle.request("callHierarchy/incomingCalls", {"item": items[0]}) or []
    units: dict[str, str] = {}
    for c in calls:
        frm = c["from"]
        path = unquote(urlparse(frm["uri"]).path)
        try:
            rel = str(Path(path).resolve().relative_to(root.resolve()))
        except ValueError:
            continue  # outside the corpus (the module cache, the standard library)
        if not rel.startswith(under):
            continue
        # the units that hold the calls (a call in a TypeScript constructor comes from the class)
        spans = c.get("fromRanges") or [frm.get("selectionRange", frm["range"])]
        by_unit: dict[str, list[dict]] = {}
        for sp in spans:
            by_unit.setdefault(unit_key(app.store, rel, sp["start"]["line"] + 1, cache), []).append(sp)
        for key, sps in by_unit.items():
            if excluded is not None and not _direct(oracle, root, rel, sps, s, lang, cache):
                excluded[key] = frm.get("name", "")
                continue
            units[key] = frm.get("name", "")
    return units


def run(lang: str, root: Path, oracle_argv: list[str], n: int, under: str, data_dir: Path,
        say=print) -> dict[str, Any]:
    app = open_corpus_app(CorpusRun(root.name, root, "directory"), data_dir)
    try:
        t0 = time.perf_counter()
        app.index()
        say(f"indexed {root} in {time.perf_counter() - t0:.0f} s")
        targets = pick_targets(app, lang, n, under)
        say(f"{len(targets)} targets")
        oracle = LspOracle(oracle_argv, root)
        oracle.start()
        rows = []
        cache: dict[str, list] = {}
        try:
            for s in targets:
                t1 = time.perf_counter()
                excluded: dict[str, str] = {}
                try:
                    theirs = oracle_units(oracle, app, s, lang, cache, under, excluded)
                except Exception as e:  # one target's failure is recorded, not fatal
                    rows.append({"symbol": s.qname, "error": str(e)[:300]})
                    continue
                if theirs is None:
                    rows.append({"symbol": s.qname, "error": "the oracle has no call hierarchy item there"})
                    continue
                ours = our_units(app, s, cache)
                # a unit the oracle reaches only by dispatch through a base or interface member is
                # neither side's (an edge we draw there is not charged, one we miss not counted)
                sc = score(set(ours), set(theirs), excluded=set(excluded) - set(theirs))
                rows.append({"symbol": s.qname, "path": s.path, "line": s.start_line, **sc,
                             "misses": sorted(set(theirs) - set(ours)),
                             "falsePositives": sorted(set(ours) - set(theirs) - set(excluded)),
                             "excludedDispatch": sorted(set(excluded) - set(theirs)),
                             "oracleSeconds": round(time.perf_counter() - t1, 2)})
                say(f"  {s.qname}: ours {len(ours)} oracle {len(theirs)} tp {sc['tp']}")
        finally:
            oracle.close()
        scored = [r for r in rows if "error" not in r]
        return {"language": lang, "corpus": str(root), "under": under, "oracle": oracle_argv[0],
                "targets": len(targets), "errors": len(rows) - len(scored), "micro": micro(scored),
                "excludedDispatch": sum(len(r["excludedDispatch"]) for r in scored), "rows": rows}
    finally:
        app.close()


SECTION = "<!-- language-server oracles (codesynapse.bench.accuracy_lsp) -->"
ORACLE_NOTES = {
    "go": "gopls `callHierarchy/incomingCalls`",
    "typescript": "the TypeScript language service (`typescript-language-server`) `callHierarchy/incomingCalls`",
    "java": "JavaParser 3.26.4 symbol solver (every `MethodCallExpr` resolved; bench/accuracy_java.py)",
}


def render_section(results: dict[str, dict[str, Any]], max_list: int = 15) -> str:
    """The Go / TypeScript / Java part of docs/ACCURACY.md from ``accuracy-lsp.json``."""
    out = [SECTION, "", "## Go, TypeScript and Java: independent oracles", "",
           "| language | corpus | oracle | targets | TP | FP | FN | precision | recall | excluded (dispatch) |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    fmt = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
    for lang in sorted(results):
        r = results[lang]
        m = r["micro"]
        out.append(f"| {lang} | {r.get('corpusName', r['corpus'])} | {ORACLE_NOTES.get(lang, r['oracle'])} | "
                   f"{r['targets']} ({r['errors']} errors) | {m['tp']} | {m['fp']} | {m['fn']} | "
                   f"{fmt(m['precision'])} | {fmt(m['recall'])} | {r.get('excludedDispatch', 0)} |")
    out.append("")
    for lang in sorted(results):
        r = results[lang]
        misses = [(row["symbol"], u) for row in r["rows"] if "error" not in row for u in row["misses"]]
        fps = [(row["symbol"], u) for row in r["rows"] if "error" not in row for u in row["falsePositives"]]
        out += [f"### {lang}: misses ({len(misses)})", ""]
        out += [f"- `{t}` ← `{u}`" for t, u in misses[:max_list]] + (["- …"] if len(misses) > max_list else []) + [""]
        out += [f"### {lang}: false positives ({len(fps)})", ""]
        out += [f"- `{t}` ← `{u}`" for t, u in fps[:max_list]] + (["- …"] if len(fps) > max_list else []) + [""]
    out += ["Inference (issue 18 #4): besides a receiver's declared or constructed type, a receiver that holds "
            "a call's result takes the type the called function declares, wherever it is declared (return hints: "
            "Go result lists, multi-value assignments and named results, `x := pkg.New()`, `lib.Open().M()`; "
            "TypeScript `): Foo` of functions and methods, `const x = f()`, `f(...).pipe(...)`); unions, "
            "slices, unannotated results and receivers that are parameters or locals of unknown type stay "
            "unresolved. Go struct fields: `x.field.M()` and `y := x.field` take the type the field declares "
            "(a named type or pointer to one), wherever the struct is declared (the struct's signature lists "
            "its named fields); a closure's typed parameters and locals are typed like the enclosing "
            "function's; maps, slices, generics, embedded fields and names bound twice stay unresolved, and "
            "an interface-typed field binds to the interface's method as an interface-typed parameter does. "
            "Known gaps behind the remaining misses: chains of two fields or a field's call result "
            "(`fh, snapshot, release, err := s.session.FileOf(...)`: `session` is a field of `s`'s struct), "
            "names declared again in another block of the same function (receiver types are per function), "
            "fields of a class declared in another file (TypeScript), "
            "range variables over a call's slice (`for _, pgf := range pkg.CompiledGoFiles()`), results typed "
            "only by generic parameters or by inference (`innerFrom(x)` returning `Observable<ObservedValueOf<O>>` "
            "is typed; an unannotated arrow function is not), and receivers narrowed by `instanceof` or casts.", ""]
    java = results.get("java")
    if java is None:
        out += ["Java: no oracle ran (`codesynapse bench accuracy --lang java` runs one).", ""]
    else:
        out += [("Java: no language server with call hierarchy installs offline here (Eclipse JDT LS is not on Maven "
                "Central; it ships as a tarball from download.eclipse.org), so the oracle is JavaParser's symbol "
                "solver (`com.github.javaparser:javaparser-symbol-solver-core:3.26.4`, Maven Central), an "
                "independent resolver: a small Maven program (`bench/java_oracle`, built at bench time) resolves "
                f"every method call of the corpus to its declaration ({java.get('oracleResolved', '?')} of "
                f"{java.get('oracleSites', '?')} calls resolved; {java.get('oracleUnresolved', '?')} it cannot "
                "resolve are its blind spots: their units count on neither side when the called name is the "
                "target's, the *excluded* column). A target's oracle callers are the calls resolved to a "
                "declaration inside it (overloads share one qualified name in our graph, so they are one target "
                "on both sides). Constructors are not targets (`new Foo()` is a call of the class in our graph, "
                f"of the constructor in the solver's; {java.get('constructorsPassedOver', 0)} passed over); method "
                "references (`Foo::bar`) are no method calls on either side. Known gaps behind the misses: a "
                "receiver that is a call's result (`delegate().read(in)`, `getAsSingleElement().getAsByte()`: Java "
                "has no return hints yet), a static field of another class (`TypeAdapters.JSON_ELEMENT.read(...)`) "
                "and a cast (`((SerializationDelegatingTypeAdapter<?>) a).getSerializationDelegate()`)."), ""]
    out += ["Method: targets are functions and methods outside test files, taken in the order of a hash of "
            "their qualified name among those whose name some call of the corpus uses (blind to how a call "
            "was resolved). A caller unit is the innermost function, method or class of ours whose lines hold the "
            "call the oracle names, so symbol extraction is not what is measured (a call outside any function, method or class — a top-level constant's initializer — belongs to its module on both sides). Excluded (neither side): a caller the oracle "
            "lists only because its call goes to another declaration by the oracle's own go-to-definition "
            "(the base-class or interface member the receiver is typed as — dynamic dispatch, which a static "
            "call graph cannot decide); TypeScript overload signatures count as the function.", "",
            "Commands: `go install golang.org/x/tools/gopls@v0.23.0`; `npm install typescript@5.9 "
            "typescript-language-server@4 rxjs@7.8.2` (the corpus is the package's `src/` with a tsconfig.json); "
            "`python -m codesynapse.bench.accuracy_lsp --lang go --root DIR --oracle gopls --docs docs`, "
            "`python -m codesynapse.bench.accuracy_lsp --lang typescript --root DIR --oracle "
            "'typescript-language-server --stdio' --docs docs`; Java: `codesynapse bench accuracy --lang java "
            "--out docs` (Maven and a JDK on PATH; the corpus defaults to `maven:com.google.code.gson:gson:2.11.0`, "
            "the sources jar).", ""]
    return "\n".join(out)


def write_docs(docs: Path, res: dict[str, Any]) -> None:
    """Record one language's result in ``docs/accuracy-lsp.json`` and re-render the section
    of ``docs/ACCURACY.md`` (everything after ``SECTION``)."""
    jpath = docs / "accuracy-lsp.json"
    data = json.loads(jpath.read_text(encoding="utf-8")) if jpath.exists() else {}
    data[res["language"]] = res
    jpath.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    md = docs / "ACCURACY.md"
    text = md.read_text(encoding="utf-8") if md.exists() else "# Call-graph accuracy\n"
    head = text.split(SECTION, 1)[0].rstrip("\n")
    md.write_text(head + "\n\n" + render_section(data), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m codesynapse.bench.accuracy_lsp")
    ap.add_argument("--lang", choices=sorted(LANG_IDS), required=True)
    ap.add_argument("--root", required=True, help="the corpus (a Go module, a TypeScript project)")
    ap.add_argument("--oracle", required=True, help="the language server command, e.g. gopls or "
                                                    "'typescript-language-server --stdio'")
    ap.add_argument("--under", default="", help="only targets and callers under this folder of the corpus")
    ap.add_argument("--targets", type=int, default=40)
    ap.add_argument("--data-dir", default="/tmp/codesynapse-accuracy-lsp")
    ap.add_argument("--out", default="")
    ap.add_argument("--docs", default="", help="record the result in DIR/accuracy-lsp.json and DIR/ACCURACY.md")
    ap.add_argument("--corpus-name", default="", help="how the report names the corpus")
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    def say(m: str) -> None:  # progress on stderr (stdout is never written by server code)
        sys.stderr.write(f"{m}\n")
        sys.stderr.flush()

    res = run(a.lang, Path(a.root).resolve(), a.oracle.split(), a.targets, a.under, Path(a.data_dir), say)
    m = res["micro"]
    say(f"{a.lang}: precision {m['precision']} recall {m['recall']} (tp {m['tp']} fp {m['fp']} fn {m['fn']}), "
        f"{res['targets']} targets, {res['errors']} errors")
    res["corpusName"] = a.corpus_name or Path(a.root).name
    if a.docs:
        write_docs(Path(a.docs), res)
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
