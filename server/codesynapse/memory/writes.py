"""remember and forget for one scope: names and facts pass the redaction gate, anchors are
resolved before anything is written, the lexical mirror and the vectors follow."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from codesynapse.errors import InvalidParams, StoreError
from codesynapse.memory.anchors import resolve_anchors
from codesynapse.memory.envelope import stamp
from codesynapse.memory.models import (
    ForgetParams,
    ForgetResult,
    RememberedEntity,
    RememberParams,
    RememberResult,
)
from codesynapse.memory.recall import EXACT_LIMIT, LexicalMirror
from codesynapse.memory.vectorside import VectorSide
from codesynapse.scope import Scope
from codesynapse.store.memory import EntityRecord, MemoryStore

log = logging.getLogger(__name__)


class Writes:
    """The writing requests of one scope. ``gate()`` gives the redaction gate of one request,
    ``code()`` the workspace's code view anchors are resolved in, ``clock()`` the time."""

    def __init__(self, store: MemoryStore, scope: Scope, side: VectorSide,
                 lexicon: LexicalMirror, *, gate: Callable[[], Any],
                 code: Callable[[], Any], clock: Callable[[], str]):
        self.store = store
        self.scope = scope
        self.side = side
        self.lexicon = lexicon
        self._gate = gate
        self._code = code
        self._clock = clock

    # ---- remember -----------------------------------------------------------------------

    def remember(self, p: RememberParams) -> RememberResult:
        now = self._clock()
        code = self._code()
        # anchors are resolved (and validated) before anything is written: an anchor that
        # names no symbol fails the request, it never leaves a dangling row
        specs = {i: resolve_anchors(code, e.anchors, f"entities[{i}].anchors")
                 for i, e in enumerate(p.entities) if e.anchors is not None}
        fact_specs = {i: resolve_anchors(code, f.anchors, f"facts[{i}].anchors")
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
        hybrid = self.side.hybrid
        if hybrid is not None and touched:
            try:  # lexical half of the native hybrid index, even without vectors
                hybrid.upsert(self.scope, list(touched.values()), None)
            except Exception:
                log.warning("memory: native hybrid index not updated", exc_info=True)
        embedded, pending, note = self.side.embed_now(list(touched.values()))
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
            self.side.drop_vectors(entity_ids)
            self.lexicon.remove(entity_ids)
        return stamp(ForgetResult(entities=n_ent, facts=n_facts, not_found=not_found))
