"""The dense side of memory for one scope: the embedder, the vector store (opened again in
the background when it was down at start), the native hybrid index, the embedding to-do
queue and its background drain.

A vector store that cannot be opened when the service starts (a Milvus server down or
hung) is opened again by a background thread with a growing pause (1 s, doubling, at most
``VECTOR_RETRY_MAX_S``) until it answers or the service closes; requests never wait for
it: recall answers lexically and says so, remember queues the embeddings. Once it opens,
everything missing a vector is queued and drained (the backfill).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from codesynapse.errors import StoreError
from codesynapse.memory.embedder import (
    Embedder,
    EmbeddingRejected,
    EmbeddingTimeout,
    EmbedWorker,
)
from codesynapse.memory.lexical import entity_texts
from codesynapse.memory.settings import MemorySettings
from codesynapse.memory.vectors import MilvusVectors, VectorRow, VectorsUnavailable
from codesynapse.scope import Scope
from codesynapse.store.memory import EntityRecord, MemoryStore, TodoItem

log = logging.getLogger(__name__)

VECTOR_RETRY_FIRST_S = 1.0  # first pause before opening an unavailable vector store again
VECTOR_RETRY_MAX_S = 15.0  # the pause doubles up to this
EMBED_BATCH = 64


class VectorsAttachment(msgspec.Struct, frozen=True, kw_only=True):
    """A vector store opened late (``MemoryService(reopen_vectors=...)``): the adapter, the
    native hybrid index on it (or None) and how to release it when the service closes."""

    vectors: MilvusVectors
    hybrid: Any = None
    release: Callable[[], None] | None = None


class VectorSide:
    """Embedding and vector upkeep of one scope. Thread-safe. ``worker`` runs the
    embedder and vector calls under a timeout (recall's dense leg uses it too)."""

    def __init__(
        self,
        store: MemoryStore,
        scope: Scope,
        settings: MemorySettings,
        vectors: MilvusVectors | None,
        embedder: Embedder | None,
        hybrid: Any = None,
        *,
        unavailable: dict[str, str] | None = None,
        reopen_vectors: Callable[[], VectorsAttachment] | None = None,
    ):
        self.store = store
        self.scope = scope
        self.settings = settings
        self.vectors = vectors
        self.embedder = embedder
        self.hybrid = hybrid
        self.unavailable = dict(unavailable or {})
        self.worker = EmbedWorker()
        self.releases: list[Callable[[], None]] = []  # of vector stores attached late
        self.closed = False
        self.drainer: threading.Thread | None = None
        self.drain_lock = threading.Lock()
        self.stop = threading.Event()
        self.reopener: threading.Thread | None = None
        self.retries = 0  # failed attempts to open the vector store again
        if self.vectors is None and reopen_vectors is not None:
            self.reopener = threading.Thread(
                target=self._reopen_loop, args=(reopen_vectors,), daemon=True,
                name="codesynapse-memory-vectors-retry")
            self.reopener.start()
        if self.embedder is not None and self.vectors is not None:
            self.queue_missing()

    # ---- availability -------------------------------------------------------------------

    @property
    def dense_available(self) -> str:
        """"" when the dense leg can run, else the reason it cannot."""
        if self.embedder is None:
            return self.unavailable.get("embedder", "no embedder is configured")
        if self.vectors is None:
            return self.unavailable.get("vectors", "no vector store is configured")
        return ""

    @property
    def retrying(self) -> bool:
        """The vector store was unavailable at start and is being opened again."""
        return self.vectors is None and self.reopener is not None and self.reopener.is_alive()

    # ---- the vector store opened late ---------------------------------------------------

    def queue_missing(self) -> None:
        """Queue every entity of the scope without an embedding of the current model (and seed
        the native hybrid collection): at open, and when the vector store comes back."""
        try:
            n = self.store.enqueue_missing(self.scope, self.embedder.model_key)
            if n:
                log.info("memory: %d entities queued for embedding with model %s", n,
                         self.embedder.model_key)
            if self.hybrid is not None:
                self._seed_hybrid()
        except StoreError:
            log.warning("memory: could not queue the embedding backfill", exc_info=True)

    def _seed_hybrid(self) -> None:
        """Entities missing from the native hybrid collection get a lexical-only row now
        (the BM25 half must cover every entity) and stay queued for their vector."""
        hkey = self.hybrid.todo_key
        self.store.enqueue_missing(self.scope, hkey)
        todo = self.store.take_embedding_todo(self.scope, hkey, 1_000_000)
        try:
            for start in range(0, len(todo), 1000):
                part = [t.entity_id for t in todo[start:start + 1000]]
                live = self.store.get_entities(self.scope, part)
                self.hybrid.sync_all(self.scope, [live[i] for i in part if i in live])
        except Exception:
            log.warning("memory: native hybrid backfill failed", exc_info=True)

    def _reopen_loop(self, reopen: Callable[[], VectorsAttachment]) -> None:
        """Open the vector store that was unavailable at start: wait, try, double the
        pause (at most VECTOR_RETRY_MAX_S), until it opens or the service closes. Then
        queue every entity without a current vector and drain the queue."""
        pause = VECTOR_RETRY_FIRST_S
        while not self.stop.wait(pause):
            try:
                att = reopen()
            except StoreError as e:  # VectorsUnavailable included
                self.retries += 1
                pause = min(pause * 2, VECTOR_RETRY_MAX_S)
                self.unavailable["vectors"] = (
                    f"vector store unavailable: {e}; retry {self.retries} failed, "
                    f"next in {pause:g} s")
                log.debug("memory: %s", self.unavailable["vectors"])
                continue
            except Exception as e:  # a bug must not kill the retries silently
                self.retries += 1
                pause = min(pause * 2, VECTOR_RETRY_MAX_S)
                log.warning("memory: opening the vector store failed: %s: %s",
                            type(e).__name__, e)
                continue
            self.attach(att)
            return

    def attach(self, att: VectorsAttachment) -> None:
        with self.drain_lock:
            if self.closed:
                if att.release is not None:
                    att.release()
                return
            if att.release is not None:
                self.releases.insert(0, att.release)
            self.hybrid = att.hybrid
            self.vectors = att.vectors  # from here on the dense leg runs
            self.unavailable.pop("vectors", None)
        log.info("memory: the vector store is available again after %d failed retries; "
                 "backfilling", self.retries)
        if self.embedder is None:
            return
        self.queue_missing()
        self.schedule_backfill()

    # ---- embedding ----------------------------------------------------------------------

    def embed_now(self, entities: Sequence[EntityRecord]) -> tuple[int, int, str]:
        """Queue the changed entities for the active model and try to embed them (and any
        older backlog) within the vector timeout. Returns (embedded, pending, note)."""
        reason = self.dense_available
        if reason and self.embedder is not None and self.retrying:
            # queued now, embedded by the backfill once the vector store opens
            key = self.embedder.model_key
            self.store.enqueue_embedding(
                self.scope, key, [TodoItem(entity_id=e.id, version=e.version) for e in entities])
            return 0, self.store.pending_embeddings(self.scope, key), f"embedding deferred: {reason}"
        if reason:
            return 0, 0, f"dense index off: {reason}"
        assert self.embedder is not None
        key = self.embedder.model_key
        self.store.enqueue_embedding(
            self.scope, key, [TodoItem(entity_id=e.id, version=e.version) for e in entities])
        note = ""
        done = 0
        rejected = False
        try:
            done = self.backfill(max_items=max(EMBED_BATCH, len(entities)),
                                 timeout=self.settings.vector_timeout_s)
        except EmbeddingRejected as e:  # the model's output is bad: retrying will not help
            rejected = True
            note = f"embedding deferred: {e}"
            log.info("memory: %s", note)
        except (EmbeddingTimeout, VectorsUnavailable, StoreError) as e:
            note = f"embedding deferred: {e}"
            log.info("memory: %s", note)
        pending = self.store.pending_embeddings(self.scope, key)
        if pending and not rejected:
            self.schedule_backfill()
        return done, pending, note

    def schedule_backfill(self) -> None:
        """Drain the embedding queue in a background thread (one at a time per service).
        A failure is logged once and ends the drain; the queue stays for the next try."""
        with self.drain_lock:
            if self.closed or (self.drainer is not None and self.drainer.is_alive()):
                return

            def drain() -> None:
                try:
                    while not self.closed and self.backfill(max_items=EMBED_BATCH * 4):
                        pass
                except Exception as e:
                    log.warning("memory: background embedding stopped: %s", e)

            self.drainer = threading.Thread(target=drain, name="codesynapse-memory-backfill",
                                            daemon=True)
            self.drainer.start()

    def wait_backfill(self, timeout: float | None = None) -> bool:
        """Wait for a running background drain (tests, benchmarks). True when idle."""
        t = self.drainer
        if t is not None:
            t.join(timeout)
            return not t.is_alive()
        return True

    def backfill(self, max_items: int = 256, timeout: float | None = None) -> int:
        """Drain this scope's embedding to-do queue for the active model (and for the
        native hybrid collection when enabled): embed, write vectors, mark done. Returns
        how many entities were embedded. With ``timeout`` the work runs in the vector
        worker and raises EmbeddingTimeout when it takes longer."""
        if self.dense_available:
            return 0
        assert self.embedder is not None and self.vectors is not None
        emb, vec, hybrid = self.embedder, self.vectors, self.hybrid
        key = emb.model_key
        keys = [key] + ([hybrid.todo_key] if hybrid is not None else [])
        todo = {k: self.store.take_embedding_todo(self.scope, k, max_items) for k in keys}
        wanted = list(dict.fromkeys(t.entity_id for k in keys for t in todo[k]))
        if not wanted:
            return 0
        live = self.store.get_entities(self.scope, wanted)
        recs = [live[i] for i in wanted if i in live]
        in_main = {t.entity_id for t in todo[key]}

        def job() -> int:
            n = 0
            for start in range(0, len(recs), EMBED_BATCH):
                batch = recs[start:start + EMBED_BATCH]
                vecs = emb.embed([" | ".join(entity_texts(r.name, r.aliases, r.type))
                                  for r in batch])
                done = [TodoItem(entity_id=r.id, version=r.version) for r in batch]
                rows = [VectorRow(entity_id=r.id, version=r.version, durable=r.durable,
                                  vector=v, session=r.session) for r, v in zip(batch, vecs) if r.id in in_main]
                vec.upsert(self.scope, key, emb.dim, rows)
                self.store.mark_embedded(self.scope, key,
                                         [d for d in done if d.entity_id in in_main])
                if hybrid is not None:
                    hybrid.upsert(self.scope, batch, vecs)
                    self.store.mark_embedded(self.scope, hybrid.todo_key, done)
                n += len(batch)
            return n

        if timeout is None:
            return job()
        return self.worker.call(job, timeout)

    def requeue_stale(self, stale: list[tuple[str, TodoItem]]) -> None:
        """Vectors of an older entity version: queue the current version again."""
        if not stale or self.embedder is None:
            return
        keys = {"dense": self.embedder.model_key,
                "hybrid": self.hybrid.todo_key if self.hybrid is not None else ""}
        try:
            for leg in ("dense", "hybrid"):
                items = [t for lg, t in stale if lg == leg]
                if items and keys[leg]:
                    self.store.enqueue_embedding(self.scope, keys[leg], items)
        except StoreError:
            log.debug("could not queue stale vectors", exc_info=True)

    def resume_backfill(self) -> None:
        """The vector store answers (again): embed what was remembered while it could not
        (the drain that was running then stopped at the first failure)."""
        if self.embedder is None or (self.drainer is not None and self.drainer.is_alive()):
            return
        try:
            if self.store.pending_embeddings(self.scope, self.embedder.model_key):
                self.schedule_backfill()
        except StoreError:
            log.debug("memory: could not check the embedding backlog", exc_info=True)

    def drop_vectors(self, ids: Sequence[str]) -> None:
        """Remove from every model collection. Failure is logged only: hydration drops
        tombstoned entities anyway."""
        for target in (self.vectors, self.hybrid):
            if target is None:
                continue
            try:
                target.delete(self.scope, list(ids))
            except Exception:
                log.warning("memory: vectors of forgotten entities not deleted yet",
                            exc_info=True)

    def close(self) -> None:
        """Stop the retries and the drain, shut the worker down and release the vector
        stores attached late (before the service's own close steps run)."""
        with self.drain_lock:
            self.closed = True
        self.stop.set()
        if self.reopener is not None:
            self.reopener.join(10)  # an attempt in flight ends within the connect timeout
        if self.drainer is not None:
            self.drainer.join(5)
        self.worker.shutdown()
        for fn in self.releases:
            try:
                fn()
            except Exception:
                log.warning("memory: close step failed", exc_info=True)
