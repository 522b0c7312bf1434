"""MemoryService: remember / recall / forget / list for one immutable Scope.

Recall plan (DESIGN.md "Retrieval", "Budgets and limits"):

1. exact: current names, aliases and ids equal to the query or one of its words;
2. lexical: in-process BM25 over the names/aliases/types visible to this scope (≤ 10);
3. dense: the query embedded locally and searched in Milvus (≤ 10); embedding + search
   share one 2 s timeout in a worker thread; no embedder, a rejected vector, an
   unreachable store or a timeout skips the leg and ``legs.dense.reason`` says why;
4. lexical and dense ranks fused with RRF (k = 60); exact hits come first;
5. hydration from the graph store: only live entities of this tenant/namespace that are
   durable or of this session survive; a lexical or dense hit whose indexed version is
   not the entity's current version (re-aliased, renamed, re-typed) is dropped; ≤ 8 kept;
   roots are returned even without facts;
6. facts: ≤ 2 hops, ≤ 80 facts, both endpoints live and visible;
7. the complete JSON ≤ 32 KiB (facts dropped first, then entries), ``truncated`` and
   ``omitted`` say so; ``tokens`` = ceil(resultBytes / 4) of the final JSON, its own
   digits included; an overall 10 s deadline.

A vector store that cannot be opened when the service starts (a Milvus server down or
hung) is opened again by a background thread with a growing pause (1 s, doubling, at most
``VECTOR_RETRY_MAX_S``) until it answers or the service closes; requests never wait for
it: recall answers lexically and says so, remember queues the embeddings. Once it opens,
everything missing a vector is queued and drained (the backfill).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any, TypeVar

import msgspec

from codesynapse.context.budget import tokens_for
from codesynapse.errors import (
    CodeSynapseError,
    DeadlineExceeded,
    InvalidParams,
    StoreError,
)
from codesynapse.memory.anchors import hydrate, resolve_anchors
from codesynapse.memory.embedder import (
    Embedder,
    EmbeddingRejected,
    EmbeddingTimeout,
    EmbedWorker,
)
from codesynapse.memory.lexical import LexicalIndex, entity_texts
from codesynapse.memory.models import (
    MEMORY_NOTICE,
    RECALL_MAX_BYTES,
    RECALL_MAX_ENTRIES,
    RECALL_MAX_FACTS,
    RECALL_MAX_HOPS,
    Entry,
    FactOut,
    ForgetParams,
    ForgetResult,
    LegReport,
    Legs,
    ListedEntity,
    ListParams,
    ListResult,
    Omitted,
    RecallParams,
    RecallResult,
    RememberedEntity,
    RememberParams,
    RememberResult,
)
from codesynapse.memory.rrf import RRF_K, rrf
from codesynapse.memory.vectors import MilvusVectors, VectorRow, VectorsUnavailable
from codesynapse.scope import Scope
from codesynapse.store.memory import EntityRecord, FactRecord, MemoryStore, TodoItem

log = logging.getLogger(__name__)

S = TypeVar("S", bound=msgspec.Struct)

LEG_LIMIT = 10
VECTOR_RETRY_FIRST_S = 1.0  # first pause before opening an unavailable vector store again
VECTOR_RETRY_MAX_S = 15.0  # the pause doubles up to this
EXACT_LIMIT = 10
MAX_EXACT_TERMS = 32
EMBED_BATCH = 64
_TERM_STRIP = "\"'`()[]{}<>,;:!?"
NO_MATCH_HINT = (
    "no memory matched; try an entity's exact name or alias, other words, or "
    "codesynapse/memory/list to browse"
)
HOW_TO_GET_MORE = (
    "ask a narrower query, recall one entity by its exact name, or lower hops; "
    "limits are 8 entries, 2 hops, 80 facts and 32 KiB"
)


class MemorySettings(msgspec.Struct, frozen=True, kw_only=True):
    """Memory settings; ``settings_from_dict`` fills them from user settings, warning on
    and replacing bad values."""

    vectors: str = "lite"  # "lite" | "server" | "off"
    milvus_uri: str = ""
    milvus_token: str = ""
    embedder: str = "default"  # "default" | "custom" | "off"
    model_name: str = "custom-model"
    model_file: str = ""
    tokenizer_dir: str = ""
    model_dim: int = 384
    model_pooling: str = "mean"
    model_normalize: bool = True
    embed_threads: int = 1
    native_hybrid: bool = False
    vector_timeout_s: float = 2.0
    recall_deadline_s: float = 10.0
    dense_min_score: float = 0.25  # cosine; weaker dense hits are not evidence
    index_type: str = "FLAT"
    redact_patterns: tuple[str, ...] = ()
    graph_store: str = "sqlite"  # where entities and facts live: "sqlite" | "neo4j" | "hugegraph"
    neo4j_uri: str = ""
    neo4j_user: str = "neo4j"
    neo4j_password: str = ""
    hugegraph_url: str = ""
    hugegraph_graph: str = "hugegraph"
    hugegraph_user: str = ""
    hugegraph_password: str = ""


_CHOICES = {"graph_store": {"sqlite", "neo4j", "hugegraph"}, "vectors": {"lite", "server", "off"}, "embedder": {"default", "custom", "off"},
            "model_pooling": {"mean", "cls"}, "index_type": {"FLAT", "HNSW", "AUTOINDEX"}}
_RANGES = {"vector_timeout_s": (0.0, 10.0), "recall_deadline_s": (0.1, 60.0),
           "dense_min_score": (-1.0, 1.0),
           "model_dim": (1, 8192), "embed_threads": (1, 64)}


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def settings_from_dict(raw: dict[str, Any] | None) -> MemorySettings:
    """Typed settings from a plain dict (snake_case or camelCase keys, optionally under a
    ``memory`` key). Unknown keys and invalid values are logged and ignored."""
    if not raw:
        return MemorySettings()
    if isinstance(raw.get("memory"), dict):
        raw = raw["memory"]
    defaults = MemorySettings()
    fields = {f.name: f for f in msgspec.structs.fields(MemorySettings)}
    values: dict[str, Any] = {}
    for key, value in raw.items():
        name = _snake(str(key))
        if name not in fields:
            log.warning("memory setting %r is unknown; ignored", key)
            continue
        if name == "redact_patterns" and isinstance(value, (list, tuple)):
            value = [getattr(x, "pattern", x) for x in value]  # compiled (a policy's) or written out
        try:
            conv = msgspec.convert({name: value}, MemorySettings)
            v = getattr(conv, name)
        except msgspec.ValidationError as e:
            log.warning("memory setting %r: %s; using %r", key, e, getattr(defaults, name))
            continue
        if name in _CHOICES and v not in _CHOICES[name]:
            log.warning("memory setting %r must be one of %s; using %r", key,
                        sorted(_CHOICES[name]), getattr(defaults, name))
            continue
        if name in _RANGES:
            lo, hi = _RANGES[name]
            if not (lo <= v <= hi):
                log.warning("memory setting %r must be within %s..%s; using %r", key, lo, hi,
                            getattr(defaults, name))
                continue
        values[name] = v
    return msgspec.structs.replace(defaults, **values)


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def stamp(result: S) -> S:
    """Fill ``tokens`` = ceil(resultBytes/4) and ``resultBytes`` of the complete JSON, the
    digits of both numbers included (iterated to a fixed point). The JSON is the one every
    answer is measured in (``codesynapse.context.budget.dumps``): msgspec writes floats
    differently (``1e-7`` for ``1e-07``), which made memory answers disagree by a byte."""
    from codesynapse.context.budget import dumps

    tokens = nbytes = 0
    for _ in range(8):
        cur = msgspec.structs.replace(result, tokens=tokens, result_bytes=nbytes)
        size = len(dumps(msgspec.to_builtins(cur)))
        if size == nbytes and tokens == tokens_for(size):
            return cur
        nbytes, tokens = size, tokens_for(size)
    raise CodeSynapseError("token estimate did not converge")  # pragma: no cover


def exact_terms(query: str) -> list[str]:
    """The whole query and each whitespace-separated word (surrounding quotes, brackets and
    trailing sentence punctuation stripped) as exact-lookup terms."""
    terms = [query.strip()]
    for raw in query.split():
        w = raw.strip(_TERM_STRIP)
        while w.endswith(".") and len(w) > 1:
            w = w[:-1]
        terms.append(w)
        if w != raw:
            terms.append(raw)
    out = [t for t in dict.fromkeys(terms) if t]
    return out[:MAX_EXACT_TERMS]


def _compile_patterns(patterns: Sequence[str]) -> tuple[re.Pattern[str], ...]:
    try:
        from codesynapse.extract.redact import compile_patterns
    except ImportError as e:  # fail closed: never store unredacted free text
        raise CodeSynapseError("the redactor (codesynapse.extract.redact) is unavailable") from e
    return compile_patterns(list(patterns)) if patterns else ()


def _gate(extra: Sequence[re.Pattern[str]], redactor: Callable[[str], str] | None) -> Any:
    from codesynapse.extract.redact import RecordGate

    return RecordGate(extra, redactor=redactor)


class _LegResults(msgspec.Struct, kw_only=True):
    """Ranked candidate ids per provenance label ("lexical", "dense", or "hybrid" for
    hits Milvus already fused), the entity version each was indexed at, and the fused
    order."""

    ranked: list[tuple[str, list[str]]]
    versions: dict[tuple[str, str], int]
    lex_rep: LegReport
    dense_rep: LegReport
    fused: list[str]
    fusion: str


class VectorsAttachment(msgspec.Struct, frozen=True, kw_only=True):
    """A vector store opened late (``MemoryService(reopen_vectors=...)``): the adapter, the
    native hybrid index on it (or None) and how to release it when the service closes."""

    vectors: MilvusVectors
    hybrid: Any = None
    release: Callable[[], None] | None = None


class MemoryService:
    """Agent memory for one scope. Thread-safe. See the module docstring for the plan."""

    def __init__(
        self,
        store: MemoryStore,
        vectors: MilvusVectors | None,
        embedder: Embedder | None,
        scope: Scope,
        *,
        settings: MemorySettings | None = None,
        hybrid: Any = None,
        clock: Callable[[], str] = _now_iso,
        redactor: Callable[[str], str] | None = None,
        unavailable: dict[str, str] | None = None,
        on_close: Sequence[Callable[[], None]] = (),
        reopen_vectors: Callable[[], VectorsAttachment] | None = None,
    ):
        self.store = store
        self.vectors = vectors
        self.embedder = embedder
        self.scope = scope
        self.settings = settings or MemorySettings()
        self.hybrid = hybrid
        self._clock = clock
        self._redactor = redactor
        self._compiled: tuple[re.Pattern[str], ...] | None = None
        self._patterns_source: Callable[[], Sequence[re.Pattern[str]]] | None = None
        self._unavailable = dict(unavailable or {})
        self._on_close = list(on_close)
        self.code: Any = None  # anchors.CodeView, attached by the App (attach_code)
        self._lex = LexicalIndex()
        self._lex_cursor = -1
        self._lex_lock = threading.Lock()
        self._stage_local = threading.local()
        self._worker = EmbedWorker()
        self._closed = False
        self._drainer: threading.Thread | None = None
        self._drain_lock = threading.Lock()
        self._stop = threading.Event()
        self._reopener: threading.Thread | None = None
        self.vector_retries = 0  # failed attempts to open the vector store again
        if self.vectors is None and reopen_vectors is not None:
            self._reopener = threading.Thread(
                target=self._reopen_loop, args=(reopen_vectors,), daemon=True,
                name="codesynapse-memory-vectors-retry")
            self._reopener.start()
        if self.embedder is not None and self.vectors is not None:
            self._queue_missing()

    def _queue_missing(self) -> None:
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
        while not self._stop.wait(pause):
            try:
                att = reopen()
            except StoreError as e:  # VectorsUnavailable included
                self.vector_retries += 1
                pause = min(pause * 2, VECTOR_RETRY_MAX_S)
                self._unavailable["vectors"] = (
                    f"vector store unavailable: {e}; retry {self.vector_retries} failed, "
                    f"next in {pause:g} s")
                log.debug("memory: %s", self._unavailable["vectors"])
                continue
            except Exception as e:  # a bug must not kill the retries silently
                self.vector_retries += 1
                pause = min(pause * 2, VECTOR_RETRY_MAX_S)
                log.warning("memory: opening the vector store failed: %s: %s",
                            type(e).__name__, e)
                continue
            self._attach(att)
            return

    def _attach(self, att: VectorsAttachment) -> None:
        with self._drain_lock:
            if self._closed:
                if att.release is not None:
                    att.release()
                return
            if att.release is not None:
                self._on_close.insert(0, att.release)  # released before the store closes
            self.hybrid = att.hybrid
            self.vectors = att.vectors  # from here on the dense leg runs
            self._unavailable.pop("vectors", None)
        log.info("memory: the vector store is available again after %d failed retries; "
                 "backfilling", self.vector_retries)
        if self.embedder is None:
            return
        self._queue_missing()
        self._schedule_backfill()

    @property
    def vectors_retrying(self) -> bool:
        """The vector store was unavailable at start and is being opened again."""
        return self.vectors is None and self._reopener is not None and self._reopener.is_alive()

    # ---- helpers ------------------------------------------------------------------------

    def follow_redact_patterns(self, source: Callable[[], Sequence[re.Pattern[str]]]) -> None:
        """Redact with the patterns ``source`` gives at each write (the repository policy's
        ``redact:`` list, which can change while the service runs) instead of the
        ``redact_patterns`` setting."""
        self._patterns_source = source

    def _gate(self) -> Any:
        """The redaction gate of one request: every string of it (entity names, aliases and
        types; fact endpoints, predicates and sources) passes it before the store sees it,
        with the policy's patterns."""
        if self._patterns_source is not None:
            extra = tuple(self._patterns_source())
        else:
            if self._compiled is None:
                self._compiled = _compile_patterns(self.settings.redact_patterns)
            extra = self._compiled
        return _gate(extra, self._redactor)

    @property
    def dense_available(self) -> str:
        """"" when the dense leg can run, else the reason it cannot."""
        if self.embedder is None:
            return self._unavailable.get("embedder", "no embedder is configured")
        if self.vectors is None:
            return self._unavailable.get("vectors", "no vector store is configured")
        return ""

    def _sync_lexical(self) -> None:
        with self._lex_lock:
            cursor = self.store.change_cursor(self.scope)
            if cursor == self._lex_cursor:
                return
            if self._lex_cursor < 0:
                self._lex.clear()
                for e in self.store.iter_entities(self.scope):
                    self._lex.upsert(e.id, e.version, entity_texts(e.name, e.aliases, e.type))
                # changes made during the scan are replayed next time (idempotent upserts)
                self._lex_cursor = cursor
                return
            after = self._lex_cursor
            while True:
                after, ids = self.store.changes_since(self.scope, after)
                if not ids:
                    break
                live = self.store.get_entities(self.scope, ids)
                for eid in ids:
                    e = live.get(eid)
                    if e is None:
                        self._lex.remove(eid)
                    else:
                        self._lex.upsert(e.id, e.version, entity_texts(e.name, e.aliases, e.type))
            self._lex_cursor = max(after, cursor)

    # ---- remember -----------------------------------------------------------------------

    def attach_code(self, code: Any) -> None:
        """The workspace's code side (``anchors.CodeView``): anchors are validated against
        its graph and recall hydrates them from it."""
        self.code = code

    def remember(self, p: RememberParams) -> RememberResult:
        now = self._clock()
        # anchors are resolved (and validated) before anything is written: an anchor that
        # names no symbol fails the request, it never leaves a dangling row
        specs = {i: resolve_anchors(self.code, e.anchors, f"entities[{i}].anchors")
                 for i, e in enumerate(p.entities) if e.anchors is not None}
        fact_specs = {i: resolve_anchors(self.code, f.anchors, f"facts[{i}].anchors")
                      for i, f in enumerate(p.facts) if f.anchors is not None}
        if fact_specs and not getattr(self.store, "supports_fact_anchors", False):
            raise InvalidParams(f"facts[{min(fact_specs)}].anchors",
                                "fact anchors are not supported by this memory store backend yet "
                                "(anchor the fact's subject or object entity instead)")
        p = self._gate().record(p)
        outcomes: list[RememberedEntity] = []
        touched: dict[str, EntityRecord] = {}
        by_name: dict[tuple[str, bool], EntityRecord] = {}
        for i, e in enumerate(p.entities):
            name = e.name.strip()
            aliases = [a.strip() for a in e.aliases]
            try:
                out = self.store.upsert_entity(self.scope, name=name, aliases=aliases,
                                               type=e.type, durable=e.durable, now=now)
            except StoreError as err:
                raise StoreError(f"entities[{i}]: {err}") from err
            by_name[(name, e.durable)] = out.entity
            if out.status != "unchanged":
                touched[out.entity.id] = out.entity
            anchored: list[str] = []
            if i in specs:
                self.store.set_anchors(self.scope, out.entity.id, specs[i], now)
                anchored = [a.qname for a in specs[i]]
            outcomes.append(RememberedEntity(name=name, durable=e.durable, status=out.status,
                                             id=out.entity.id, anchors=anchored))
        created = updated = 0
        for i, f in enumerate(p.facts):
            durable = bool(f.durable)
            ends: list[EntityRecord] = []
            for term in (f.subject, f.object):
                rec, made = self._resolve_endpoint(term.strip(), durable, by_name, now)
                if made is not None:
                    touched[rec.id] = rec
                    outcomes.append(made)
                ends.append(rec)
            try:
                fact, was_created = self.store.upsert_fact(
                    self.scope, subject_id=ends[0].id, predicate=f.predicate,
                    object_id=ends[1].id, confidence=float(f.confidence),
                    source_client=f.source_client,
                    durable=durable, now=now)
            except StoreError as err:
                raise InvalidParams(f"facts[{i}]", str(err)) from err
            if i in fact_specs:
                self.store.set_fact_anchors(self.scope, fact.id, fact_specs[i], now)
            created += was_created
            updated += not was_created
        if self.hybrid is not None and touched:
            try:  # lexical half of the native hybrid index, even without vectors
                self.hybrid.upsert(self.scope, list(touched.values()), None)
            except Exception:
                log.warning("memory: native hybrid index not updated", exc_info=True)
        embedded, pending, note = self._embed_now(list(touched.values()))
        return stamp(RememberResult(entities=outcomes, facts_created=created,
                                    facts_updated=updated, embedded=embedded,
                                    embedding_pending=pending, embedding_note=note))

    def _resolve_endpoint(
        self, term: str, durable: bool, by_name: dict[tuple[str, bool], EntityRecord], now: str,
    ) -> tuple[EntityRecord, RememberedEntity | None]:
        """A fact endpoint: an entity of this request, else an existing visible entity by
        exact id/name/alias (a durable fact only sees durable entities; a session fact
        prefers this session's), else a new entity with the fact's durability."""
        for key in ((term, True),) if durable else ((term, False), (term, True)):
            if key in by_name:
                return by_name[key], None
        found = self.store.find_exact(self.scope, [term], durable_only=durable, limit=1)
        if found:
            return found[0], None
        out = self.store.upsert_entity(self.scope, name=term, aliases=(), type="",
                                       durable=durable, now=now)
        by_name[(term, durable)] = out.entity
        return out.entity, RememberedEntity(name=term, durable=durable, status=out.status,
                                            id=out.entity.id)

    def _embed_now(self, entities: Sequence[EntityRecord]) -> tuple[int, int, str]:
        """Queue the changed entities for the active model and try to embed them (and any
        older backlog) within the vector timeout. Returns (embedded, pending, note)."""
        reason = self.dense_available
        if reason and self.embedder is not None and self.vectors_retrying:
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
            self._schedule_backfill()
        return done, pending, note

    def _schedule_backfill(self) -> None:
        """Drain the embedding queue in a background thread (one at a time per service).
        A failure is logged once and ends the drain; the queue stays for the next try."""
        with self._drain_lock:
            if self._closed or (self._drainer is not None and self._drainer.is_alive()):
                return

            def drain() -> None:
                try:
                    while not self._closed and self.backfill(max_items=EMBED_BATCH * 4):
                        pass
                except Exception as e:
                    log.warning("memory: background embedding stopped: %s", e)

            self._drainer = threading.Thread(target=drain, name="codesynapse-memory-backfill",
                                             daemon=True)
            self._drainer.start()

    def wait_backfill(self, timeout: float | None = None) -> bool:
        """Wait for a running background drain (tests, benchmarks). True when idle."""
        t = self._drainer
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
        return self._worker.call(job, timeout)

    # ---- recall -------------------------------------------------------------------------

    def recall(self, p: RecallParams) -> RecallResult:
        started = time.monotonic()
        deadline = started + self.settings.recall_deadline_s

        def check() -> None:
            if time.monotonic() > deadline:
                raise DeadlineExceeded(self.settings.recall_deadline_s)

        limit = min(max(p.limit, 1), RECALL_MAX_ENTRIES)
        hops = min(max(p.hops, 0), RECALL_MAX_HOPS)
        max_facts = min(max(p.max_facts, 0), RECALL_MAX_FACTS)
        query = p.query

        stages = self._stages_begin()
        t = time.perf_counter()
        exact = self.store.find_exact(self.scope, exact_terms(query), limit=EXACT_LIMIT)
        stages["exact"] = (time.perf_counter() - t) * 1000
        exact_rep = LegReport(ran=True, hits=len(exact))
        check()

        out = None
        if self.hybrid is not None and self.settings.native_hybrid:
            out = self._native_legs(query, deadline)
        if out is None:
            out = self._in_process_legs(query, deadline, check)
        versions = out.versions
        lex_rep, dense_rep, fused, fusion = out.lex_rep, out.dense_rep, out.fused, out.fusion
        check()

        found_by: dict[str, list[str]] = {}
        for e in exact:
            found_by.setdefault(e.id, []).append("exact")
        for leg, ids in out.ranked:
            for i in ids:
                found_by.setdefault(i, []).append(leg)
        order = list(dict.fromkeys([e.id for e in exact] + fused))

        # hydration: identity, namespace, session and current metadata re-checked
        t_hydrate = time.perf_counter()
        current = self.store.get_entities(self.scope, order)
        kept: list[EntityRecord] = []
        stale: list[TodoItem] = []
        dropped = 0
        for eid in order:
            rec = current.get(eid)
            if rec is None or not self._owned(rec):
                dropped += 1  # foreign, deleted or unknown
                continue
            legs = found_by[eid]
            ok_legs = []
            for leg in legs:
                if leg == "exact":
                    ok_legs.append(leg)
                    continue
                v = versions.get((leg, eid))
                if v == rec.version:
                    ok_legs.append(leg)
                elif leg in ("dense", "hybrid") and v is not None:
                    stale.append((leg, TodoItem(entity_id=rec.id, version=rec.version)))
            if not ok_legs:
                dropped += 1  # found only through an old name/alias/type (stale index)
                continue
            found_by[eid] = ok_legs
            kept.append(rec)
        if dropped:
            log.debug("memory: %d candidates dropped at hydration", dropped)
        self._requeue_stale(stale)
        omitted_entries = max(0, len(kept) - limit)
        roots = kept[:limit]
        check()

        facts: list[tuple[FactRecord, int]] = []
        omitted_facts = 0
        if hops >= 1 and roots:
            root_ids = [r.id for r in roots]
            hop1 = self.store.facts_touching(self.scope, root_ids, limit=max_facts + 1)
            if len(hop1) > max_facts:
                hop1 = hop1[:max_facts]
                omitted_facts += self.store.count_facts_touching(self.scope, root_ids) - max_facts
            facts = [(f, 1) for f in hop1]
            rootset = set(root_ids)
            nbrs = list(dict.fromkeys(
                x for f in hop1 for x in (f.subject_id, f.object_id) if x not in rootset))
            if hops >= 2 and nbrs:
                seen = {f.id for f in hop1}
                room = max_facts - len(facts)
                hop2 = [f for f in self.store.facts_touching(
                    self.scope, nbrs, limit=room + len(seen) + 1) if f.id not in seen]
                if len(hop2) > room:
                    nbrset = set(nbrs)
                    via_hop1 = sum(1 for f in hop1
                                   if f.subject_id in nbrset or f.object_id in nbrset)
                    total2 = self.store.count_facts_touching(self.scope, nbrs) - via_hop1
                    omitted_facts += total2 - room
                    hop2 = hop2[:room]
                facts += [(f, 2) for f in hop2]
        check()

        ids = p.include_ids
        anchors = self.store.anchors_of(self.scope, [r.id for r in roots]) if roots else {}
        fact_anchors = (self.store.fact_anchors_of(self.scope, [f.id for f, _ in facts])
                        if facts and getattr(self.store, "supports_fact_anchors", False) else {})
        t_cards = time.perf_counter()
        entries = [
            Entry(name=r.name, type=r.type, durable=r.durable, found_by=found_by[r.id],
                  created_at=r.created_at, updated_at=_changed(r.created_at, r.updated_at),
                  aliases=list(r.aliases), anchors=hydrate(self.code, anchors.get(r.id, ())),
                  id=r.id if ids else None)
            for r in roots
        ]
        fact_out = [
            FactOut(subject=f.subject_name, predicate=f.predicate, object=f.object_name,
                    confidence=None if f.confidence == 1.0 else f.confidence,
                    durable=f.durable, hop=hop,
                    created_at=f.created_at, updated_at=_changed(f.created_at, f.updated_at),
                    source_client=f.source_client, anchors=hydrate(self.code, fact_anchors.get(f.id, ())),
                    id=f.id if ids else None)
            for f, hop in facts
        ]
        legs = Legs(exact=exact_rep, lexical=lex_rep, dense=dense_rep,
                    fusion=None if fusion == f"rrf-k{RRF_K}" else fusion)
        truncated = omitted_entries > 0 or omitted_facts > 0
        t_pack = time.perf_counter()
        stages["hydration"] = (t_pack - t_hydrate) * 1000  # store reads + anchor cards
        stages["anchorCards"] = (t_pack - t_cards) * 1000
        result = self._pack(entries, fact_out, legs, truncated, omitted_entries, omitted_facts)
        stages["serialization"] = (time.perf_counter() - t_pack) * 1000
        check()
        return result

    def _stages_begin(self) -> dict[str, float]:
        """This thread's stage timings of the recall being answered (ms), for the benchmark."""
        d: dict[str, float] = {}
        self._stage_local.stages = d
        return d

    def last_stages(self) -> dict[str, float]:
        """Stage timings (ms) of this thread's last recall: exact, embed, sparse, dense (the
        vector search; with the native hybrid, Milvus' sparse + dense + fusion), fusion,
        hydration (store reads and anchor cards), serialization (packing to 32 KiB, JSON)."""
        return dict(getattr(self._stage_local, "stages", {}) or {})

    def _requeue_stale(self, stale: list[tuple[str, TodoItem]]) -> None:
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

    def _owned(self, rec: EntityRecord) -> bool:
        s = self.scope
        return (rec.tenant == s.tenant and rec.namespace == s.namespace
                and rec.session in s.visible_sessions)

    def _start_dense(self, query: str, deadline: float) -> tuple[Any, float, float, str]:
        """Start the dense leg in a vector worker: (future or None, when its time is up,
        its time budget, the reason it did not start)."""
        reason = self.dense_available
        if reason:
            return None, 0.0, 0.0, reason
        assert self.embedder is not None and self.vectors is not None
        emb, vec = self.embedder, self.vectors
        budget = min(self.settings.vector_timeout_s, max(0.0, deadline - time.monotonic()))
        started = time.monotonic()

        stages = getattr(self._stage_local, "stages", None)

        def job() -> list[Any]:
            t0 = time.perf_counter()
            qv = emb.embed([query])[0]
            t1 = time.perf_counter()
            left = max(0.05, budget - (time.monotonic() - started))
            hits = vec.search(self.scope, emb.model_key, emb.dim, qv, limit=LEG_LIMIT, timeout=left)
            if stages is not None:
                stages["embed"] = (t1 - t0) * 1000
                stages["dense"] = (time.perf_counter() - t1) * 1000
            return hits

        try:
            return self._worker.start(job), started + budget, budget, ""
        except EmbeddingTimeout as e:
            return None, 0.0, 0.0, f"vector leg timed out ({e}); lexical only"

    def _finish_dense(self, pending: tuple[Any, float, float, str]
                      ) -> tuple[list[Any], LegReport]:
        fut, ends, budget, reason = pending
        if fut is None:
            return [], LegReport(ran=False, hits=0, reason=reason)
        try:
            hits = self._worker.result(fut, max(0.0, ends - time.monotonic()))
        except EmbeddingTimeout:
            return [], LegReport(ran=False, hits=0, reason=(
                f"vector leg timed out (no answer within {budget:g} s); lexical only"))
        except EmbeddingRejected as e:
            return [], LegReport(ran=False, hits=0, reason=f"query embedding rejected: {e}")
        except VectorsUnavailable as e:
            return [], LegReport(ran=False, hits=0, reason=f"vector store unavailable: {e}")
        except StoreError as e:
            return [], LegReport(ran=False, hits=0, reason=f"vector search failed: {e}")
        except Exception as e:  # a broken model must not break recall
            log.warning("memory: embedding failed", exc_info=True)
            return [], LegReport(ran=False, hits=0, reason=f"embedder failed: {type(e).__name__}: {e}")
        hits = [h for h in hits if h.score >= self.settings.dense_min_score]
        self._resume_backfill()
        return hits, LegReport(ran=True, hits=len(hits))

    def _resume_backfill(self) -> None:
        """The vector store answers (again): embed what was remembered while it could not
        (the drain that was running then stopped at the first failure)."""
        if self.embedder is None or (self._drainer is not None and self._drainer.is_alive()):
            return
        try:
            if self.store.pending_embeddings(self.scope, self.embedder.model_key):
                self._schedule_backfill()
        except StoreError:
            log.debug("memory: could not check the embedding backlog", exc_info=True)

    def _in_process_legs(self, query: str, deadline: float,
                         check: Callable[[], None]) -> _LegResults:
        # the dense leg (embedding + Milvus) starts first and runs while BM25 ranks
        stages = getattr(self._stage_local, "stages", {})
        pending = self._start_dense(query, deadline)
        t = time.perf_counter()
        self._sync_lexical()
        lex_hits = self._lex.search(query, LEG_LIMIT)
        stages["sparse"] = (time.perf_counter() - t) * 1000
        check()
        dense_hits, dense_rep = self._finish_dense(pending)
        lex_ids = [h.doc_id for h in lex_hits]
        dense_ids = [h.entity_id for h in dense_hits]
        versions = {("lexical", h.doc_id): h.version for h in lex_hits}
        versions.update({("dense", h.entity_id): h.version for h in dense_hits})
        t = time.perf_counter()
        fused = [d for d, _ in rrf([lex_ids, dense_ids], k=RRF_K)]
        stages["fusion"] = (time.perf_counter() - t) * 1000
        return _LegResults(
            ranked=[("lexical", lex_ids), ("dense", dense_ids)], versions=versions,
            lex_rep=LegReport(ran=True, hits=len(lex_hits)), dense_rep=dense_rep,
            fused=fused, fusion=f"rrf-k{RRF_K}")

    def _native_legs(self, query: str, deadline: float) -> _LegResults | None:
        """The native Milvus hybrid path (BM25 sparse + dense, fused by Milvus RRF k=60).
        None when it cannot run, so the in-process path answers instead."""
        budget = min(self.settings.vector_timeout_s, max(0.0, deadline - time.monotonic()))
        emb = self.embedder
        hybrid = self.hybrid

        stages = getattr(self._stage_local, "stages", None)

        def job() -> tuple[list[Any], str]:
            qv = None
            reason = self.dense_available
            t0 = time.perf_counter()
            if not reason and emb is not None:
                try:
                    qv = emb.embed([query])[0]
                except EmbeddingRejected as e:
                    reason = f"query embedding rejected: {e}"
            t1 = time.perf_counter()
            hits = hybrid.search(self.scope, query, qv, limit=LEG_LIMIT, timeout=budget,
                                 min_score=self.settings.dense_min_score)
            if stages is not None:
                stages["embed"] = (t1 - t0) * 1000
                stages["dense"] = (time.perf_counter() - t1) * 1000  # sparse + dense + RRF in Milvus
            return hits, reason

        try:
            hits, dense_reason = self._worker.call(job, budget)
        except Exception as e:
            log.info("memory: native hybrid unavailable (%s); in-process path used", e)
            return None
        ids = [h.entity_id for h in hits]
        return _LegResults(
            ranked=[("hybrid", ids)], versions={("hybrid", h.entity_id): h.version for h in hits},
            lex_rep=LegReport(ran=True, hits=len(hits), reason="milvus BM25 (native hybrid)"),
            dense_rep=(LegReport(ran=False, hits=0, reason=dense_reason) if dense_reason else
                       LegReport(ran=True, hits=len(hits), reason="milvus dense (native hybrid)")),
            fused=ids, fusion="milvus-rrf-k60")

    def _pack(self, entries: list[Entry], facts: list[FactOut], legs: Legs, truncated: bool,
              omitted_entries: int, omitted_facts: int) -> RecallResult:
        omitted_anchors = 0

        def build() -> RecallResult:
            om = Omitted(entries=omitted_entries, facts=omitted_facts, anchors=omitted_anchors,
                         how_to_get_more=HOW_TO_GET_MORE) if truncated else None
            return stamp(RecallResult(entries=entries, facts=facts, truncated=truncated,
                                      omitted=om, legs=legs, notice=MEMORY_NOTICE,
                                      hint="" if entries else NO_MATCH_HINT))

        res = build()
        while res.result_bytes > RECALL_MAX_BYTES:
            truncated = True
            with_anchors = [i for i, e in enumerate(entries) if e.anchors]
            if facts:
                facts = facts[:-1]
                omitted_facts += 1
            elif with_anchors:  # then the anchor cards of the last entries
                i = with_anchors[-1]
                entries[i] = msgspec.structs.replace(entries[i], anchors=entries[i].anchors[:-1])
                omitted_anchors += 1
            elif entries:
                entries = entries[:-1]
                omitted_entries += 1
            else:  # pragma: no cover - an empty answer is far below 32 KiB
                raise CodeSynapseError("recall envelope does not fit 32 KiB")
            res = build()
        return res

    # ---- forget -------------------------------------------------------------------------

    def forget(self, p: ForgetParams) -> ForgetResult:
        now = self._clock()
        scope = self.scope.own_only  # a sub-session reads its parent's memory, never changes it
        p = self._gate().record(p)  # names and facts as they were stored
        not_found: list[str] = []
        entity_ids: list[str] = []
        fact_ids: list[str] = []
        for i in p.ids:
            (fact_ids if i.startswith("fact_") else entity_ids).append(i)
        if entity_ids:
            live = self.store.get_entities(scope, entity_ids)
            not_found += [i for i in entity_ids if i not in live]
            entity_ids = [i for i in entity_ids if i in live]
        for n in p.names:
            name = n.strip()
            hits = [r for r in self.store.find_exact(scope, [name], limit=EXACT_LIMIT)
                    if r.name == name]
            if not hits:
                not_found.append(n)
            entity_ids += [r.id for r in hits]
        n_ent, n_facts = self.store.forget_entities(scope, entity_ids, now)
        if fact_ids:
            done = set(self.store.forget_fact_ids(scope, fact_ids, now))
            n_facts += len(done)
            not_found += [i for i in fact_ids if i not in done]
        for f in p.facts:
            subj = self.store.find_exact(scope, [f.subject.strip()])
            obj = self.store.find_exact(scope, [f.object.strip()])
            got = 0
            for s in subj:
                for o in obj:
                    got += self.store.forget_facts(scope, subject_id=s.id,
                                                   predicate=f.predicate, object_id=o.id,
                                                   now=now)
            if not got:
                not_found.append(f"{f.subject} {f.predicate} {f.object}")
            n_facts += got
        if entity_ids:
            self._drop_vectors(entity_ids)
            with self._lex_lock:
                for i in entity_ids:
                    self._lex.remove(i)
        return stamp(ForgetResult(entities=n_ent, facts=n_facts, not_found=not_found))

    def _drop_vectors(self, ids: Sequence[str]) -> None:
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

    # ---- list ---------------------------------------------------------------------------

    def list(self, p: ListParams) -> ListResult:
        after = _decode_cursor(p.cursor) if p.cursor else None
        page = self.store.list_entities(self.scope, durable=p.durable, after=after,
                                        limit=p.limit + 1)
        more = len(page) > p.limit
        page = page[:p.limit]
        items = [
            ListedEntity(name=r.name, type=r.type, durable=r.durable, facts=n,
                         created_at=r.created_at, updated_at=_changed(r.created_at, r.updated_at),
                         aliases=list(r.aliases), id=r.id if p.include_ids else None)
            for r, n in page
        ]

        def build(kept: int, truncated: bool) -> ListResult:
            cursor = ""
            if truncated and kept:
                last = page[kept - 1][0]
                cursor = _encode_cursor(last.name, last.id)
            elif truncated and after is not None:
                cursor = p.cursor
            return stamp(ListResult(entries=items[:kept], truncated=truncated,
                                    next_cursor=cursor))

        kept = len(items)
        res = build(kept, more)
        while res.result_bytes > RECALL_MAX_BYTES and kept > 1:
            kept -= 1
            res = build(kept, True)
        return res

    # ---- lifecycle ----------------------------------------------------------------------

    def end_session(self) -> int:
        """Hard-delete this session's memory (the session can never be chosen again)."""
        ids = self.store.purge_session(self.scope)
        if ids:
            self._drop_vectors(ids)
        with self._lex_lock:
            for i in ids:
                self._lex.remove(i)
        return len(ids)

    def close(self) -> None:
        if self._closed:
            return
        with self._drain_lock:
            self._closed = True
        self._stop.set()
        if self._reopener is not None:
            self._reopener.join(10)  # an attempt in flight ends within the connect timeout
        if self._drainer is not None:
            self._drainer.join(5)
        self._worker.shutdown()
        for fn in self._on_close:
            try:
                fn()
            except Exception:
                log.warning("memory: close step failed", exc_info=True)


def _changed(created_at: str, updated_at: str) -> str | None:
    """``updatedAt`` of an answer item: only when it differs from ``createdAt``."""
    return updated_at if updated_at != created_at else None


def _encode_cursor(name: str, eid: str) -> str:
    raw = json.dumps([name, eid], ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        name, eid = json.loads(raw)
        if not isinstance(name, str) or not isinstance(eid, str):
            raise ValueError
        return name, eid
    except (ValueError, binascii.Error, TypeError) as e:
        raise InvalidParams("cursor", "not a cursor returned by memory/list") from e
