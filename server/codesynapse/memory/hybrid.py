"""Conditional native hybrid: one versioned Milvus collection holding approved text with
a BM25 function (sparse) and the dense vector, searched with ``hybrid_search`` + RRF.

Off by default (setting ``native_hybrid``); the in-process BM25 ranker and Python RRF stay
the default path and the fallback. When on, the memory service asks this index for the
fused lexical+dense candidates and still runs the exact leg first and the same graph
hydration afterwards.

Collection ``cs_memh_v1_<model key>`` (a new version number means a new collection; the
old one is kept for rollback and no longer queried):

- ``id``, ``tenant_d``, ``ns_d``, ``sess_d``, ``version`` as in ``vectors.py``;
- ``text``: the entity's approved name/aliases/type, pre-tokenized with our identifier
  tokenizer (``lexical.tokenize``) and written as ``\\w+`` words, so Milvus' standard
  analyzer sees the same terms as the in-process ranker (an exact form such as
  ``net.backoff`` becomes the single word ``net_backoff``);
- ``sparse``: produced by a BM25 function from ``text`` (k1 = 1.2, b = 0.75 as in-process);
- ``vec`` + ``has_vec``: entities without a vector are **kept** (the lexical half must see
  them) with a placeholder unit vector and ``has_vec = false``; the dense sub-request
  filters ``has_vec == true``, so placeholders never compete. (milvus-lite would store a
  null vector as zeros; a placeholder is a representation both lite and a server accept.)

Differences from the in-process path, by construction: Milvus computes BM25 statistics per
segment over the **whole collection** (all tenants/namespaces), while the in-process index
holds only the scope's own entities, so scores and tie orders can differ when several
namespaces share the collection; filters still restrict candidates to the scope, and every
hit is re-checked here and hydrated by the service.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from typing import Any

from codesynapse.errors import StoreError
from codesynapse.memory.lexical import entity_texts, tokenize
from codesynapse.memory.vectors import (
    ENTITY_ID,
    OUTPUT_FIELDS,
    MilvusVectors,
    VectorHit,
    collection_name,
    hit_in_scope,
    ids_literal,
    row_session_digest,
    scope_digests,
    scope_filter,
)
from codesynapse.scope import Scope
from codesynapse.store.memory import EntityRecord

log = logging.getLogger(__name__)

HYBRID_VERSION = 1
HYBRID_PREFIX = "cs_memh_"
MAX_TEXT_CHARS = 8192
_NON_WORD = re.compile(r"\W+")


def hybrid_text(texts: Sequence[str]) -> str:
    """Our identifier tokens as ``\\w+`` words (deduplicated in order for queries is done
    by the caller; documents keep repeats so term frequency matches the in-process index)."""
    words = [_NON_WORD.sub("_", t).strip("_") or "_" for t in tokenize(" ".join(texts))]
    return " ".join(w for w in words if w)[:MAX_TEXT_CHARS]


def hybrid_query(query: str) -> str:
    seen = list(dict.fromkeys(_NON_WORD.sub("_", t).strip("_") for t in tokenize(query)))
    return " ".join(w for w in seen if w)[:MAX_TEXT_CHARS]


class NativeHybridIndex:
    def __init__(self, vectors: MilvusVectors, model_key: str, dim: int, *,
                 bm25_k1: float = 1.2, bm25_b: float = 0.75):
        self.vectors = vectors
        self.model_key = model_key
        self.dim = dim
        self.k1 = bm25_k1
        self.b = bm25_b
        collection_name(model_key)  # validates the key
        self.name = f"{HYBRID_PREFIX}v{HYBRID_VERSION}_{model_key}"
        # the embedding to-do queue key of this collection (separate from the dense one)
        self.todo_key = f"hybrid-v{HYBRID_VERSION}:{model_key}"
        self._ready = False
        self._placeholder = [1.0] + [0.0] * (dim - 1)

    def ensure(self) -> str:
        self.vectors._check_owner()
        if self._ready and self.name in self.vectors._ready:
            return self.name
        name, dim, k1, b = self.name, self.dim, self.k1, self.b

        def op(c: Any) -> None:
            from pymilvus import DataType, Function, FunctionType

            if not c.has_collection(name):
                s = c.create_schema(auto_id=False, enable_dynamic_field=False)
                s.add_field("id", DataType.VARCHAR, is_primary=True, max_length=40)
                s.add_field("tenant_d", DataType.VARCHAR, max_length=32)
                s.add_field("ns_d", DataType.VARCHAR, max_length=32)
                s.add_field("sess_d", DataType.VARCHAR, max_length=32)
                s.add_field("version", DataType.INT64)
                s.add_field("text", DataType.VARCHAR, max_length=MAX_TEXT_CHARS,
                            enable_analyzer=True, analyzer_params={"tokenizer": "standard"})
                s.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
                s.add_field("has_vec", DataType.BOOL)
                s.add_field("vec", DataType.FLOAT_VECTOR, dim=dim)
                s.add_function(Function(name="text_bm25", function_type=FunctionType.BM25,
                                        input_field_names=["text"],
                                        output_field_names=["sparse"]))
                ip = c.prepare_index_params()
                ip.add_index(field_name="vec", index_type="FLAT", metric_type="COSINE")
                # nested under "params": milvus-lite 3.2.2 reads BM25 tuning only from the
                # JSON "params" key and silently uses k1=1.5 for flat key/value pairs
                ip.add_index(field_name="sparse", index_type="SPARSE_INVERTED_INDEX",
                             metric_type="BM25", params={"params": {"bm25_k1": k1, "bm25_b": b}})
                try:
                    c.create_collection(name, schema=s, consistency_level="Strong")
                    c.create_index(name, ip, sync=False)
                except Exception:
                    if not c.has_collection(name):  # not a lost race with another process
                        raise
            c.load_collection(name)

        with self.vectors._create_lock:
            if name not in self.vectors._ready:
                self.vectors._call("create hybrid collection", op)
                self.vectors._ready.add(name)
        self._ready = True
        return name

    def upsert(self, scope: Scope, records: Sequence[EntityRecord],
               vecs: Sequence[list[float] | None] | None = None) -> int:
        """Write rows for these entities; ``vecs[i]`` None (or no ``vecs``) keeps the
        entity lexical-only."""
        if not records:
            return 0
        name = self.ensure()
        t, n, s = scope_digests(scope)
        rows = []
        for i, r in enumerate(records):
            if not ENTITY_ID.match(r.id):
                raise StoreError(f"not an entity id: {r.id!r}")
            v = vecs[i] if vecs is not None else None
            ok = v is not None and len(v) == self.dim and all(math.isfinite(x) for x in v) \
                and any(v)
            rows.append({"id": r.id, "tenant_d": t, "ns_d": n,
                         "sess_d": row_session_digest(scope, r.durable, r.session),
                         "version": r.version,
                         "text": hybrid_text(entity_texts(r.name, r.aliases, r.type)),
                         "has_vec": bool(ok), "vec": list(v) if ok else self._placeholder})
        self.vectors._call("hybrid upsert", lambda c: c.upsert(name, rows))
        self.vectors.settle(name)
        return len(rows)

    def delete(self, scope: Scope, entity_ids: Sequence[str]) -> None:
        ids = list(dict.fromkeys(entity_ids))
        if not ids:
            return
        extra = f"id in {ids_literal(ids)}"

        def build(templated: bool) -> Any:
            expr, params = scope_filter(scope, templated=templated, extra=extra)
            kw: dict[str, Any] = {"filter_params": params} if params else {}

            def op(c: Any) -> None:
                for name in c.list_collections():
                    if name.startswith(HYBRID_PREFIX):
                        c.delete(name, filter=expr, **kw)
                        if self.vectors.uri is None:
                            c.flush(name)

            return op

        self.vectors.filtered("hybrid delete", build)

    def search(self, scope: Scope, query: str, qvec: Sequence[float] | None, *,
               limit: int = 10, timeout: float | None = None,
               min_score: float | None = None) -> list[VectorHit]:
        """BM25 over ``text`` (+ dense over ``vec`` when ``qvec`` is given) inside the
        scope, fused by Milvus RRF (k = 60). ``min_score`` keeps weaker dense hits out
        (a range search: cosine > min_score). Hits re-checked against the scope."""
        dense_param: dict[str, Any] = {"metric_type": "COSINE"}
        if min_score is not None and min_score > -1.0:
            dense_param["params"] = {"radius": float(min_score), "range_filter": 1.0001}
        from pymilvus import AnnSearchRequest, RRFRanker

        name = self.ensure()
        text = hybrid_query(query)
        if not text:
            return []
        def build(templated: bool) -> Any:
            expr, params = scope_filter(scope, templated=templated)
            dexpr, dparams = scope_filter(scope, templated=templated, extra="has_vec == true")
            kw: dict[str, Any] = {"expr_params": params} if params else {}
            dkw: dict[str, Any] = {"expr_params": dparams} if dparams else {}

            def op(c: Any) -> Any:
                if qvec is None:
                    fkw = {"filter_params": params} if params else {}
                    return c.search(name, data=[text], anns_field="sparse", limit=limit,
                                    filter=expr, output_fields=OUTPUT_FIELDS, timeout=timeout,
                                    search_params={"metric_type": "BM25"}, **fkw)
                sparse = AnnSearchRequest(data=[text], anns_field="sparse",
                                          param={"metric_type": "BM25"}, limit=limit,
                                          expr=expr, **kw)
                dense = AnnSearchRequest(data=[list(qvec)], anns_field="vec",
                                         param=dense_param, limit=limit, expr=dexpr, **dkw)
                return c.hybrid_search(name, [sparse, dense], ranker=RRFRanker(60),
                                       limit=limit, output_fields=OUTPUT_FIELDS,
                                       timeout=timeout)

            return op

        res = self.vectors.filtered("hybrid search", build)
        hits: list[VectorHit] = []
        for h in (res[0] if res else []):
            ent = h.get("entity") or {}
            eid = ent.get("id", h.get("id"))
            score = float(h.get("distance", float("nan")))
            if not (isinstance(eid, str) and ENTITY_ID.match(eid)) or not math.isfinite(score):
                continue
            # lexical-only rows are legitimate here: scope checked without has_vec
            if not hit_in_scope(ent, scope, require_vec=False):
                log.warning("dropped a hybrid hit outside the scope")
                continue
            hits.append(VectorHit(entity_id=eid, score=score, version=int(ent["version"])))
        return hits

    def sync_all(self, scope: Scope, records: Sequence[EntityRecord],
                 vecs: Sequence[list[float] | None] | None = None) -> int:
        """Backfill: every eligible lexical entity, with or without a vector."""
        n = 0
        for start in range(0, len(records), 256):
            part = records[start:start + 256]
            pv = vecs[start:start + 256] if vecs is not None else None
            n += self.upsert(scope, part, pv)
        return n
