"""``codesynapse bench requests``: latency of each request type on the stdlib index.

In-process, through the daemon's dispatch table (``call_method``), run as the daemon runs
requests: on a pool of ``WORKERS`` threads that lives as long as the App (each keeps its own
SQLite connection), under the 10 s deadline (JSON-RPC framing and stdio are not included).
Closed loop: each of C client threads sends its next request when the previous one returns;
latency is measured per request, from the hand-over to the pool (a request waits there when
all workers are busy, as in the daemon) to its answer. (Until 6f1c360 each request ran in a
new thread of its own, which opened a new SQLite connection every time: ~0.9 ms a request,
and many more under concurrency, that the daemon does not pay.)

* **cold**: the first request of each type on a freshly opened App over an existing index
  (one App per type; the OS file cache is warm — this is "daemon just started", not "disk
  cold").
* **warm**: after a warm-up pass, N requests per type at concurrency 1, 8 and 32.

Subjects are drawn with a fixed seed from the index's functions, methods and classes.
Errors (JSON-RPC errors the daemon would send) and timeouts (> 10 s) are counted.
"""

from __future__ import annotations

import random
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from codesynapse.bench.report import say
from codesynapse.bench import stats
from codesynapse.bench.corpora import cache_dir
from codesynapse.bench.machine import load_average, machine_info, machine_line
from codesynapse.bench.report import met, ms, num, save_raw, write_perf_section

CONCURRENCY = (1, 8, 32)
TIMEOUT_MS = 10_000
WORKERS = 8  # the daemon's request pool (lsp/server.py: max_workers=8)
_ORPHANS: list = []  # requests that overran their deadline and run on (futures)
_POOLS: dict[int, ThreadPoolExecutor] = {}  # the request pool of each open App, by id


def request_kinds(app, rng: random.Random, n: int) -> dict[str, list[dict[str, Any]]]:
    """n params per request type, from subjects drawn with ``rng``."""
    syms = [s for s in app.store.all_symbols() if s.kind in ("function", "method", "class")]
    syms.sort(key=lambda s: (s.path, s.start_line))
    subj = [syms[rng.randrange(len(syms))] for _ in range(n)]

    def diff(s) -> str:
        return (f"--- a/{s.path}\n+++ b/{s.path}\n@@ -{s.start_line} +{s.start_line} @@\n-x\n+y\n")

    return {
        "symbolCard": [{"selector": s.qname} for s in subj],
        "callGraph callers": [{"selector": s.qname, "direction": "callers"} for s in subj],
        "callGraph both": [{"selector": s.qname, "direction": "both"} for s in subj],
        "symbolContext": [{"selector": s.qname} for s in subj],
        "minimalContext": [{"task": f"fix the bug in {s.name} when the input is empty"} for s in subj],
        "prContext": [{"diff": diff(s)} for s in subj],
        "search": [{"query": s.name, "mode": "compact", "limit": 20} for s in subj],
        "snippet": [{"selector": s.qname, "mode": "head_tail", "maxLines": 60} for s in subj],
        "indexStatus": [{} for _ in subj],
    }


METHOD = {"symbolCard": "codesynapse/symbolCard", "callGraph callers": "codesynapse/callGraph",
          "callGraph both": "codesynapse/callGraph", "symbolContext": "codesynapse/symbolContext",
          "minimalContext": "codesynapse/minimalContext", "prContext": "codesynapse/prContext",
          "search": "codesynapse/search", "snippet": "codesynapse/snippet", "indexStatus": "codesynapse/indexStatus"}


def _one(app, method: str, params: dict[str, Any]) -> tuple[float, str | None]:
    """One request under the daemon's 10 s deadline, on the App's request pool; one that
    overruns is answered as a deadline error (as the daemon does) and left running."""
    from concurrent.futures import TimeoutError as FutureTimeout

    from codesynapse.methods import call_method

    def run() -> str | None:
        try:
            call_method(app, method, params)
        except Exception as e:  # counted, as the daemon would answer with a JSON-RPC error
            return e.__class__.__name__
        return None

    pool = _POOLS.get(id(app))
    if pool is None:
        pool = _POOLS[id(app)] = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="bench-request")
    t = time.perf_counter()
    fut = pool.submit(run)
    try:
        err = fut.result(TIMEOUT_MS / 1000 + 0.5)
    except FutureTimeout:
        _ORPHANS.append(fut)
        return (time.perf_counter() - t) * 1000, "DeadlineExceeded"
    return (time.perf_counter() - t) * 1000, err


def _run_at(app, method: str, params: list[dict[str, Any]], conc: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    if conc == 1:
        res = [_one(app, method, p) for p in params]
    else:
        with ThreadPoolExecutor(max_workers=conc) as pool:
            res = list(pool.map(lambda p: _one(app, method, p), params))
    wall = time.perf_counter() - t0
    lat = [r[0] for r in res]
    errors = [r[1] for r in res if r[1]]
    out = stats.latency_summary(lat)
    out.update({"errors": len(errors), "errorKinds": sorted(set(errors)),
                "timeouts": sum(1 for r in res if r[1] == "DeadlineExceeded"),
                "throughputPerS": len(res) / wall if wall else None})
    return out


def _close(app) -> None:
    from codesynapse.bench.apps import settle

    settle(app, _ORPHANS)
    _ORPHANS.clear()
    pool = _POOLS.pop(id(app), None)
    if pool is not None:
        pool.shutdown(wait=True)
    app.close()


def _open(corpus, data: Path):
    from codesynapse.bench.apps import open_app

    return open_app(corpus.path, data, corpus.exclude, corpus.include)


def run_requests_bench(args) -> dict[str, Any]:
    from codesynapse.bench.corpora import resolve

    if getattr(args, "ledger_compare", False):
        return run_ledger_compare(args)
    quick = getattr(args, "quick", False)
    corpus = resolve((args.corpus or ["python-stdlib"])[0])
    data = cache_dir() / "index" / corpus.name
    n = 20 if quick else 100
    app = _open(corpus, data)
    try:
        t0 = time.perf_counter()
        rep = app.index()  # builds the index, or catches up with an existing one
        from codesynapse.bench.apps import what_if_analyze

        analyzed = what_if_analyze(app)
        say(f"requests: index ready in {time.perf_counter() - t0:.1f} s ({rep.parsed} parsed)")
        kinds = request_kinds(app, random.Random(11), n)
        status = app.status()
    finally:
        _close(app)
    cold: dict[str, Any] = {}
    for k, plist in kinds.items():
        app = _open(corpus, data)
        try:
            lat, err = _one(app, METHOD[k], plist[0])
            cold[k] = {"ms": lat, "error": err}
        finally:
            _close(app)
    app = _open(corpus, data)
    warm: dict[str, dict[str, Any]] = {}
    load_before = load_average()
    try:
        for k, plist in kinds.items():
            for p in plist[:10]:
                _one(app, METHOD[k], p)
        for conc in CONCURRENCY:
            for k, plist in kinds.items():
                warm.setdefault(k, {})[str(conc)] = _run_at(app, METHOD[k], plist, conc)
                w = warm[k][str(conc)]
                say(f"  {k} c={conc}: p50 {ms(w['p50'])} p95 {ms(w['p95'])} p99 {ms(w['p99'])} errors {w['errors']}")
    finally:
        _close(app)
    results = {"corpus": corpus.describe(), "files": status["files"], "symbols": status["symbols"],
               "samplesPerType": n, "quick": quick, "cold": cold, "warm": warm,
               "policyFingerprint": status.get("policyFingerprint", ""), "loadBefore": load_before,
               "loadAfter": load_average(), "whatIfAnalyze": analyzed}
    section = "requests_whatif" if analyzed else "requests"
    if corpus.name != "python-stdlib":  # another corpus's figures never replace the stdlib's section
        section += f"_{corpus.name}"
    write_perf_section(Path(args.out), section, requests_markdown(results, machine_info()))
    save_raw(section, results)
    return results


def requests_markdown(r: dict[str, Any], machine: dict[str, Any]) -> str:
    title = ("## Request latency — what-if: SQLite ANALYZE run on the index first" if r.get("whatIfAnalyze")
             else "## Request latency")
    lines = [title, "",
             f"* **Machine:** {machine_line(machine)}",
             f"* **Index:** {r['corpus']['version']}, {num(r['files'])} files, {num(r['symbols'])} symbols, "
             f"SQLite; policy fingerprint `{r['policyFingerprint'][:16]}…`."
             + (" **--quick** run." if r.get("quick") else "")
             + (" **What-if: SQLite ANALYZE was run on the index first (not done by the product).**"
                if r.get("whatIfAnalyze") else ""),
             "* **Method:** `codesynapse bench requests`, in-process through the daemon's dispatch table (no "
             "JSON-RPC framing or stdio), run as the daemon runs requests: on a pool of "
             f"{WORKERS} worker threads that lives with the App (each keeps its SQLite connection); closed loop "
             "with C client threads, latency from the hand-over to the pool to the answer (a request waits when "
             "every worker is busy, as in the daemon), "
             f"{r['samplesPerType']} requests per type and concurrency, subjects drawn with a fixed seed from the "
             "index's functions, methods and classes. *Cold* = first request of its type on a freshly opened App "
             "over the existing index (OS file cache warm). Nearest-rank percentiles. Errors are JSON-RPC errors "
             "the daemon would answer (e.g. a budget error); timeouts are > 10 s. Load average (1 min) "
             f"{(r.get('loadBefore') or ['?'])[0]} before the warm runs, {(r.get('loadAfter') or ['?'])[0]} after "
             "(the machine is shared; other work inflates the tails).",
             "",
             "| request | cold ms | c=1 p50 / p95 / p99 | c=8 p50 / p95 / p99 | c=32 p50 / p95 / p99 | "
             "errors (1/8/32) | timeouts |",
             "|---|---:|---|---|---|---|---:|"]
    for k, by in r["warm"].items():
        cells = []
        for c in ("1", "8", "32"):
            w = by.get(c)
            cells.append("—" if not w else f"{ms(w['p50'])} / {ms(w['p95'])} / {ms(w['p99'])}")
        errs = "/".join(str(by[c]["errors"]) for c in ("1", "8", "32") if c in by)
        tos = sum(by[c]["timeouts"] for c in by)
        cold = r["cold"].get(k, {})
        lines.append(f"| {k} | {ms(cold.get('ms'))} | {cells[0]} | {cells[1]} | {cells[2]} | {errs} | {tos} |")
    kinds = [by for k, by in r["warm"].items() if k in ("symbolCard", "callGraph callers")]
    worst = max((by[c]["p95"] for by in kinds for c in ("1", "8") if c in by and by[c]["p95"] is not None),
                default=None)
    lines += ["", "Target (issue 4, benchmark): card and callers p95 ≤ 20 ms (at concurrency 1 and 8) — "
                  f"{met(worst is not None and worst <= 20)} (worst {ms(worst)} ms)."]
    errs = {k: sorted({e for c in by.values() for e in c.get("errorKinds", [])}) for k, by in r["warm"].items()}
    errs = {k: v for k, v in errs.items() if v}
    if errs:
        lines.append(f"\nError kinds seen: {errs}.")
    return "\n".join(lines)


# ---- ledger counting on and off (issue 20 #1) -------------------------------------------------

LEDGER_ROUNDS = 10  # alternating on/off rounds (4 with --quick)


def run_ledger_compare(args) -> dict[str, Any]:
    """``bench requests --ledger-compare``: the request mix at concurrency 1 with the ledger's
    counting on and off (``LedgerBook.counting``), in alternating rounds so machine-load drift
    falls on both sides: in round r each type runs its r-th slice of subjects once on and once
    off, the order switching every round, after a warm-up pass over every subject. Reports
    per type p50/p95 on and off and the overhead, plus the summed request time; the in-flight
    count (begin/end, which runs either way) is timed on its own."""
    from codesynapse.bench.corpora import resolve

    quick = getattr(args, "quick", False)
    corpus = resolve((args.corpus or ["python-stdlib"])[0])
    data = cache_dir() / "index" / corpus.name
    n = 20 if quick else 100
    rounds = 4 if quick else LEDGER_ROUNDS
    app = _open(corpus, data)
    try:
        t0 = time.perf_counter()
        rep = app.index()
        say(f"requests --ledger-compare: index ready in {time.perf_counter() - t0:.1f} s ({rep.parsed} parsed)")
        kinds = request_kinds(app, random.Random(11), n)
        status = app.status()
        ledger = app.services.ledger
        for k, plist in kinds.items():  # warm-up: every subject once, so both sides see warm caches
            for p in plist:
                _one(app, METHOD[k], p)
        lat: dict[str, dict[str, list[float]]] = {k: {"on": [], "off": []} for k in kinds}
        diffs: dict[str, list[float]] = {k: [] for k in kinds}
        errors = {k: {"on": 0, "off": 0} for k in kinds}
        load_before = load_average()
        step = max(1, n // rounds)
        for r in range(rounds):
            for k, plist in kinds.items():
                for i, p in enumerate(plist[r * step:(r + 1) * step]):
                    pair = {}
                    for mode in (("on", "off") if (r + i) % 2 == 0 else ("off", "on")):
                        ledger.counting = mode == "on"
                        t, err = _one(app, METHOD[k], p)
                        lat[k][mode].append(t)
                        errors[k][mode] += bool(err)
                        pair[mode] = t
                    diffs[k].append(pair["on"] - pair["off"])
            say(f"  round {r + 1}/{rounds} done (load {load_average()[0]})")
        ledger.counting = True
        load_after = load_average()
        direct = _record_cost_us(app, ledger, kinds)
        inflight_us = _inflight_cost_us(ledger)
    finally:
        _close(app)
    per: dict[str, Any] = {}
    for k, by in lat.items():
        on, off = stats.latency_summary(by["on"]), stats.latency_summary(by["off"])
        d = stats.percentile(diffs[k], 50) if diffs[k] else None
        per[k] = {"on": on, "off": off, "errors": errors[k], "sumOnMs": sum(by["on"]), "sumOffMs": sum(by["off"]),
                  "p50OverheadPct": _pct(on["p50"], off["p50"]), "p95OverheadPct": _pct(on["p95"], off["p95"]),
                  "pairedDiffMedianMs": d, "pairedDiffPctOfOffP50": None if d is None or not off["p50"] else d / off["p50"] * 100,
                  "recordUsMedian": direct[k],
                  "recordPctOfOffP50": None if not off["p50"] else direct[k] / 1000 / off["p50"] * 100}
        say(f"  {k}: p50 on/off {on['p50']:.3f}/{off['p50']:.3f} ms ({per[k]['p50OverheadPct'] or 0:+.1f}%), "
            f"p95 {on['p95']:.3f}/{off['p95']:.3f} ms")
    sum_on = sum(v["sumOnMs"] for v in per.values())
    sum_off = sum(v["sumOffMs"] for v in per.values())
    results = {"corpus": corpus.describe(), "files": status["files"], "symbols": status["symbols"],
               "samplesPerTypeAndSide": n, "rounds": rounds, "quick": quick, "methods": per,
               "sumOnMs": sum_on, "sumOffMs": sum_off, "totalOverheadPct": _pct(sum_on, sum_off),
               "inflightUsPerRequest": inflight_us, "loadBefore": load_before, "loadAfter": load_after,
               "directMixPct": _pct(sum(v["off"]["p50"] + v["recordUsMedian"] / 1000 for v in per.values()
                                        if v["recordUsMedian"] is not None),
                                    sum(v["off"]["p50"] for v in per.values() if v["recordUsMedian"] is not None)),
               # the measured cost robust to the tail: summed paired medians over the summed off p50s
               "pairedMixPct": _pct(sum(v["off"]["p50"] + v["pairedDiffMedianMs"] for v in per.values()
                                        if v["pairedDiffMedianMs"] is not None),
                                    sum(v["off"]["p50"] for v in per.values() if v["pairedDiffMedianMs"] is not None))}
    write_perf_section(Path(args.out), "requests_ledger", ledger_markdown(results, machine_info()))
    save_raw("requests_ledger", results)
    return results


def _pct(on: float | None, off: float | None) -> float | None:
    return None if not on or not off else (on - off) / off * 100


def _record_cost_us(app, ledger, kinds: dict[str, list[dict[str, Any]]]) -> dict[str, float]:
    """Median microseconds of counting one answer (``LedgerBook.record``, what the switch turns
    off), timed directly on each type's answers (obtained with counting off)."""
    from codesynapse.methods import call_method

    scope = app.services.own_scope
    out: dict[str, float] = {}
    for k, plist in kinds.items():
        samples = []
        for p in plist:
            ledger.counting = False
            try:
                answer = call_method(app, METHOD[k], p)
            except Exception:  # an error answer is not counted as an entry
                continue
            finally:
                ledger.counting = True
            t = time.perf_counter()
            ledger.record(scope, METHOD[k], p, answer)
            samples.append((time.perf_counter() - t) * 1e6)
        out[k] = stats.percentile(samples, 50) if samples else None
    return out


def _inflight_cost_us(ledger, n: int = 100_000) -> float:
    """Microseconds of one begin/end pair (the in-flight count), uncontended."""
    t = time.perf_counter()
    for _ in range(n):
        ledger.begin()
        ledger.end()
    return (time.perf_counter() - t) / n * 1e6


def ledger_markdown(r: dict[str, Any], machine: dict[str, Any]) -> str:
    def f(v: float | None) -> str:
        return "—" if v is None else f"{v:.3f}"

    def pct(v: float | None) -> str:
        return "—" if v is None else f"{v:+.1f}%"

    def us(v: float | None) -> str:
        return "—" if v is None else f"{v:.0f}"

    total = r["totalOverheadPct"]
    mix = r.get("directMixPct")
    paired = r.get("pairedMixPct")
    lines = ["## Ledger counting on the request path (issue 20 #1)", "",
             f"* **Machine:** {machine_line(machine)}",
             f"* **Index:** {r['corpus']['version']}, {num(r['files'])} files, {num(r['symbols'])} symbols, SQLite."
             + (" **--quick** run." if r.get("quick") else ""),
             "* **Method:** `codesynapse bench requests --ledger-compare`, in-process through the daemon's dispatch "
             f"table on its {WORKERS}-thread request pool, concurrency 1, the request mix of `bench requests` "
             f"({r['samplesPerTypeAndSide']} subjects per type, fixed seed) after a warm-up pass over every subject. "
             "Counting (`LedgerBook.counting`: the per-answer entry — response tokens, cache-hit check, queueing "
             f"of the raw estimates) on and off in {r['rounds']} alternating rounds: each round runs every type's "
             "next slice of subjects, each subject on and off back to back, the order switching pair by pair and "
             "round by round, so load drift falls on both sides. The raw estimates (a)/(b) are computed off the request path (when no request has "
             "run for 0.3 s) and are not in these figures. The in-flight count (begin/end) runs either way: "
             f"{r['inflightUsPerRequest']:.2f} µs a request, timed alone. Load average (1 min) "
             f"{(r.get('loadBefore') or ['?'])[0]} before, {(r.get('loadAfter') or ['?'])[0]} after (shared machine).",
             "",
             "*Paired* = the median of (on − off) over the pairs (each subject run on and off back to back, "
             "the order switching pair by pair). *Direct* = the median time of `LedgerBook.record` alone on the "
             "type's answers (what the switch turns off), as a share of the off p50: the least noisy figure "
             "under load.",
             "",
             "| request | p50 on / off ms | p50 overhead | p95 on / off ms | p95 overhead | paired ms (% of off p50) "
             "| direct µs (% of off p50) | errors on/off |",
             "|---|---|---:|---|---:|---:|---:|---|"]
    for k, v in r["methods"].items():
        lines.append(f"| {k} | {f(v['on']['p50'])} / {f(v['off']['p50'])} | {pct(v['p50OverheadPct'])} | "
                     f"{f(v['on']['p95'])} / {f(v['off']['p95'])} | {pct(v['p95OverheadPct'])} | "
                     f"{f(v['pairedDiffMedianMs'])} ({pct(v['pairedDiffPctOfOffP50'])}) | "
                     f"{us(v['recordUsMedian'])} "
                     f"({pct(v['recordPctOfOffP50'])}) | {v['errors']['on']}/{v['errors']['off']} |")
    lines += ["", f"Over the mix (one request of each type): direct counting cost {pct(mix)} of the summed off p50s; "
                  f"measured, the summed paired medians {pct(paired)} of the summed off p50s; "
                  f"summed measured request time {r['sumOnMs']:.1f} ms on, {r['sumOffMs']:.1f} ms off ({pct(total)}: "
                  "a sum of every sample, carried by the slowest ones under load: it swings either way from run to "
                  "run on unchanged code). "
                  "Target (issue 20 #1): counting ≤ 5% of a request's time — "
                  f"{met(mix is not None and mix <= 5)} over the mix by the direct cost, "
                  f"{met(paired is not None and paired <= 5)} by the measured paired cost, "
                  f"{met(total is not None and total <= 5)} by the measured summed time; per type see the direct column "
                  "(a sub-millisecond answer can exceed 5% with the same absolute cost). A paired difference above "
                  "the direct cost is indirect cost (e.g. allocation and garbage collection) plus load noise, not "
                  "separated here. indexStatus is not counted by the ledger (its direct cost is the early return)."]
    return "\n".join(lines)
