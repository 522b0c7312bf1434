"""``codesynapse bench index``: full-index throughput, peak memory and index size.

Each corpus is indexed from an empty data folder (in the bench cache, never in the corpus)
by a child process (:mod:`codesynapse.bench.index_child`) while the parent samples the
resident memory of that process and of its extraction workers every 50 ms from /proc. Then
the same index is opened again and caught up with the unchanged tree (nothing to parse).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from codesynapse.bench.corpora import Corpus, cache_dir
from codesynapse.bench.machine import load_average, machine_info, machine_line
from codesynapse.bench.proc import TreeSampler, dir_size
from codesynapse.bench.report import met, num, save_raw, say, write_perf_section
from codesynapse.bench.scale import SCALE_SERIES, keep_point, write_scale

DEFAULT_CORPORA = ("python-stdlib", "django")
MB = 1_000_000


def index_once(corpus: Corpus, data: Path, fresh: bool = True) -> dict[str, Any]:
    if fresh:
        shutil.rmtree(data, ignore_errors=True)
    cmd = [sys.executable, "-m", "codesynapse.bench.index_child", str(corpus.path), str(data)]
    for g in corpus.exclude:
        cmd += ["--exclude", g]
    for g in corpus.include:
        cmd += ["--include", g]
    load_before = load_average()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    sampler = TreeSampler(proc.pid).start()
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    sampler.stop()
    if proc.returncode != 0:
        raise RuntimeError(f"indexing {corpus.name} failed ({proc.returncode}): {err[-2000:]}")
    res = json.loads(out.strip().splitlines()[-1])
    res.update({"processWallSeconds": wall, "peakTreeRss": sampler.peak_total, "peakMainRss": sampler.peak_main,
                "peakWorkerRss": sampler.peak_worker, "peakWorkersRss": sampler.peak_workers,
                "workersSeen": sampler.max_workers_seen, "rssSamples": sampler.samples,
                "indexBytes": dir_size(data), "loadBefore": load_before, "loadAfter": load_average()})
    return res


def run_index_bench(args) -> dict[str, Any]:
    from codesynapse.bench.corpora import resolve

    asked = list(args.corpus or DEFAULT_CORPORA)
    series = "scale" in asked  # the scale series (issue 24, bench/scale.py)
    specs = list(dict.fromkeys(c for spec in asked for c in (SCALE_SERIES if spec == "scale" else (spec,))))
    results = []
    for spec in specs:
        corpus = resolve(spec)
        data = cache_dir() / "index" / corpus.name
        say(f"index: {corpus.version} at {corpus.path}")
        started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        full = index_once(corpus, data, fresh=True)
        say(f"  {full['files']} files, {full['lines']} lines in {full['seconds']:.1f} s, "
             f"peak tree RSS {full['peakTreeRss'] / MB:.0f} MB, index {full['indexBytes'] / MB:.0f} MB")
        again = index_once(corpus, data, fresh=False)
        say(f"  catch-up on the unchanged tree: {again['seconds']:.2f} s, parsed {again['parsed']}")
        results.append({"corpus": corpus.describe(), "full": full, "catchUp": again, "started": started})
        if series:
            say(f"  kept {keep_point(results[-1], machine_info())}")
    machine = machine_info()
    body = index_markdown(results, machine, quick=getattr(args, "quick", False))
    write_perf_section(Path(args.out), "index", body)
    save_raw("index", results)
    if series:
        doc = write_scale(Path(args.out), results, machine)
        say(f"  scale series written to {Path(args.out) / 'scale.json'}: fits {json.dumps(doc['fits'])}")
    return {"index": results}


def index_markdown(results: list[dict[str, Any]], machine: dict[str, Any], quick: bool = False) -> str:
    lines = ["## Full index", "",
             f"* **Machine:** {machine_line(machine)}",
             ("* **Method:** `codesynapse bench index`. Each corpus is indexed from an empty data folder by a "
             "child process (`python -m codesynapse.bench.index_child`, the same `App.index()` as "
             "`codesynapse index`, SQLite backend, 2 extraction workers) while the parent samples the resident "
             "memory of the process and its workers from /proc every 50 ms. *Wall* is `App.index()` "
             "(walk → extract → store → resolve); *process* adds interpreter start and imports. *Peak RSS "
             "(all)* is the largest sampled sum over the main process and its workers; *index size* is the "
             "data folder on disk. *Catch-up* re-opens the same index on the unchanged tree."),
             "",
             ("| corpus | files | lines | symbols | edges | wall s | process s | files/s | lines/s | "
             "peak RSS all MB | main MB | one worker MB | index MB | catch-up s |"),
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        f = r["full"]
        lines.append(
            f"| {r['corpus']['version']} | {num(f['files'])} | {num(f['lines'])} | {num(f['symbols'])} | "
            f"{num(f['edges'])} | {f['seconds']:.1f} | {f['processWallSeconds']:.1f} | "
            f"{f['parsed'] / f['seconds']:,.0f} | {f['lines'] / f['seconds']:,.0f} | "
            f"{f['peakTreeRss'] / MB:,.0f} | {f['peakMainRss'] / MB:,.0f} | {f['peakWorkerRss'] / MB:,.0f} | "
            f"{f['indexBytes'] / MB:,.0f} | {r['catchUp']['seconds']:.2f} |")
    lines.append("")
    for r in results:
        f = r["full"]
        lines.append(f"* {r['corpus']['version']}: source `{r['corpus']['source']}`; policy exclude "
                     f"{r['corpus']['policyExclude']} include {r['corpus']['policyInclude']}, fingerprint "
                     f"`{f['policyFingerprint'][:16]}…`; by language {f['languages']}; not indexed "
                     f"{f['skipped']}; load average (1 min) {f['loadBefore'][0] if f.get('loadBefore') else '?'} "
                     f"before, {f['loadAfter'][0] if f.get('loadAfter') else '?'} after.")
    std = next((r for r in results if r["corpus"]["name"] == "python-stdlib"), None)
    if std:
        f = std["full"]
        lines += ["", ("Target (issue 2, benchmark): the stdlib fully indexed in ≤ 20 s with peak RSS ≤ 500 MB — "
                      f"time {met(f['seconds'] <= 20)} ({f['seconds']:.1f} s), memory "
                      f"{met(f['peakTreeRss'] <= 500 * MB)} ({f['peakTreeRss'] / MB:,.0f} MB).")]
    if quick:
        lines.append("\n(--quick has no effect on this benchmark: every index is a full one.)")
    return "\n".join(lines)
