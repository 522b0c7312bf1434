"""``codesynapse bench {index,incremental,requests,tokens,accuracy,memory,all}``.

``--corpus`` (repeatable) takes a corpus name (``python-stdlib``, ``django``, ``go-stdlib``,
``rxjs``; see :mod:`codesynapse.bench.corpora`) or a directory; ``--workload`` a workload
file; ``--out`` the folder for result files (default ``docs``); ``--quick`` a shorter run
(fewer samples; each result says when it was quick).
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

from codesynapse.bench.machine import machine_info

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[3]
WORKLOADS = REPO / "fixtures" / "workloads"
# the workloads `bench all` runs, each on the corpus it was written for
DEFAULT_WORKLOADS = ("python_stdlib.yaml", "go_stdlib.yaml", "rxjs.yaml")


def _say(msg: str) -> None:
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


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
                                                    "go-stdlib", "rxjs")):
        cand = (Path(workload_path).parent / spec)
        cand2 = REPO / spec
        spec = str(cand if cand.is_dir() else cand2)
    corpus = resolve(spec)
    _say(f"tokens: {wl.name} ({len(wl.tasks)} tasks) on {corpus.version} at {corpus.path}")
    res = run_workload(wl, corpus)
    agg = res["aggregates"]
    ev = agg["evidence"]
    _say(f"  complete {ev['tasksComplete']}/{ev['tasks']}, evidence {ev['found']}/{ev['required']}; "
         f"reduction est. (a) {agg['est']['a']['successful']['reductionPct']}, "
         f"(b) {agg['est']['b']['successful']['reductionPct']}")
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
        _say(f"wrote {md} and {js}")
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


def run_accuracy(args) -> Any:
    from codesynapse.bench.accuracy import run_accuracy_cli  # written by another engineer

    return run_accuracy_cli(args)


def run_memory(args) -> Any:
    from codesynapse.bench import memory_bench  # written by another engineer

    for name in ("run_memory_cli", "run_memory_bench", "run_bench", "main", "run"):
        fn = getattr(memory_bench, name, None)
        if callable(fn):
            return fn(args)
    raise SystemExit("codesynapse.bench.memory_bench has no entry point (run_memory_cli/run_memory_bench)")


def _all(args) -> int:
    failures: list[str] = []
    steps = [("index", run_index), ("incremental", run_incremental), ("requests", run_requests),
             ("tokens", run_tokens), ("accuracy", run_accuracy), ("memory", run_memory)]
    for name, fn in steps:
        _say(f"== bench {name}")
        sub = _subargs(args, name)
        try:
            fn(sub)
        except (ImportError, AttributeError) as e:
            _say(f"bench {name} is not available in this build: {e}")
            failures.append(f"{name} (unavailable: {e})")
        except SystemExit as e:
            if e.code not in (0, None):
                failures.append(f"{name} (exit {e.code})")
        except Exception as e:  # one broken benchmark must not hide the others' results
            log.exception("bench %s failed", name)
            failures.append(f"{name} ({e.__class__.__name__}: {e})")
    if failures:
        _say("not run or failed: " + "; ".join(failures))
        return 1
    return 0


def _subargs(args, name: str):
    import argparse

    d = dict(vars(args))
    # `all` runs each benchmark on its own corpora unless --corpus was given
    if name in ("tokens",):
        d["workload"] = d.get("workload")
        if not d.get("workload"):
            d["corpus"] = []
    return argparse.Namespace(**d)


def run_bench(args) -> int:
    kind = args.kind
    if kind == "all":
        return _all(args)
    fn = {"index": run_index, "incremental": run_incremental, "requests": run_requests, "tokens": run_tokens,
          "accuracy": run_accuracy, "memory": run_memory}[kind]
    out = fn(args)
    if isinstance(out, int):
        return out
    if getattr(args, "verbose", False) and out is not None:
        json.dump(out, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    return 0
