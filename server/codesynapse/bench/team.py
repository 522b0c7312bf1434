"""Team graphs on one Neo4j (issue 26 targets, docs/TEAM.md):

    python -m codesynapse.bench.team --neo4j-uri bolt://… [--corpus PATH] [--checkouts 10] [--changed 20]

The corpus (default: this machine's Python standard library) is committed to a fresh git
repository; ``--checkouts`` clones of it (one remote URL) each open an App on the server and
index. Reported, with the machine's load:

- server storage after every checkout indexed, against one graph of the corpus (nodes of the
  repository's graph ids over the nodes of one base);
- time to first answer of each checkout (App open + index + one symbolCard, with each part):
  the first builds the base, the others re-use it (and load the resolver's table kept with it,
  store/symtable.py);
- a commit changing ``--changed`` files, published: the nodes its base stores over a full base's.

Everything it writes to the server is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), "-c", "user.email=bench@example.invalid", "-c", "user.name=bench",
                           *args], check=True, capture_output=True, text=True).stdout.strip()


def _nodes(driver, prefix: str, exact: str | None = None) -> int:
    if exact is not None:
        q, p = "MATCH (n) WHERE n.graph_id = $g RETURN count(n) AS n", {"g": exact}
    else:
        q, p = "MATCH (n) WHERE n.graph_id STARTS WITH $p RETURN count(n) AS n", {"p": prefix}
    return driver.execute_query(q, p).records[0]["n"]


def run(corpus: Path, uri: str, checkouts: int = 10, changed: int = 20, workers: int = 2,
        selector: str = "") -> dict[str, Any]:
    from neo4j import GraphDatabase

    from codesynapse.app import App
    from codesynapse.methods import call_method
    from codesynapse.scope import graph_id_for
    from codesynapse.settings import load_settings
    from codesynapse.store.team import base_graph_id, grant, open_base, publish_base

    tmp = Path(tempfile.mkdtemp(prefix="codesynapse-team-bench-"))
    remote = f"https://bench.example.invalid/team/corpus-{time.time_ns()}"
    gid = graph_id_for(remote)
    out: dict[str, Any] = {"corpus": str(corpus), "checkouts": checkouts, "load_before": os.getloadavg()}
    driver = GraphDatabase.driver(uri, auth=None)
    try:
        up = tmp / "upstream"
        shutil.copytree(corpus, up, ignore=shutil.ignore_patterns("site-packages", "__pycache__", "*.pyc"),
                        symlinks=True)
        _git(up, "init", "-q", "-b", "main")
        _git(up, "add", "-A")
        _git(up, "commit", "-qm", "c1")
        base_settings = load_settings({"backend": "neo4j", "neo4j_uri": uri, "workers": workers,
                                       "symbol_vectors": False, "embedder": "none"}, env={})
        store = open_base(base_settings, gid)
        try:
            grant(store, base_settings.tenant, gid, remote)
        finally:
            store.close()
        rows = []
        for i in range(checkouts):
            root = tmp / f"c{i}"
            subprocess.run(["git", "clone", "-q", str(up), str(root)], check=True, capture_output=True)
            _git(root, "remote", "set-url", "origin", remote)
            settings = load_settings({"backend": "neo4j", "neo4j_uri": uri, "workers": workers,
                                      "symbol_vectors": False, "embedder": "none",
                                      "data_dir": str(tmp / f"data-{i}")}, env={})
            t0 = time.perf_counter()
            app = App(root, settings)
            try:
                t1 = time.perf_counter()
                report = app.index()
                t2 = time.perf_counter()
                if not selector:  # a symbol of the corpus, the same for every checkout (not timed)
                    selector = next((s.qname for s in app.store.all_symbols() if s.kind == "function"), "")
                t3 = time.perf_counter()
                answer = call_method(app, "codesynapse/symbolCard", {"selector": selector}) if selector else {}
                t4 = time.perf_counter()
                seconds = (t4 - t3) + (t2 - t0)
            finally:
                app.close()
            rows.append({"checkout": i + 1, "seconds": round(seconds, 2), "open_s": round(t1 - t0, 2),
                         "index_s": round(t2 - t1, 2), "card_s": round(t4 - t3, 2), "parsed": report.parsed,
                         "files": report.files, "found": bool(answer.get("found")), "load": os.getloadavg()[0]})
            sys.stderr.write(json.dumps(rows[-1]) + "\n")  # progress; stdout carries the result
            sys.stderr.flush()
        head = _git(up, "rev-parse", "HEAD")
        one = _nodes(driver, "", exact=base_graph_id(gid, head))
        total = _nodes(driver, gid)
        out.update(per_checkout=rows, one_graph_nodes=one, server_nodes=total, storage_ratio=round(total / one, 3),
                   first_answer_s_2_to_n=max((r["seconds"] for r in rows[1:]), default=0.0),
                   symbol_table_kb=_table_kb(driver, base_graph_id(gid, head)))

        # a commit that changes `changed` files, published
        py = sorted(p for p in up.rglob("*.py") if ".git" not in p.parts)
        files = py[:: max(1, len(py) // max(changed, 1))][:changed]  # spread over the tree
        for n, p in enumerate(files):
            p.write_text(p.read_text(errors="replace") + f"\n\ndef _bench_added_{n}():\n    return {n}\n")
        _git(up, "commit", "-qam", "c2")
        root = tmp / "c0"
        _git(root, "pull", "-q", "--ff-only", str(up), "main")
        head2 = _git(root, "rev-parse", "HEAD")
        t0 = time.perf_counter()
        try:
            status = publish_base(base_settings, root, remote, gid, head2)
        except Exception as e:  # noqa: BLE001 - the figures above stand; the failure is reported
            out.update(change={"files": len(files), "error": f"{type(e).__name__}: {e}"[:500]})
        else:
            delta = _nodes(driver, "", exact=base_graph_id(gid, head2))
            out.update(change={"files": len(files), "status": status, "seconds": round(time.perf_counter() - t0, 2),
                               "nodes": delta, "fraction_of_full": round(delta / one, 4),
                               "symbol_table_kb": _table_kb(driver, base_graph_id(gid, head2))})
        out["load_after"] = os.getloadavg()
        return out
    finally:
        for c in _safe_heads(tmp / "upstream"):
            s = open_base(load_settings({"backend": "neo4j", "neo4j_uri": uri}, env={}), base_graph_id(gid, c))
            try:
                s.delete_graph()
            finally:
                s.close()
        driver.execute_query("MATCH (n) WHERE n.graph_id STARTS WITH $p DETACH DELETE n", {"p": gid})
        driver.execute_query("MATCH (e:CsRepoEntry {graph_id: $g}) DELETE e", {"g": gid})
        driver.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _table_kb(driver, graph_id: str) -> int:
    """The size of the resolver's table kept with a base (store/symtable.py), in KB."""
    from codesynapse.store.symtable import TABLE

    q = ("MATCH (m:CsMeta) WHERE m.graph_id = $g AND m.key STARTS WITH $k "
         "RETURN sum(size(m.value)) AS n")
    return int(driver.execute_query(q, {"g": graph_id, "k": TABLE + "."}).records[0]["n"] or 0) // 1024


def _safe_heads(repo: Path) -> list[str]:
    try:
        return _git(repo, "rev-list", "--all").split()
    except (subprocess.CalledProcessError, OSError):
        return []


def main(argv: list[str] | None = None) -> int:
    import sysconfig

    p = argparse.ArgumentParser(prog="python -m codesynapse.bench.team", description=__doc__.split("\n\n")[0])
    p.add_argument("--neo4j-uri", default=os.environ.get("CODESYNAPSE_NEO4J_URI", ""), required=False)
    p.add_argument("--corpus", default=sysconfig.get_paths()["stdlib"])
    p.add_argument("--checkouts", type=int, default=10)
    p.add_argument("--changed", type=int, default=20)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--selector", default="", help="the symbolCard asked after each index (default: a 'main')")
    a = p.parse_args(argv)
    if not a.neo4j_uri:
        p.error("--neo4j-uri (or CODESYNAPSE_NEO4J_URI) is required")
    json.dump(run(Path(a.corpus), a.neo4j_uri, a.checkouts, a.changed, a.workers, a.selector), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
