"""A small LSP client over a ``codesynapse serve`` subprocess: what the MCP bridge speaks to
the daemon.

The bridge does not import the daemon's internals: it starts ``codesynapse serve`` (which
is, or proxies to, the workspace daemon), initializes it for one workspace folder and sends
it the same custom requests an editor sends. Framing is LSP's (``Content-Length`` headers).
Requests the server sends (``window/workDoneProgress/create``, ``workspace/configuration``)
get an empty answer; ``window/showMessage`` is logged. The subprocess's stderr is read line by
line into this process's log: nobody else reads it, and a pipe nobody reads stops the writer
once it is full.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: A request to the daemon waits at most this long (its own deadline is 10 s per request; the
#: first index may take longer than that on a large tree, but the daemon answers within it).
REQUEST_TIMEOUT_S = 30.0
_MAX_FRAME = 64 * 1024 * 1024


_LEVELS = {"DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARNING": logging.WARNING, "ERROR": logging.ERROR,
           "CRITICAL": logging.CRITICAL}


def _level_of(line: str) -> int:
    """The level a daemon log line was written at (its first level word among the first
    few), WARNING for anything else (a traceback line, a message of a library)."""
    for word in line.split(None, 4)[:4]:
        if word in _LEVELS:
            return _LEVELS[word]
    return logging.WARNING


class DaemonError(Exception):
    """The daemon answered a request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    @property
    def kind(self) -> str:
        if self.code == -32602:
            return "InvalidParams"
        if self.code == -32803:
            return "RequestFailed"
        if self.code == -32600:
            return "InvalidRequest"
        if self.code == -32601:
            return "MethodNotFound"
        return f"error {self.code}"


class DaemonGone(Exception):
    """The daemon process ended or its pipe broke."""


def serve_command() -> list[str]:
    """``codesynapse serve`` run by this interpreter (the bridge and the daemon are one
    installation)."""
    return [sys.executable, "-m", "codesynapse", "serve"]


class LspConnection:
    def __init__(self, root: Path, *, init_options: dict[str, Any] | None = None,
                 command: list[str] | None = None, env: dict[str, str] | None = None,
                 client_name: str = "codesynapse-mcp"):
        self.root = root
        self.init_options = init_options or {}
        self.command = command or serve_command()
        self.env = env
        self.client_name = client_name
        self.proc: asyncio.subprocess.Process | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future] = {}
        self._tasks: list[asyncio.Task] = []
        self._write_lock = asyncio.Lock()
        self.initialize_result: dict[str, Any] | None = None
        self.exit_reason = ""
        self._closing = False

    # ---- lifecycle -------------------------------------------------------------------
    async def start(self) -> dict[str, Any]:
        from codesynapse import __version__

        self.proc = await asyncio.create_subprocess_exec(
            *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=self.env if self.env is not None else dict(os.environ),
            limit=_MAX_FRAME)
        self._tasks = [asyncio.create_task(self._read_loop(), name="codesynapse-lsp-read"),
                       asyncio.create_task(self._drain_stderr(), name="codesynapse-lsp-stderr")]
        uri = self.root.as_uri()
        params = {
            "processId": os.getpid(),
            "clientInfo": {"name": self.client_name, "version": __version__},
            "rootUri": uri,
            "workspaceFolders": [{"uri": uri, "name": self.root.name}],
            "capabilities": {"general": {"positionEncodings": ["utf-16"]}},
            "initializationOptions": self.init_options or None,
        }
        self.initialize_result = await self.request("initialize", params)
        await self.notify("initialized", {})
        return self.initialize_result

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None and not self.exit_reason

    async def close(self, timeout: float = 10.0) -> None:
        """shutdown + exit, then wait for the process (killed if it does not end)."""
        proc = self.proc
        if proc is None:
            return
        self._closing = True
        if self.alive:
            try:
                await asyncio.wait_for(self.request("shutdown", None), timeout)
                await self.notify("exit", None)
            except Exception:
                log.debug("shutdown of the daemon connection", exc_info=True)
        try:
            if proc.stdin is not None:
                proc.stdin.close()
        except Exception:
            pass
        try:
            await asyncio.wait_for(proc.wait(), timeout)
        except asyncio.TimeoutError:
            log.warning("codesynapse serve (pid %d) did not exit; killing it", proc.pid)
            proc.kill()
            await proc.wait()
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # ---- messages --------------------------------------------------------------------
    async def request(self, method: str, params: Any, timeout: float = REQUEST_TIMEOUT_S) -> Any:
        if not self.alive:
            raise DaemonGone(self.exit_reason or "the daemon is not running")
        rid = next(self._ids)
        fut = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        try:
            await self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            return await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            raise DaemonError(-32803, f"{method}: no answer from the daemon within {timeout:.0f} s",
                              {"kind": "deadline"}) from None
        finally:
            self._pending.pop(rid, None)

    async def notify(self, method: str, params: Any) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def _send(self, msg: dict[str, Any]) -> None:
        body = json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        proc = self.proc
        assert proc is not None and proc.stdin is not None
        async with self._write_lock:
            try:
                proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
                await proc.stdin.drain()
            except (BrokenPipeError, ConnectionResetError) as e:
                self._gone(f"the daemon's input is closed ({e.__class__.__name__})")
                raise DaemonGone(self.exit_reason) from e

    async def _read_loop(self) -> None:
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        out = proc.stdout
        try:
            while True:
                length = None
                while True:
                    line = await out.readline()
                    if not line:
                        raise EOFError
                    line = line.strip()
                    if not line:
                        break
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                if length is None or length > _MAX_FRAME:
                    raise ValueError(f"bad frame header (Content-Length {length})")
                body = await out.readexactly(length)
                await self._dispatch(json.loads(body))
        except (EOFError, asyncio.IncompleteReadError):
            rc = await proc.wait()
            self._gone(f"the daemon exited (code {rc})")
        except asyncio.CancelledError:
            raise
        except Exception as e:
            log.exception("reading from the daemon failed")
            self._gone(f"the daemon's output could not be read: {e}")

    def _gone(self, reason: str) -> None:
        if not self.exit_reason:
            self.exit_reason = reason
            log.log(logging.DEBUG if self._closing else logging.WARNING, "%s", reason)
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(DaemonGone(reason))

    async def _dispatch(self, msg: dict[str, Any]) -> None:
        if "method" in msg:
            method = msg["method"]
            if method == "window/showMessage" or method == "window/logMessage":
                p = msg.get("params") or {}
                level = logging.WARNING if p.get("type", 4) <= 2 else logging.INFO
                log.log(level, "daemon: %s", str(p.get("message", ""))[:2000])
            if "id" in msg:  # a request from the server: answer it (nothing here needs more)
                result: Any = None
                if method == "workspace/configuration":
                    result = [None] * len((msg.get("params") or {}).get("items") or [])
                await self._send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
            return
        fut = self._pending.get(msg.get("id"))
        if fut is None or fut.done():
            return
        err = msg.get("error")
        if err is not None:
            fut.set_exception(DaemonError(int(err.get("code", -32603)), str(err.get("message", "")),
                                          err.get("data")))
        else:
            fut.set_result(msg.get("result"))

    async def _drain_stderr(self) -> None:
        proc = self.proc
        assert proc is not None and proc.stderr is not None
        while True:
            try:
                line = await proc.stderr.readline()
            except ValueError:  # a line longer than the limit: skip what was read
                continue
            if not line:
                return
            text = line.decode("utf-8", "replace").rstrip()
            if text:  # the daemon's own log records: passed on at their level
                log.log(_level_of(text), "daemon: %s", text[:2000])
