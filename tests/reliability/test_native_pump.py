"""The native pump (daemon/pump.c, issue 19's memory target) against pump.py: the same bytes
both ways, the same answers when the daemon dies, the same exits; then a real ``codesynapse
serve`` becomes the native pump when it is built and pump.py when it is not.

The native binary is built here from the tree's pump.c with the system C compiler (skipped
without one: then the proxies use pump.py, which the fallback test and test_daemon.py cover).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from codesynapse.daemon import proxy, pump

from tests.reliability.test_daemon import (  # noqa: F401  (repo, data: the daemon tests' fixtures)
    client,
    daemon_pids,
    data,
    init,
    repo,
    wait_until,
)

SOURCE = Path(pump.__file__).with_name("pump.c")
CC = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")


@pytest.fixture(scope="module")
def native(tmp_path_factory) -> str:
    if CC is None:
        pytest.skip("no C compiler: the proxies use pump.py (covered by the fallback test)")
    out = tmp_path_factory.mktemp("pump") / "codesynapse-pump"
    subprocess.run([CC, "-O2", "-Wall", "-Werror", "-o", str(out), str(SOURCE)], check=True, timeout=120)
    return str(out)


def fr(msg: dict | bytes, extra: bytes = b"") -> bytes:
    body = msg if isinstance(msg, bytes) else json.dumps(msg).encode()
    return b"Content-Length: %d\r\n" % len(body) + extra + b"\r\n" + body


def frames(data: bytes) -> list[dict]:
    out = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        n = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
        out.append(json.loads(rest[:n]))
        data = rest[n:]
    return out


class Run:
    """One pump process on pipes, its socket's other end in this process (the 'daemon')."""

    def __init__(self, kind: str, native: str | None, pending: list, pid: int | None = 4242):
        self.daemon, theirs = socket.socketpair()
        fd = theirs.fileno()
        if kind == "native":
            argv = [native, str(fd), str(pid) if pid is not None else "None"]
            for i, m in pending:
                argv += [json.dumps(i), json.dumps(m)]
        else:
            argv = [sys.executable, "-I", "-S", pump.__file__, str(fd), json.dumps({"pending": pending, "pid": pid})]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     pass_fds=(fd,))
        theirs.close()
        self.daemon.settimeout(20)

    def client_send(self, data: bytes, split: int | None = None) -> None:
        for part in ((data[:split], data[split:]) if split else (data,)):
            self.proc.stdin.write(part)
            self.proc.stdin.flush()
            time.sleep(0.05)

    def daemon_read(self, n: int) -> bytes:
        got = b""
        while len(got) < n:
            chunk = self.daemon.recv(65536)
            if not chunk:
                break
            got += chunk
        return got

    def finish(self) -> tuple[int, bytes, bytes]:
        out, err = self.proc.stdout.read(), self.proc.stderr.read()  # until the pump exits
        self.proc.wait(30)
        self.proc.stdin.close()
        return self.proc.returncode, out, err


KINDS = ["native", "python"]


@pytest.mark.parametrize("kind", KINDS)
def test_daemon_death_fails_the_waiting_requests_and_says_so(kind, native):
    run = Run(kind, native, [[1, "initialize"]])
    sent = (fr({"jsonrpc": "2.0", "id": 2, "method": "codesynapse/search", "params": {"query": "q"}},
               b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n")
            + fr({"jsonrpc": "2.0", "method": "initialized", "params": {}})
            # a nested id/method and a "method" inside a string are not the request's
            + fr({"jsonrpc": "2.0", "id": 7, "method": "m", "params": {"id": 99, "method": "inner", "s": '"method"'}})
            + fr({"jsonrpc": "2.0", "id": "x", "method": "a" * 100})
            + fr(b'{"id": 8, "method": "not json",')  # json.loads refuses it: not noted, still copied
            + fr({"jsonrpc": "2.0", "id": 9, "method": "answered"}))
    run.client_send(sent, split=10)
    assert run.daemon_read(len(sent)) == sent  # copied unchanged, extra header lines and all
    replies = (fr({"jsonrpc": "2.0", "id": 2, "result": {"hits": []}})
               + fr({"jsonrpc": "2.0", "method": "$/progress", "params": {"token": 1}})
               + fr({"jsonrpc": "2.0", "id": 99, "result": None})  # not a request of this client
               + fr({"jsonrpc": "2.0", "id": 9, "result": 1}))
    run.daemon.sendall(replies)
    time.sleep(0.3)
    run.daemon.close()  # the daemon is gone (kill -9)
    code, out, err = run.finish()
    assert code == 1
    assert out.startswith(replies)
    tail = frames(out[len(replies):])
    assert [m.get("id") for m in tail] == [1, 7, "x", None]
    for m, method in zip(tail[:3], ("initialize", "m", "a" * 80)):
        assert m["error"]["code"] == -32803
        assert m["error"]["message"] == (method + ": the CodeSynapse workspace daemon stopped before answering; "
                                         "restart the language server to start a new one")
    assert tail[3]["method"] == "window/showMessage" and tail[3]["params"]["type"] == 1
    assert "(pid 4242) stopped unexpectedly" in tail[3]["params"]["message"]
    assert b"the workspace daemon (pid 4242) stopped" in err


def test_both_pumps_write_the_same_bytes(native):
    """The native pump's death report is pump.py's, byte for byte."""
    outs = []
    for kind in KINDS:
        run = Run(kind, native, [["a\u00e9", "initialize"], [3, "b" * 90]], pid=None)
        req = fr({"jsonrpc": "2.0", "id": 12, "method": "codesynapse/indexStatus"})
        run.client_send(req)
        assert run.daemon_read(len(req)) == req
        run.daemon.close()
        code, out, _ = run.finish()
        outs.append((code, out))
    assert outs[0] == outs[1]
    assert outs[0][0] == 1 and b"(pid None)" in outs[0][1]


@pytest.mark.parametrize("kind", KINDS)
def test_exit_ends_the_client_side_and_the_pump_waits_for_the_answers(kind, native):
    run = Run(kind, native, [])
    sent = fr({"jsonrpc": "2.0", "id": 5, "method": "shutdown"}) + fr({"jsonrpc": "2.0", "method": "exit"})
    run.client_send(sent + fr({"jsonrpc": "2.0", "id": 6, "method": "after exit"}))
    assert run.daemon_read(1 << 20) == sent  # up to the exit, then the pump's side ends (EOF)
    reply = fr({"jsonrpc": "2.0", "id": 5, "result": None})
    run.daemon.sendall(reply)
    run.daemon.close()
    code, out, _ = run.finish()
    assert (code, out) == (0, reply)  # no death report after exit


@pytest.mark.parametrize("kind", KINDS)
def test_stdin_eof_sends_whole_frames_only(kind, native):
    run = Run(kind, native, [])
    whole = fr({"jsonrpc": "2.0", "method": "initialized"})
    run.client_send(whole + b"Content-Length: 50\r\n\r\n{\"half")
    run.proc.stdin.close()
    assert run.daemon_read(1 << 20) == whole
    run.daemon.close()
    code, out, _ = run.finish()
    assert (code, out) == (0, b"")


def test_the_proxy_finds_the_pump_next_to_the_interpreter(tmp_path, monkeypatch):
    exe = tmp_path / "bin" / "python"
    exe.parent.mkdir()
    monkeypatch.setattr(sys, "executable", str(exe))
    monkeypatch.delenv("CODESYNAPSE_PUMP", raising=False)
    assert proxy.native_pump() is None  # not built (no compiler at setup): pump.py
    built = exe.parent / "codesynapse-pump"
    built.write_bytes(b"")
    assert proxy.native_pump() is None  # not executable
    built.chmod(built.stat().st_mode | stat.S_IXUSR)
    assert proxy.native_pump() == str(built)
    monkeypatch.setenv("CODESYNAPSE_PUMP", "python")
    assert proxy.native_pump() is None


@pytest.mark.parametrize("kind", KINDS)
def test_serve_becomes_the_built_pump_or_pump_py_and_reports_a_kill9(kind, native, repo, data, tmp_path):
    """A real serve proxy: the native pump when it is built, pump.py when it is absent (here: a
    path that does not exist); either way a daemon killed with -9 is reported to the client."""
    choice = native if kind == "native" else str(tmp_path / "not-built" / "codesynapse-pump")
    a = client(data, tmp_path, "a", CODESYNAPSE_PUMP=choice)
    try:
        init(a, repo, "a")
        a.wait_ready()
        argv = Path(f"/proc/{a.pid}/cmdline").read_bytes().split(b"\0")
        if kind == "native":
            assert argv[0] == native.encode()
        else:
            assert argv[1:4] == [b"-I", b"-S", pump.__file__.encode()]
        rss_kib = int(next(x for x in Path(f"/proc/{a.pid}/status").read_text().splitlines()
                           if x.startswith("VmRSS:")).split()[1])
        if kind == "native":
            assert rss_kib < 4096, rss_kib  # the point of it: no interpreter per client
        assert a.request("codesynapse/indexStatus", {})["files"] > 0
        (old,) = daemon_pids(data)
        os.kill(old, signal.SIGSTOP)
        waiting = a.request_async("codesynapse/indexStatus", {})
        time.sleep(1.0)
        os.kill(old, signal.SIGKILL)
        with pytest.raises(Exception) as e:
            waiting.result(30)
        assert getattr(e.value, "code", None) == -32803
        assert a.proc.wait(30) == 1
        shown = wait_until(lambda: [n for n in a.notifications if n["method"] == "window/showMessage"], 10,
                           "the showMessage read")
        assert shown[-1]["params"]["type"] == 1 and f"(pid {old}) stopped unexpectedly" in shown[-1]["params"]["message"]
    finally:
        a.close()


@pytest.mark.parametrize("kind", KINDS)
def test_big_frames_both_ways_at_once(kind, native):
    """Frames larger than any buffer, in both directions at the same time: each side flows on its
    own (as pump.py's two threads do), and the bytes arrive whole."""
    import threading

    run = Run(kind, native, [])
    up = fr({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"text": "u" * (3 << 20)}})
    down = fr({"jsonrpc": "2.0", "method": "$/log", "params": {"text": "d" * (3 << 20)}})
    got: dict[str, bytes] = {}
    reader = threading.Thread(target=lambda: got.setdefault("daemon", run.daemon_read(len(up))))
    writer = threading.Thread(target=run.daemon.sendall, args=(down,))
    reader.start()
    writer.start()
    run.client_send(up)
    got["client"] = run.proc.stdout.read(len(down))
    reader.join(30)
    writer.join(30)
    assert got["daemon"] == up and got["client"] == down
    run.proc.stdin.close()
    assert run.daemon.recv(1) == b""  # the client's EOF passed on; then the daemon closes
    run.daemon.close()
    code, out, _ = run.finish()
    assert (code, out) == (0, b"")
