"""Resolution through C include graphs (issue 24): CPU time of ``SymbolIndex.resolve_qname``
on synthetic include graphs, and the answers of two resolvers compared on the same lookups.

    python -m codesynapse.bench.scale_resolve [--headers 3000] [--includes 4] [--back 0.03]
        [--sources 400] [--calls 26] [--seed 24] [--against OLD_RESOLVE.py]

The graph: ``--headers`` headers ``h<i>.h`` (module ``h<i>``), each defining two functions and
including ``--includes`` others: a header with a higher number, or, with probability
``--back``, one with a lower number (a back edge: include cycles). ``--sources`` C files
include four headers each and call ``--calls`` names each: a function of some header (found
or not through the file's includes) or a name defined nowhere. Every call is resolved with
``Resolver.resolve_call`` on a fresh index, as the indexer does. ``--against`` loads another
copy of ``index/resolve.py`` (e.g. ``git show 7b7b129:server/codesynapse/index/resolve.py``)
and reports its time and how many answers differ. Timing is process CPU time; no test
asserts it (docs/PERFORMANCE.md, scale series).

    python -m codesynapse.bench.scale_resolve --data DATA_DIR --root ROOT [--against OLD.py]

does the same on a real index (``DATA_DIR`` of ``codesynapse.bench.index_child ROOT DATA_DIR``):
the symbol table is read from the store as the indexer loads it, and every stored call is
resolved again (``resolve_call`` with the stored receiver hint, no parameter pass); with
``--against``, the (target, resolution) pairs of the two resolvers are compared.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
import time

from codesynapse.extract.model import ImportRef


def build(mod, headers: int, includes: int, back: float, sources: int, calls: int, seed: int):
    """A SymbolIndex of ``mod`` (a resolve module) holding the synthetic tree, and the calls."""
    rnd = random.Random(seed)
    idx = mod.SymbolIndex()
    for i in range(headers):
        inc = []
        for _ in range(includes):
            if i and rnd.random() < back:
                inc.append(rnd.randrange(0, i))
            elif i + 1 < headers:
                inc.append(rnd.randrange(i + 1, headers))
        m = f"h{i}"
        syms = [(m, "module", ""), (f"{m}.f{i}a", "function", m), (f"{m}.f{i}b", "function", m)]
        refs = [ImportRef(module=f"h{j}", name="*", line=k + 1) for k, j in enumerate(inc)]
        idx.add_file(f"inc/h{i}.h", m, "c", syms, refs)
    todo = []
    for s in range(sources):
        m = f"s{s}"
        idx.add_file(f"src/s{s}.c", m, "c", [(m, "module", ""), (f"{m}.main", "function", m)],
                     [ImportRef(module=f"h{rnd.randrange(headers)}", name="*", line=k + 1) for k in range(4)])
        for _ in range(calls):
            r = rnd.random()
            name = f"nowhere{rnd.randrange(1000)}" if r < 0.2 else f"f{rnd.randrange(headers)}{'ab'[r < 0.6]}"
            todo.append((f"src/s{s}.c", f"{m}.main", name))
    return idx, todo


def run(mod, args) -> tuple[float, list]:
    idx, todo = build(mod, args.headers, args.includes, args.back, args.sources, args.calls, args.seed)
    res = mod.Resolver(idx)
    t0 = time.process_time()
    out = [res.resolve_call(p, c, n, "").target for p, c, n in todo]
    return time.process_time() - t0, out


def run_data(mod, args) -> tuple[float, float, list]:
    """(seconds to load the table, CPU seconds to resolve, [(target, resolution, path, callee)]
    per call)."""
    from codesynapse.bench.apps import open_app

    app = open_app(args.root, args.data)
    try:
        t0 = time.process_time()
        idx = mod.SymbolIndex()
        for f, syms, refs in app.store.symbol_table_rows():
            idx.add_file(f.path, f.module, f.language, syms, refs)
        calls = [(c.path, c.caller, c.callee, c.hint) for c in app.store.all_calls()]
    finally:
        app.close()
    t_load = time.process_time() - t0
    res = mod.Resolver(idx)
    t0 = time.process_time()
    out = []
    for p, c, n, h in calls:
        r = res.resolve_call(p, c, n, h)
        out.append((r.target, r.resolution, p, n))
    return t_load, time.process_time() - t0, out


def load(path: str):
    spec = importlib.util.spec_from_file_location("resolve_against", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["resolve_against"] = mod
    spec.loader.exec_module(mod)
    return mod


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m codesynapse.bench.scale_resolve")
    ap.add_argument("--headers", type=int, default=3000)
    ap.add_argument("--includes", type=int, default=4)
    ap.add_argument("--back", type=float, default=0.03)
    ap.add_argument("--sources", type=int, default=400)
    ap.add_argument("--calls", type=int, default=26)
    ap.add_argument("--seed", type=int, default=24)
    ap.add_argument("--against", help="another copy of index/resolve.py to time and compare")
    ap.add_argument("--data", help="a data folder indexed by codesynapse.bench.index_child")
    ap.add_argument("--root", help="the tree that data folder indexed")
    ap.add_argument("--diff", type=int, default=0, help="print this many differing calls")
    args = ap.parse_args(argv)
    from codesynapse.index import resolve

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    if args.data:
        tl, tr, a_new = run_data(resolve, args)
        report = {"calls": len(a_new), "load_s": round(tl, 2), "cpu_s": round(tr, 2),
                  "resolved": sum(1 for t, *_ in a_new if t)}
        if args.against:
            tl, tr, a_old = run_data(load(args.against), args)
            diff = [i for i, (x, y) in enumerate(zip(a_new, a_old)) if x != y]
            report["against"] = {"load_s": round(tl, 2), "cpu_s": round(tr, 2),
                                 "resolved": sum(1 for t, *_ in a_old if t), "differ": len(diff),
                                 "examples": [[a_new[i], a_old[i]] for i in diff[:args.diff]]}
    else:
        t_new, a_new = run(resolve, args)
        report = {"lookups": len(a_new), "cpu_s": round(t_new, 3), "found": sum(1 for t in a_new if t)}
        if args.against:
            t_old, a_old = run(load(args.against), args)
            report["against"] = {"cpu_s": round(t_old, 3), "found": sum(1 for t in a_old if t),
                                 "differ": sum(1 for x, y in zip(a_new, a_old) if x != y)}
    # the bench's result, for the shell (like bench/index_child.py): a CLI of its own, never the server
    sys.stdout.write(json.dumps(report) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
