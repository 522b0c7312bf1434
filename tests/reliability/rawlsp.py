"""A small synchronous LSP client over a real ``codesynapse serve`` process.

The reliability tests need what a pytest-lsp fixture does not give: several daemons at
once, ``kill -9`` at a chosen moment, a restart on the same data folder, many requests in
flight from many threads, and the daemon's pid for RSS sampling. Replies are matched by
id in a reader thread; server-to-client requests are answered with ``null``.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

REQUEST_TIMEOUT = 60.0  # a reply that takes longer is a hang (the request deadline is 10 s)


class RpcError(Exception):
    def __init__(self, error: dict[str, Any]):
        self.code = error.get("code")
        self.data = error.get("data") or {}
        self.message = error.get("message", "")
        super().__init__(f"{self.code}: {self.message}")


class ServerGone(Exception):
    pass


def server_env(data_dir: str | Path, **env: str) -> dict[str, str]:
    e = dict(os.environ)
    e.update({"CODESYNAPSE_DATA_DIR": str(data_dir), **env})
    return e


class RawLsp:
    """``codesynapse serve`` on pipes. Use as a context manager or call ``close()``."""

    def __init__(self, data_dir: str | Path, *, env: dict[str, str] | None = None, log: str | Path | None = None,
                 argv: list[str] | None = None, unread_stderr: bool = False):
        """``unread_stderr``: the daemon's stderr is a pipe that nobody reads (it fills up
        after 64 KiB, as with a client that ignores stderr)."""
        self.data_dir = Path(data_dir)
        self.log_path = Path(log) if log else self.data_dir.parent / f"serve-{os.getpid()}-{id(self)}.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            argv or [sys.executable, "-m", "codesynapse", "serve"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE if unread_stderr else self._log,
            env=server_env(data_dir, **(env or {})), start_new_session=True)
        self._ids = itertools.count(1)
        self._pending: dict[Any, Future] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self.notifications: list[dict[str, Any]] = []
        self.unmatched: list[dict[str, Any]] = []  # responses no request was waiting for (id null…)
        self._reader = threading.Thread(target=self._read_loop, name="rawlsp-reader", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    # -- wire ------------------------------------------------------------------------------
    def _write(self, msg: dict[str, Any] | bytes) -> None:
        body = msg if isinstance(msg, bytes) else json.dumps(msg).encode("utf-8")
        with self._write_lock:
            try:
                self.proc.stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                self.proc.stdin.flush()
            except (BrokenPipeError, ValueError, OSError) as e:
                raise ServerGone(f"server pipe closed: {e}") from e

    def _read_loop(self) -> None:
        out = self.proc.stdout
        try:
            while True:
                length = None
                while True:
                    line = out.readline()
                    if not line:
                        raise EOFError
                    if line in (b"\r\n", b"\n"):
                        break
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = out.read(length or 0)
                msg = json.loads(body)
                self._dispatch(msg)
        except (EOFError, ValueError, OSError):
            pass
        finally:
            with self._lock:
                pending, self._pending = self._pending, {}
            for fut in pending.values():
                if not fut.done():
                    fut.set_exception(ServerGone("the server closed its output"))

    def _dispatch(self, msg: dict[str, Any]) -> None:
        if "method" in msg and "id" in msg:  # a request from the server: answer null
            self._write({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            return
        if "method" in msg:
            self.notifications.append(msg)
            return
        key = json.dumps(msg.get("id"))
        with self._lock:
            fut = self._pending.pop(key, None)
        if fut is None:
            self.unmatched.append(msg)
            return
        if "error" in msg:
            fut.set_exception(RpcError(msg["error"]))
        else:
            fut.set_result(msg.get("result"))

    # -- API -------------------------------------------------------------------------------
    def request_async(self, method: str, params: Any = None, msg_id: Any = None) -> Future:
        msg_id = next(self._ids) if msg_id is None else msg_id
        fut: Future = Future()
        with self._lock:
            self._pending[json.dumps(msg_id)] = fut
        try:
            self._write({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        except ServerGone as e:
            with self._lock:
                self._pending.pop(json.dumps(msg_id), None)
            fut.set_exception(e)
        return fut

    def request(self, method: str, params: Any = None, timeout: float = REQUEST_TIMEOUT) -> Any:
        return self.request_async(method, params).result(timeout)

    def notify(self, method: str, params: Any = None) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    def send_raw(self, body: bytes) -> None:
        self._write(body)

    def request_bytes(self, body: bytes, msg_id: Any) -> Future:
        """Send ``body`` as it is (any bytes) and return the future of the reply whose id
        is ``msg_id``."""
        fut: Future = Future()
        with self._lock:
            self._pending[json.dumps(msg_id)] = fut
        try:
            self._write(body)
        except ServerGone as e:
            with self._lock:
                self._pending.pop(json.dumps(msg_id), None)
            fut.set_exception(e)
        return fut

    def initialize(self, root: Path, **options: Any) -> dict[str, Any]:
        res = self.request("initialize", {
            "processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {},
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
            "initializationOptions": options or None}, timeout=120)
        self.notify("initialized", {})
        return res

    def wait_ready(self, timeout: float = 300.0, files: int = 1) -> dict[str, Any]:
        end = time.monotonic() + timeout
        while True:
            st = self.request("codesynapse/indexStatus", {})
            if st["state"] == "ready" and st["files"] >= files and st["pending"] == 0:
                return st
            if time.monotonic() > end:
                raise AssertionError(f"index not ready within {timeout:.0f} s: {st}")
            time.sleep(0.1)

    def kill9(self, group: bool = True) -> None:
        """SIGKILL the daemon (``group``: and every process of its group, i.e. its
        extraction workers; otherwise only the daemon, as an editor would)."""
        if self.proc.poll() is None:
            try:
                if group:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                else:
                    os.kill(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(30)
        if group:
            self._close_pipes()

    def group_members(self) -> list[int]:
        """Live processes of the daemon's process group (the daemon and its workers)."""
        return group_members(self.proc.pid)

    def reap_group(self) -> None:
        """SIGKILL whatever is left of the daemon's process group, then close the pipes."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.proc.poll() is None:
            self.proc.wait(30)
        self._close_pipes()

    def close(self, timeout: float = 30.0) -> int | None:
        """shutdown + exit; SIGKILL when the daemon does not go."""
        if self.proc.poll() is None:
            try:
                self.request("shutdown", None, timeout=timeout)
                self.notify("exit", None)
                self.proc.wait(timeout)
            except Exception:
                pass
        if self.proc.poll() is None:
            self.kill9()
        self._close_pipes()
        return self.proc.returncode

    def _close_pipes(self) -> None:
        try:
            self.proc.stdin.close()
        except Exception:
            pass
        # the reader ends at EOF, once every process holding the daemon's stdout is gone;
        # closing stdout under a blocked reader would wait for the reader's buffer lock
        self._reader.join(10)
        if not self._reader.is_alive():
            try:
                self.proc.stdout.close()
            except Exception:
                pass
        try:
            if self.proc.stderr is not None:
                self.proc.stderr.close()
        except Exception:
            pass
        try:
            self._log.close()
        except Exception:
            pass

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text("utf-8", "replace").splitlines()[-n:])
        except OSError:
            return ""

    def __enter__(self) -> RawLsp:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def process_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose process group is ``pgid``."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(name))
    return sorted(out)
