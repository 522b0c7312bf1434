"""The process the index benchmark measures: open an App with the benchmark policy, index,
print one JSON line. ``python -m codesynapse.bench.index_child ROOT DATA [--exclude G]...``"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time


def main(argv: list[str] | None = None) -> int:
    t_start = time.perf_counter()
    p = argparse.ArgumentParser()
    p.add_argument("root")
    p.add_argument("data")
    p.add_argument("--exclude", action="append", default=[])
    p.add_argument("--include", action="append", default=[])
    p.add_argument("--workers", type=int, default=None)
    a = p.parse_args(argv)
    from codesynapse.bench.apps import open_app

    over = {"workers": a.workers} if a.workers else {}
    app = open_app(a.root, a.data, tuple(a.exclude), tuple(a.include), **over)
    try:
        t0 = time.perf_counter()
        report = app.index()
        seconds = time.perf_counter() - t0
        st = app.store.stats()
        out = {
            "seconds": seconds,
            "files": report.files,
            "parsed": report.parsed,
            "lines": report.lines,
            "symbols": report.symbols,
            "edges": report.edges,
            "calls": st.calls,
            "resolvedCalls": st.resolved_calls,
            "languages": dict(report.languages),
            "skipped": {k: v for k, v in report.skipped.items() if v},
            "policyFingerprint": getattr(app.policy, "fingerprint", ""),
            "workers": app.indexer.workers,
        }
    finally:
        app.close()
    out["maxrssSelf"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out["maxrssChildren"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    out["processSeconds"] = time.perf_counter() - t_start
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
