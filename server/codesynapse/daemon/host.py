"""The shared workspace daemon (``codesynapse serve --daemon``, started by the proxy).

One process per data folder: one App (index, store, writer), one live updater (one
watcher), one event loop; every client connection is its own pygls server object
(``lsp.server.CodeSynapseServer`` with ``host`` set) with its own Scope and Session.

Wire: a connection first sends one hello line (JSON) and gets one welcome line back, then
speaks LSP (Content-Length frames) both ways. The hello carries the client's workspace
root, the fingerprint of its server-side settings (tenant, backend and its endpoints: a
client configured for another tenant or store is refused, never served under this one's
scope) and, on the TCP fallback, the token of ``daemon.token``.

The daemon exits ``grace`` seconds after its last client leaves (or after it starts, if
no client comes), or on SIGTERM / SIGINT; then it closes the index cleanly.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import msgspec

from codesynapse.daemon import election
from codesynapse.settings import CLIENT_OPTIONS, Settings

log = logging.getLogger(__name__)

HELLO_TIMEOUT_S = 10.0
PROTOCOL = 1


def settings_fingerprint(settings: Settings) -> str:
    """A digest of the settings a client may not choose (the server's own): equal for a
    client and a daemon that may share a process."""
    own = {k: v for k, v in msgspec.structs.asdict(settings).items()
           if k not in CLIENT_OPTIONS.values()}
    return hashlib.sha256(json.dumps(own, sort_keys=True, default=str).encode()).hexdigest()


def _realpath(root: str) -> str:
    return os.path.realpath(root)


class _SocketWriter:
    """pygls' writer over an asyncio stream (writes after the peer left are dropped)."""

    def __init__(self, writer: asyncio.StreamWriter):
        self.w = writer

    def write(self, data: bytes) -> None:
        if not self.w.is_closing():
            self.w.write(data)

    def close(self) -> None:
        if not self.w.is_closing():
            self.w.close()


class ConnectionLive:
    """One connection's handle on the shared live updater (``ls.live`` on the daemon).

    Its unsaved buffers are its own (``buffers``: path -> bytes): an answer to this
    connection reflects them and the disk for every other file, never another connection's
    buffers (``daemon.views.Views``: the index is switched to the asking connection's view
    when it reflects another). Its findings listeners are removed when it disconnects.
    Everything else is the shared updater's."""

    def __init__(self, shared, host: Host):
        self._shared = shared
        self._host = host
        self.buffers: dict[str, bytes] = {}
        self._subs: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._shared, name)

    def reading(self):
        """The context an answer of this connection runs in (its own view of the index)."""
        return self._host.views.reading(self)

    def buffer_opened(self, rel: str, text: str) -> None:
        self._shared.buffer_opened(rel, text)

    def buffer_changed(self, rel: str, text: str) -> None:
        self._host.views.edit(self, rel, text)

    def buffer_saved(self, rel: str) -> None:
        self._host.views.saved(self, rel)

    def buffer_closed(self, rel: str) -> None:
        self._host.views.closed(self, rel)

    def disk_changed(self, rel: str) -> None:
        self._shared.disk_changed(rel)

    def subscribe(self, fn) -> None:
        self._subs.append(fn)
        self._shared.subscribe(fn)

    def stop(self, join: float = 0.0) -> None:
        """The shared updater runs on for the other connections."""

    def close(self) -> None:
        for fn in self._subs:
            self._shared.unsubscribe(fn)
        self._subs = []
        self._host.views.gone(self)


def _daemon_protocol():
    from lsprotocol import types
    from pygls.protocol.language_server import lsp_method

    from codesynapse.lsp.rpc import CodeSynapseProtocol

    class DaemonProtocol(CodeSynapseProtocol):
        """One connection's protocol: ``exit`` ends this connection, not the daemon (pygls
        calls sys.exit)."""

        @lsp_method(types.EXIT)
        def lsp_exit(self, *args):
            if (user_handler := self.fm.features.get(types.EXIT)) is not None:
                yield user_handler, args, None
            if self.writer is not None:
                self.writer.close()
            stop = getattr(self._server, "_stop_event", None)
            if stop is not None:
                stop.set()

    return DaemonProtocol


class Host:
    def __init__(self, settings: Settings, data_dir: Path, grace: float):
        self.protocol_cls = _daemon_protocol()
        self.settings = settings
        self.data_dir = Path(data_dir)
        self.grace = max(0.0, grace)
        self.fingerprint = settings_fingerprint(settings)
        self.app = None
        self.root: str | None = None
        self.live = None
        self.ready = threading.Event()
        self._app_lock = threading.Lock()
        self._indexing = False
        self.views = None  # daemon.views.Views over the shared live updater
        self.servers: list[Any] = []  # initialized connections (CodeSynapseServer)
        self._servers_lock = threading.Lock()
        self.connections = 0
        self.loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._grace_handle: asyncio.TimerHandle | None = None
        self.lock = election.DaemonLock(self.data_dir)
        self.token: str | None = None
        self.endpoint: dict[str, Any] = {}

    # -- called from the per-connection servers (lsp.lifecycle) -----------------------------
    def open_app(self, root: str, settings: Settings):
        from codesynapse.app import App

        with self._app_lock:
            if self.root is not None and _realpath(root) != self.root:
                raise RuntimeError(f"the shared daemon of this data folder serves {self.root}; give this folder "
                                   "its own dataDir, or start it with `codesynapse serve --no-share`")
            if self.app is None:
                self.app = App(root, settings)
                self.root = _realpath(root)
                self.app.services.clients = self.clients
                return self.app, []
            app = self.app
        ignored = []
        for camel, field in CLIENT_OPTIONS.items():
            if field in ("session_label", "data_dir"):
                continue
            mine, shared = getattr(settings, field), getattr(app.settings, field)
            if mine != shared:
                ignored.append(f"setting {camel}={mine!r} is not applied: the shared workspace daemon runs with "
                               f"{camel}={shared!r} (set by the client that started it; start this client with "
                               f"`codesynapse serve --no-share` for its own process)")
        return app, ignored

    def begin_indexing(self, ls) -> None:
        with self._app_lock:
            first = not self._indexing
            self._indexing = True
        if first:
            from codesynapse.lsp.progress import start_indexing

            start_indexing(ls)  # this connection sees the progress
            from codesynapse.daemon.views import Views

            self.live = ls.live
            self.live.on_policy = self._policy_changed
            self.views = Views(self.live)
        ls.live = ConnectionLive(self.live, self)

    def _policy_changed(self, diagnostics) -> None:
        from codesynapse.lsp.documents import publish_policy_diagnostics

        for ls in self._servers():
            ls.in_loop(publish_policy_diagnostics, ls, diagnostics)

    def attach(self, ls) -> None:
        with self._servers_lock:
            self.servers.append(ls)

    def _servers(self) -> list[Any]:
        with self._servers_lock:
            return list(self.servers)

    def clients(self, asking=None) -> list[dict[str, Any]]:
        return [ls.session.client_entry(asking) for ls in self._servers() if ls.session is not None]

    # -- connections ----------------------------------------------------------------------
    def _welcome_or_refusal(self, hello: Any, peer_uid: int | None = None) -> str | None:
        """None when the hello may join; else why not."""
        if peer_uid is not None and peer_uid != os.getuid():
            return "the connecting process belongs to another user"
        if not isinstance(hello, dict) or hello.get("codesynapse") != PROTOCOL:
            return "not a CodeSynapse client hello (protocol version mismatch)"
        if self.token is not None:
            given = hello.get("token")
            if not isinstance(given, str) or not hmac.compare_digest(given, self.token):
                return "wrong or missing token"
        if hello.get("settings") != self.fingerprint:
            return ("the client's server-side settings (tenant, backend, store endpoints) differ from the "
                    "shared daemon's")
        root = hello.get("root")
        if self.root is not None and (not isinstance(root, str) or _realpath(root) != self.root):
            return "the daemon serves another workspace folder on this data folder"
        return None

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # counted from the first byte: the grace period never ends under a client saying hello
        self.connections += 1
        if self._grace_handle is not None:
            self._grace_handle.cancel()
            self._grace_handle = None
        try:
            line = await asyncio.wait_for(reader.readline(), HELLO_TIMEOUT_S)
            hello = json.loads(line) if line.strip() else None
        except (TimeoutError, ValueError, asyncio.LimitOverrunError, ConnectionError):
            hello = None
        refusal = self._welcome_or_refusal(hello, _peer_uid(writer))
        if refusal is None and self._stop.is_set():
            refusal = "the daemon is stopping"  # the client tries again: a new daemon starts
        if refusal is not None:
            log.warning("daemon: a connection was refused: %s", refusal)
            writer.write(json.dumps({"ok": False, "reason": refusal,
                                     "retry": refusal == "the daemon is stopping"}).encode() + b"\n")
            await _close(writer)
            self.connections -= 1
            if self.connections == 0:
                self._arm_grace()
            return
        if self.root is None:  # the first client's folder is the daemon's: another is refused at hello
            self.root = _realpath(hello["root"]) if isinstance(hello.get("root"), str) else None
        writer.write(json.dumps({"ok": True, "pid": os.getpid()}).encode() + b"\n")
        from codesynapse.lsp.rpc import read_frames
        from codesynapse.lsp.server import build_server

        ls = build_server(self.settings, host=self)
        ls.loop = asyncio.get_running_loop()
        ls._stop_event = threading.Event()
        ls.protocol.set_writer(_SocketWriter(writer))
        try:
            await read_frames(ls._stop_event, reader, ls.protocol)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except Exception:
            log.exception("daemon: a connection failed")
        finally:
            await _close(writer)
            self.connections -= 1
            await asyncio.get_running_loop().run_in_executor(None, self._end_connection, ls)
            if self.connections == 0:
                self._arm_grace()

    def _end_connection(self, ls) -> None:
        """A connection ended: its session (memory, children) closes; the shared App stays.
        It leaves indexStatus's client list last, once its session memory is gone (a client
        that can no longer see it can count on that)."""
        try:
            self._close_connection(ls)
        finally:
            with self._servers_lock:
                if ls in self.servers:
                    self.servers.remove(ls)

    def _close_connection(self, ls) -> None:
        try:
            ls._stop_event.set()
            pool = getattr(ls, "_thread_pool", None)
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)  # requests still running end first
        except Exception:
            log.debug("thread pool shutdown", exc_info=True)
        if isinstance(ls.live, ConnectionLive):
            try:
                ls.live.close()  # its unsaved buffers leave the index
            except Exception:
                log.exception("closing a connection's buffers")
        if ls.session is not None:
            ls.session.close()

    def _arm_grace(self) -> None:
        if self._grace_handle is not None:
            self._grace_handle.cancel()
        log.info("daemon: no client; exiting in %.0f s unless one connects", self.grace)
        self._grace_handle = self.loop.call_later(self.grace, self._grace_over)

    def _grace_over(self) -> None:
        if self.connections == 0:
            log.info("daemon: grace period over with no client; exiting")
            self._stop.set()

    # -- the process ----------------------------------------------------------------------
    async def _serve(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                self.loop.add_signal_handler(sig, self._stop.set)
            except (NotImplementedError, RuntimeError):
                pass
        if election.use_tcp():
            self.token = election.new_token(self.data_dir)
            server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
            port = server.sockets[0].getsockname()[1]
            self.endpoint = {"host": "127.0.0.1", "port": port}
        else:
            path = election.socket_path(self.data_dir)
            try:
                path.unlink()  # a stale socket of a daemon that died (we hold the lock)
            except FileNotFoundError:
                pass
            old = os.umask(0o177)  # the socket is 0600 from the moment it exists
            try:
                server = await asyncio.start_unix_server(self._connection, path=str(path))
            finally:
                os.umask(old)
            os.chmod(path, 0o600)
            self.endpoint = {"socket": str(path)}
        self.lock.write_info({"pid": os.getpid(), **self.endpoint, "started": time.time(), "protocol": PROTOCOL})
        log.info("daemon: serving %s on %s", self.data_dir, self.endpoint)
        self._arm_grace()
        try:
            await self._stop.wait()
        finally:
            server.close()
            if "socket" in self.endpoint:
                try:
                    os.unlink(self.endpoint["socket"])
                except OSError:
                    pass
            self.lock.write_info({})  # no endpoint: nobody connects to a daemon that is leaving

    def run(self) -> int:
        if not self.lock.try_acquire():
            # another daemon holds the lock: give a prober a moment, then leave it the workspace
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                time.sleep(0.05)
                if self.lock.try_acquire():
                    break
            else:
                log.info("daemon: another daemon serves %s; exiting", self.data_dir)
                return 0
        try:
            asyncio.run(self._serve())
        finally:
            self._shutdown()
            self.lock.release()
        return 0

    def _shutdown(self) -> None:
        for ls in self._servers():
            self._end_connection(ls)
        if self.live is not None:
            self.live.stop(join=10.0)
        if self.app is not None:
            self.app.close()
        if self.token is not None:
            try:
                (self.data_dir / election.TOKEN_NAME).unlink()
            except OSError:
                pass


def _peer_uid(writer: asyncio.StreamWriter) -> int | None:
    """The uid of the process at the other end of a unix socket (SO_PEERCRED, Linux), or
    None where it cannot be told: a second check beside the socket's 0600 mode."""
    import socket
    import struct

    sock = writer.get_extra_info("socket")
    if sock is None or getattr(sock, "family", None) != getattr(socket, "AF_UNIX", None) \
            or not hasattr(socket, "SO_PEERCRED"):
        return None
    try:
        _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                             struct.calcsize("3i")))
    except OSError:
        return None
    return uid


async def _close(writer: asyncio.StreamWriter) -> None:
    try:
        writer.close()
        await writer.wait_closed()
    except (ConnectionError, OSError):
        pass


def run_daemon(settings: Settings, data_dir: str | Path, grace: float) -> int:
    from codesynapse import logsetup

    from codesynapse.daemon.logfile import rotation

    data = Path(data_dir)
    # daemon.log (the proxy's stderr for the daemon) rotated by size: daemon/logfile.py
    logsetup.configure_queued(None if logging.getLogger().handlers else logging.INFO,
                              after_write=rotation(data / "daemon.log"))
    data.mkdir(parents=True, exist_ok=True)
    try:
        return Host(settings, data, grace).run()
    finally:
        logsetup.flush()
