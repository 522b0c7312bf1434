"""Team graphs on one Neo4j or HugeGraph (issue 26 targets, docs/TEAM.md):

    python -m codesynapse.bench.team --neo4j-uri bolt://… [--corpus PATH] [--checkouts 10] [--changed 20]
    python -m codesynapse.bench.team --backend hugegraph --hugegraph-url http://…:8182 [...]

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


class _Neo4jServer:
    """The bench's own reads of the server: nodes per graph id, the kept table's size."""

    def __init__(self, uri: str):
        from neo4j import GraphDatabase

        self.driver = GraphDatabase.driver(uri, auth=None)

    def nodes(self, prefix: str, exact: str | None = None) -> int:
        if exact is not None:
            q, p = "MATCH (n) WHERE n.graph_id = $g RETURN count(n) AS n", {"g": exact}
        else:
            q, p = "MATCH (n) WHERE n.graph_id STARTS WITH $p RETURN count(n) AS n", {"p": prefix}
        return self.driver.execute_query(q, p).records[0]["n"]

    def table_kb(self, graph_id: str) -> int:
        """The size of the resolver's table kept with a base (store/symtable.py), in KB."""
        from codesynapse.store.symtable import TABLE

        q = ("MATCH (m:CsMeta) WHERE m.graph_id = $g AND m.key STARTS WITH $k "
             "RETURN sum(size(m.value)) AS n")
        return int(self.driver.execute_query(q, {"g": graph_id, "k": TABLE + "."}).records[0]["n"] or 0) // 1024

    def remove(self, gid: str) -> None:
        self.driver.execute_query("MATCH (n) WHERE n.graph_id STARTS WITH $p DETACH DELETE n", {"p": gid})
        self.driver.execute_query("MATCH (e:CsRepoEntry {graph_id: $g}) DELETE e", {"g": gid})

    def close(self) -> None:
        self.driver.close()


# every vertex label of a code graph on HugeGraph (store/hugegraph/graph.py and deps.py)
_HG_LABELS = ("cs_meta", "cs_file", "cs_symbol", "cs_call", "cs_import", "cs_inherit", "cs_manifest",
              "cs_requirement", "cs_finding", "cs_finding_run")
_HG_COUNT = """
long n = 0
for (l in labels) { n += g.V().hasLabel(l).has('graph_id', gid).count().next() }
n
"""
_HG_TABLE = """
g.V().hasLabel('cs_meta').has('graph_id', gid).toList()
 .findAll{ it.value('meta_key').startsWith(prefix) }.collect{ ((String) it.value('meta_value')).length() }.sum() ?: 0
"""


class _HugeGraphServer:
    """As _Neo4jServer on HugeGraph: vertices per graph id, counted label by label (no prefix
    search: a repository's graph ids are its own and its bases', from the base registry)."""

    def __init__(self, url: str, settings):
        from codesynapse.store.hugegraph.client import GremlinClient

        self.settings = settings
        self.client = GremlinClient(url, timeout=600.0)

    def nodes(self, prefix: str, exact: str | None = None) -> int:
        from codesynapse.store.team import list_bases, open_base

        if exact is not None:
            ids = [exact]
        else:
            store = open_base(self.settings, prefix)
            try:
                ids = [prefix, *(b["graphId"] for b in list_bases(store, prefix))]
            finally:
                store.close()
        return sum(int(self.client.submit("bench count", _HG_COUNT, {"gid": g, "labels": list(_HG_LABELS)})[0])
                   for g in ids)

    def table_kb(self, graph_id: str) -> int:
        from codesynapse.store.symtable import TABLE

        rows = self.client.submit("bench table", _HG_TABLE, {"gid": graph_id, "prefix": TABLE + "."})
        return int(rows[0] or 0) // 1024 if rows else 0

    def remove(self, gid: str) -> None:
        from codesynapse.store.team import list_bases, open_base, revoke, team_server

        store = open_base(self.settings, gid)
        try:
            for b in list_bases(store, gid):
                base = open_base(self.settings, b["graphId"])
                try:
                    base.delete_graph()
                    team_server(base).drop_lock(b["graphId"])
                finally:
                    base.close()
            revoke(store, self.settings.tenant, gid)
            store.delete_graph()
        finally:
            store.close()

    def close(self) -> None:
        self.client.close()


def run(corpus: Path, uri: str, checkouts: int = 10, changed: int = 20, workers: int = 2,
        selector: str = "", backend: str = "neo4j") -> dict[str, Any]:
    from codesynapse.app import App
    from codesynapse.errors import StoreError
    from codesynapse.methods import call_method
    from codesynapse.scope import graph_id_for
    from codesynapse.settings import load_settings
    from codesynapse.store.team import base_graph_id, grant, open_base, publish_base

    tmp = Path(tempfile.mkdtemp(prefix="codesynapse-team-bench-"))
    remote = f"https://bench.example.invalid/team/corpus-{time.time_ns()}"
    gid = graph_id_for(remote)
    out: dict[str, Any] = {"corpus": str(corpus), "backend": backend, "checkouts": checkouts,
                           "load_before": os.getloadavg()}
    server_key = "hugegraph_url" if backend == "hugegraph" else "neo4j_uri"
    common = {"backend": backend, server_key: uri, "workers": workers, "symbol_vectors": False, "embedder": "none"}
    base_settings = load_settings(common, env={})
    server = _HugeGraphServer(uri, base_settings) if backend == "hugegraph" else _Neo4jServer(uri)
    try:
        up = tmp / "upstream"
        shutil.copytree(corpus, up, ignore=shutil.ignore_patterns("site-packages", "__pycache__", "*.pyc"),
                        symlinks=True)
        _git(up, "init", "-q", "-b", "main")
        _git(up, "add", "-A")
        _git(up, "commit", "-qm", "c1")
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
            settings = load_settings({**common, "data_dir": str(tmp / f"data-{i}")}, env={})
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
        one = server.nodes("", exact=base_graph_id(gid, head))
        total = server.nodes(gid)
        out.update(per_checkout=rows, one_graph_nodes=one, server_nodes=total, storage_ratio=round(total / one, 3),
                   first_answer_s_2_to_n=max((r["seconds"] for r in rows[1:]), default=0.0),
                   symbol_table_kb=server.table_kb(base_graph_id(gid, head)))

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
            delta = server.nodes("", exact=base_graph_id(gid, head2))
            out.update(change={"files": len(files), "status": status, "seconds": round(time.perf_counter() - t0, 2),
                               "nodes": delta, "fraction_of_full": round(delta / one, 4),
                               "symbol_table_kb": server.table_kb(base_graph_id(gid, head2))})
        out["load_after"] = os.getloadavg()
        # the figures, before the (long, on a large corpus) removal of what the bench wrote
        sys.stderr.write(json.dumps({k: v for k, v in out.items() if k != "per_checkout"}) + "\n")
        sys.stderr.flush()
        return out
    finally:
        try:
            for c in _safe_heads(tmp / "upstream"):
                s = open_base(base_settings, base_graph_id(gid, c))
                try:
                    s.delete_graph()
                finally:
                    s.close()
            server.remove(gid)
        except StoreError as e:  # the figures stand (a 431,000-vertex base outlasts HugeGraph's write timeout)
            sys.stderr.write(f"removing the bench's graphs {gid}@* from the server failed: {e}\n")
        finally:
            server.close()
            shutil.rmtree(tmp, ignore_errors=True)


def _safe_heads(repo: Path) -> list[str]:
    try:
        return _git(repo, "rev-list", "--all").split()
    except (subprocess.CalledProcessError, OSError):
        return []


def main(argv: list[str] | None = None) -> int:
    import sysconfig

    p = argparse.ArgumentParser(prog="python -m codesynapse.bench.team", description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", choices=("neo4j", "hugegraph"), default="neo4j")
    p.add_argument("--neo4j-uri", default=os.environ.get("CODESYNAPSE_NEO4J_URI", ""), required=False)
    p.add_argument("--hugegraph-url", default=os.environ.get("CODESYNAPSE_HUGEGRAPH_URL", ""), required=False,
                   help="the HugeGraph Gremlin server's HTTP endpoint (with --backend hugegraph)")
    p.add_argument("--corpus", default=sysconfig.get_paths()["stdlib"])
    p.add_argument("--checkouts", type=int, default=10)
    p.add_argument("--changed", type=int, default=20)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--selector", default="", help="the symbolCard asked after each index (default: a 'main')")
    a = p.parse_args(argv)
    uri = a.hugegraph_url if a.backend == "hugegraph" else a.neo4j_uri
    if not uri:
        p.error("--hugegraph-url (or CODESYNAPSE_HUGEGRAPH_URL) is required with --backend hugegraph"
                if a.backend == "hugegraph" else "--neo4j-uri (or CODESYNAPSE_NEO4J_URI) is required")
    json.dump(run(Path(a.corpus), uri, a.checkouts, a.changed, a.workers, a.selector, a.backend), sys.stdout,
              indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
