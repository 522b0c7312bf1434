"""The HugeGraph transport both HugeGraph stores (graph and memory) use: the Gremlin HTTP
client, schema creation, the ``within(...)`` chunk size and the digest keys of set-valued
indexes."""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import socket
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from codesynapse.errors import StoreError, StoreUnavailable
from codesynapse.store.threads import on_thread_end

IN_CHUNK = 100  # values per within(...) lookup: HugeGraph allows at most 100 conditions per query


# ---- transport ---------------------------------------------------------------------------------

class GremlinClient:
    """Scripts with bindings to a Gremlin server's HTTP endpoint (thread-safe)."""

    def __init__(self, url: str, *, graph: str = "hugegraph", user: str = "", password: str = "",
                 connect_timeout: float = 5.0, timeout: float = 10.0):
        try:
            parts = urlsplit(url)
            host, port = parts.hostname, parts.port
        except ValueError as e:
            raise StoreError(f"invalid HugeGraph Gremlin URL {url!r}: {e}") from e
        if parts.scheme not in ("http", "https") or not host:
            raise StoreError(f"invalid HugeGraph Gremlin URL {url!r}: expected http://host:port (the Gremlin "
                             f"server port of HugeGraph, gremlinserver.url)")
        self.url = url
        self.host = host
        self.port = port or (443 if parts.scheme == "https" else 80)
        self.https = parts.scheme == "https"
        self.path = parts.path or "/"
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        # the graph and its traversal source as HugeGraph registers them (g_<graph>: "__g_")
        self.aliases = {"graph": graph, "g": f"__g_{graph}"}
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if user or password:
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            self.headers["Authorization"] = f"Basic {token}"
        self._local = threading.local()
        self._conns: set[http.client.HTTPConnection] = set()
        self._conns_lock = threading.RLock()  # (an ended thread's connection is closed under it)

    def _conn(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
            conn = cls(self.host, self.port, timeout=self.connect_timeout)
            self._local.conn = conn
            on_thread_end(self._local, self._forget, conn)
            with self._conns_lock:
                self._conns.add(conn)
        return conn

    def _forget(self, conn: http.client.HTTPConnection) -> None:
        """Close ``conn`` and stop tracking it: this thread's after a failure (``_drop``), or
        the connection of a thread that ended (store/threads.py)."""
        with self._conns_lock:
            self._conns.discard(conn)
        try:
            conn.close()
        except OSError:
            pass

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            self._forget(conn)

    def close(self) -> None:
        """Close every thread's connection (a thread that submits again reconnects)."""
        with self._conns_lock:
            conns, self._conns = list(self._conns), set()
        for conn in conns:
            try:
                conn.close()
            except OSError:
                pass
        self._local = threading.local()

    def submit(self, what: str, script: str, bindings: dict[str, Any] | None = None, *,
               timeout: float | None = None) -> list[Any]:
        """Evaluate ``script`` with ``bindings``; the result list. Errors: StoreUnavailable
        (unreachable, timed out, overloaded) or StoreError (everything else), ``from e``."""
        body = json.dumps({"gremlin": script, "bindings": bindings or {}, "language": "gremlin-groovy",
                           "aliases": self.aliases}, allow_nan=False).encode("ascii")
        for attempt in (1, 2):
            conn = self._conn()
            reused = conn.sock is not None
            try:
                if conn.sock is None:
                    conn.connect()
                conn.sock.settimeout(timeout or self.timeout)
                conn.request("POST", self.path, body=body, headers=self.headers)
                resp = conn.getresponse()
                raw = resp.read()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as e:
                # a kept-alive connection the server has closed meanwhile: once more, anew
                self._drop()
                if reused and attempt == 1:
                    continue
                raise StoreUnavailable(f"hugegraph {what} failed: cannot reach {self.url}: "
                                       f"{e.__class__.__name__}: {e}") from e
            except (socket.timeout, TimeoutError) as e:
                self._drop()
                raise StoreUnavailable(f"hugegraph {what} timed out after {timeout or self.timeout:.0f}s "
                                       f"({self.url}): {e}") from e
            except (OSError, http.client.HTTPException) as e:
                self._drop()
                raise StoreUnavailable(f"hugegraph {what} failed: cannot reach {self.url}: "
                                       f"{e.__class__.__name__}: {e}") from e
        if resp.status == 200:
            try:
                return json.loads(raw)["result"]["data"] or []
            except (ValueError, KeyError, TypeError) as e:
                self._drop()
                raise StoreError(f"hugegraph {what}: unreadable answer from {self.url}: {raw[:200]!r}") from e
        self._drop()  # never reuse a connection after an error
        raise _error(what, self.url, resp.status, raw)


class _ServerError(Exception):
    """The Gremlin server's error answer (kept as the ``__cause__`` of our errors)."""


def _error(what: str, url: str, status: int, raw: bytes) -> StoreError:
    try:
        doc = json.loads(raw)
        message, cls = str(doc.get("message", "")), str(doc.get("Exception-Class", ""))
    except ValueError:
        message, cls = raw[:300].decode("utf-8", "replace"), ""
    cause = _ServerError(f"HTTP {status} {cls}: {message}")
    text = f"hugegraph {what} failed: HTTP {status} {cls.rsplit('.', 1)[-1]}: {message}".rstrip(": ")
    if status in (401, 403):
        err: StoreError = StoreError(f"hugegraph {what}: authentication failed (check CODESYNAPSE_HUGEGRAPH_USER/"
                                     f"_PASSWORD): {message}")
    elif status in (502, 503, 504) or "TimeoutException" in cls or "RejectedExecutionException" in cls \
            or "evaluationTimeout" in message or "exceeded the configured" in message:
        err = StoreUnavailable(text)
    else:
        err = StoreError(text)
    err.__cause__ = cause
    return err



def ensure_schema(client: GremlinClient, script: str, what: str) -> None:
    """Create the schema (idempotent). Two processes racing on it may see 'existed'
    errors from HugeGraph's schema lock; the second attempt then finds everything."""
    for attempt in range(3):
        try:
            client.submit(what, script, timeout=max(client.timeout, 120.0))
            return
        except StoreUnavailable:
            raise
        except StoreError as e:
            if attempt == 2 or ("exist" not in str(e).lower() and "lock" not in str(e).lower()):
                raise
            time.sleep(0.5 * (attempt + 1))



def index_key(*parts: str) -> str:
    """A digest standing for a tuple of values in a set-valued index. HugeGraph 1.5 does
    not find set members that contain '!' (its index-id separator) through
    ``ConditionP.contains``, so such indexes hold hex digests; hits are re-checked."""
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


