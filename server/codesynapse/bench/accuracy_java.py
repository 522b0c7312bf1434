"""Java caller accuracy against JavaParser's symbol solver (issue 18 #5).

No Java language server with call hierarchy installs offline here (Eclipse JDT LS is not on
Maven Central), so the oracle is JavaParser's symbol solver
(``com.github.javaparser:javaparser-symbol-solver-core``, Maven Central), an independent
resolver: a small Maven program (``bench/java_oracle``, built by Maven at bench time into the
data directory, never by the tests) parses every ``.java`` file of the corpus and resolves every
method call (``MethodCallExpr``) to the declaration it names (``bench/java_oracle/src/.../CallSites.java``).

Targets and caller units are those of the language-server oracles (bench/accuracy_lsp.py):
methods outside test files, drawn in the order of a hash of their qualified name among those
whose name some call uses; a caller unit is our innermost function, method or class holding
the call. The oracle's callers of a target are the call sites whose resolved declaration lies in
the target (its file, and our innermost method there holding the declaration's name has the
target's qualified name: overloads share it in our graph, so they are one target on both sides).

Left out, and counted: constructors (``new Foo()`` is a call of the class in our graph, of the
constructor in the oracle's); call sites the solver cannot resolve (their units count on
neither side when the called name is the target's: the oracle's blind spots); method
references (``Foo::bar``) and calls in annotations are no ``MethodCallExpr``.

Run: ``codesynapse bench accuracy --lang java [--corpus maven:com.google.code.gson:gson:2.11.0]
[--out docs]``, or ``python -m codesynapse.bench.accuracy_java --root DIR``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from codesynapse.bench.accuracy_base import CorpusRun, micro, open_corpus_app, score
from codesynapse.bench.accuracy_lsp import (
    _innermost,
    our_units,
    pick_targets,
    unit_key,
    write_docs,
)

log = logging.getLogger(__name__)

ORACLE_SRC = Path(__file__).with_name("java_oracle")
ORACLE_SCHEMA = 1
DEFAULT_CORPUS = "maven:com.google.code.gson:gson:2.11.0"
DECL_KINDS = ("function", "method", "test")


def _digest_tree(root: Path) -> str:
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for f in sorted(filenames):
            if f.endswith(".java"):
                p = Path(dirpath) / f
                h.update(str(p.relative_to(root)).encode())
                h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def _oracle_version() -> str:
    h = hashlib.sha256()
    for p in sorted(ORACLE_SRC.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(ORACLE_SRC)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


def build_oracle(data_dir: Path, say=print) -> list[str]:
    """Build the oracle with Maven (once per version of its sources) and return the command
    that runs it (``java -cp ... codesynapse.oracle.CallSites``)."""
    mvn = shutil.which("mvn")
    java = shutil.which("java")
    if not mvn or not java:
        raise RuntimeError("the Java oracle needs Maven (mvn) and a JDK (java) on PATH")
    build = data_dir / f"java-oracle-{_oracle_version()}"
    cp_file = build / "cp.txt"
    classes = build / "target" / "classes"
    if not cp_file.exists() or not (classes / "codesynapse" / "oracle" / "CallSites.class").exists():
        if build.exists():
            shutil.rmtree(build)
        shutil.copytree(ORACLE_SRC, build)
        say(f"building the Java oracle in {build} (Maven; the first build fetches JavaParser from Maven Central)")
        t0 = time.perf_counter()
        r = subprocess.run([mvn, "-q", "-B", "compile", "dependency:build-classpath", f"-Dmdep.outputFile={cp_file}"],
                           cwd=build, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise RuntimeError(f"the Java oracle did not build (mvn exit {r.returncode}): {(r.stdout + r.stderr)[-2000:]}")
        say(f"built in {time.perf_counter() - t0:.0f} s")
    cp = f"{classes}{os.pathsep}{cp_file.read_text(encoding='utf-8').strip()}"
    return [java, "-Xss8m", "-cp", cp, "codesynapse.oracle.CallSites"]


def oracle_sites(root: Path, data_dir: Path, say=print) -> dict[str, Any]:
    """Every method call of the corpus with the declaration the solver resolves it to
    (cached per corpus digest and oracle version)."""
    key = {"schema": ORACLE_SCHEMA, "tree": _digest_tree(root), "oracle": _oracle_version()}
    cache = data_dir / f"java-sites-{hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]}.json"
    if cache.exists():
        data = json.loads(cache.read_text(encoding="utf-8"))
        data["cached"] = True
        return data
    argv = build_oracle(data_dir, say)
    say(f"JavaParser symbol solver over {root}")
    t0 = time.perf_counter()
    r = subprocess.run([*argv, str(root)], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"the Java oracle failed (exit {r.returncode}): {r.stderr[-2000:]}")
    sites = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    data = {"key": key, "sites": sites, "seconds": round(time.perf_counter() - t0, 2),
            "summary": r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""}
    cache.write_text(json.dumps(data), encoding="utf-8")
    data["cached"] = False
    return data


def _is_constructor(s) -> bool:
    return bool(s.parent) and s.parent.rsplit(".", 1)[-1] == s.name


def run(root: Path, n: int, under: str, data_dir: Path, say=print) -> dict[str, Any]:
    data_dir.mkdir(parents=True, exist_ok=True)
    oracle = oracle_sites(root, data_dir, say)
    sites = oracle["sites"]
    app = open_corpus_app(CorpusRun(root.name, root, "directory"), data_dir / "index")
    try:
        t0 = time.perf_counter()
        app.index()
        say(f"indexed {root} in {time.perf_counter() - t0:.0f} s")
        cache: dict[str, list] = {}
        picked = pick_targets(app, "java", n + 50, under)
        constructors = [s for s in picked if _is_constructor(s)]
        targets = [s for s in picked if not _is_constructor(s)][:n]
        say(f"{len(targets)} targets ({len(constructors)} constructors passed over)")
        # the oracle's sites by declared target: (decl file, our innermost unit's qname there)
        by_decl: dict[str, list[dict]] = {}
        failed_by_name: dict[str, list[dict]] = {}
        for site in sites:
            if "error" in site:
                failed_by_name.setdefault(site["name"], []).append(site)
                continue
            if not site.get("decl") or site["declLine"] < 1:
                continue  # the JDK's or a library's method
            u = _innermost(app.store, site["decl"], site["declLine"], cache, DECL_KINDS)
            if u is not None:
                by_decl.setdefault(u.qname, []).append(site)
        rows = []
        for s in targets:
            theirs = {unit_key(app.store, x["file"], x["line"], cache): x["sig"] for x in by_decl.get(s.qname, [])
                      if x["file"].startswith(under)}
            blind = {unit_key(app.store, x["file"], x["line"], cache) for x in failed_by_name.get(s.name, [])
                     if x["file"].startswith(under)} - set(theirs)
            ours = our_units(app, s, cache)
            sc = score(set(ours), set(theirs), excluded=blind)
            rows.append({"symbol": s.qname, "path": s.path, "line": s.start_line, **sc,
                         "misses": sorted(set(theirs) - set(ours)),
                         "falsePositives": sorted(set(ours) - set(theirs) - blind),
                         "excludedDispatch": sorted(blind)})
            say(f"  {s.qname}: ours {len(ours)} oracle {len(theirs)} tp {sc['tp']}")
        resolved = sum(1 for x in sites if "error" not in x)
        return {"language": "java", "corpus": str(root), "under": under,
                "oracle": "JavaParser symbol solver 3.26.4", "targets": len(targets), "errors": 0,
                "micro": micro(rows), "excludedDispatch": sum(len(r["excludedDispatch"]) for r in rows),
                "oracleSites": len(sites), "oracleResolved": resolved, "oracleUnresolved": len(sites) - resolved,
                "oracleSeconds": oracle.get("seconds"), "oracleCached": oracle.get("cached", False),
                "constructorsPassedOver": len(constructors), "rows": rows}
    finally:
        app.close()


def run_cli(args, say=print) -> int:
    """``codesynapse bench accuracy --lang java``: the corpus is ``--corpus`` (a named or
    registry corpus, or a folder; default gson 2.11.0's sources from Maven Central)."""
    from codesynapse.bench.corpora import resolve

    corpora = list(getattr(args, "corpus", None) or []) or [DEFAULT_CORPUS]
    out_dir = Path(getattr(args, "out", None) or "docs")
    data_dir = Path(getattr(args, "data_dir", None) or "/tmp/codesynapse-accuracy-java")
    for spec in corpora:
        c = resolve(spec)
        res = run(Path(c.path).resolve(), int(getattr(args, "targets", 0) or 60), "", data_dir, say)
        m = res["micro"]
        say(f"java: precision {m['precision']} recall {m['recall']} (tp {m['tp']} fp {m['fp']} fn {m['fn']}), "
            f"{res['targets']} targets")
        res["corpusName"] = c.version or c.name
        out_dir.mkdir(parents=True, exist_ok=True)
        write_docs(out_dir, res)
        say(f"wrote {out_dir / 'ACCURACY.md'} and {out_dir / 'accuracy-lsp.json'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m codesynapse.bench.accuracy_java")
    ap.add_argument("--root", required=True, help="the Java source tree")
    ap.add_argument("--under", default="")
    ap.add_argument("--targets", type=int, default=60)
    ap.add_argument("--data-dir", default="/tmp/codesynapse-accuracy-java")
    ap.add_argument("--docs", default="", help="record the result in DIR/accuracy-lsp.json and DIR/ACCURACY.md")
    ap.add_argument("--out", default="", help="also write the result as JSON here")
    ap.add_argument("--corpus-name", default="")
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    def say(m: str) -> None:  # progress on stderr (stdout is never written by server code)
        sys.stderr.write(f"{m}\n")
        sys.stderr.flush()

    res = run(Path(a.root).resolve(), a.targets, a.under, Path(a.data_dir), say)
    m = res["micro"]
    say(f"java: precision {m['precision']} recall {m['recall']} (tp {m['tp']} fp {m['fp']} fn {m['fn']})")
    res["corpusName"] = a.corpus_name or Path(a.root).name
    if a.docs:
        write_docs(Path(a.docs), res)
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
