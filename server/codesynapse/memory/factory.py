"""``open_memory``: settings → stores → MemoryService for one scope.

Heavy resources are shared per process: one embedder per model (loading ONNX once), and
one Milvus adapter per lite folder or server URI (a milvus-lite folder can be opened by
one process only; see ``vectors.py`` for how other processes join it). Whatever cannot
be opened is recorded, and recall reports it as the reason the dense leg did not run; a
vector store that cannot be opened is opened again by the service in the background
(``MemoryService`` "reopen_vectors"), with a growing pause, until it answers.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from codesynapse.errors import StoreError
from codesynapse.memory.embedder import (
    EmbedderUnavailable,
    FastEmbedder,
    ModelSpec,
    default_model_spec,
)
from codesynapse.memory.hybrid import NativeHybridIndex
from codesynapse.memory.owner import owner_alive, process_owner
from codesynapse.memory.service import (
    MemoryService,
    MemorySettings,
    VectorsAttachment,
    settings_from_dict,
)
from codesynapse.memory.vectors import MilvusVectors
from codesynapse.scope import Scope
from codesynapse.store.memory import MemoryStore
from codesynapse.store.sqlite.memory import SqliteMemoryStore

log = logging.getLogger(__name__)

STORE_FILE = "memory.sqlite3"
LITE_DIR = "milvus"
EMBEDDER_DIR = "embedder"

_lock = threading.Lock()
_embedders: dict[tuple[ModelSpec, str], FastEmbedder] = {}
_vectors: dict[str, list[Any]] = {}  # key → [MilvusVectors, refcount]


def model_spec(s: MemorySettings) -> ModelSpec:
    if s.embedder == "custom":
        if not s.model_file or not s.tokenizer_dir:
            raise EmbedderUnavailable("a custom embedder needs model_file and tokenizer_dir")
        return ModelSpec(name=s.model_name, model_file=s.model_file,
                         tokenizer_dir=s.tokenizer_dir, dim=s.model_dim,
                         pooling=s.model_pooling, normalize=s.model_normalize)
    return default_model_spec()


def get_embedder(s: MemorySettings, cache_dir: Path) -> FastEmbedder:
    spec = model_spec(s)
    key = (spec, str(cache_dir.resolve()))
    with _lock:
        emb = _embedders.get(key)
        if emb is None:
            emb = FastEmbedder(spec, cache_dir, threads=s.embed_threads)
            _embedders[key] = emb
        return emb


def acquire_vectors(s: MemorySettings, data_dir: Path) -> tuple[MilvusVectors, str]:
    if s.vectors == "server":
        if not s.milvus_uri:
            raise StoreError("memory.vectors is 'server' but milvus_uri is empty")
        key = "uri:" + s.milvus_uri
    else:
        key = "lite:" + str((data_dir / LITE_DIR).resolve())
    with _lock:
        entry = _vectors.get(key)
        if entry is None or entry[0].role == "closed":
            if s.vectors == "server":
                v = MilvusVectors(uri=s.milvus_uri, token=s.milvus_token, index_type=s.index_type)
            else:
                v = MilvusVectors(lite_dir=data_dir / LITE_DIR, endpoint_dir=data_dir,
                                  index_type=s.index_type)
            entry = [v, 0]
            _vectors[key] = entry
        entry[1] += 1
        return entry[0], key


def release_vectors(key: str) -> None:
    with _lock:
        entry = _vectors.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            del _vectors[key]
            entry[0].close()


def open_memory(data_dir: Path, scope: Scope,
                settings: dict[str, Any] | MemorySettings | None = None) -> MemoryService:
    """A MemoryService for ``scope`` on ``data_dir`` (``memory.sqlite3``, the milvus-lite
    folder ``milvus/`` and its endpoint file, the assembled model under ``embedder/``).
    ``settings``: a plain dict (see ``settings_from_dict``) or MemorySettings."""
    s = settings if isinstance(settings, MemorySettings) else settings_from_dict(settings)
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    store = open_store(s, data_dir)
    if scope.session:
        try:  # this process owns the session: once it is gone, the next start purges it
            store.claim_session(scope, process_owner(), _now())
        except BaseException:
            store.close()
            raise
    unavailable: dict[str, str] = {}
    on_close: list[Any] = [store.close]

    vectors: MilvusVectors | None = None
    vectors_error: StoreError | None = None
    if s.vectors == "off":
        unavailable["vectors"] = "the vector store is off (setting vectors = off)"
    else:
        try:
            vectors, vkey = acquire_vectors(s, data_dir)
            on_close.append(lambda: release_vectors(vkey))
        except StoreError as e:  # VectorsUnavailable included
            vectors_error = e
            unavailable["vectors"] = f"vector store unavailable: {e}; retrying in the background"
            log.warning("memory: %s", unavailable["vectors"])

    embedder: FastEmbedder | None = None
    if s.embedder == "off":
        unavailable["embedder"] = "the embedder is off (setting embedder = off)"
    else:
        try:
            embedder = get_embedder(s, data_dir / EMBEDDER_DIR)
        except EmbedderUnavailable as e:
            unavailable["embedder"] = f"embedder unavailable: {e}"
            log.warning("memory: %s", unavailable["embedder"])

    hybrid: NativeHybridIndex | None = None
    if s.native_hybrid:
        if vectors is None or embedder is None:
            log.warning("memory: native hybrid needs vectors and an embedder; using the "
                        "in-process path")
        else:
            hybrid = NativeHybridIndex(vectors, embedder.model_key, embedder.dim)

    reopen = None
    if vectors_error is not None and not (s.vectors == "server" and not s.milvus_uri):
        reopen = _reopener(s, data_dir, embedder)  # a missing URI will not appear later
    return MemoryService(store, vectors, embedder, scope, settings=s, hybrid=hybrid,
                         unavailable=unavailable, on_close=list(reversed(on_close)),
                         reopen_vectors=reopen)


def open_store(s: MemorySettings, data_dir: Path) -> MemoryStore:
    """The memory store the settings name (SQLite: ``memory.sqlite3`` in ``data_dir``)."""
    if s.graph_store == "neo4j":
        from codesynapse.store.neo4j.memory import Neo4jMemoryStore

        return Neo4jMemoryStore(s.neo4j_uri, user=s.neo4j_user, password=s.neo4j_password)
    if s.graph_store == "hugegraph":
        from codesynapse.store.hugegraph.memory import HugeGraphMemoryStore

        return HugeGraphMemoryStore(s.hugegraph_url, graph=s.hugegraph_graph, user=s.hugegraph_user,
                                    password=s.hugegraph_password)
    return SqliteMemoryStore(data_dir / STORE_FILE)


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def purge_orphaned_sessions(store: MemoryStore, scope: Scope,
                            alive: Callable[[str], bool] = owner_alive) -> int:
    """Delete the session memory of ``scope``'s tenant and namespace whose owning process
    is gone (killed before it could end its session), or was never recorded (written before
    sessions recorded their owner); ``scope``'s own session and those of running processes
    stay, durable memory is never touched. Returns how many entities were deleted."""
    purged = sessions = 0
    for session, owner in store.session_owners(scope).items():
        if session == scope.session or (owner and alive(owner)):
            continue
        ids = store.purge_session(msgspec.structs.replace(scope, session=session))
        purged += len(ids)
        sessions += 1
    if sessions:
        log.info("memory: deleted %d session entities of %d ended session(s) whose process is gone",
                 purged, sessions)
    return purged


def purge_orphaned_memory(data_dir: Path, scope: Scope,
                          settings: dict[str, Any] | MemorySettings | None = None) -> int:
    """``purge_orphaned_sessions`` at a start, on the memory store the settings name; a
    SQLite store that does not exist yet holds nothing to purge (and is not created)."""
    s = settings if isinstance(settings, MemorySettings) else settings_from_dict(settings)
    data_dir = Path(data_dir)
    if s.graph_store not in ("neo4j", "hugegraph") and not (data_dir / STORE_FILE).exists():
        return 0
    store = open_store(s, data_dir)
    try:
        return purge_orphaned_sessions(store, scope)
    finally:
        store.close()


def _reopener(s: MemorySettings, data_dir: Path, embedder: FastEmbedder | None) -> Any:
    """How the service opens the vector store again after it was unavailable at start."""

    def reopen() -> VectorsAttachment:
        vectors, vkey = acquire_vectors(s, data_dir)
        hybrid = None
        if s.native_hybrid and embedder is not None:
            try:
                hybrid = NativeHybridIndex(vectors, embedder.model_key, embedder.dim)
            except StoreError:
                log.warning("memory: native hybrid unavailable; using the in-process path",
                            exc_info=True)
        return VectorsAttachment(vectors=vectors, hybrid=hybrid,
                                 release=lambda: release_vectors(vkey))

    return reopen
