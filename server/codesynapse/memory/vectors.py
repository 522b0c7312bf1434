"""Memory vectors in Milvus through pymilvus ``MilvusClient``.

Two deployments, one adapter:

- **milvus-lite (embedded default)**: a data folder (``<data>/milvus``). milvus-lite 3.x
  lets one process open a folder (an exclusive ``flock`` on ``<folder>/LOCK``). The first
  process to take the lock becomes the **owner**: it serves the folder over gRPC on a
  free loopback port (``milvus_lite.adapter.grpc.server.start_server_in_thread``, the same
  server pymilvus itself starts for ``.db`` URIs) and records ``{"pid", "host", "port"}``
  in ``<data>/milvus-endpoint.json``. Any later process (a second daemon, the CLI) finds
  the lock taken, reads the endpoint and connects as a client. If the owner goes away, a
  client's next failing call triggers a new election (the lock died with the owner), so
  someone becomes owner again. A client that cannot reach anyone raises
  ``VectorsUnavailable`` and the memory service answers lexically, saying why.
- **Milvus server**: ``uri`` (``http://host:19530``) and optional token.

Collections are separated by model key (model hash + dimension): ``cs_mem_<key>``. Only
the active model's collection is searched; a retired model's collection is never queried
but still receives deletes. Each row: ``id`` (entity id, primary key), ``tenant_d``,
``ns_d``, ``sess_d`` (hex digests from the server-built Scope; ``sess_d`` is "" for durable
memory), ``version`` (entity version embedded), ``has_vec`` and ``vec``.

Filters: milvus-lite 3.x does not implement filter templating (``{param}`` is a parse
error), so for lite the expression holds only server-derived values that are validated
here as 32-hex digests (and entity ids validated as ``mem_`` + 24 hex). Against a Milvus
server the same expression is sent with ``filter_params``. Every hit is re-checked (tenant,
namespace, session digest, ``has_vec``, finite score) before it leaves this module; the
service then re-checks it against the graph store.

milvus-lite stores a missing vector as zeros; this adapter never writes a row without a
validated vector, filters ``has_vec == true`` and drops non-finite scores, so entities
without vectors never take part in the dense leg.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from codesynapse.errors import StoreError, StoreUnavailable
from codesynapse.scope import Scope

log = logging.getLogger(__name__)

COLLECTION_PREFIX = "cs_mem_"
HEX32 = re.compile(r"^[0-9a-f]{32}$")
ENTITY_ID = re.compile(r"^mem_[0-9a-f]{24}$")
MODEL_KEY = re.compile(r"^[0-9a-f]{16}_[0-9]{1,5}$")
ENDPOINT_FILE = "milvus-endpoint.json"
# HNSW search breadth (index_type = HNSW): at 10k rows, ef 128 gave the same top-8 as FLAT for
# 286 of 298 recall-workload queries (2,290 of 2,306 hits; ef 64: 277, ef 256: 288) at about a
# third of FLAT's CPU in milvus-lite (docs/MEMORY_RECALL.md)
HNSW_EF = 128

OUTPUT_FIELDS = ["id", "tenant_d", "ns_d", "sess_d", "version", "has_vec"]


class VectorsUnavailable(StoreUnavailable):
    """The vector backend cannot be reached (or no process serves the lite folder)."""


class VectorHit(msgspec.Struct, frozen=True, kw_only=True):
    entity_id: str
    score: float
    version: int


class VectorRow(msgspec.Struct, frozen=True, kw_only=True):
    entity_id: str
    version: int
    durable: bool
    vector: list[float]
    session: str = ""  # the entity's session when it is a sub-session's parent's ("": the scope's own)


def collection_name(model_key: str) -> str:
    if not MODEL_KEY.match(model_key):
        raise StoreError(f"invalid model key {model_key!r}")
    return COLLECTION_PREFIX + model_key


def scope_digests(scope: Scope) -> tuple[str, str, str]:
    """(tenant, namespace, session) digests, validated as 32 hex digits: the only scope
    values that may ever appear inside a filter expression."""
    t, n, s = scope.tenant_digest, scope.namespace_digest, scope.session_digest
    for v in (t, n, s):
        if not HEX32.match(v):
            raise StoreError("scope digest is not 32 hex digits")
    return t, n, s


def parent_digest(scope: Scope) -> str:
    """The parent session's digest of a sub-session ("" for a top-level session), validated
    like the others."""
    p = scope.parent_session_digest
    if p and not HEX32.match(p):
        raise StoreError("scope digest is not 32 hex digits")
    return p


def row_session_digest(scope: Scope, durable: bool, session: str = "") -> str:
    """``sess_d`` of a row written in ``scope``: "" for durable memory, else the digest of
    the entity's session — the scope's own, or its parent's for a sub-session that embeds
    its parent's entities; any other session is refused."""
    if durable:
        return ""
    if not session or session == scope.session:
        return scope_digests(scope)[2]
    if session == scope.parent_session:
        return parent_digest(scope)
    raise StoreError("refusing a vector row of another session")


def scope_filter(scope: Scope, *, templated: bool, extra: str = "") -> tuple[str, dict[str, Any]]:
    """The scope filter: ``tenant_d``, ``ns_d`` and durable-or-own-session ``sess_d`` (or the
    parent's session, for a sub-session)."""
    t, n, s = scope_digests(scope)
    p = parent_digest(scope)
    if templated:
        expr = 'tenant_d == {t} and ns_d == {n} and (sess_d == "" or sess_d == {s}' + \
            (' or sess_d == {p})' if p else ')')
        params: dict[str, Any] = {"t": t, "n": n, "s": s, **({"p": p} if p else {})}
    else:
        expr = f'tenant_d == "{t}" and ns_d == "{n}" and (sess_d == "" or sess_d == "{s}"' + \
            (f' or sess_d == "{p}")' if p else ')')
        params = {}
    if extra:
        expr = f"{expr} and {extra}"
    return expr, params


def ids_literal(ids: Sequence[str]) -> str:
    for i in ids:
        if not ENTITY_ID.match(i):
            raise StoreError(f"not an entity id: {i!r}")
    return "[" + ", ".join(f'"{i}"' for i in ids) + "]"


def hit_in_scope(entity: dict[str, Any], scope: Scope, *, require_vec: bool = True) -> bool:
    t, n, s = scope_digests(scope)
    return (
        entity.get("tenant_d") == t
        and entity.get("ns_d") == n
        and entity.get("sess_d") in ("", s, *([parent_digest(scope)] if scope.parent_session else []))
        and (entity.get("has_vec") is True or not require_vec)
    )


class MilvusVectors:
    """The dense-vector adapter; see the module docstring. Thread-safe."""

    def __init__(
        self, *, lite_dir: Path | None = None, uri: str | None = None, token: str = "",
        endpoint_dir: Path | None = None, connect_timeout: float = 5.0,
        index_type: str = "FLAT",
    ):
        if (lite_dir is None) == (uri is None):
            raise ValueError("give exactly one of lite_dir or uri")
        self.lite_dir = Path(lite_dir) if lite_dir is not None else None
        self.uri = uri
        self.token = token
        self.endpoint_dir = Path(endpoint_dir) if endpoint_dir else (
            self.lite_dir.parent if self.lite_dir is not None else None)
        self.connect_timeout = connect_timeout
        self.index_type = index_type
        # milvus-lite 3.x rejects ``{param}`` templates; a Milvus server binds them.
        self.templated_filters = uri is not None
        self.role = "server" if uri is not None else "none"
        self._client: Any = None
        self._server: Any = None
        self._db: Any = None
        self._ready: set[str] = set()
        self._lock = threading.RLock()
        self._create_lock = threading.Lock()
        self._last_election = 0.0
        self._joined_port: int | None = None
        self._connect()

    # ---- connection / ownership ---------------------------------------------------------

    @property
    def endpoint_path(self) -> Path | None:
        return self.endpoint_dir / ENDPOINT_FILE if self.endpoint_dir else None

    def _connect(self) -> None:
        from pymilvus import MilvusClient

        with self._lock:
            self._last_election = time.monotonic()
            if self.uri is not None:
                try:
                    self._client = MilvusClient(uri=self.uri, token=self.token,
                                                timeout=self.connect_timeout)
                except Exception as e:
                    raise VectorsUnavailable(f"cannot reach Milvus at {self.uri}: {e}") from e
                return
            assert self.lite_dir is not None
            self.lite_dir.mkdir(parents=True, exist_ok=True)
            if self._try_own():
                return
            self._join_owner()

    def _try_own(self) -> bool:
        from milvus_lite import DataDirLockedError
        from milvus_lite.adapter.grpc.server import start_server_in_thread
        from pymilvus import MilvusClient

        try:
            server, db, port = start_server_in_thread(
                data_dir=str(self.lite_dir), host="127.0.0.1", port=0, max_workers=4)
        except DataDirLockedError:
            return False
        except Exception as e:
            raise VectorsUnavailable(f"cannot open milvus-lite at {self.lite_dir}: {e}") from e
        self._server, self._db = server, db
        self._write_endpoint(port)
        try:
            self._client = MilvusClient(uri=f"http://127.0.0.1:{port}",
                                        timeout=self.connect_timeout)
        except Exception as e:
            self._stop_owner()
            raise VectorsUnavailable(f"cannot connect to own milvus-lite server: {e}") from e
        self.role = "owner"
        self._ready.clear()
        log.info("milvus-lite %s served by this process on 127.0.0.1:%d", self.lite_dir, port)
        return True

    def _write_endpoint(self, port: int) -> None:
        path = self.endpoint_path
        assert path is not None
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"pid": os.getpid(), "host": "127.0.0.1", "port": port,
                       "dataDir": str(self.lite_dir)}, f)
        tmp.replace(path)

    def _join_owner(self) -> None:
        from pymilvus import MilvusClient

        path = self.endpoint_path
        assert path is not None
        deadline = time.monotonic() + self.connect_timeout
        last_err: Exception | None = None
        while time.monotonic() < deadline:
            try:
                info = json.loads(path.read_text())
                port = int(info["port"])
                pid = int(info["pid"])
                if not 0 < port < 65536 or info.get("host") != "127.0.0.1":
                    raise ValueError("bad endpoint")
                client = MilvusClient(uri=f"http://127.0.0.1:{port}",
                                      timeout=max(0.5, deadline - time.monotonic()))
                client.list_collections(timeout=max(0.5, deadline - time.monotonic()))
                self._client = client
                self._joined_port = port
                self.role = "client"
                self._ready.clear()
                log.info("milvus-lite %s is served by pid %d; connected as a client",
                         self.lite_dir, pid)
                return
            except Exception as e:  # endpoint not written yet, owner starting or gone
                last_err = e
                # the owner may have died: its lock died with it, so try to take over
                if self._try_own():
                    return
                time.sleep(0.1)
        raise VectorsUnavailable(
            f"milvus-lite folder {self.lite_dir} is locked by another process that cannot "
            f"be reached: {last_err}"
        )

    def _owner_gone(self) -> bool:
        """As a client: the endpoint we joined is no longer served (file removed or
        rewritten, or its process has exited)."""
        path = self.endpoint_path
        try:
            info = json.loads(path.read_text()) if path is not None else {}
            pid = int(info["pid"])
            if info.get("port") != self._joined_port:
                return True
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        except (OSError, ValueError, KeyError, TypeError):
            return True
        return False

    def _reelect(self, *, force: bool = False) -> None:
        """As a client: connect again, becoming owner if the owner is gone. Without
        ``force`` at most once a second."""
        if self.role != "client":
            return
        if not force and time.monotonic() - self._last_election < 1.0:
            return
        with self._lock:
            old = self._client
            self._client = None
            try:
                if old is not None:
                    old.close()
            except Exception:
                log.debug("closing a stale Milvus client failed", exc_info=True)
            self._connect()

    def _check_owner(self) -> None:
        if self.role == "client" and self._owner_gone():
            log.info("the milvus-lite owner of %s is gone; re-electing", self.lite_dir)
            self._reelect(force=True)

    def _call(self, what: str, fn: Any) -> Any:
        self._check_owner()
        client = self._client
        if client is None:
            try:
                self._connect()
            except VectorsUnavailable:
                raise
            client = self._client
        try:
            return fn(client)
        except StoreError:
            raise
        except Exception as e:
            if self.role == "client":
                try:
                    self._reelect()
                except VectorsUnavailable:
                    log.debug("re-election failed", exc_info=True)
            msg = str(e)
            if "load()" in msg or "not loaded" in msg:
                self._ready.clear()  # a new owner has not loaded it yet: next call loads
            if "UNAVAILABLE" in msg or "Connect" in msg or "DEADLINE" in msg:
                raise VectorsUnavailable(f"Milvus {what} failed: {msg}") from e
            raise StoreError(f"Milvus {what} failed: {msg}") from e

    def filtered(self, what: str, build: Any) -> Any:
        """Run ``build(templated)(client)``: with filter templating when this backend is
        believed to support it, and once more with literal server-derived digests if the
        backend rejects the template (milvus-lite served by URI does)."""
        try:
            return self._call(what, build(self.templated_filters))
        except StoreError as e:
            msg = str(e)
            if not self.templated_filters or not ("'{'" in msg or "template" in msg.lower()):
                raise
            log.info("Milvus at %s does not bind filter parameters; using validated "
                     "literal digests", self.uri)
            self.templated_filters = False
            return self._call(what, build(False))

    def _stop_owner(self) -> None:
        if self._server is not None:
            try:
                self._server.stop(grace=1)
            except Exception:
                log.debug("stopping milvus-lite server failed", exc_info=True)
        if self._db is not None:
            try:
                self._db.close()
            except Exception:
                log.debug("closing milvus-lite failed", exc_info=True)
        path = self.endpoint_path
        if path is not None:
            try:
                if json.loads(path.read_text()).get("pid") == os.getpid():
                    path.unlink()
            except (OSError, ValueError):
                pass
        self._server = self._db = None

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                try:
                    self._client.close()
                except Exception:
                    log.debug("closing Milvus client failed", exc_info=True)
                self._client = None
            if self.role == "owner":
                self._stop_owner()
            self.role = "closed"

    # ---- collections --------------------------------------------------------------------

    def ensure_collection(self, model_key: str, dim: int) -> str:
        name = collection_name(model_key)
        self._check_owner()
        if name in self._ready:
            return name

        def op(c: Any) -> None:
            from pymilvus import DataType

            if not c.has_collection(name):
                schema = c.create_schema(auto_id=False, enable_dynamic_field=False)
                schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=40)
                schema.add_field("tenant_d", DataType.VARCHAR, max_length=32)
                schema.add_field("ns_d", DataType.VARCHAR, max_length=32)
                schema.add_field("sess_d", DataType.VARCHAR, max_length=32)
                schema.add_field("version", DataType.INT64)
                schema.add_field("has_vec", DataType.BOOL)
                schema.add_field("vec", DataType.FLOAT_VECTOR, dim=dim)
                ip = c.prepare_index_params()
                ip.add_index(field_name="vec", index_type=self.index_type, metric_type="COSINE")
                try:
                    c.create_collection(name, schema=schema, consistency_level="Strong")
                    # sync=False: pymilvus' index wait uses AllocTimestamp (not in lite)
                    c.create_index(name, ip, sync=False)
                except Exception:
                    if not c.has_collection(name):  # not a lost race with another process
                        raise
            c.load_collection(name)

        with self._create_lock:  # one creator per process; other processes: see above
            if name not in self._ready:
                self._call("create collection", op)
                self._ready.add(name)
        return name

    def collections(self) -> list[str]:
        names = self._call("list collections", lambda c: c.list_collections())
        return sorted(n for n in names if n.startswith(COLLECTION_PREFIX))

    # ---- rows ---------------------------------------------------------------------------

    def upsert(self, scope: Scope, model_key: str, dim: int, rows: Sequence[VectorRow]) -> int:
        if not rows:
            return 0
        name = self.ensure_collection(model_key, dim)
        t, n, s = scope_digests(scope)
        data = []
        for r in rows:
            if not ENTITY_ID.match(r.entity_id):
                raise StoreError(f"not an entity id: {r.entity_id!r}")
            if len(r.vector) != dim or not all(math.isfinite(x) for x in r.vector) or not any(
                    r.vector):
                raise StoreError(f"refusing an invalid vector for {r.entity_id}")
            data.append({"id": r.entity_id, "tenant_d": t, "ns_d": n,
                         "sess_d": row_session_digest(scope, r.durable, r.session), "version": int(r.version),
                         "has_vec": True, "vec": r.vector})
        self._call("upsert", lambda c: c.upsert(name, data))
        self.settle(name)
        return len(data)

    def settle(self, name: str) -> None:
        """milvus-lite only: flush the memtable after a write. Its memtable (flushed by
        itself only at 128 MiB) is searched row by row, ~1.5 s at 10k rows on our test
        machine versus ~0.1 s once flushed to segments, which it then compacts in the
        background. A Milvus server seals segments itself, so nothing is done there."""
        if self.uri is not None:
            return
        try:
            self._call("flush", lambda c: c.flush(name))
        except StoreError:
            log.debug("milvus-lite flush of %s failed", name, exc_info=True)

    def search(
        self, scope: Scope, model_key: str, dim: int, vector: Sequence[float], *,
        limit: int = 10, timeout: float | None = None,
    ) -> list[VectorHit]:
        """Nearest rows in the active collection, inside the scope; every hit re-checked."""
        name = self.ensure_collection(model_key, dim)
        sp: dict[str, Any] = {"metric_type": "COSINE"}
        if self.index_type == "HNSW":
            sp["params"] = {"ef": HNSW_EF}

        def build(templated: bool) -> Any:
            expr, params = scope_filter(scope, templated=templated, extra="has_vec == true")
            kwargs: dict[str, Any] = {"filter_params": params} if params else {}
            return lambda c: c.search(
                name, data=[list(vector)], anns_field="vec", limit=limit, filter=expr,
                output_fields=OUTPUT_FIELDS, timeout=timeout,
                search_params=sp, consistency_level="Strong", **kwargs)

        res = self.filtered("search", build)
        hits: list[VectorHit] = []
        for h in (res[0] if res else []):
            ent = h.get("entity") or {}
            score = float(h.get("distance", float("nan")))
            eid = ent.get("id", h.get("id"))
            if not (isinstance(eid, str) and ENTITY_ID.match(eid)):
                continue
            if not hit_in_scope(ent, scope) or not math.isfinite(score):
                log.warning("dropped a vector hit outside the scope or without a valid score")
                continue
            hits.append(VectorHit(entity_id=eid, score=score, version=int(ent["version"])))
        return hits

    def delete(self, scope: Scope, entity_ids: Sequence[str]) -> None:
        """Remove the entities (in this scope) from every model collection, retired ones
        included."""
        ids = list(dict.fromkeys(entity_ids))
        if not ids:
            return
        extra = f"id in {ids_literal(ids)}"
        for name in self.collections():
            def build(templated: bool, name: str = name) -> Any:
                expr, params = scope_filter(scope, templated=templated, extra=extra)
                kwargs: dict[str, Any] = {"filter_params": params} if params else {}
                return lambda c: c.delete(name, filter=expr, **kwargs)

            self.filtered("delete", build)
            self.settle(name)

    def count(self, model_key: str) -> int:
        name = collection_name(model_key)

        def op(c: Any) -> int:
            if not c.has_collection(name):
                return 0
            rows = c.query(name, filter="", output_fields=["count(*)"])
            return int(rows[0]["count(*)"]) if rows else 0

        return self._call("count", op)
