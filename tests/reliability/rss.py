"""Peak memory of a daemon's first index, and how requests fare meanwhile.

``measure(root, data)`` starts ``codesynapse serve`` on ``root``, samples the resident set
of the daemon and of its extraction workers (``/proc``, every 50 ms) until the first index
is done, and meanwhile asks ``indexStatus`` and a search every quarter second, recording
how long each reply took. Used by tests/reliability/test_resources.py and, for the figures
in docs/RELIABILITY.md, from the command line::

    .venv/bin/python -m tests.reliability.rss python-stdlib django go-stdlib [--out FILE]

(named corpora come from ``codesynapse.bench.corpora``: the machine's Python standard
library, the Django 5.1 sdist fetched with pip, ``$(go env GOROOT)/src``; a path works too).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from codesynapse.bench.proc import TreeSampler
from tests.reliability.rawlsp import RawLsp, RpcError


def tree_size(root: Path) -> dict[str, int]:
    files = size = 0
    for dirpath, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".git", ".codesynapse-data")]
        for n in names:
            try:
                size += os.path.getsize(os.path.join(dirpath, n))
                files += 1
            except OSError:
                pass
    return {"treeFiles": files, "treeBytes": size}


def measure(root: Path, data: Path, *, probe_every: float = 0.25, timeout: float = 3600.0,
            env: dict[str, str] | None = None, log: Path | None = None) -> dict[str, Any]:
    """Index ``root`` with a fresh daemon; return figures (and the probes' outcomes)."""
    shutil.rmtree(data, ignore_errors=True)
    d = RawLsp(data, env={"CODESYNAPSE_WATCH": "0", **(env or {})}, log=log or data.parent / (data.name + ".log"))
    sampler = TreeSampler(d.pid, 0.05).start()
    probes: list[dict[str, Any]] = []
    stop = threading.Event()
    ready = threading.Event()

    def probe(method: str, params: dict[str, Any]) -> None:
        while not stop.is_set():
            t0 = time.monotonic()
            try:
                a = d.request(method, params)
                ok, state = True, a.get("state", a.get("provenance", {}).get("freshness", {}).get("state"))
            except RpcError as e:
                ok, state = e.data.get("kind") == "deadline", f"error {e.code} {e.data.get('kind', '')}"
            probes.append({"method": method, "seconds": time.monotonic() - t0, "ok": ok, "state": state,
                           "during": not ready.is_set()})
            stop.wait(probe_every)

    t0 = time.monotonic()
    try:
        d.initialize(root)
        threads = [threading.Thread(target=probe, args=("codesynapse/indexStatus", {}), daemon=True),
                   threading.Thread(target=probe, args=("codesynapse/search", {"query": "f1 main"}), daemon=True),
                   threading.Thread(target=probe, args=("codesynapse/symbolCard", {"selector": "f1"}), daemon=True)]
        for th in threads:
            th.start()
        st = d.wait_ready(timeout=timeout)
        ready.set()
        seconds = time.monotonic() - t0
        stop.set()
        for th in threads:
            th.join(120)
        alive = d.proc.poll() is None
    finally:
        stop.set()
        sampler.stop()
        d.close()
    during = [p for p in probes if p["during"]]
    ctx = [p for p in during if p["method"] != "codesynapse/indexStatus"]
    return {
        **tree_size(root), "indexedFiles": st["files"], "skipped": st["skipped"], "symbols": st["symbols"],
        "edges": st["edges"], "seconds": round(seconds, 1), "peakRssMiB": round(sampler.peak_total / 2**20),
        "peakDaemonMiB": round(sampler.peak_main / 2**20), "peakWorkerMiB": round(sampler.peak_worker / 2**20),
        "probes": len(probes), "probesWhileIndexing": len(during),
        "statusMaxSecondsWhileIndexing": round(max((p["seconds"] for p in during
                                                     if p["method"] == "codesynapse/indexStatus"), default=0.0), 2),
        "contextMaxSecondsWhileIndexing": round(max((p["seconds"] for p in ctx), default=0.0), 2),
        "contextDeadlineErrorsWhileIndexing": sum(1 for p in ctx if p["state"].startswith("error")),
        "probeMaxSecondsAfter": round(max((p["seconds"] for p in probes if not p["during"]), default=0.0), 2),
        "probeErrors": sum(1 for p in probes if not p["ok"]), "daemonAlive": alive,
    }


def corpus_copy(name: str, dest: Path) -> Path:
    """A named benchmark corpus copied with its benchmark policy as .codesynapse.yaml."""
    from codesynapse.bench.corpora import resolve, writable_copy

    c = resolve(name)
    root = writable_copy(c, dest)
    lines = ["version: 1"]
    if c.exclude:
        lines.append("exclude: [" + ", ".join(json.dumps(e) for e in c.exclude) + "]")
    if c.include:
        lines.append("include: [" + ", ".join(json.dumps(e) for e in c.include) + "]")
    (root / ".codesynapse.yaml").write_text("\n".join(lines) + "\n")
    return root


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", nargs="+")
    ap.add_argument("--out", default="")
    ap.add_argument("--work", default="")
    args = ap.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="codesynapse-rss-"))
    rows = []
    for name in args.corpus:
        root = corpus_copy(name, work / f"{Path(name).name}-tree")
        row = {"corpus": name, **measure(root, work / f"{Path(name).name}-data", timeout=7200)}
        print(json.dumps(row), flush=True)
        rows.append(row)
        shutil.rmtree(root, ignore_errors=True)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
