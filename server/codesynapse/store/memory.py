"""The MemoryStore port: the graph side of agent memory.

A backend (SQLite here; Neo4j later) stores **entities** and **facts** and nothing else
(vectors live in the vector index, see ``vectors.py``). Every method takes the caller's
immutable :class:`~codesynapse.scope.Scope` and must bind it on every query:

- ``tenant`` and ``namespace`` on every entity, alias, fact and queue row touched;
- visibility: an entity or fact is *durable* (``session == ""``, visible to every session of
  the namespace) or *session* (``session == scope.session``, visible only to that session).
  Reads return only rows with ``session in ("", scope.session)``; writes of session memory
  store ``scope.session``;
- a fact is returned only if the fact **and both endpoints** are live and visible in the
  same tenant/namespace;
- values travel only as query parameters (SQLite ``?``, Cypher ``$param``); labels, edge
  types and table names are constants; no method accepts query text.

Deletion is a tombstone: ``valid_to`` is set on the entity and on its visible facts; a
tombstoned row is never returned again (``purge_session`` is the only hard delete, for
session memory whose session has ended).

Timestamps are ISO-8601 UTC strings made by the caller (``now``), so backends agree on them.
Every change to an entity (create, update, alias change, forget, purge) is appended to a
per-namespace change feed; ``changes_since`` lets in-process indexes (the lexical ranker)
catch up with writes made by other processes on the same store.

Embedding to-do queue: vectors are computed per model key (model hash + dimension). A
write of an entity enqueues it for the active model; a model change enqueues every live
entity that has no vector of its current version under the new key (``enqueue_missing``);
the embedder drains the queue with ``take_embedding_todo`` / ``mark_embedded``.

Backends translate driver errors into ``StoreError`` / ``StoreUnavailable`` (``from e``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol, runtime_checkable

import msgspec

from codesynapse.scope import Scope


class EntityRecord(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    tenant: str
    namespace: str
    session: str  # "" = durable
    name: str
    aliases: tuple[str, ...]
    type: str
    version: int  # bumped whenever name, aliases or type change
    created_at: str
    updated_at: str

    @property
    def durable(self) -> bool:
        return self.session == ""


class FactRecord(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    tenant: str
    namespace: str
    session: str  # "" = durable
    subject_id: str
    subject_name: str
    predicate: str
    object_id: str
    object_name: str
    confidence: float
    source_client: str
    created_at: str
    updated_at: str

    @property
    def durable(self) -> bool:
        return self.session == ""


class AnchorSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A code symbol an entity is about, by stable identity: qualified name + file + the
    content hash of the symbol's definition (what the code graph stores per symbol)."""

    qname: str
    name: str  # the symbol's own name (last segment): a moved symbol keeps it
    path: str
    hash: str
    kind: str
    line: int  # 1-based start line when last seen


class AnchorRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A stored anchor. ``status``: "" (current), "moved" (re-anchored to the same content
    under another name/file; ``previous`` = "qname @ path" before), "changed" (the symbol's
    content hash differs from ``hash``, the one remembered) or "removed"; ``status_at``
    when the index saw it."""

    id: str
    entity_id: str
    session: str
    qname: str
    name: str
    path: str
    hash: str
    kind: str
    line: int
    status: str = ""
    status_at: str = ""
    previous: str = ""
    created_at: str = ""


class UpsertOutcome(msgspec.Struct, frozen=True, kw_only=True):
    entity: EntityRecord
    status: str  # "created" | "updated" | "unchanged"


class TodoItem(msgspec.Struct, frozen=True, kw_only=True):
    entity_id: str
    version: int


@runtime_checkable
class MemoryStore(Protocol):
    """Entities + facts of agent memory, scoped by tenant/namespace and session."""

    # lifecycle
    def close(self) -> None: ...

    # entities
    def upsert_entity(
        self, scope: Scope, *, name: str, aliases: Sequence[str], type: str, durable: bool,
        now: str,
    ) -> UpsertOutcome:
        """Create the entity, or update the live one with the same ``name`` in the same
        visibility (durable, or this session). ``aliases`` replace the old set (duplicates
        and the name itself removed, order kept). ``version`` is bumped when name, aliases
        or type change, and the change feed records it. Status says what happened."""
        ...

    def get_entities(self, scope: Scope, ids: Sequence[str]) -> dict[str, EntityRecord]:
        """The live, visible entities among ``ids`` (missing, foreign or tombstoned ids are
        simply absent)."""
        ...

    def find_exact(
        self, scope: Scope, terms: Sequence[str], *, durable_only: bool = False,
        limit: int = 10,
    ) -> list[EntityRecord]:
        """Live visible entities whose id, name or one alias equals one of ``terms``
        exactly (case and punctuation kept). Order: by the first term matched, then name
        matches before alias matches, then session before durable, then id."""
        ...

    def iter_entities(self, scope: Scope) -> Iterator[EntityRecord]:
        """Every live visible entity, ordered by id (for index builds and backfills)."""
        ...

    def list_entities(
        self, scope: Scope, *, durable: bool | None, after: tuple[str, str] | None,
        limit: int,
    ) -> list[tuple[EntityRecord, int]]:
        """A page of live visible entities ordered by (name, id), strictly after the
        ``(name, id)`` key ``after``; ``durable`` True/False/None = durable/session/both.
        Each entity comes with its count of live visible facts."""
        ...

    def forget_entities(self, scope: Scope, ids: Sequence[str], now: str) -> tuple[int, int]:
        """Tombstone the visible live entities and every visible live fact touching them.
        Returns (entities, facts) tombstoned."""
        ...

    # facts
    def upsert_fact(
        self, scope: Scope, *, subject_id: str, predicate: str, object_id: str,
        confidence: float, source_client: str, durable: bool, now: str,
    ) -> tuple[FactRecord, bool]:
        """Create the fact or update confidence/source of the live identical one (same
        endpoints, predicate and visibility). Both endpoints must be live and visible, and
        a durable fact needs durable endpoints (StoreError otherwise). Returns (fact,
        created)."""
        ...

    def facts_touching(
        self, scope: Scope, entity_ids: Sequence[str], *, limit: int,
    ) -> list[FactRecord]:
        """Live visible facts whose subject or object is in ``entity_ids`` and whose both
        endpoints are live and visible; ordered by confidence desc, updated_at desc, id."""
        ...

    def count_facts_touching(self, scope: Scope, entity_ids: Sequence[str]) -> int:
        """How many facts ``facts_touching`` would return without a limit."""
        ...

    def forget_facts(
        self, scope: Scope, *, subject_id: str, predicate: str, object_id: str, now: str,
    ) -> int:
        """Tombstone the visible live facts subject –predicate→ object. Returns the count."""
        ...

    def forget_fact_ids(self, scope: Scope, ids: Sequence[str], now: str) -> list[str]:
        """Tombstone the visible live facts with these ids; returns the ids tombstoned."""
        ...

    # anchors: entities tied to code symbols (memory/anchors.py)
    def set_anchors(self, scope: Scope, entity_id: str, anchors: Sequence[AnchorSpec],
                    now: str) -> None:
        """Replace the anchors of the live entity ``entity_id`` visible to the scope, in its
        visibility (StoreError when there is no such entity)."""
        ...

    def anchors_of(self, scope: Scope, entity_ids: Sequence[str]) -> dict[str, list[AnchorRecord]]:
        """The anchors of these live visible entities, by entity id (in insertion order)."""
        ...

    def anchored_to(self, scope: Scope, qnames: Sequence[str], limit: int = 100) -> list[AnchorRecord]:
        """Anchors whose current qualified name is in ``qnames``, of live entities visible to
        the scope; newest entity first."""
        ...

    def anchors_to_check(self, scope: Scope, paths: Sequence[str], names: Sequence[str]
                         ) -> list[AnchorRecord]:
        """For the index's staleness pass (not a read for a client): the anchors of live
        entities of the scope's tenant and namespace, of every session, that sit in one of
        ``paths``, or are ``removed`` and whose symbol name is one of ``names``."""
        ...

    def update_anchors(self, scope: Scope, anchors: Sequence[AnchorRecord]) -> None:
        """Write location, content hash and status of these anchors (by id; tenant and
        namespace bound)."""
        ...

    # fact anchors: the same records, whose ``entity_id`` is the fact's id (stores that have
    # them say ``supports_fact_anchors = True``); ``anchors_to_check`` returns them too
    def set_fact_anchors(self, scope: Scope, fact_id: str, anchors: Sequence[AnchorSpec],
                         now: str) -> None:
        """Replace the anchors of the live fact ``fact_id`` visible to the scope, in its
        visibility (StoreError when there is no such fact)."""
        ...

    def fact_anchors_of(self, scope: Scope, fact_ids: Sequence[str]) -> dict[str, list[AnchorRecord]]:
        """The anchors of these live visible facts (both endpoints live and visible), by fact
        id, in insertion order."""
        ...

    def facts_anchored_to(self, scope: Scope, qnames: Sequence[str], limit: int = 100
                          ) -> list[tuple[AnchorRecord, FactRecord]]:
        """(anchor, fact) for anchors whose current qualified name is in ``qnames``, of live
        facts visible to the scope with both endpoints; newest fact first."""
        ...

    # change feed
    def change_cursor(self, scope: Scope) -> int:
        """The newest change sequence number visible to the scope (0 when none)."""
        ...

    def changes_since(self, scope: Scope, after: int, limit: int = 10_000) -> tuple[int, list[str]]:
        """Entity ids changed after sequence ``after`` (visible to the scope), and the
        sequence to resume from."""
        ...

    # embedding to-do queue
    def enqueue_embedding(
        self, scope: Scope, model_key: str, items: Sequence[TodoItem],
    ) -> None: ...

    def enqueue_missing(self, scope: Scope, model_key: str) -> int:
        """Enqueue every live visible entity with no vector of its current version under
        ``model_key``. Returns how many were enqueued."""
        ...

    def take_embedding_todo(self, scope: Scope, model_key: str, limit: int) -> list[TodoItem]: ...

    def pending_embeddings(self, scope: Scope, model_key: str) -> int: ...

    def mark_embedded(self, scope: Scope, model_key: str, items: Sequence[TodoItem]) -> None:
        """Record vectors written for these (entity, version)s and drop them from the queue
        (a queue row for a newer version stays)."""
        ...

    def embedded_version(self, scope: Scope, model_key: str, entity_id: str) -> int | None: ...

    # session owners and session end
    def claim_session(self, scope: Scope, owner: str, now: str) -> None:
        """Record that the process ``owner`` (an opaque string, see memory/owner.py) holds
        ``scope.session``: once that process is gone, nothing can reach the session again."""
        ...

    def session_owners(self, scope: Scope) -> dict[str, str]:
        """Every session of ``scope``'s tenant and namespace that holds session memory (an
        entity or a fact) or an owner record → its recorded owner ('' when none was recorded)."""
        ...

    def purge_session(self, scope: Scope) -> list[str]:
        """Hard-delete this session's entities, aliases, facts and queue rows, and its owner
        record (durable rows untouched). Returns the purged entity ids, so vectors can be
        removed too."""
        ...
