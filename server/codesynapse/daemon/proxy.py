"""``codesynapse serve`` in the shared mode: a thin stdio ↔ socket proxy to the workspace daemon.

1. Read the client's ``initialize`` from stdin (the workspace root and the client's
   ``dataDir`` option name the data folder, which keys the daemon).
2. Connect to that data folder's daemon; when none runs (no lock holder), start one
   detached (its own session, stdio on ``daemon.log``) and connect to it. Two proxies that
   start daemons at once: one daemon wins the lock, the other exits, both connect to it.
3. Send the hello (root, settings fingerprint, token on TCP), then the frames read so far,
   then copy bytes both ways. Request ids are tracked so that, when the daemon dies, every
   request still waiting gets an error, the client gets a window/showMessage (Error) naming
   what happened and what to do, and the proxy exits (status 1): the client's restart (or
   the next ``codesynapse serve``) starts a new daemon. Committed index and durable memory
   are in the data folder (SQLite WAL) and survive.

Anything that keeps the proxy from joining a daemon (no ``initialize`` first, no workspace
folder, a daemon refusing the hello, no daemon after three starts) falls back to serving
this one client in this process, as ``--no-share`` does; the reason is logged.
"""

from __future__ import annotations

import io
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import unquote, urlparse

from codesynapse.daemon import election
from codesynapse.settings import Settings, with_client_options

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 60.0  # a daemon that does not listen by then is not waited for
SPAWN_ATTEMPTS = 3
HEADER_MAX = 8192  # bytes of one header line
REQUEST_FAILED = -32803


class _Replay:
    """stdin with the bytes already read put back in front (for the in-process fallback)."""

    def __init__(self, head: bytes, rest: BinaryIO):
        self.head = io.BytesIO(head)
        self.rest = rest

    def readline(self, *args: Any) -> bytes:
        line = self.head.readline()
        if line.endswith(b"\n"):
            return line
        return line + self.rest.readline()

    def read(self, n: int = -1) -> bytes:
        data = self.head.read(n)
        if n < 0:
            return data + self.rest.read()
        if len(data) < n:
            data += self.rest.read(n - len(data))
        return data


def read_frame(stream: Any) -> tuple[bytes, bytes] | None:
    """(raw bytes, body) of the next Content-Length frame, None at EOF or on a broken header."""
    raw = []
    length = None
    while True:
        line = stream.readline(HEADER_MAX) if not isinstance(stream, _Replay) else stream.readline()
        if not line:
            return None
        raw.append(line)
        if line in (b"\r\n", b"\n"):
            if length is None:
                return None
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                return None
    body = stream.read(length) if length else b""
    if len(body) < (length or 0):
        return None
    raw.append(body)
    return b"".join(raw), body


def _frame(msg: dict[str, Any]) -> bytes:
    body = json.dumps(msg).encode("utf-8")
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def _root_of(params: dict[str, Any]) -> str | None:
    folders = params.get("workspaceFolders")
    if isinstance(folders, list) and folders and isinstance(folders[0], dict) and isinstance(folders[0].get("uri"), str):
        return unquote(urlparse(folders[0]["uri"]).path)
    if isinstance(params.get("rootUri"), str):
        return unquote(urlparse(params["rootUri"]).path)
    if isinstance(params.get("rootPath"), str):
        return params["rootPath"]
    return None


def _daemon_argv(settings: Settings, data_dir: Path, grace: float, verbose: bool) -> list[str]:
    argv = [sys.executable, "-m", "codesynapse"] + (["-v"] if verbose else []) + [
        "serve", "--daemon", "--data-dir", str(data_dir), "--grace-seconds", str(grace),
        "--tenant", settings.tenant, "--backend", settings.backend, "--workers", str(settings.workers)]
    return argv


def _spawn(argv: list[str], data_dir: Path) -> subprocess.Popen:
    logf = open(data_dir / "daemon.log", "ab")
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=logf,
                                start_new_session=True, close_fds=True)
    finally:
        logf.close()
    threading.Thread(target=proc.wait, name="codesynapse-reap", daemon=True).start()  # no zombie
    log.info("started the workspace daemon (pid %d) for %s", proc.pid, data_dir)
    return proc


def _handshake(sock: socket.socket, hello: dict[str, Any]) -> dict[str, Any] | None:
    try:
        sock.settimeout(15.0)
        sock.sendall(json.dumps(hello).encode() + b"\n")
        f = sock.makefile("rb")
        line = f.readline(election.HELLO_MAX)
        f.close()
        sock.settimeout(None)
        reply = json.loads(line) if line.strip() else None
    except (OSError, ValueError):
        return None
    return reply if isinstance(reply, dict) else None


def join_daemon(data_dir: Path, hello: dict[str, Any], argv: list[str],
                timeout: float = CONNECT_TIMEOUT_S) -> tuple[socket.socket | None, str]:
    """A socket past the handshake with the daemon of ``data_dir`` (started when none
    runs), or (None, why not)."""
    deadline = time.monotonic() + timeout
    spawned = 0
    proc: subprocess.Popen | None = None
    reason = "no daemon answered"
    while time.monotonic() < deadline:
        info = election.read_info(data_dir)
        if info and (info.get("socket") or info.get("port")):
            sock = election.connect(info)
            if sock is not None:
                h = dict(hello)
                if info.get("port"):
                    h["token"] = election.read_token(data_dir)
                reply = _handshake(sock, h)
                if reply is not None and reply.get("ok"):
                    return sock, ""
                sock.close()
                if reply is not None:
                    return None, f"the workspace daemon refused this client: {reply.get('reason')}"
        if proc is not None and proc.poll() is None:
            time.sleep(0.05)  # ours is starting
            continue
        if not election.lock_held(data_dir):
            if spawned >= SPAWN_ATTEMPTS:
                return None, f"no daemon after {SPAWN_ATTEMPTS} starts (see {data_dir / 'daemon.log'})"
            proc = _spawn(argv, data_dir)
            spawned += 1
            continue
        time.sleep(0.05)  # another process holds the lock: it is starting or stopping
    return None, reason


class Proxy:
    def __init__(self, sock: socket.socket, stdin: BinaryIO, stdout: BinaryIO, daemon_pid: Any = None):
        self.sock = sock
        self.stdin = stdin
        self.stdout = stdout
        self.daemon_pid = daemon_pid
        self.pending: dict[Any, str] = {}
        self.lock = threading.Lock()
        self.out_lock = threading.Lock()
        self.exiting = threading.Event()
        self.done = threading.Event()

    def _note_request(self, body: bytes) -> None:
        try:
            msg = json.loads(body)
        except (ValueError, RecursionError):
            return
        if not isinstance(msg, dict):
            return
        method = msg.get("method")
        if method == "exit":
            self.exiting.set()
        elif isinstance(method, str) and "id" in msg and isinstance(msg["id"], (int, str)):
            with self.lock:
                self.pending[msg["id"]] = method

    def _note_reply(self, body: bytes) -> None:
        if not self.pending:
            return
        try:
            msg = json.loads(body)
        except (ValueError, RecursionError):
            return
        if isinstance(msg, dict) and "method" not in msg and isinstance(msg.get("id"), (int, str)):
            with self.lock:
                self.pending.pop(msg["id"], None)

    def _write_out(self, data: bytes) -> None:
        with self.out_lock:
            self.stdout.write(data)
            self.stdout.flush()

    def upstream(self, first: list[bytes]) -> None:
        """Client → daemon (this thread: the caller's)."""
        try:
            for raw in first:
                self._note_request(raw.split(b"\r\n\r\n", 1)[-1])
            self.sock.sendall(b"".join(first))
            while True:
                fr = read_frame(self.stdin)
                if fr is None:
                    break
                raw, body = fr
                self._note_request(body)
                self.sock.sendall(raw)
                if self.exiting.is_set():
                    break
        except OSError:
            pass  # the daemon side is gone: downstream reports it
        self.exiting.set()
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def downstream(self) -> None:
        """Daemon → client, on its own thread."""
        f = self.sock.makefile("rb")
        try:
            while True:
                fr = read_frame(f)
                if fr is None:
                    break
                raw, body = fr
                self._note_reply(body)
                self._write_out(raw)
        except (OSError, ValueError):
            pass
        finally:
            if not self.exiting.is_set():
                self.daemon_died()
            self.done.set()

    def daemon_died(self) -> None:
        log.error("the workspace daemon (pid %s) stopped while this client was connected", self.daemon_pid)
        with self.lock:
            pending, self.pending = dict(self.pending), {}
        try:
            for msg_id, method in pending.items():
                self._write_out(_frame({"jsonrpc": "2.0", "id": msg_id, "error": {
                    "code": REQUEST_FAILED,
                    "message": f"{method[:80]}: the CodeSynapse workspace daemon stopped before answering; "
                               f"restart the language server to start a new one"}}))
            self._write_out(_frame({"jsonrpc": "2.0", "method": "window/showMessage", "params": {
                "type": 1,
                "message": f"CodeSynapse: the shared workspace daemon (pid {self.daemon_pid}) stopped unexpectedly. "
                           "Restart the CodeSynapse language server (in VS Code: the command 'CodeSynapse: Restart', "
                           "or reload the window) to start a new daemon; the index and durable memory committed so "
                           "far are kept. Its log: daemon.log in the data folder."}}))
        except (OSError, ValueError):
            pass
        logging.shutdown()
        os._exit(1)

    def run(self, first: list[bytes]) -> int:
        t = threading.Thread(target=self.downstream, name="codesynapse-downstream", daemon=True)
        t.start()
        self.upstream(first)
        self.done.wait(10.0)  # the daemon answers what was sent, then closes
        try:
            self.sock.close()
        except OSError:
            pass
        return 0


def run_proxy(settings: Settings, *, grace: float, verbose: bool = False) -> int:
    """``codesynapse serve`` (shared mode). Returns the exit status."""
    from codesynapse.lsp.server import run_stdio
    from codesynapse.workspace import data_dir_for

    stdin = sys.stdin.buffer
    stdout = sys.stdout.buffer
    first: list[bytes] = []

    def alone(why: str) -> int:
        log.info("serving this client in this process: %s", why)
        return run_stdio(settings, stdin=_Replay(b"".join(first), stdin))

    fr = read_frame(stdin)
    if fr is None:
        return alone("no LSP frame on stdin")
    first.append(fr[0])
    try:
        msg = json.loads(fr[1])
    except (ValueError, RecursionError):
        return alone("the first message is not JSON")
    if not isinstance(msg, dict) or msg.get("method") != "initialize" or not isinstance(msg.get("params"), dict):
        return alone("the first message is not initialize")
    params = msg["params"]
    root = _root_of(params)
    if root is None or not Path(root).is_dir():
        return alone("no workspace folder")
    conn_settings, _ = with_client_options(settings, params.get("initializationOptions"))
    try:
        data_dir = data_dir_for(root, conn_settings.data_dir or None)
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return alone(f"the data folder cannot be made: {e}")
    from codesynapse.daemon.host import PROTOCOL, settings_fingerprint

    hello = {"codesynapse": PROTOCOL, "root": os.path.realpath(root), "settings": settings_fingerprint(settings),
             "pid": os.getpid()}
    try:
        sock, why = join_daemon(data_dir, hello, _daemon_argv(settings, data_dir, grace, verbose))
    except OSError as e:
        sock, why = None, f"the daemon could not be reached: {e}"
    if sock is None:
        log.warning("codesynapse: %s; serving this client in this process", why)
        return alone(why)
    info = election.read_info(data_dir) or {}
    return Proxy(sock, stdin, stdout, info.get("pid")).run(first)
