"""The CodeSynapse language server (pygls 2, stdio).

On ``initialize`` it builds the App for the workspace root and the immutable Scope for this
connection, then opens or builds the index in the background with work-done progress.
Custom requests run in a worker thread under the 10 s deadline.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lsprotocol import converters, types
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdinAsyncReader, StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage

from codesynapse import __version__, logsetup, metrics
from codesynapse.app import App
from codesynapse.errors import CodeSynapseError, DeadlineExceeded
from codesynapse.lsp import context, documents, lifecycle, memory, navigation, subsessions
from codesynapse.lsp.errors import JsonRpcRequestFailed, to_jsonrpc
from codesynapse.lsp.progress import start_indexing
from codesynapse.lsp.rpc import CodeSynapseProtocol, read_frames
from codesynapse.methods import METHODS, call_method
from codesynapse.scope import Scope
from codesynapse.settings import Settings, load_settings

log = logging.getLogger(__name__)

DEADLINE_S = 10.0


def keep_dicts_converter():
    """Like pygls' default converter, but custom-request params stay plain dicts (the
    default turns them into namedtuples, renaming keys that are not identifiers)."""
    conv = converters.get_converter()
    conv.register_structure_hook(JsonRPCRequestMessage, lambda obj, cls: cls(**obj))
    conv.register_structure_hook(JsonRPCResponseMessage, lambda obj, cls: cls(**obj))
    conv.register_structure_hook(JsonRPCNotification, lambda obj, cls: cls(**obj))
    return conv


class CodeSynapseServer(LanguageServer):
    def __init__(self, settings: Settings | None = None, host: Any = None):
        super().__init__("codesynapse", __version__,
                         protocol_cls=getattr(host, "protocol_cls", None) or CodeSynapseProtocol,
                         converter_factory=keep_dicts_converter,
                         text_document_sync_kind=types.TextDocumentSyncKind.Full, max_workers=8)
        self.base_settings = settings or load_settings()
        self.host = host  # the shared daemon (codesynapse.daemon.host.Host), None in one-process mode
        self.app = None  # set on initialize
        self.scope: Scope | None = None
        self.session = None  # codesynapse.daemon.session.Session, set on initialize
        self.ready = host.ready if host is not None else threading.Event()
        self.live = None  # LiveUpdater
        self.loop = None  # the event loop that owns stdout; set on initialize

    # -- what differs between one process per client and the shared daemon ------------------
    def open_app(self, root: str, settings: Settings):
        """The App of ``root``: this process' own, or the daemon's shared one. Returns
        (app, notices about settings that were not applied)."""
        if self.host is not None:
            return self.host.open_app(root, settings)
        return App(root, settings), []

    def begin_indexing(self) -> None:
        if self.host is not None:
            self.host.begin_indexing(self)
            return
        start_indexing(self)

    def stop_background(self) -> None:
        """On ``shutdown``: stop the live updater, unless other clients share it."""
        if self.host is None and self.live is not None:
            self.live.stop()

    def clients(self, asking: Scope | None = None) -> list[dict[str, Any]]:
        """indexStatus' clients: every connection of this process (of the daemon when shared)."""
        if self.host is not None:
            return self.host.clients(asking)
        return [self.session.client_entry(asking)] if self.session is not None else []

    def start_io(self, stdin=None, stdout=None) -> None:
        """pygls' stdio server with our read loop (``rpc.read_frames``: a frame that cannot
        be decoded is still answered) and stdin read on a thread of its own, so that busy
        request workers never delay reading the next message."""
        self._stop_event = threading.Event()
        stdin_reader = ThreadPoolExecutor(1, thread_name_prefix="codesynapse-stdin")
        reader = StdinAsyncReader(stdin or sys.stdin.buffer, stdin_reader)
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(read_frames(self._stop_event, reader, self.protocol))
        except BrokenPipeError:
            log.error("the connection to the client is lost; shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            stdin_reader.shutdown(wait=False, cancel_futures=True)
            self.shutdown()

    def in_loop(self, fn, *args) -> None:
        """Run ``fn`` on the event loop thread: every message to the client is written from
        there, so worker threads never interleave bytes on stdout."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        def run():
            try:
                fn(*args)
            except Exception:
                log.debug("sending to the client failed", exc_info=True)
        loop.call_soon_threadsafe(run)

    def require_app(self):
        if self.app is None:
            raise JsonRpcRequestFailed(getattr(self, "init_error", None)
                                       or "the server has not been initialized with a workspace folder")
        if self.session is not None and self.session.closed:  # a sub-session whose parent ended
            raise JsonRpcRequestFailed("this session has ended: a sub-session ends with its parent session",
                                       data={"kind": "SessionEnded"})
        return self.app

    async def run_method(self, method: str, params: Any, started: float | None = None) -> Any:
        """Run one custom request in a worker thread under the deadline, counted from
        ``started`` (the loop time the request arrived at) when given."""
        app = self.require_app()
        loop = asyncio.get_running_loop()
        budget = DEADLINE_S + 0.5 - (loop.time() - started if started is not None else 0.0)
        if budget <= 0:
            raise to_jsonrpc(DeadlineExceeded(DEADLINE_S))
        m = METHODS.get(method)
        fn = self._in_view(call_method) if m is not None and m.reads == "graph" else call_method
        try:
            return await asyncio.wait_for(
                loop.run_in_executor(self.thread_pool, fn, app, method, params, self.scope), budget)
        except asyncio.TimeoutError as e:
            metrics.deadline_hit(method)
            raise to_jsonrpc(DeadlineExceeded(DEADLINE_S)) from e
        except JsonRpcException:
            raise
        except Exception as e:  # every failure is a JSON-RPC error, never a crash
            if not isinstance(e, CodeSynapseError):
                log.exception("%s failed", method)
            raise to_jsonrpc(e) from e

    async def run_read(self, fn, *args) -> Any:
        """``run_sync`` for a request that reads the graph: all of its reads see one committed
        version of it (the snapshot ``methods.call_method`` gives every custom request)."""
        def read():
            with self.app.services.snapshot():
                return fn(*args)
        return await self.run_sync(self._in_view(read))

    def _in_view(self, fn):
        """On the shared daemon, ``fn`` runs on an index that reflects this connection's
        unsaved buffers and the disk for every other file (daemon/views.py)."""
        reading = getattr(self.live, "reading", None) if self.host is not None else None
        if reading is None:
            return fn

        own = set(getattr(self.live, "buffers", {}))  # taken on the event loop, which edits them

        def run(*args):
            asking = self.app.asking  # freshness names this connection's buffers only
            asking.buffers = own
            try:
                with reading():
                    return fn(*args)
            finally:
                asking.buffers = None
        return run

    async def run_sync(self, fn, *args) -> Any:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self.thread_pool, fn, *args)
        except JsonRpcException:
            raise
        except Exception as e:
            if not isinstance(e, CodeSynapseError):
                log.exception("request failed")
            raise to_jsonrpc(e) from e


def build_server(settings: Settings | None = None, host: Any = None) -> CodeSynapseServer:
    server = CodeSynapseServer(settings, host)
    lifecycle.register(server)
    context.register(server)
    documents.register(server)
    navigation.register(server)
    memory.register(server)
    subsessions.register(server)
    return server


def protocol_stdout() -> Any:
    """The protocol stream on a descriptor of its own, with descriptor 1 pointed at stderr:
    nothing else (a stray print, C code, a child process that inherits descriptor 1, such as
    a spawned extraction worker before its initializer runs) can write into the protocol.
    None when there is no stdout to move (pygls' default then)."""
    try:
        sys.stdout.flush()
        fd = os.dup(1)
        os.dup2(2, 1)
    except (OSError, ValueError, AttributeError):
        return None
    return os.fdopen(fd, "wb")


def run_stdio(settings: Settings | None = None, stdin: Any = None) -> int:
    """One process serving one client over stdio (``serve --no-share``, or the proxy's
    fallback, which hands over what it has already read from stdin as ``stdin``)."""
    # bounded records through a queue: the event loop never waits for stderr
    logsetup.configure_queued(None if logging.getLogger().handlers else logging.INFO)
    out = protocol_stdout()
    server = build_server(settings)
    try:
        server.start_io(stdin=stdin, stdout=out)
        shutdown(server)
    finally:
        logsetup.flush()
    return 0


def shutdown(server: CodeSynapseServer) -> None:
    """Stop background work and wait for running requests before closing the stores:
    closing a SQLite connection under a running query can crash the process."""
    if server.live is not None:
        server.live.stop(join=10.0)
    pool = getattr(server, "_thread_pool", None)  # do not create one just to stop it
    try:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    except Exception:
        log.debug("thread pool shutdown", exc_info=True)
    if server.session is not None:
        server.session.close()
    if server.app is not None:
        server.app.close()
