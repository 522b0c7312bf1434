"""Recall for one scope (DESIGN.md "Retrieval", "Budgets and limits"):

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
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from codesynapse.errors import CodeSynapseError, DeadlineExceeded, StoreError
from codesynapse.memory.anchors import hydrate
from codesynapse.memory.embedder import EmbeddingRejected, EmbeddingTimeout
from codesynapse.memory.envelope import changed, stamp
from codesynapse.memory.lexical import LexicalIndex, entity_texts
from codesynapse.memory.models import (
    MEMORY_NOTICE,
    RECALL_MAX_BYTES,
    RECALL_MAX_ENTRIES,
    RECALL_MAX_FACTS,
    RECALL_MAX_HOPS,
    Entry,
    FactOut,
    LegReport,
    Legs,
    Omitted,
    RecallParams,
    RecallResult,
)
from codesynapse.memory.rrf import RRF_K, rrf
from codesynapse.memory.settings import MemorySettings
from codesynapse.memory.vectors import VectorsUnavailable
from codesynapse.memory.vectorside import VectorSide
from codesynapse.scope import Scope
from codesynapse.store.memory import EntityRecord, FactRecord, MemoryStore, TodoItem

log = logging.getLogger(__name__)

LEG_LIMIT = 10
EXACT_LIMIT = 10
MAX_EXACT_TERMS = 32
_TERM_STRIP = "\"'`()[]{}<>,;:!?"
NO_MATCH_HINT = (
    "no memory matched; try an entity's exact name or alias, other words, or "
    "codesynapse/memory/list to browse"
)
HOW_TO_GET_MORE = (
    "ask a narrower query, recall one entity by its exact name, or lower hops; "
    "limits are 8 entries, 2 hops, 80 facts and 32 KiB"
)


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


def owned(scope: Scope, rec: EntityRecord) -> bool:
    """The entity belongs to this scope's tenant and namespace and is durable or of a
    session the scope sees."""
    return (rec.tenant == scope.tenant and rec.namespace == scope.namespace
            and rec.session in scope.visible_sessions)


class LexicalMirror:
    """The in-process BM25 index of the scope's entity names, aliases and types, kept in
    step with the store by its change cursor. Thread-safe."""

    def __init__(self, store: MemoryStore, scope: Scope):
        self.store = store
        self.scope = scope
        self.index = LexicalIndex()
        self.cursor = -1
        self.lock = threading.Lock()

    def sync(self) -> None:
        with self.lock:
            cursor = self.store.change_cursor(self.scope)
            if cursor == self.cursor:
                return
            if self.cursor < 0:
                self.index.clear()
                for e in self.store.iter_entities(self.scope):
                    self.index.upsert(e.id, e.version, entity_texts(e.name, e.aliases, e.type))
                # changes made during the scan are replayed next time (idempotent upserts)
                self.cursor = cursor
                return
            after = self.cursor
            while True:
                after, ids = self.store.changes_since(self.scope, after)
                if not ids:
                    break
                live = self.store.get_entities(self.scope, ids)
                for eid in ids:
                    e = live.get(eid)
                    if e is None:
                        self.index.remove(eid)
                    else:
                        self.index.upsert(e.id, e.version, entity_texts(e.name, e.aliases, e.type))
            self.cursor = max(after, cursor)

    def remove(self, ids: Iterable[str]) -> None:
        with self.lock:
            for i in ids:
                self.index.remove(i)


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


class Recall:
    """The recall plan of the module docstring over one scope's store, lexical mirror and
    dense side; ``code`` gives the workspace's code view (anchor cards) at each call."""

    def __init__(self, store: MemoryStore, scope: Scope, settings: MemorySettings,
                 side: VectorSide, lexicon: LexicalMirror, code: Callable[[], Any]):
        self.store = store
        self.scope = scope
        self.settings = settings
        self.side = side
        self.lexicon = lexicon
        self._code = code
        self._stage_local = threading.local()

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
        if self.side.hybrid is not None and self.settings.native_hybrid:
            out = self._native_legs(query, deadline)
        if out is None:
            out = self._in_process_legs(query, deadline, check)
        check()

        found_by: dict[str, list[str]] = {}
        for e in exact:
            found_by.setdefault(e.id, []).append("exact")
        for leg, ids in out.ranked:
            for i in ids:
                found_by.setdefault(i, []).append(leg)
        order = list(dict.fromkeys([e.id for e in exact] + out.fused))

        t_hydrate = time.perf_counter()
        kept = self._hydrate(order, found_by, out.versions)
        omitted_entries = max(0, len(kept) - limit)
        roots = kept[:limit]
        check()

        facts, omitted_facts = self._facts(roots, hops, max_facts)
        check()

        result = self._answer(p, roots, facts, found_by, out, exact_rep,
                              omitted_entries, omitted_facts, stages, t_hydrate)
        check()
        return result

    def _hydrate(self, order: list[str], found_by: dict[str, list[str]],
                 versions: dict[tuple[str, str], int]) -> list[EntityRecord]:
        """Identity, namespace, session and current metadata re-checked: the candidates
        that are live, visible and found through their current version (stale vectors are
        queued again)."""
        current = self.store.get_entities(self.scope, order)
        kept: list[EntityRecord] = []
        stale: list[tuple[str, TodoItem]] = []
        dropped = 0
        for eid in order:
            rec = current.get(eid)
            if rec is None or not owned(self.scope, rec):
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
        self.side.requeue_stale(stale)
        return kept

    def _facts(self, roots: list[EntityRecord], hops: int, max_facts: int
               ) -> tuple[list[tuple[FactRecord, int]], int]:
        """Facts within ``hops`` (≤ 2) of the roots, at most ``max_facts``, each with its
        hop; and how many more there are."""
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
        return facts, omitted_facts

    def _answer(self, p: RecallParams, roots: list[EntityRecord],
                facts: list[tuple[FactRecord, int]], found_by: dict[str, list[str]],
                out: _LegResults, exact_rep: LegReport, omitted_entries: int,
                omitted_facts: int, stages: dict[str, float], t_hydrate: float) -> RecallResult:
        """Entries with their anchor cards, facts, legs; packed to 32 KiB."""
        code = self._code()
        ids = p.include_ids
        anchors = self.store.anchors_of(self.scope, [r.id for r in roots]) if roots else {}
        fact_anchors = (self.store.fact_anchors_of(self.scope, [f.id for f, _ in facts])
                        if facts and getattr(self.store, "supports_fact_anchors", False) else {})
        t_cards = time.perf_counter()
        entries = [
            Entry(name=r.name, type=r.type, durable=r.durable, found_by=found_by[r.id],
                  created_at=r.created_at, updated_at=changed(r.created_at, r.updated_at),
                  aliases=list(r.aliases), anchors=hydrate(code, anchors.get(r.id, ())),
                  id=r.id if ids else None)
            for r in roots
        ]
        fact_out = [
            FactOut(subject=f.subject_name, predicate=f.predicate, object=f.object_name,
                    confidence=None if f.confidence == 1.0 else f.confidence,
                    durable=f.durable, hop=hop,
                    created_at=f.created_at, updated_at=changed(f.created_at, f.updated_at),
                    source_client=f.source_client, anchors=hydrate(code, fact_anchors.get(f.id, ())),
                    id=f.id if ids else None)
            for f, hop in facts
        ]
        legs = Legs(exact=exact_rep, lexical=out.lex_rep, dense=out.dense_rep,
                    fusion=None if out.fusion == f"rrf-k{RRF_K}" else out.fusion)
        truncated = omitted_entries > 0 or omitted_facts > 0
        t_pack = time.perf_counter()
        stages["hydration"] = (t_pack - t_hydrate) * 1000  # store reads + anchor cards
        stages["anchorCards"] = (t_pack - t_cards) * 1000
        result = pack(entries, fact_out, legs, truncated, omitted_entries, omitted_facts)
        stages["serialization"] = (time.perf_counter() - t_pack) * 1000
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

    # ---- legs ---------------------------------------------------------------------------

    def _start_dense(self, query: str, deadline: float) -> tuple[Any, float, float, str]:
        """Start the dense leg in a vector worker: (future or None, when its time is up,
        its time budget, the reason it did not start)."""
        side = self.side
        reason = side.dense_available
        if reason:
            return None, 0.0, 0.0, reason
        assert side.embedder is not None and side.vectors is not None
        emb, vec = side.embedder, side.vectors
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
            return side.worker.start(job), started + budget, budget, ""
        except EmbeddingTimeout as e:
            return None, 0.0, 0.0, f"vector leg timed out ({e}); lexical only"

    def _finish_dense(self, pending: tuple[Any, float, float, str]
                      ) -> tuple[list[Any], LegReport]:
        fut, ends, budget, reason = pending
        if fut is None:
            return [], LegReport(ran=False, hits=0, reason=reason)
        try:
            hits = self.side.worker.result(fut, max(0.0, ends - time.monotonic()))
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
        self.side.resume_backfill()
        return hits, LegReport(ran=True, hits=len(hits))

    def _in_process_legs(self, query: str, deadline: float,
                         check: Callable[[], None]) -> _LegResults:
        # the dense leg (embedding + Milvus) starts first and runs while BM25 ranks
        stages = getattr(self._stage_local, "stages", {})
        pending = self._start_dense(query, deadline)
        t = time.perf_counter()
        self.lexicon.sync()
        lex_hits = self.lexicon.index.search(query, LEG_LIMIT)
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
        side = self.side
        emb = side.embedder
        hybrid = side.hybrid

        stages = getattr(self._stage_local, "stages", None)

        def job() -> tuple[list[Any], str]:
            qv = None
            reason = side.dense_available
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
            hits, dense_reason = side.worker.call(job, budget)
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


def pack(entries: list[Entry], facts: list[FactOut], legs: Legs, truncated: bool,
         omitted_entries: int, omitted_facts: int) -> RecallResult:
    """The recall answer within 32 KiB: facts dropped first, then the anchor cards of the
    last entries, then entries; ``truncated`` and ``omitted`` say so."""
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
