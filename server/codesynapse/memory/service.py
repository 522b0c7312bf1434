"""MemoryService: remember / recall / forget / list for one immutable Scope.

The service composes the parts, each in its own module:

- ``memory.recall`` — the recall plan (exact, lexical and dense legs, RRF, hydration,
  facts, packing to 32 KiB) and the lexical mirror of the scope's entities;
- ``memory.writes`` — remember and forget (redaction gate, anchors, vectors follow);
- ``memory.vectorside`` — the embedder, the vector store (opened again in the background
  when it was down at start), the native hybrid index and the embedding backfill;
- ``memory.settings`` — ``MemorySettings`` and ``settings_from_dict``;
- ``memory.envelope`` — ``stamp`` (tokens and resultBytes), ``updatedAt``, list cursors.

``list`` (a page of entities by name) and the lifecycle (``end_session``, ``close``) stay
here.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

from codesynapse.errors import CodeSynapseError
from codesynapse.memory.embedder import Embedder
from codesynapse.memory.envelope import changed, decode_cursor, encode_cursor, stamp
from codesynapse.memory.lexical import LexicalIndex
from codesynapse.memory.models import (
    RECALL_MAX_BYTES,
    ForgetParams,
    ForgetResult,
    ListedEntity,
    ListParams,
    ListResult,
    RecallParams,
    RecallResult,
    RememberParams,
    RememberResult,
)
from codesynapse.memory.recall import LexicalMirror, Recall, exact_terms, owned
from codesynapse.memory.settings import MemorySettings, settings_from_dict
from codesynapse.memory.vectors import MilvusVectors
from codesynapse.memory.vectorside import VectorsAttachment, VectorSide
from codesynapse.memory.writes import Writes
from codesynapse.scope import Scope
from codesynapse.store.memory import EntityRecord, MemoryStore

__all__ = ["MemoryService", "MemorySettings", "VectorsAttachment", "exact_terms",
           "settings_from_dict", "stamp"]

log = logging.getLogger(__name__)


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _compile_patterns(patterns: Sequence[str]) -> tuple[re.Pattern[str], ...]:
    try:
        from codesynapse.extract.redact import compile_patterns
    except ImportError as e:  # fail closed: never store unredacted free text
        raise CodeSynapseError("the redactor (codesynapse.extract.redact) is unavailable") from e
    return compile_patterns(list(patterns)) if patterns else ()


def _gate(extra: Sequence[re.Pattern[str]], redactor: Callable[[str], str] | None) -> Any:
    from codesynapse.extract.redact import RecordGate

    return RecordGate(extra, redactor=redactor)


class MemoryService:
    """Agent memory for one scope. Thread-safe. See the module docstring for its parts."""

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
        self.scope = scope
        self.settings = settings or MemorySettings()
        self._redactor = redactor
        self._compiled: tuple[re.Pattern[str], ...] | None = None
        self._patterns_source: Callable[[], Sequence[re.Pattern[str]]] | None = None
        self._on_close = list(on_close)
        self._closed = False
        self.code: Any = None  # anchors.CodeView, attached by the App (attach_code)
        self.side = VectorSide(store, scope, self.settings, vectors, embedder, hybrid,
                               unavailable=unavailable, reopen_vectors=reopen_vectors)
        self.lexicon = LexicalMirror(store, scope)
        self._recall = Recall(store, scope, self.settings, self.side, self.lexicon,
                              lambda: self.code)
        self._writes = Writes(store, scope, self.side, self.lexicon, gate=self._gate,
                              code=lambda: self.code, clock=clock)

    # ---- the dense side ------------------------------------------------------------------

    @property
    def vectors(self) -> MilvusVectors | None:
        return self.side.vectors

    @property
    def embedder(self) -> Embedder | None:
        return self.side.embedder

    @property
    def hybrid(self) -> Any:
        return self.side.hybrid

    @property
    def vector_retries(self) -> int:
        """Failed attempts to open the vector store again."""
        return self.side.retries

    @property
    def vectors_retrying(self) -> bool:
        """The vector store was unavailable at start and is being opened again."""
        return self.side.retrying

    @property
    def dense_available(self) -> str:
        """"" when the dense leg can run, else the reason it cannot."""
        return self.side.dense_available

    def backfill(self, max_items: int = 256, timeout: float | None = None) -> int:
        """Embed this scope's queued entities now (see ``VectorSide.backfill``)."""
        return self.side.backfill(max_items, timeout)

    def wait_backfill(self, timeout: float | None = None) -> bool:
        """Wait for a running background drain (tests, benchmarks). True when idle."""
        return self.side.wait_backfill(timeout)

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

    def attach_code(self, code: Any) -> None:
        """The workspace's code side (``anchors.CodeView``): anchors are validated against
        its graph and recall hydrates them from it."""
        self.code = code

    @property
    def _lex(self) -> LexicalIndex:
        """The lexical index of the scope (tests compare it with the native hybrid's BM25)."""
        return self.lexicon.index

    def _sync_lexical(self) -> None:
        self.lexicon.sync()

    def _owned(self, rec: EntityRecord) -> bool:
        return owned(self.scope, rec)

    # ---- requests -----------------------------------------------------------------------

    def remember(self, p: RememberParams) -> RememberResult:
        return self._writes.remember(p)

    def recall(self, p: RecallParams) -> RecallResult:
        return self._recall.recall(p)

    def last_stages(self) -> dict[str, float]:
        """Stage timings (ms) of this thread's last recall (see ``Recall.last_stages``)."""
        return self._recall.last_stages()

    def forget(self, p: ForgetParams) -> ForgetResult:
        return self._writes.forget(p)

    def list(self, p: ListParams) -> ListResult:
        after = decode_cursor(p.cursor) if p.cursor else None
        page = self.store.list_entities(self.scope, durable=p.durable, after=after,
                                        limit=p.limit + 1)
        more = len(page) > p.limit
        page = page[:p.limit]
        items = [
            ListedEntity(name=r.name, type=r.type, durable=r.durable, facts=n,
                         created_at=r.created_at, updated_at=changed(r.created_at, r.updated_at),
                         aliases=list(r.aliases), id=r.id if p.include_ids else None)
            for r, n in page
        ]

        def build(kept: int, truncated: bool) -> ListResult:
            cursor = ""
            if truncated and kept:
                last = page[kept - 1][0]
                cursor = encode_cursor(last.name, last.id)
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
            self.side.drop_vectors(ids)
        self.lexicon.remove(ids)
        return len(ids)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.side.close()  # vector stores attached late are released before the store closes
        for fn in self._on_close:
            try:
                fn()
            except Exception:
                log.warning("memory: close step failed", exc_info=True)
