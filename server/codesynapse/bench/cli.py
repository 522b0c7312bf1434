"""``codesynapse bench {index,incremental,requests,tokens,accuracy,memory,retrieval,daemon,all}``.

``--corpus`` (repeatable) takes a corpus name (``python-stdlib``, ``django``, ``go-stdlib``,
``rxjs``; see :mod:`codesynapse.bench.corpora`) or a directory; ``--workload`` a workload
file; ``--out`` the folder for result files (default: ``docs/`` of the CodeSynapse checkout
this runs from, never the current project's; outside a checkout ``./codesynapse-bench``);
``--quick`` a shorter run (fewer samples; each result says when it was quick).
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

from codesynapse.bench.machine import machine_info
from codesynapse.bench.report import REPO, default_out, say

log = logging.getLogger(__name__)

WORKLOADS = REPO / "fixtures" / "workloads"
# the workloads `bench all` runs, each on the corpus it was written for
DEFAULT_WORKLOADS = ("python_stdlib.yaml", "go_stdlib.yaml", "rxjs.yaml")


def _corpora(args, default: tuple[str, ...]) -> list:
    from codesynapse.bench.corpora import resolve

    return [resolve(c) for c in (args.corpus or list(default))]


# ---- tokens -------------------------------------------------------------------------------------


def _tokens_one(workload_path: Path, corpus_spec: str | None) -> dict[str, Any]:
    from codesynapse.bench.corpora import resolve
    from codesynapse.bench.tokens import run_workload
    from codesynapse.bench.workload import load_workload

    wl = load_workload(workload_path)
    spec = corpus_spec or wl.corpus
    if not spec:
        raise SystemExit(f"{workload_path}: the workload names no corpus; pass --corpus")
    if not (Path(spec).is_dir() or spec.lower() in ("stdlib", "python", "python-stdlib", "django", "go",
                                                    "go-stdlib", "rxjs")
            or spec.split(":", 1)[0] in ("pypi", "npm", "go", "maven", "crate")):
        cand = (Path(workload_path).parent / spec)
        cand2 = REPO / spec
        spec = str(cand if cand.is_dir() else cand2)
    corpus = resolve(spec)
    say(f"tokens: {wl.name} ({len(wl.tasks)} tasks) on {corpus.version} at {corpus.path}")
    res = run_workload(wl, corpus, progress=say)
    agg = res["aggregates"]
    ev = agg["evidence"]
    say(f"  complete {ev['tasksComplete']}/{ev['tasks']}, evidence {ev['found']}/{ev['required']}; "
         f"reduction est. (a) {agg['est']['a']['successful']['reductionPct']}, "
         f"(b) {agg['est']['b']['successful']['reductionPct']}")
    g = res["ledgerAgreement"]
    say(f"  ledger agreement: (a) and (b) equal to the request's baselines for {g['equalCore']}/{g['compared']} "
        f"tasks, returned tokens for {g['tokensEqual']}/{g['compared']}; equal to the table's for "
        f"{g['equal']}/{g['compared']} (widened by the workload: {len(g['differWidenedByWorkload'])}); "
        f"unexplained: {g['unexplained'] or 'none'}")
    return res


def run_tokens(args, write: bool = True) -> list[dict[str, Any]]:
    from codesynapse.bench.report import tokens_perf_section, write_perf_section, write_retrieval

    if args.workload:
        pairs = [(Path(args.workload), c) for c in (args.corpus or [None])]
    else:
        pairs = [(WORKLOADS / w, None) for w in DEFAULT_WORKLOADS if (WORKLOADS / w).exists()]
    results = [_tokens_one(w, c) for w, c in pairs]
    if write:
        notes = []
        if getattr(args, "quick", False):
            notes.append("Run with --quick (the token benchmark itself is the same; --quick shortens the others).")
        md, js = write_retrieval(Path(args.out), results, machine_info(), notes)
        write_perf_section(Path(args.out), "tokens", tokens_perf_section(results))
        say(f"wrote {md} and {js}")
    bad = {r["workload"]["name"]: r["ledgerAgreement"]["unexplained"] for r in results
           if r["ledgerAgreement"]["unexplained"]}
    if bad:  # the ledger must measure an answer as this benchmark does (issue 20 #5)
        raise SystemExit(f"bench tokens: the ledger's estimates differ from the baselines for {bad}")
    return results


# ---- dispatch -----------------------------------------------------------------------------------


def run_index(args) -> dict[str, Any]:
    from codesynapse.bench.index_bench import run_index_bench

    return run_index_bench(args)


def run_incremental(args) -> dict[str, Any]:
    from codesynapse.bench.incremental import run_incremental_bench

    return run_incremental_bench(args)


def run_requests(args) -> dict[str, Any]:
    from codesynapse.bench.requests_bench import run_requests_bench

    return run_requests_bench(args)


def run_backends(args) -> dict[str, Any]:
    """SQLite vs Neo4j on one corpus (bench/backends.py): the Neo4j server is the one the
    settings name (CODESYNAPSE_NEO4J_URI, _USER, _PASSWORD)."""
    from codesynapse.bench.backends import compare_backends, write_backends_section
    from codesynapse.bench.report import save_raw
    from codesynapse.settings import load_settings

    s = load_settings()
    if not s.neo4j_uri:
        raise SystemExit("bench backends: set CODESYNAPSE_NEO4J_URI to the Neo4j server to compare with")
    quick = getattr(args, "quick", False)
    res = compare_backends(args.corpus[0] if args.corpus else "python-stdlib", neo4j_uri=s.neo4j_uri,
                           neo4j_user=s.neo4j_user, neo4j_password=s.neo4j_password, requests=10 if quick else 50)
    say(f"wrote {write_backends_section(res, args.out)}")
    save_raw("backends", res)
    return res


def run_accuracy(args) -> Any:
    from codesynapse.bench.accuracy import run_accuracy_cli  # written by another engineer

    return run_accuracy_cli(args)


def run_memory(args) -> Any:
    from codesynapse.bench import memory_bench  # written by another engineer
    from codesynapse.bench.report import save_raw, write_perf_section

    quick = getattr(args, "quick", False)
    fn = getattr(memory_bench, "run_memory_bench", None)
    if not callable(fn):
        raise SystemExit("codesynapse.bench.memory_bench has no run_memory_bench()")
    say("memory: recall latency, lexical and hybrid" + (" (--quick: 1,000 entities)" if quick else ""))
    res = fn(sizes=(1000,) if quick else (1000, 10000), queries=50 if quick else 100)
    res["quick"] = quick
    write_perf_section(Path(args.out), "memory", memory_markdown(res))
    save_raw("memory", res)
    # recall at k over the versioned workload (issue 25 #5): its own results file beside --out
    import os

    from codesynapse.bench.memory_recall import run_recall_at_k, write_results

    say("memory: recall at k, fixtures/workloads/memory_recall.yaml, four modes" + (" (--quick)" if quick else ""))
    before = os.getloadavg()
    rk = run_recall_at_k(quick=quick)
    after = os.getloadavg()
    load = f"1-min load average {before[0]:.1f} at the start, {after[0]:.1f} at the end"
    write_results(rk, Path(args.out) / "MEMORY_RECALL.md", load)
    save_raw("memoryRecall", rk)
    res["recallAtK"] = rk["targetsMet"]
    return res


def memory_markdown(r: dict[str, Any]) -> str:
    from codesynapse.bench.machine import machine_line
    from codesynapse.bench.report import met, ms, num

    lines = ["## Memory recall latency", "",
             f"* **Machine:** {machine_line(r['machine'])}",
             f"* **Method:** `codesynapse bench memory` → `codesynapse.bench.memory_bench.run_memory_bench` "
             f"(see its docstring): synthetic entities remembered in batches of 100, then {r['queriesPerRound']} "
             f"queries × {r['warmRounds']} warm rounds and {r['coldRuns']} cold opens per size and mode, "
             f"concurrency {r['concurrency']}; embedder {r['model']['name']} ({r['model']['threads']} thread), "
             f"loaded in {ms(r['embedderLoadMs'])} ms." + (" **--quick** run." if r.get("quick") else ""),
             "",
             "| mode | entities | cold p50 / p95 ms | warm p50 / p95 / p99 ms | dense leg ran | mean entries | "
             "target (warm p95) |",
             "|---|---:|---|---|---:|---:|---|"]
    for x in r["results"]:
        target = r["targetsMs"]["lexicalWarmP95"] if x["mode"] == "lexical" else r["targetsMs"]["hybridWarmP95"]
        ok = r["targetsMet"].get(f"{x['mode']}@{x['entities']}")
        lines.append(f"| {x['mode']} | {num(x['entities'])} | {ms(x['cold']['p50'])} / {ms(x['cold']['p95'])} | "
                     f"{ms(x['warm']['p50'])} / {ms(x['warm']['p95'])} / {ms(x['warm']['p99'])} | "
                     f"{x['denseRanShare'] * 100:.0f}% | {x['meanEntries']:.1f} | ≤ {target:.0f} ms: {met(ok)} |")
    for p in r.get("populate", []):
        lines.append(f"\n* populate {num(p.get('entities'))} entities: {p.get('seconds', 0):.1f} s")
    return "\n".join(lines)


def run_daemon(args) -> Any:
    """The shared workspace daemon: total RSS with 10 clients vs 1, proxy overhead (bench/daemon_bench.py)."""
    import os

    from codesynapse.bench.daemon_bench import daemon_markdown, run_daemon_bench
    from codesynapse.bench.report import save_raw, write_perf_section

    quick = getattr(args, "quick", False)
    corpus = _corpora(args, ("python-stdlib",))[0]
    say(f"daemon: corpus {corpus.name} at {corpus.path}")
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    res = run_daemon_bench(corpus.path, f"{corpus.name} {corpus.version}".strip(), requests=50 if quick else 200,
                           exclude=corpus.exclude)
    res.update(quick=quick, machine=machine_info(), load=load)
    write_perf_section(Path(args.out), "daemon", daemon_markdown(res))
    save_raw("daemon", res)
    return res


def run_retrieval(args) -> int:
    from codesynapse.bench.retrieval_eval import run_retrieval_cli

    return run_retrieval_cli(args)


def _all(args) -> int:
    failures: list[str] = []
    steps = [("index", run_index), ("incremental", run_incremental), ("requests", run_requests),
             ("tokens", run_tokens), ("accuracy", run_accuracy), ("memory", run_memory)]
    for name, fn in steps:
        say(f"== bench {name}")
        sub = _subargs(args, name)
        try:
            fn(sub)
        except (ImportError, AttributeError) as e:
            say(f"bench {name} is not available in this build: {e}")
            failures.append(f"{name} (unavailable: {e})")
        except SystemExit as e:
            if e.code not in (0, None):
                failures.append(f"{name} (exit {e.code})")
        except Exception as e:  # one broken benchmark must not hide the others' results
            log.exception("bench %s failed", name)
            failures.append(f"{name} ({e.__class__.__name__}: {e})")
    if failures:
        say("not run or failed: " + "; ".join(failures))
        return 1
    return 0


def _subargs(args, name: str):
    import argparse

    d = dict(vars(args))
    # `all` runs each benchmark on its own corpora unless --corpus was given
    if name == "tokens" and not d.get("workload"):
        d["corpus"] = []  # each default workload on the corpus it was written for
    if name != "tokens":
        d["workload"] = None  # --workload is a token workload; the accuracy targets file is another format
    return argparse.Namespace(**d)




def run_bench(args) -> int:
    if getattr(args, "out", None) is None:
        args.out = str(default_out())
    say(f"results go to {Path(args.out).resolve()}")
    kind = args.kind
    if kind == "all":
        return _all(args)
    if kind == "findings":  # SARIF import: time and peak RSS (bench/findings_bench.py)
        from codesynapse.bench.findings_bench import run_findings

        return run_findings(args)
    if kind == "mcp":  # tools/list tokens and the time the MCP bridge adds (bench/mcp_bench.py)
        from codesynapse.bench.mcp_bench import run_mcp

        run_mcp(args)
        return 0
    fn = {"index": run_index, "incremental": run_incremental, "requests": run_requests, "tokens": run_tokens,
          "accuracy": run_accuracy, "memory": run_memory, "retrieval": run_retrieval, "backends": run_backends,
          "daemon": run_daemon}[kind]
    out = fn(args)
    if isinstance(out, int):
        return out
    if getattr(args, "verbose", False) and out is not None:
        json.dump(out, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    return 0
