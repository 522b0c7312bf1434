"""``codesynapse bench findings``: import a large SARIF log — time and peak RSS.

A generated repository (``--quick``: 50 files, else 200 files of 50 functions each) is
indexed, then a SARIF 2.1.0 log with 10,000 results spread over its functions is imported
by a fresh child process (``codesynapse findings import --no-index``): its wall time for the
import and its peak RSS (``wait4``) are the figures; the same for a log of about 50 MB (the
same results with long messages and per-result properties), which shows memory bounded by
the streamed parse rather than by the file. Targets (issue 21): 10,000 results ≤ 5 s and
≤ 200 MB peak.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from codesynapse.bench.report import say

FUNCS_PER_FILE = 50


def make_repo(root: Path, files: int) -> list[tuple[str, int]]:
    """Python files of FUNCS_PER_FILE small functions; returns (path, line) of each call."""
    sites = []
    for i in range(files):
        lines = [f'"""Generated module {i}."""', "import subprocess", ""]
        for j in range(FUNCS_PER_FILE):
            lines += ["", f"def f{j}(cmd):", f'    """Run {j}."""', "    return subprocess.call(cmd, shell=True)"]
            sites.append((f"pkg/m{i:04d}.py", len(lines)))
        (root / "pkg").mkdir(parents=True, exist_ok=True)
        (root / "pkg" / f"m{i:04d}.py").write_text("\n".join(lines) + "\n")
    (root / "pkg" / "__init__.py").write_text("")
    return sites


def write_sarif(path: Path, root: Path, sites: list[tuple[str, int]], results: int, pad: int = 0) -> int:
    """A SARIF log of ``results`` results over ``sites`` (round robin), written as a stream;
    ``pad`` adds that many characters of message and properties per result. Returns its size."""
    with open(path, "w") as f:
        f.write('{"version": "2.1.0", "$schema": "https://json.schemastore.org/sarif-2.1.0.json", "runs": [{'
                '"tool": {"driver": {"name": "benchlint", "rules": [')
        f.write(",".join(json.dumps({"id": f"B{k:03d}", "defaultConfiguration": {"level": "warning"},
                                     "properties": {"security-severity": str(2 + k % 8)}}) for k in range(50)))
        f.write("]}}, \"results\": [")
        for n in range(results):
            rel, line = sites[n % len(sites)]
            r: dict[str, Any] = {
                "ruleId": f"B{n % 50:03d}", "ruleIndex": n % 50,
                "message": {"text": f"subprocess call with shell=True identified ({n})" + " detail" * (pad // 7)},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": (root / rel).as_uri()},
                                                    "region": {"startLine": line, "startColumn": 12,
                                                               "endLine": line, "endColumn": 44}}}],
                "partialFingerprints": {"primaryLocationLineHash": f"{n:016x}:1"}}
            if pad:
                r["properties"] = {"help": "x" * pad, "tags": ["security", "cwe-78"]}
            f.write(("," if n else "") + json.dumps(r))
        f.write("]}]}\n")
    return path.stat().st_size


_CHILD = r"""
import json, sys, time
from codesynapse.app import App
from codesynapse.findings.sarif import import_sarif
from codesynapse.settings import load_settings
app = App(sys.argv[1], load_settings({"data_dir": sys.argv[2]}))
t0 = time.perf_counter()
with app.indexer.lock, app.store.transaction():
    s = import_sarif(app.store, app.workspace, sys.argv[3], app.policy)
dt = time.perf_counter() - t0
app.close()
# the peak resident set of this process's own memory since exec (VmHWM): wait4's ru_maxrss
# also counts the forked copy of the parent before exec (a large pytest or bench process)
hwm = next((int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")), 0)
json.dump({"seconds": dt, "stored": s["runs"][0]["stored"], "hwmKb": hwm}, sys.stdout)
"""


def _import_child(root: Path, data: Path, sarif: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-c", _CHILD, str(root), str(data), str(sarif)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    out = p.stdout.read()  # type: ignore[union-attr]
    err = p.stderr.read()  # type: ignore[union-attr]
    _pid, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise SystemExit(f"bench findings: the import failed: {err.decode()[-800:]}")
    res = json.loads(out)
    res["wallSeconds"] = round(time.perf_counter() - t0, 2)
    res["seconds"] = round(res["seconds"], 2)
    # Linux: KiB. VmHWM where the child could read it; ru_maxrss keeps the high-water mark of
    # the forked copy of this process from before exec, so it is only a fallback
    res["peakRssMb"] = round((res.pop("hwmKb", 0) or usage.ru_maxrss) / 1024, 1)
    return res


def run_findings(args) -> dict[str, Any]:
    from codesynapse.app import App
    from codesynapse.settings import load_settings

    files = 50 if getattr(args, "quick", False) else 200
    with tempfile.TemporaryDirectory(prefix="cs-bench-findings-") as tmp:
        root, data = Path(tmp) / "repo", Path(tmp) / "data"
        root.mkdir()
        sites = make_repo(root, files)
        app = App(root, load_settings({"data_dir": str(data)}))
        try:
            rep = app.index()
        finally:
            app.close()
        say(f"findings: indexed {rep.files} files, {rep.symbols} symbols")
        out: dict[str, Any] = {"files": rep.files, "symbols": rep.symbols, "runs": []}
        for results, pad in ((10_000, 0), (10_000, 2_500)):
            sarif = Path(tmp) / f"r{results}-{pad}.sarif"
            size = write_sarif(sarif, root, sites, results, pad)
            res = _import_child(root, data, sarif)
            res.update(results=results, sarifMb=round(size / 2**20, 1))
            say(f"  {results:,} results, {res['sarifMb']} MB SARIF: import {res['seconds']} s "
                f"(process {res['wallSeconds']} s), peak RSS {res['peakRssMb']} MB, stored {res['stored']:,}")
            out["runs"].append(res)
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0  # type: ignore[return-value]
