"""``codesynapse bench daemon``: what the shared workspace daemon costs (issue 19 targets).

* **Memory:** the resident set (VmRSS) summed over every CodeSynapse process — the daemon
  and its descendants, and every ``codesynapse serve`` proxy — with 1 client connected
  and then with 10 clients connected to one workspace (target: 10 clients ≤ 1.3 × 1
  client). The proportional set size (Pss, shared pages split between the processes that
  map them) is reported beside it. Each client is a real ``codesynapse serve`` process on
  pipes that has sent ``initialize`` and seen the index ready; memory is sampled 3 times,
  1 s apart, once the index is ready and idle (median reported). For scale, one client in
  the one-process mode (``serve --no-share``) on the same index is measured too.
* **Proxy overhead:** the same request sent ``n`` times through a ``codesynapse serve``
  proxy (stdio → socket → daemon) and directly on the daemon's socket (hello, then LSP),
  alternating, one at a time; p50 / p95 of each and the difference of the p50s (target
  ≤ +2 ms). Requests: ``codesynapse/indexStatus`` (small answer) and
  ``codesynapse/search`` (a typical answer of a few KiB).

Settings: the dense leg's background symbol vectors are off (CODESYNAPSE_SYMBOL_VECTORS=0)
so that the daemon's memory does not grow between the two samples for a reason other than
the clients; the data folder is a fresh temporary folder (the index is built once, by the
first client, before anything is measured).
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from codesynapse.bench.proc import rss_bytes, tree
from codesynapse.bench.report import say

CLIENTS = 10
TARGET_RATIO = 1.3
TARGET_OVERHEAD_MS = 2.0


class _Conn:
    """A minimal synchronous JSON-RPC client over a pair of byte streams."""

    def __init__(self, rfile, wfile):
        self.r, self.w = rfile, wfile
        self.ids = itertools.count(1)

    def send(self, msg: dict[str, Any]) -> None:
        body = json.dumps(msg).encode()
        self.w.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        self.w.flush()

    def read(self) -> dict[str, Any]:
        length = 0
        while True:
            line = self.r.readline()
            if not line:
                raise EOFError("the server closed the connection")
            if line in (b"\r\n", b"\n"):
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        return json.loads(self.r.read(length))

    def request(self, method: str, params: Any) -> Any:
        i = next(self.ids)
        self.send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        while True:
            msg = self.read()
            if "method" in msg and "id" in msg:  # a request of the server: answer null
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            elif msg.get("id") == i and "method" not in msg:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result")

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def initialize(self, root: Path, name: str) -> None:
        self.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {},
                                    "clientInfo": {"name": name, "version": "bench"},
                                    "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}]})
        self.notify("initialized", {})

    def wait_ready(self, timeout: float = 3600.0) -> dict[str, Any]:
        end = time.monotonic() + timeout
        while True:
            st = self.request("codesynapse/indexStatus", {})
            if st["state"] == "ready" and st["pending"] == 0:
                return st
            if time.monotonic() > end:
                raise RuntimeError(f"index not ready within {timeout:.0f} s: {st}")
            time.sleep(0.5)


class _Serve:
    def __init__(self, data: Path, env: dict[str, str], log: Path, *extra: str):
        self.logf = open(log, "ab")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen([sys.executable, "-m", "codesynapse", "serve", *extra],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.logf, env=env,
                                     start_new_session=True)
        self.conn = _Conn(self.proc.stdout, self.proc.stdin)

    def close(self) -> None:
        try:
            self.conn.request("shutdown", None)
            self.conn.notify("exit", None)
            self.proc.wait(30)
        except Exception:  # noqa: BLE001 - a bench teardown: make sure it is gone
            self.proc.kill()
            self.proc.wait(30)
        self.logf.close()


def _pss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="utf-8") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _memory(pids: list[int]) -> dict[str, Any]:
    """Median of 3 samples of the summed RSS / PSS of ``pids`` and their descendants."""
    rs, ps, counts = [], [], []
    for k in range(3):
        if k:
            time.sleep(1.0)
        every = sorted({p for pid in pids for p in tree(pid)})
        rs.append(sum(rss_bytes(p) for p in every))
        ps.append(sum(_pss_bytes(p) for p in every))
        counts.append(len(every))
    return {"rssBytes": int(statistics.median(rs)), "pssBytes": int(statistics.median(ps)),
            "processes": max(counts)}


def _daemon_pid(data: Path) -> int:
    info = json.loads((data / "daemon.lock").read_text() or "{}")
    return int(info["pid"])


def _pcts(xs: list[float]) -> dict[str, float]:
    s = sorted(xs)
    return {"p50": s[len(s) // 2], "p95": s[min(len(s) - 1, int(len(s) * 0.95))], "n": len(s)}


def _direct(data: Path, root: Path, env: dict[str, str]) -> _Conn:
    from codesynapse.daemon import election
    from codesynapse.daemon.host import PROTOCOL, settings_fingerprint
    from codesynapse.settings import load_settings

    info = election.read_info(data) or {}
    sock = election.connect(info)
    if sock is None:
        raise RuntimeError("the daemon's socket does not answer")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    hello = {"codesynapse": PROTOCOL, "root": os.path.realpath(root), "settings": settings_fingerprint(load_settings(env=env)),
             "token": election.read_token(data) if info.get("port") else None}
    sock.sendall(json.dumps(hello).encode() + b"\n")
    r = sock.makefile("rb")
    w = sock.makefile("wb")
    welcome = json.loads(r.readline())
    if not welcome.get("ok"):
        raise RuntimeError(f"the daemon refused the bench's direct connection: {welcome}")
    c = _Conn(r, w)
    c.initialize(root, "bench-direct")
    return c


def _materialize(path: Path, exclude: tuple[str, ...], work: Path) -> Path:
    """The corpus as a client would open it: a served workspace has only its own policy
    file, so a corpus with extra exclusions (the stdlib without ``site-packages/``) is
    copied without them (its ``__pycache__`` left out too)."""
    if not exclude:
        return Path(path)
    import shutil

    names = {e.strip("/").split("/")[-1] for e in exclude if e.endswith("/")}
    dest = work / "corpus" / Path(path).name
    shutil.copytree(path, dest, symlinks=True, ignore=lambda d, ns: [n for n in ns if n in names or n == "__pycache__"])
    return dest


def run_daemon_bench(corpus_path: Path, corpus_name: str, *, clients: int = CLIENTS, requests: int = 200,
                     exclude: tuple[str, ...] = ()) -> dict:
    work = Path(tempfile.mkdtemp(prefix="codesynapse-daemon-bench-"))
    data = work / "data"
    env = dict(os.environ)
    env.update({"CODESYNAPSE_DATA_DIR": str(data), "CODESYNAPSE_SHARE": "1", "CODESYNAPSE_SYMBOL_VECTORS": "0",
                "CODESYNAPSE_DAEMON_GRACE": "5"})
    root = _materialize(Path(corpus_path), tuple(exclude), work)
    out: dict[str, Any] = {"corpus": corpus_name, "clients": clients, "requests": requests}
    serves: list[_Serve] = []
    try:
        say(f"daemon: first client, indexing {root} (once)")
        t0 = time.perf_counter()
        first = _Serve(data, env, work / "c0.log")
        serves.append(first)
        first.conn.initialize(root, "client-0")
        st = first.conn.wait_ready()
        out["indexSeconds"] = round(time.perf_counter() - t0, 1)
        out["files"], out["symbols"] = st["files"], st["symbols"]
        dpid = _daemon_pid(data)
        time.sleep(2.0)
        one = _memory([dpid, first.proc.pid])
        out["one"] = one
        say(f"daemon: 1 client: {one['rssBytes'] / 2**20:.0f} MiB RSS over {one['processes']} processes")
        for i in range(1, clients):
            s = _Serve(data, env, work / f"c{i}.log")
            serves.append(s)
            s.conn.initialize(root, f"client-{i}")
        for s in serves:
            s.conn.wait_ready()
        n = len(first.conn.request("codesynapse/indexStatus", {}).get("clients", []))
        if n != clients:
            raise RuntimeError(f"the daemon lists {n} clients, expected {clients}")
        time.sleep(2.0)
        many = _memory([dpid, *(s.proc.pid for s in serves)])
        out["many"] = many
        out["ratio"] = round(many["rssBytes"] / one["rssBytes"], 3)
        out["pssRatio"] = round(many["pssBytes"] / one["pssBytes"], 3) if one["pssBytes"] else None
        out["proxyRssBytes"] = int(statistics.median(rss_bytes(s.proc.pid) for s in serves))
        out["daemonRssBytes"] = sum(rss_bytes(p) for p in tree(dpid))
        say(f"daemon: {clients} clients: {many['rssBytes'] / 2**20:.0f} MiB RSS, ratio {out['ratio']}")

        # proxy overhead: the same requests via the proxy and directly, alternating
        direct = _direct(data, root, env)
        via = first.conn
        hits = via.request("codesynapse/search", {"query": "json decoder"})
        del hits
        lat: dict[str, dict[str, list[float]]] = {}
        for method, params in (("codesynapse/indexStatus", {}), ("codesynapse/search", {"query": "json decoder"})):
            for conn in (via, direct):  # warm both paths
                for _ in range(5):
                    conn.request(method, params)
            d: dict[str, list[float]] = {"proxy": [], "direct": []}
            for _ in range(requests):
                for key, conn in (("proxy", via), ("direct", direct)):
                    t = time.perf_counter()
                    conn.request(method, params)
                    d[key].append((time.perf_counter() - t) * 1000)
            lat[method] = d
        try:
            direct.request("shutdown", None)
            direct.notify("exit", None)
        except (OSError, EOFError, RuntimeError):
            pass
        out["latencyMs"] = {m: {k: _pcts(v) for k, v in d.items()} for m, d in lat.items()}
        out["overheadMs"] = {m: round(x["proxy"]["p50"] - x["direct"]["p50"], 3) for m, x in out["latencyMs"].items()}
        for s in serves:
            s.close()
        serves = []

        # for scale: one client in its own process on the same (built) index
        time.sleep(1.0)
        alone = _Serve(data, {**env, "CODESYNAPSE_SHARE": "0"}, work / "alone.log", "--no-share")
        serves.append(alone)
        alone.conn.initialize(root, "alone")
        alone.conn.wait_ready()
        time.sleep(2.0)
        out["noShareOne"] = _memory([alone.proc.pid])
    finally:
        for s in serves:
            s.close()
        try:
            os.kill(_daemon_pid(data), signal.SIGTERM)
        except (OSError, KeyError, ValueError):
            pass
        import shutil

        shutil.rmtree(work / "corpus", ignore_errors=True)
    out["targets"] = {"ratio": TARGET_RATIO, "overheadMs": TARGET_OVERHEAD_MS}
    out["met"] = {"ratio": out["ratio"] <= TARGET_RATIO,
                  "overhead": all(v <= TARGET_OVERHEAD_MS for v in out["overheadMs"].values())}
    return out


def daemon_markdown(r: dict[str, Any]) -> str:
    from codesynapse.bench.machine import machine_line

    mib = lambda b: f"{b / 2**20:,.0f}"  # noqa: E731
    met = lambda ok: "met" if ok else "**missed**"  # noqa: E731
    lines = ["## Shared workspace daemon", "",
             f"* **Machine:** {machine_line(r['machine'])}; load average at start {r.get('load', '?')}",
             f"* **Method:** `codesynapse bench daemon` → `codesynapse.bench.daemon_bench` (see its docstring): "
             f"corpus {r['corpus']} ({r['files']:,} files, {r['symbols']:,} symbols; first index "
             f"{r['indexSeconds']} s), real `codesynapse serve` proxies on pipes, one daemon; background symbol "
             f"vectors off." + (" **--quick** run." if r.get("quick") else ""),
             "",
             "| clients | processes | RSS MiB (sum) | PSS MiB (sum) |",
             "|---:|---:|---:|---:|",
             f"| 1 (shared) | {r['one']['processes']} | {mib(r['one']['rssBytes'])} | {mib(r['one']['pssBytes'])} |",
             f"| {r['clients']} (shared) | {r['many']['processes']} | {mib(r['many']['rssBytes'])} | "
             f"{mib(r['many']['pssBytes'])} |",
             f"| 1 (`--no-share`, for scale) | {r['noShareOne']['processes']} | {mib(r['noShareOne']['rssBytes'])} | "
             f"{mib(r['noShareOne']['pssBytes'])} |",
             "",
             f"* {r['clients']} clients / 1 client: RSS × {r['ratio']} (target ≤ {r['targets']['ratio']}: "
             f"{met(r['met']['ratio'])}), PSS × {r['pssRatio']}; one proxy {mib(r['proxyRssBytes'])} MiB RSS, "
             f"the daemon {mib(r['daemonRssBytes'])} MiB.",
             "",
             "| request | via proxy p50 / p95 ms | direct p50 / p95 ms | proxy adds (p50) |",
             "|---|---|---|---:|"]
    for m, x in r["latencyMs"].items():
        lines.append(f"| `{m}` | {x['proxy']['p50']:.2f} / {x['proxy']['p95']:.2f} | {x['direct']['p50']:.2f} / "
                     f"{x['direct']['p95']:.2f} | {r['overheadMs'][m]:+.2f} ms |")
    lines += ["", f"* Proxy overhead target ≤ +{r['targets']['overheadMs']:.0f} ms p50: {met(r['met']['overhead'])} "
                  f"({r['requests']} requests each, alternating)."]
    return "\n".join(lines)
