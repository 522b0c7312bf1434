"""``codesynapse serve | mcp | index | query | demo | bench``."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path


def _setup_logging(verbose: bool, *, queued: bool = False) -> None:
    """Bounded records (at most 2 KiB each) on stderr; ``queued`` (serve): through a
    bounded queue and a writer thread, so the daemon's event loop never blocks on stderr."""
    from codesynapse import logsetup

    level = logging.DEBUG if verbose else logging.INFO if os.environ.get("CODESYNAPSE_LOG") else logging.WARNING
    if queued:
        logsetup.configure_queued(level)
    else:
        logsetup.configure(level)


def _settings(args):
    from codesynapse.settings import load_settings

    over = {}
    for k in ("data_dir", "tenant", "backend", "workers"):
        v = getattr(args, k, None)
        if v is not None:
            over[k] = v
    return load_settings(over)


class _Bar:
    """A progress bar on a terminal (stderr); silent otherwise."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.t0 = time.perf_counter()

    def __call__(self, done: int, total: int, what: str) -> None:
        if not self.tty or total == 0:
            return
        width = 30
        fill = int(width * done / total)
        rate = done / max(time.perf_counter() - self.t0, 1e-6)
        sys.stderr.write(f"\r[{'#' * fill}{'.' * (width - fill)}] {done}/{total} files {rate:,.0f}/s ")
        if done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _summary(report, app) -> dict:
    return {
        "root": str(app.workspace.root),
        "dataDir": str(app.workspace.data_dir),
        "files": report.files,
        "parsed": report.parsed,
        "unchanged": report.files - report.parsed,
        "deleted": report.deleted,
        "languages": dict(sorted(report.languages.items())),
        "skipped": dict(sorted((k, v) for k, v in report.skipped.items() if v)),
        "symbols": report.symbols,
        "edges": report.edges,
        "lines": report.lines,
        "seconds": round(report.seconds, 3),
        "filesPerSecond": round(report.parsed / report.seconds, 1) if report.seconds > 0 else 0.0,
        "policyFingerprint": getattr(app.policy, "fingerprint", ""),
    }


def _print_summary(s: dict) -> None:
    out = sys.stdout
    out.write(f"indexed {s['root']}\n")
    out.write(f"  files: {s['files']} ({s['parsed']} parsed, {s['unchanged']} unchanged, {s['deleted']} deleted)\n")
    out.write("  by language: " + ", ".join(f"{k} {v}" for k, v in s["languages"].items()) + "\n")
    if s["skipped"]:
        out.write("  skipped: " + ", ".join(f"{k} {v}" for k, v in s["skipped"].items()) + "\n")
    out.write(f"  symbols: {s['symbols']}  edges: {s['edges']}  lines: {s['lines']}\n")
    out.write(f"  time: {s['seconds']:.2f} s  ({s['filesPerSecond']:.0f} files/s)\n")
    sv = s.get("symbolVectors")
    if sv:
        why = f" ({sv['reason']})" if sv.get("reason") else ""
        out.write(f"  symbol vectors: {sv['state']}{why}, {sv['embedded']}/{sv['total']} in {sv['seconds']:.2f} s\n")
    out.write(f"  index: {s['dataDir']}\n")


def cmd_publish(args) -> int:
    """``index --publish``: build the shared base graph of the repository's HEAD on the team's
    graph server (docs/TEAM.md) when no one has; prints {"base", "commit", "status"}."""
    from codesynapse.store.team import authorized, base_graph_id, open_base, publish_base, supports_team
    from codesynapse.workspace import open_workspace

    settings = _settings(args)
    if not supports_team(settings):
        sys.stderr.write(f"--publish needs a graph server backend (neo4j or hugegraph) with team graphs on, "
                         f"not {settings.backend!r} (CODESYNAPSE_BACKEND, CODESYNAPSE_TEAM_GRAPHS)\n")
        return 2
    ws = open_workspace(args.path, settings.data_dir or None)
    commit = ws.git_head()
    if not commit:
        sys.stderr.write(f"{ws.root} has no commit to publish\n")
        return 2
    store = open_base(settings, ws.graph_id)
    try:
        allowed = authorized(store, settings.tenant, ws.graph_id)
    finally:
        store.close()
    if not allowed:
        sys.stderr.write(f"no repository entry authorizes tenant {settings.tenant!r} for {ws.identity}: "
                         f"run `codesynapse repo grant` first\n")
        return 2
    status = publish_base(settings, ws.root, ws.identity, ws.graph_id, commit, progress=_Bar())
    json.dump({"base": base_graph_id(ws.graph_id, commit), "commit": commit, "status": status}, sys.stdout)
    sys.stdout.write("\n")
    return 0 if status != "busy" else 1


def cmd_repo(args) -> int:
    """``repo grant|revoke|list|gc``: the repository entries and base graphs of a team graph
    server (docs/TEAM.md). The tenant is the daemon's own (--tenant / CODESYNAPSE_TENANT)."""
    from codesynapse.store.team import (authorized, expire_overlays, gc_bases, grant, list_bases, open_base, revoke,
                                        supports_team)
    from codesynapse.workspace import default_data_root, open_workspace

    settings = _settings(args)
    if not supports_team(settings):
        sys.stderr.write(f"repo needs a graph server backend (neo4j or hugegraph) with team graphs on, "
                         f"not {settings.backend!r} (CODESYNAPSE_BACKEND, CODESYNAPSE_TEAM_GRAPHS)\n")
        return 2
    ws = open_workspace(args.root, settings.data_dir or None)
    if args.action == "gc":
        if args.keep < 1:
            sys.stderr.write("--keep must be at least 1\n")
            return 2
        out: dict = gc_bases(settings, ws.root, ws.graph_id, args.keep)
        # and the local overlays of this repository's checkouts whose folder is gone
        out["expiredOverlays"] = expire_overlays([default_data_root(), ws.data_dir.parent], ws.graph_id)
    else:
        store = open_base(settings, ws.graph_id)
        try:
            if args.action == "grant":
                out = {"entry": grant(store, settings.tenant, ws.graph_id, ws.identity)}
            elif args.action == "revoke":
                out = {"revoked": revoke(store, settings.tenant, ws.graph_id)}
            else:
                out = {"repository": ws.identity, "graphId": ws.graph_id, "tenant": settings.tenant,
                       "authorized": authorized(store, settings.tenant, ws.graph_id),
                       "bases": list_bases(store, ws.graph_id)}
        finally:
            store.close()
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def cmd_index(args) -> int:
    from codesynapse.app import App

    if getattr(args, "publish", False):
        return cmd_publish(args)
    app = App(args.path, _settings(args))
    try:
        report = app.index(_Bar())
        s = _summary(report, app)
        sv = app.symbol_vectors
        if sv is not None and args.vectors:  # else the daemon computes them in the background
            t0 = time.perf_counter()
            sv.start()
            sv.sync()
            sv.wait()
            s["symbolVectors"] = {**sv.status(), "seconds": round(time.perf_counter() - t0, 3)}
        if args.json:
            json.dump(s, sys.stdout, indent=2)
            sys.stdout.write("\n")
        else:
            _print_summary(s)
    finally:
        app.close()
    return 0


def cmd_query(args) -> int:
    from codesynapse.app import App
    from codesynapse.errors import CodeSynapseError
    from codesynapse.methods import call_method

    try:
        params = json.loads(args.params) if args.params else {}
    except json.JSONDecodeError as e:
        sys.stderr.write(f"--params is not valid JSON: {e}\n")
        return 2
    app = App(args.root, _settings(args))
    try:
        if not args.no_index:
            app.index()
        try:
            result = call_method(app, args.method, params)
        except CodeSynapseError as e:
            from codesynapse.methods import error_payload

            json.dump(error_payload(e), sys.stdout)
            sys.stdout.write("\n")
            return 1
        json.dump(result, sys.stdout, ensure_ascii=False, separators=(",", ":") if args.compact else None,
                  indent=None if args.compact else 2)
        sys.stdout.write("\n")
    finally:
        app.close()
    return 0


def cmd_stats(args) -> int:
    """The workspace's savings, summed over every session that ended (or settled) so far."""
    from codesynapse.ledger import TOTALS_FILE, workspace_totals
    from codesynapse.workspace import open_workspace

    ws = open_workspace(args.root, _settings(args).data_dir or None)
    t = workspace_totals(ws.data_dir / TOTALS_FILE)
    if args.json:
        json.dump(t, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    _print_stats(t)
    return 0


def cmd_policy(args) -> int:
    """What each rule of the effective policy keeps out, annotates and redacts."""
    from codesynapse.app import App
    from codesynapse.methods import call_method

    app = App(args.root, _settings(args))
    try:
        if not args.no_index:
            app.index()
        e = call_method(app, "codesynapse/policyEffects", {})
    finally:
        app.close()
    if args.json:
        json.dump(e, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    out = [f"policy fingerprint: {e['fingerprint']}", "", "exclusions (files kept out of the index):",
           f"  {'rule':<40} {'source':<8} {'files':>8} {'lines':>10} {'bytes':>12} {'est. tokens':>12}"]
    for x in e["exclusions"]:
        out.append(f"  {x['rule']:<40} {x['source']:<8} {x['files']:>8,} {x['lines']:>10,} {x['bytes']:>12,} "
                   f"{x['estTokens']:>12,}")
    out += ["", "annotations (cards that carry the note):"]
    out += [f"  {json.dumps(a['annotation'])}: {a['cards']:,} cards in {a['files']:,} files" for a in e["annotations"]]
    out += ["", "redactions (stored values removed):"]
    out += [f"  {r['rule']}: {r['values']:,} values in {r['files']:,} files" for r in e["redactions"]]
    if "delta" in e:
        out += ["", f"since the previous policy ({e['previous']['fingerprint']}, measured {e['previous']['measuredAt']}):"]
        for kind, rows in e["delta"].items():
            for r in rows:
                figures = ", ".join(f"{k} {v:+,}" for k, v in r.items() if k not in ("rule", "change"))
                out.append(f"  {kind} {r['change']}: {r['rule']}: {figures}")
    out += ["", e["note"]]
    sys.stdout.write("\n".join(out) + "\n")
    return 0


def _print_stats(t: dict) -> None:
    def pct(v):
        return "not applicable" if v is None else f"{v:.1f}%"

    tot = t["total"]
    out = [f"sessions: {t['sessions']:,}" + (f" (since {t['since']}, last {t['updated']})" if t["since"] else ""),
           f"answers: {tot['answers']:,} ({tot['errors']:,} errors)",
           f"tokens returned: {tot['tokens']:,} (estimator {t['estimator']})",
           f"raw context (a) files behind the answers: {tot['rawA']:,}; avoided {tot['avoidedA']:,} "
           f"({pct(tot['reductionPctA'])})",
           f"raw context (b) grep + files opened: {tot['rawB']:,}; avoided {tot['avoidedB']:,} "
           f"({pct(tot['reductionPctB'])})",
           f"cache-hit tokens (repeats of earlier answers in a session): {tot['cacheHitTokens']:,}"]
    if t["methods"]:
        out.append("")
        out.append(f"{'method':<32} {'answers':>8} {'returned':>10} {'avoided (a)':>12} {'avoided (b)':>12} "
                   f"{'cache-hit':>10}")
        for name, m in t["methods"].items():
            out.append(f"{name:<32} {m['answers']:>8,} {m['tokens']:>10,} {m['avoidedA']:>12,} {m['avoidedB']:>12,} "
                       f"{m['cacheHitTokens']:>10,}")
    sys.stdout.write("\n".join(out) + "\n")


def cmd_demo(args) -> int:
    from codesynapse.app import App
    from codesynapse.methods import call_method

    app = App(args.path, _settings(args))
    try:
        report = app.index(_Bar())
        _print_summary(_summary(report, app))
        samples = app.indexer.store.search("main", 3)
        status = call_method(app, "codesynapse/indexStatus", {})
        sys.stdout.write(f"\nindexStatus: {status['files']} files, {status['symbols']} symbols, "
                         f"{status['edges']} edges, languages {status['languages']}\n")
        from codesynapse.demo import sample_answers

        for title, payload in sample_answers(app):
            sys.stdout.write(f"\n== {title}\n{json.dumps(payload, indent=2, ensure_ascii=False)}\n")
        del samples
    finally:
        app.close()
    return 0


GRACE_DEFAULT_S = 300.0


def _grace(args) -> float:
    if args.grace_seconds is not None:
        return max(0.0, args.grace_seconds)
    try:
        return max(0.0, float(os.environ.get("CODESYNAPSE_DAEMON_GRACE", GRACE_DEFAULT_S)))
    except ValueError:
        return GRACE_DEFAULT_S


def cmd_serve(args) -> int:
    """One shared daemon per workspace (codesynapse/daemon): this process is its stdio proxy
    (``--daemon``: the daemon itself); ``--no-share`` or CODESYNAPSE_SHARE=0: one process
    for this client alone, as before."""
    settings = _settings(args)
    if args.daemon:
        from codesynapse.daemon.host import run_daemon

        return run_daemon(settings, args.data_dir, _grace(args))
    share = os.environ.get("CODESYNAPSE_SHARE", "1").strip().lower() not in ("0", "false", "no", "off")
    if args.no_share or not share:
        from codesynapse.lsp.server import run_stdio

        return run_stdio(settings)
    from codesynapse.daemon.proxy import run_proxy

    return run_proxy(settings, grace=_grace(args), verbose=args.verbose)


def cmd_mcp(args) -> int:
    """``codesynapse mcp``: a Model Context Protocol server on stdio over ``codesynapse serve``
    (bridge/mcp_server.py; docs/MCP.md)."""
    from codesynapse.bridge.mcp_server import run

    serve_args: list[str] = []
    for flag, key in (("--data-dir", "data_dir"), ("--tenant", "tenant"), ("--backend", "backend"),
                      ("--workers", "workers")):
        v = getattr(args, key, None)
        if v is not None:
            serve_args += [flag, str(v)]
    return run(args.root, session_handle=args.session or "", serve_args=serve_args)


def cmd_findings(args) -> int:
    """``codesynapse findings import FILE.sarif``: the findings of a SARIF 2.1.0 log (findings/cli.py)."""
    from codesynapse.findings.cli import run_import

    return run_import(args, _settings(args))


def cmd_bench(args) -> int:
    from codesynapse.bench.cli import run_bench

    return run_bench(args)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("codesynapse")
    except Exception:  # running from a source tree that is not installed
        from codesynapse import __version__

        return __version__


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="codesynapse", description="A code-context daemon and its tools.")
    p.add_argument("--version", action="version", version=f"codesynapse {_version()}")
    p.add_argument("-v", "--verbose", action="store_true", help="log debug messages (to stderr)")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp):
        sp.add_argument("--data-dir", dest="data_dir", help="where the index lives (default: user cache)")
        sp.add_argument("--tenant", help="the organisation this daemon serves (default: local)")
        sp.add_argument("--backend", choices=("sqlite", "neo4j", "hugegraph"),
                        help="graph store (default: sqlite, or the backend of the settings)")
        sp.add_argument("--workers", type=int, help="parser processes for indexing (default: from the settings)")

    sp = sub.add_parser("index", help="index a repository and print a summary")
    sp.add_argument("path", nargs="?", default=".")
    sp.add_argument("--json", action="store_true", help="print the summary as JSON")
    sp.add_argument("--vectors", action="store_true",
                    help="also compute the dense leg's symbol vectors before exiting (the daemon computes "
                         "them in the background; this takes much longer than the index itself)")
    sp.add_argument("--publish", action="store_true",
                    help="build the shared base graph of HEAD's committed tree on the team's graph server "
                         "(neo4j; docs/TEAM.md) when no one has, and exit")
    common(sp)
    sp.set_defaults(func=cmd_index)

    sp = sub.add_parser("repo", help="a team graph server's repository entries and base graphs (docs/TEAM.md)")
    sp.add_argument("action", choices=("grant", "revoke", "list", "gc"),
                    help="grant/revoke: authorize this tenant to read the repository's base graphs; list: the "
                         "bases on the server; gc: remove bases no branch needs")
    sp.add_argument("--root", default=".", help="the repository checkout (default: the current folder)")
    sp.add_argument("--keep", type=int, default=5, help="gc: keep the last N commits of every branch (default 5)")
    common(sp)
    sp.set_defaults(func=cmd_repo)

    sp = sub.add_parser("serve", help="run the language server over stdio")
    sp.add_argument("--stdio", action="store_true", help="accepted for editor compatibility (stdio is the default)")
    sp.add_argument("--no-share", action="store_true",
                    help="serve this client in this process alone, instead of through the workspace's shared "
                         "daemon (also CODESYNAPSE_SHARE=0)")
    sp.add_argument("--grace-seconds", type=float, default=None,
                    help="the shared daemon exits this long after its last client leaves (default 300, or "
                         "CODESYNAPSE_DAEMON_GRACE)")
    sp.add_argument("--daemon", action="store_true", help=argparse.SUPPRESS)  # the daemon the proxy starts
    common(sp)
    sp.set_defaults(func=cmd_serve)

    sp = sub.add_parser("mcp", help="run a Model Context Protocol server over stdio (docs/MCP.md)")
    sp.add_argument("--root", default=".", help="the workspace folder (default: the current folder)")
    sp.add_argument("--session", metavar="HANDLE",
                    help="a child session handle from codesynapse/session/child: this connection is that child")
    common(sp)
    sp.set_defaults(func=cmd_mcp)

    sp = sub.add_parser("query", help="run one custom request in-process and print its JSON",
                        description="Run one custom request (docs/PROTOCOL.md) on a folder and print its answer "
                                    "as JSON; an error is printed as JSON too (exit 1). The index is brought up "
                                    "to date first unless --no-index. Index states in answers: idle (not built "
                                    "by this process yet), indexing, ready, failed.")
    sp.add_argument("method", help="the request, e.g. codesynapse/symbolCard, codesynapse/minimalContext, "
                                   "codesynapse/memory/recall (an unknown name lists them all)")
    sp.add_argument("--root", default=".", help="the workspace folder (default: the current folder)")
    sp.add_argument("--params", default="{}", help="the request's params as a JSON object, e.g. "
                                                   "'{\"selector\": \"pkg.mod.func\"}' (default: {})")
    sp.add_argument("--no-index", action="store_true", help="use the index as it is (no catch-up)")
    sp.add_argument("--compact", action="store_true", help="print the JSON on one line")
    common(sp)
    sp.set_defaults(func=cmd_query)

    sp = sub.add_parser("stats", help="print the workspace's savings summed over its sessions",
                        description="Tokens returned, raw-context estimates (a) and (b), tokens avoided and "
                                    "cache-hit tokens, summed over every session of the workspace (kept in its "
                                    "data folder; no session ids), in total and per method.")
    sp.add_argument("--root", default=".", help="the workspace folder (default: the current folder)")
    sp.add_argument("--json", action="store_true", help="print the totals as JSON")
    common(sp)
    sp.set_defaults(func=cmd_stats)

    sp = sub.add_parser("policy", help="what the .codesynapse.yaml policy does to this repository",
                        description="effects: per exclusion rule the files, lines, bytes and estimated tokens it "
                                    "keeps out; per annotation the cards it changes; per redaction rule the "
                                    "values it removed; with the policy fingerprint and the difference from the "
                                    "previous policy measured in this workspace.")
    sp.add_argument("action", choices=("effects",))
    sp.add_argument("--root", default=".", help="the workspace folder (default: the current folder)")
    sp.add_argument("--json", action="store_true", help="print the answer as JSON")
    sp.add_argument("--no-index", action="store_true", help="use the index as it is (no catch-up)")
    common(sp)
    sp.set_defaults(func=cmd_policy)

    sp = sub.add_parser("demo", help="index a repository and print a summary and sample answers")
    sp.add_argument("path", nargs="?", default=".")
    common(sp)
    sp.set_defaults(func=cmd_demo)

    sp = sub.add_parser("findings", help="import analyzer findings (SARIF 2.1.0) into the index")
    sp.add_argument("action", choices=("import",))
    sp.add_argument("files", nargs="+", metavar="FILE.sarif")
    sp.add_argument("--root", default=".")
    sp.add_argument("--no-index", action="store_true", help="use the index as it is (no catch-up)")
    common(sp)
    sp.set_defaults(func=cmd_findings)

    sp = sub.add_parser("bench", help="benchmarks (results go to --out)",
                        description="Run benchmarks and write their results (PERFORMANCE.md sections, "
                                    "RETRIEVAL_RESULTS.md, JSON twins) to --out.")
    sp.add_argument("kind", choices=("index", "incremental", "requests", "tokens", "accuracy", "memory", "retrieval",
                                     "findings", "backends", "daemon", "mcp", "all"),
                    help="which benchmark to run (mcp: tools/list tokens and the bridge's added latency; all: each in turn; backends, SQLite vs the Neo4j server of "
                         "CODESYNAPSE_NEO4J_URI, only on its own)")
    sp.add_argument("--corpus", action="append", default=[],
                    help="a corpus name (python-stdlib, django, go-stdlib, rxjs, linux-6.1, linux-6.1-25, linux-6.1-50; "
                         "'scale' for bench index's scale series) or a directory (repeatable)")
    sp.add_argument("--workload", help="bench tokens: a workload file (default: fixtures/workloads/*.yaml)")
    sp.add_argument("--out", default=None,
                    help="folder for the result files (default: docs/ of the CodeSynapse checkout this runs "
                         "from; outside a checkout, ./codesynapse-bench)")
    sp.add_argument("--quick", action="store_true", help="a shorter run with fewer samples (results say so)")
    sp.add_argument("--lang", choices=("python", "java"), default="python",
                    help="bench accuracy: python (Jedi oracle, the default) or java (JavaParser's symbol solver, "
                         "built with Maven; default corpus gson 2.11.0 from Maven Central)")
    sp.add_argument("--ledger-compare", action="store_true",
                    help="bench requests: the request mix with ledger counting on and off in alternating rounds "
                         "(per type p50/p95 and the overhead; its own PERFORMANCE.md section)")
    sp.add_argument("--half", choices=("tune", "heldout", "both", "fresh"), default="both",
                    help="bench retrieval: which half of the plain-English set to run (both = tune + heldout; "
                         "fresh = the never-tuned third folder, on its own)")
    sp.add_argument("--repo", action="append", default=[], help="bench retrieval: only this repository (repeatable)")
    sp.add_argument("--dense-wait", type=float, default=600.0,
                    help="bench retrieval: seconds to wait for the dense vectors before the dense configurations")
    common(sp)
    sp.set_defaults(func=cmd_bench)
    return p


def main(argv: list[str] | None = None) -> int:
    from codesynapse.errors import CodeSynapseError

    args = build_parser().parse_args(argv)
    _setup_logging(args.verbose, queued=args.func is cmd_serve)
    try:
        return int(args.func(args) or 0)
    except CodeSynapseError as e:  # one clear line, not a traceback (-v shows it)
        logging.getLogger("codesynapse").debug("failed", exc_info=True)
        sys.stderr.write(f"codesynapse: {e}\n")
        return 2
    except FileNotFoundError as e:
        sys.stderr.write(f"codesynapse: {e}\n")
        return 2
