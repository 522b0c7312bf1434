"""``codesynapse bench daemon``: what the shared workspace daemon costs (issue 19 targets).

* **Memory:** the resident set (VmRSS) summed over every CodeSynapse process — the daemon
  and its descendants, and every ``codesynapse serve`` proxy — with 1 client connected
  and then with 10 clients connected to one workspace (target: 10 clients ≤ 1.3 × 1
  client), twice: on the daemon that built the index for its first client, and on a new
  daemon started on the built index (the daemon that indexed keeps the heap of indexing). The proportional set size (Pss, shared pages split between the processes that
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


def _pump_kind(pid: int) -> str:
    """Which pump a proxy became: the native ``codesynapse-pump`` (built by scripts/setup.sh) or pump.py."""
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
    except OSError:
        return "?"
    return "native codesynapse-pump" if argv0.endswith(b"codesynapse-pump") else "pump.py"


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
                "CODESYNAPSE_DAEMON_GRACE": "1"})
    root = _materialize(Path(corpus_path), tuple(exclude), work)
    out: dict[str, Any] = {"corpus": corpus_name, "clients": clients, "requests": requests}
    serves: list[_Serve] = []

    def connect_all(phase: str) -> tuple[dict, dict, int]:
        """1 client, then ``clients``: the memory of each, and the daemon's pid."""
        first = _Serve(data, env, work / f"{phase}-c0.log")
        serves.append(first)
        first.conn.initialize(root, "client-0")
        st = first.conn.wait_ready()
        out["files"], out["symbols"] = st["files"], st["symbols"]
        dpid = _daemon_pid(data)
        time.sleep(2.0)
        one = _memory([dpid, first.proc.pid])
        say(f"daemon ({phase}): 1 client: {one['rssBytes'] / 2**20:.0f} MiB RSS over {one['processes']} processes")
        for i in range(1, clients):
            s = _Serve(data, env, work / f"{phase}-c{i}.log")
            serves.append(s)
            s.conn.initialize(root, f"client-{i}")
        for s in serves:
            s.conn.wait_ready()
        n = len(first.conn.request("codesynapse/indexStatus", {}).get("clients", []))
        if n != clients:
            raise RuntimeError(f"the daemon lists {n} clients, expected {clients}")
        time.sleep(2.0)
        many = _memory([dpid, *(s.proc.pid for s in serves)])
        say(f"daemon ({phase}): {clients} clients: {many['rssBytes'] / 2**20:.0f} MiB RSS, "
            f"ratio {many['rssBytes'] / one['rssBytes']:.3f}")
        out["proxyRssBytes"] = int(statistics.median(rss_bytes(s.proc.pid) for s in serves))
        out["pump"] = _pump_kind(serves[0].proc.pid)
        out["daemonRssBytes"] = sum(rss_bytes(p) for p in tree(dpid))
        return one, many, dpid

    def close_all(dpid: int) -> None:
        for s in serves:
            s.close()
        serves.clear()
        end = time.monotonic() + 120
        while time.monotonic() < end:  # the daemon's grace period, then it closes the index
            try:
                os.kill(dpid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)
        os.kill(dpid, signal.SIGTERM)
        time.sleep(2.0)

    dpid = 0
    try:
        say(f"daemon: the first client indexes {root}")
        t0 = time.perf_counter()
        one, many, dpid = connect_all("first-index")
        out["indexSeconds"] = round(time.perf_counter() - t0, 1)
        out["firstIndex"] = {"one": one, "many": many, "ratio": round(many["rssBytes"] / one["rssBytes"], 3)}
        close_all(dpid)

        say("daemon: a new daemon on the built index")
        one, many, dpid = connect_all("built-index")
        out["one"], out["many"] = one, many
        out["ratio"] = round(many["rssBytes"] / one["rssBytes"], 3)
        out["pssRatio"] = round(many["pssBytes"] / one["pssBytes"], 3) if one["pssBytes"] else None

        # proxy overhead: the same requests via the proxy and directly, alternating
        via = serves[0].conn
        direct = _direct(data, root, env)
        probes = [("codesynapse/indexStatus", {})]
        try:
            via.request("codesynapse/symbolCard", {"selector": "json.dumps"})
            probes.append(("codesynapse/symbolCard", {"selector": "json.dumps"}))
        except RuntimeError:
            probes.append(("codesynapse/search", {"query": "json decoder"}))
        lat: dict[str, dict[str, list[float]]] = {}
        for method, params in probes:
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
        out["pairedOverheadMs"] = {m: round(statistics.median(p - q for p, q in zip(d["proxy"], d["direct"])), 3)
                                   for m, d in lat.items()}
        close_all(dpid)

        # for scale: one client in its own process on the same (built) index
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

        shutil.rmtree(work, ignore_errors=True)
    out["targets"] = {"ratio": TARGET_RATIO, "overheadMs": TARGET_OVERHEAD_MS}
    out["met"] = {"ratio": out["ratio"] <= TARGET_RATIO, "ratioFirstIndex": out["firstIndex"]["ratio"] <= TARGET_RATIO,
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
             "| daemon | clients | processes | RSS MiB (sum) | PSS MiB (sum) | 10 / 1 (RSS) |",
             "|---|---:|---:|---:|---:|---:|",
             f"| after its own first index | 1 | {r['firstIndex']['one']['processes']} | "
             f"{mib(r['firstIndex']['one']['rssBytes'])} | {mib(r['firstIndex']['one']['pssBytes'])} | |",
             f"| after its own first index | {r['clients']} | {r['firstIndex']['many']['processes']} | "
             f"{mib(r['firstIndex']['many']['rssBytes'])} | {mib(r['firstIndex']['many']['pssBytes'])} | "
             f"× {r['firstIndex']['ratio']} ({met(r['met']['ratioFirstIndex'])}) |",
             f"| started on the built index | 1 | {r['one']['processes']} | {mib(r['one']['rssBytes'])} | "
             f"{mib(r['one']['pssBytes'])} | |",
             f"| started on the built index | {r['clients']} | {r['many']['processes']} | {mib(r['many']['rssBytes'])} | "
             f"{mib(r['many']['pssBytes'])} | × {r['ratio']} ({met(r['met']['ratio'])}) |",
             f"| `--no-share`, for scale | 1 | {r['noShareOne']['processes']} | {mib(r['noShareOne']['rssBytes'])} | "
             f"{mib(r['noShareOne']['pssBytes'])} | |",
             "",
             f"* Target: {r['clients']} clients ≤ {r['targets']['ratio']} × 1 client (RSS summed over every "
             f"CodeSynapse process). PSS ratio on the built index × {r['pssRatio']}; one proxy ({r.get('pump', 'the slim pump')}) "
             f"{r['proxyRssBytes'] / 2**20:,.1f} MiB RSS, the daemon {mib(r['daemonRssBytes'])} MiB with "
             f"{r['clients']} clients.",
             "",
             "| request | via proxy p50 / p95 ms | direct p50 / p95 ms | proxy adds (p50) |",
             "|---|---|---|---:|"]
    for m, x in r["latencyMs"].items():
        lines.append(f"| `{m}` | {x['proxy']['p50']:.2f} / {x['proxy']['p95']:.2f} | {x['direct']['p50']:.2f} / "
                     f"{x['direct']['p95']:.2f} | {r['overheadMs'][m]:+.2f} ms |")
    lines += ["", f"* Proxy overhead target ≤ +{r['targets']['overheadMs']:.0f} ms p50: {met(r['met']['overhead'])} "
                  f"({r['requests']} requests each, alternating; median of the paired differences: "
                  + ", ".join(f"`{m}` {v:+.2f} ms" for m, v in r["pairedOverheadMs"].items()) + ")."]
    return "\n".join(lines)
