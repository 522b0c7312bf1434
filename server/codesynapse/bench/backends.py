"""SQLite vs Neo4j on the same corpus: full-index time and request latency.

``compare_backends(corpus, neo4j_uri=…)`` indexes the corpus once per backend through the
real ``App`` (same policy, same extractor, same resolver: only the graph store differs),
then, for each backend, opens a fresh App over the finished index and measures

* **cold**: the first request of each kind on the fresh App;
* **warm**: after a warm-up pass, ``requests`` requests per kind, one at a time (closed
  loop, concurrency 1), in-process through the daemon's dispatch table (no JSON-RPC).

Request kinds: ``symbolCard``, ``callGraph`` (both directions, depth 1) and ``search``
(compact, 20 results). Subjects are drawn once, with a fixed seed, from the corpus's
functions, methods and classes, and used for both backends. Every answer of one backend is
compared with the other's (timestamps stripped; for search, the total, the exact matches
and, when the page holds every hit, the result set): the ``parity`` counts say how many were identical.

``sqlite_analyze=True`` runs SQLite ``ANALYZE`` on the finished index before the requests
(a what-if: the product does not; without statistics SQLite's planner picks the path index
for ``graph_id = ? AND qname = ?`` lookups on a large single-graph index). The table says so.

Returns a plain dict (``save_raw``-able); ``backends_markdown(result)`` renders it and
``write_backends_section(result, out_dir)`` puts it into ``PERFORMANCE.md`` as the
``backends`` section.

The Neo4j graph of the corpus is dropped before indexing (a full index from empty) and,
unless ``keep_graph``, afterwards.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from codesynapse.bench.report import say
from codesynapse.bench import stats
from codesynapse.bench.machine import load_average, machine_info, machine_line
from codesynapse.bench.report import ms, num, write_perf_section

log = logging.getLogger(__name__)

KINDS = ("symbolCard", "callGraph", "search")
METHOD = {"symbolCard": "codesynapse/symbolCard", "callGraph": "codesynapse/callGraph",
          "search": "codesynapse/search"}
# a cursor is bound to its index's version (the time of its last write: context/paging.py), which
# differs between two indexes of the same graph
VOLATILE = frozenset({"lastUpdate", "indexedCommit", "dirty", "cursor"})


def _params(subjects: Sequence[Any]) -> dict[str, list[dict[str, Any]]]:
    return {
        "symbolCard": [{"selector": s.qname} for s in subjects],
        "callGraph": [{"selector": s.qname, "direction": "both"} for s in subjects],
        "search": [{"query": s.name, "mode": "compact", "limit": 20} for s in subjects],
    }


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _comparable(kind: str, answer: dict[str, Any] | None) -> Any:
    """What must be equal across backends (docs/BACKENDS.md): whole answers, except that a
    search's BM25 order and scores are backend-specific."""
    if answer is None:
        return None
    if kind != "search":
        return _strip(answer)
    results = answer.get("results", [])
    names = [r["qualifiedName"] for r in results]
    # the result set of a page is comparable only when the page holds every hit: otherwise
    # which BM25 hits make the page depends on the (backend-specific) ranking
    complete = answer.get("total") is not None and len(names) >= answer["total"]
    return (answer.get("total"), [r["qualifiedName"] for r in results if r.get("match") == "exact"],
            sorted(names) if complete else None)


def _timed(app, method: str, params: dict[str, Any]) -> tuple[float, dict[str, Any] | None, str | None]:
    from codesynapse.methods import call_method

    t = time.perf_counter()
    try:
        out = call_method(app, method, params)
        err = None
    except Exception as e:  # counted: the daemon would answer with a JSON-RPC error
        out, err = None, e.__class__.__name__
    return (time.perf_counter() - t) * 1000, out, err


def _open(corpus, data_dir: Path, backend: str, neo4j: dict[str, str]):
    from codesynapse.bench.apps import open_app

    # the dense leg's symbol vectors stay off: their computation (minutes of CPU in a
    # background thread of the same process on a large corpus) would be measured instead of
    # the store, and search answers would change while it runs
    extra = {"backend": backend, "workers": 2, "symbol_vectors": False}
    if backend == "neo4j":
        # the store itself is measured: one graph on the server, not a checkout's team view
        # (a base + a local overlay, docs/TEAM.md; `codesynapse bench team` measures that)
        extra.update(neo4j, team_graphs=False)
    return open_app(corpus.path, data_dir, corpus.exclude, corpus.include, **extra)


def _neo4j_server(uri: str, user: str, password: str) -> dict[str, Any]:
    try:
        from neo4j import GraphDatabase

        with GraphDatabase.driver(uri, auth=(user, password) if password else None) as d:
            info = d.get_server_info()
            return {"agent": info.agent, "protocol": ".".join(map(str, info.protocol_version))}
    except Exception as e:  # informational only
        return {"agent": f"unknown ({e.__class__.__name__})"}


def _rust_ext() -> bool:
    """Whether the neo4j driver runs with its Rust packstream extension (neo4j-rust-ext)."""
    try:
        import neo4j._rust  # noqa: F401

        return True
    except ImportError:
        return False


def compare_backends(
    corpus: Any = "python-stdlib",
    *,
    neo4j_uri: str = "",
    neo4j_user: str = "neo4j",
    neo4j_password: str = "",
    work_dir: Path | str | None = None,
    requests: int = 50,
    seed: int = 7,
    backends: Sequence[str] = ("sqlite", "neo4j"),
    keep_graph: bool = False,
    sqlite_analyze: bool = False,
    progress: Callable[[str], None] | None = say,
) -> dict[str, Any]:
    """Index ``corpus`` (a name known to ``bench.corpora.resolve``, a directory, or a
    ``Corpus``) on each backend and measure request latency; see the module docstring."""
    import os
    import tempfile

    from codesynapse.bench.corpora import Corpus, resolve

    say = progress or (lambda _m: None)
    c = corpus if isinstance(corpus, Corpus) else resolve(str(corpus))
    neo4j_uri = neo4j_uri or os.environ.get("CODESYNAPSE_NEO4J_URI", "")
    if "neo4j" in backends and not neo4j_uri:
        raise ValueError("compare_backends needs neo4j_uri (or CODESYNAPSE_NEO4J_URI) to benchmark Neo4j")
    neo = {"neo4j_uri": neo4j_uri, "neo4j_user": neo4j_user, "neo4j_password": neo4j_password}
    base = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="codesynapse-backends-"))
    result: dict[str, Any] = {"corpus": c.describe(), "machine": machine_info(), "requestsPerKind": requests,
                              "seed": seed, "backends": {}, "parity": {}}
    if "neo4j" in backends:
        result["neo4j"] = {**_neo4j_server(neo4j_uri, neo4j_user, neo4j_password), "rustExtension": _rust_ext()}

    subjects: list[Any] | None = None
    answers: dict[str, dict[str, list[Any]]] = {}
    for backend in backends:
        data = base / backend
        app = _open(c, data, backend, neo)
        try:
            if backend == "neo4j":
                app.store.delete_graph()  # a full index from empty, as SQLite's fresh folder
            say(f"backends: indexing {c.name} on {backend} …")
            load0 = load_average()
            t0 = time.perf_counter()
            rep = app.index()
            seconds = time.perf_counter() - t0
            st = app.store.stats()
            say(f"backends: {backend} indexed {rep.parsed} files in {seconds:.1f} s")
            analyzed = False
            if backend == "sqlite" and sqlite_analyze:  # a what-if, not what the product does
                import sqlite3

                conn = sqlite3.connect(str(app.workspace.db_path), timeout=60)
                try:
                    conn.execute("ANALYZE")
                finally:
                    conn.close()
                analyzed = True
            if subjects is None:
                syms = [s for s in app.store.all_symbols() if s.kind in ("function", "method", "class")]
                syms.sort(key=lambda s: (s.path, s.start_line, s.qname))
                rng = random.Random(seed)
                subjects = [syms[rng.randrange(len(syms))] for _ in range(requests)] if syms else []
            graph_id = app.store.graph_id
            entry: dict[str, Any] = {
                "index": {"seconds": seconds, "parsed": rep.parsed, "files": st.files, "skipped": st.skipped,
                          "symbols": st.symbols, "calls": st.calls, "resolvedCalls": st.resolved_calls,
                          "imports": st.imports, "inherits": st.inherits,
                          "filesPerSecond": rep.parsed / seconds if seconds else None,
                          "loadBefore": load0, "loadAfter": load_average(), "sqliteAnalyze": analyzed},
            }
        finally:
            app.close()

        params = _params(subjects or [])
        app = _open(c, data, backend, neo)  # a fresh App over the finished index
        try:
            cold: dict[str, Any] = {}
            for k in KINDS:
                if params[k]:
                    lat, _out, err = _timed(app, METHOD[k], params[k][0])
                    cold[k] = {"ms": lat, "error": err}
            for k in KINDS:  # warm-up pass
                for p in params[k][:10]:
                    _timed(app, METHOD[k], p)
            warm: dict[str, Any] = {}
            answers[backend] = {}
            load0 = load_average()
            for k in KINDS:
                lats, errs, outs = [], [], []
                for p in params[k]:
                    lat, out, err = _timed(app, METHOD[k], p)
                    lats.append(lat)
                    outs.append(_comparable(k, out))
                    if err:
                        errs.append(err)
                warm[k] = {**stats.latency_summary(lats), "errors": len(errs), "errorKinds": sorted(set(errs))}
                answers[backend][k] = outs
                say(f"  {backend} {k}: p50 {ms(warm[k]['p50'])} p95 {ms(warm[k]['p95'])} ms")
            entry.update(cold=cold, warm=warm, loadBefore=load0, loadAfter=load_average())
        finally:
            if backend == "neo4j" and not keep_graph:
                app.store.delete_graph()
            app.close()
        entry["graphId"] = graph_id
        result["backends"][backend] = entry

    if len(backends) >= 2:
        first, second = backends[0], backends[1]
        for k in KINDS:
            a, b = answers[first][k], answers[second][k]
            result["parity"][k] = {"identical": sum(1 for x, y in zip(a, b) if x == y), "of": len(a)}
    return result


def backends_markdown(r: dict[str, Any]) -> str:
    """The ``backends`` section of PERFORMANCE.md."""
    names = list(r["backends"])
    m = r["machine"]
    lines = ["## Graph backends: SQLite vs Neo4j", "",
             f"* **Machine:** {machine_line(m)}",
             f"* **Corpus:** {r['corpus']['version']} ({r['corpus']['source']})."]
    if "neo4j" in r:
        n = r["neo4j"]
        lines.append(f"* **Neo4j:** {n.get('agent')} over Bolt {n.get('protocol', '?')} on the same machine "
                     f"(embedded test launcher, 512 MiB heap, 64 MiB page cache); Python driver "
                     f"{'with' if n.get('rustExtension') else 'without'} the Rust packstream extension.")
    lines += [
        "* **Method:** `codesynapse.bench.backends.compare_backends`: a full index from empty through the real "
        "`App` on each backend (same policy, extractor and resolver), then a fresh App over the finished index: "
        "*cold* = first request of its kind, *warm* = "
        f"{r['requestsPerKind']} requests per kind at concurrency 1 after a warm-up pass, in-process through the "
        "daemon's dispatch table. Subjects drawn with seed "
        f"{r['seed']} from the corpus's functions, methods and classes, the same for both backends. Nearest-rank "
        "percentiles. The machine is shared: load averages are given.",
        "",
        "| | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]

    def row(label: str, fn: Callable[[dict[str, Any]], str]) -> None:
        lines.append(f"| {label} | " + " | ".join(fn(r["backends"][b]) for b in names) + " |")

    row("full index, s", lambda e: f"{e['index']['seconds']:.1f}"
        + (" (then ANALYZE: what-if)" if e["index"].get("sqliteAnalyze") else ""))
    row("files indexed / s", lambda e: num(e["index"]["filesPerSecond"]))
    row("files · symbols · call sites", lambda e: f"{num(e['index']['files'])} · {num(e['index']['symbols'])} · "
                                                 f"{num(e['index']['calls'])}")
    row("load average (1 min) before → after index",
        lambda e: f"{(e['index']['loadBefore'] or ['?'])[0]} → {(e['index']['loadAfter'] or ['?'])[0]}")
    for k in KINDS:
        row(f"{k} cold, ms", lambda e, k=k: ms(e["cold"].get(k, {}).get("ms")))
        row(f"{k} warm p50 / p95 / p99, ms",
            lambda e, k=k: f"{ms(e['warm'][k]['p50'])} / {ms(e['warm'][k]['p95'])} / {ms(e['warm'][k]['p99'])}")
        row(f"{k} errors", lambda e, k=k: str(e["warm"][k]["errors"]))
    row("load average (1 min) before → after requests",
        lambda e: f"{(e['loadBefore'] or ['?'])[0]} → {(e['loadAfter'] or ['?'])[0]}")
    if r.get("parity"):
        lines += ["", "Answer parity (timestamps stripped; search compared by total, exact matches and — when the "
                      "page holds every hit — the result set, since BM25 order and scores differ by design, "
                      "docs/BACKENDS.md): "
                  + ", ".join(f"{k} {p['identical']}/{p['of']} identical" for k, p in r["parity"].items()) + "."]
    return "\n".join(lines) + "\n"


def write_backends_section(r: dict[str, Any], out_dir: Path | str) -> Path:
    return write_perf_section(Path(out_dir), "backends", backends_markdown(r))
