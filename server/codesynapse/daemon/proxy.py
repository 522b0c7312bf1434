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


def read_first_frame(fd: int) -> tuple[bytes, bytes] | None:
    """(raw bytes, body) of the first frame, read from ``fd`` without reading one byte
    past it (the pump that replaces this process reads the rest of stdin)."""
    head = b""
    while not head.endswith(b"\r\n\r\n") and not head.endswith(b"\n\n"):
        if len(head) > HEADER_MAX:
            return None
        c = os.read(fd, 1)
        if not c:
            return None
        head += c
    from codesynapse.daemon.pump import CONTENT_LENGTH

    # the header as the server reads it (lsp/rpc.py): the first exact Content-Length line,
    # other lines (Content-Type) ignored; without one, this process serves the client and
    # answers as it always did
    m = next(filter(None, (CONTENT_LENGTH.match(x) for x in head.splitlines(keepends=True))), None)
    if m is None:
        return None
    length = int(m.group(1))
    body = b""
    while len(body) < length:
        chunk = os.read(fd, length - len(body))
        if not chunk:
            return None
        body += chunk
    return head + body, body


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
                if reply is not None and not reply.get("retry"):
                    return None, f"the workspace daemon refused this client: {reply.get('reason')}"
                time.sleep(0.05)  # a daemon that is stopping (or went away mid-hello): again
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


def native_pump() -> str | None:
    """The native pump (``daemon/pump.c``, about 1 MiB RSS per client instead of pump.py's ~11),
    which scripts/setup.sh builds next to the interpreter as ``codesynapse-pump`` when a C
    compiler is there; None when it is absent (then ``pump.py`` pumps). CODESYNAPSE_PUMP names
    another binary, or ``python`` for pump.py."""
    choice = os.environ.get("CODESYNAPSE_PUMP", "")
    if choice == "python":
        return None
    path = choice or os.path.join(os.path.dirname(sys.executable), "codesynapse-pump")
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


def _pump(sock: socket.socket, first: list[tuple[bytes, bytes]], daemon_pid: Any) -> int:
    """Send the frames read so far, then become the pump (``daemon/pump.py``)."""
    from codesynapse.daemon import pump

    sock.sendall(b"".join(raw for raw, _ in first))
    pending = []
    for _, body in first:
        msg = json.loads(body)
        if isinstance(msg, dict) and isinstance(msg.get("method"), str) and isinstance(msg.get("id"), (int, str)):
            pending.append([msg["id"], msg["method"]])
    state = json.dumps({"pending": pending, "pid": daemon_pid})
    fd = sock.fileno()
    if os.environ.get("CODESYNAPSE_PROXY_EXEC", "1") != "0" and os.name == "posix":
        try:
            os.set_inheritable(fd, True)
            sys.stdout.flush()
            sys.stderr.flush()
            logging.shutdown()
            native = native_pump()
            if native:
                argv = [native, str(fd), str(daemon_pid) if isinstance(daemon_pid, int) else "None"]
                for i, m in pending:
                    argv += [json.dumps(i, ensure_ascii=False), json.dumps(m, ensure_ascii=False)]
                try:
                    os.execv(native, argv)
                except OSError as e:
                    log.warning("the native pump %s could not start (%s); using pump.py", native, e)
            os.execv(sys.executable, [sys.executable, "-I", "-S", pump.__file__, str(fd), state])
        except OSError as e:
            log.warning("the slim pump could not start (%s); pumping in this process", e)
    stdin = os.fdopen(0, "rb", closefd=False)
    stdout = os.fdopen(1, "wb", closefd=False)
    return pump.Pump(sock, stdin, stdout, daemon_pid, {i: m for i, m in pending}).run()


def run_proxy(settings: Settings, *, grace: float, verbose: bool = False) -> int:
    """``codesynapse serve`` (shared mode). Returns the exit status."""
    from codesynapse.workspace import data_dir_for

    first: list[tuple[bytes, bytes]] = []

    def alone(why: str) -> int:
        log.info("serving this client in this process: %s", why)
        from codesynapse.lsp.server import run_stdio  # the proxy itself never loads the server

        rest = io.BufferedReader(io.FileIO(0, "rb", closefd=False))
        return run_stdio(settings, stdin=_Replay(b"".join(raw for raw, _ in first), rest))

    fr = read_first_frame(0)
    if fr is None:
        return alone("no LSP frame on stdin")
    first.append(fr)
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
    return _pump(sock, first, info.get("pid"))
