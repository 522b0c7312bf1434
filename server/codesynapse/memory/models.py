"""Request and result types of the four memory requests, and their limits.

Params are decoded with ``codesynapse.codec.decode`` (which rejects scope fields and turns a
msgspec ValidationError into InvalidParams naming the field) and then checked by the
``validate_*`` functions here, which name the field and the limit for everything a type
annotation cannot express (UTF-8 size, charset, control characters).

Every struct forbids unknown fields, so a scope field smuggled into a nested object
(``entities[0].namespace``) is rejected too, not silently dropped.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import msgspec

from codesynapse.codec import decode
from codesynapse.errors import InvalidParams

# ---- limits (contract: DESIGN.md "Budgets and limits") -------------------------------------

MAX_NAME_CHARS = 256
MAX_ALIASES = 16
MAX_TYPE_CHARS = 64
MAX_PREDICATE_CHARS = 64
MAX_SOURCE_CLIENT_CHARS = 128
MAX_ENTITIES_PER_REQUEST = 100
MAX_FACTS_PER_REQUEST = 200
MAX_QUERY_BYTES = 4096
MAX_FORGET_ITEMS = 200
MAX_ANCHORS = 16  # anchors per entity in one request (and kept per entity)
MAX_ANCHOR_CHARS = 1024  # a qualified name

RECALL_MAX_ENTRIES = 8
RECALL_MAX_HOPS = 2
RECALL_MAX_FACTS = 80
RECALL_MAX_BYTES = 32 * 1024
LIST_MAX_LIMIT = 200
LIST_DEFAULT_LIMIT = 50

PREDICATE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
TYPE_RE = re.compile(r"^[A-Za-z0-9_.\-]{0,64}$")
ENTITY_ID_RE = re.compile(r"^mem_[0-9a-f]{24}$")
FACT_ID_RE = re.compile(r"^fact_[0-9a-f]{24}$")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")

MEMORY_NOTICE = "Supplied by agents and clients, not verified against the code: check the source."

_STRUCT = {"kw_only": True, "rename": "camel", "frozen": True, "forbid_unknown_fields": True}
# items whose opaque ``id`` is omitted unless asked for
_OUT = {"kw_only": True, "rename": "camel", "frozen": True, "omit_defaults": True}
_RES = {"kw_only": True, "rename": "camel", "frozen": True}

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_NAME_CHARS)]


# ---- requests -----------------------------------------------------------------------------


class AnchorPosition(msgspec.Struct, **_STRUCT):
    """A position in a workspace file (LSP: 0-based line and character); the server anchors
    the innermost symbol defined around it."""

    uri: Annotated[str, msgspec.Meta(min_length=1, max_length=4096)]
    line: Annotated[int, msgspec.Meta(ge=0)]
    character: Annotated[int, msgspec.Meta(ge=0)] = 0


AnchorIn = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_ANCHOR_CHARS)] | AnchorPosition


class EntityIn(msgspec.Struct, **_STRUCT):
    """An entity to remember. Same name in the same visibility (durable, or this session)
    updates the existing entity; ``aliases`` replace the previous aliases. ``anchors`` name
    the code it is about (qualified names or positions), validated against this workspace's
    graph; given, they replace the entity's previous anchors."""

    name: Name
    aliases: Annotated[list[Name], msgspec.Meta(max_length=MAX_ALIASES)] = []
    type: Annotated[str, msgspec.Meta(max_length=MAX_TYPE_CHARS)] = ""
    durable: bool = False
    anchors: Annotated[list[AnchorIn], msgspec.Meta(max_length=MAX_ANCHORS)] | None = None


class FactIn(msgspec.Struct, **_STRUCT):
    """subject –predicate→ object. Subject and object are entity names, aliases or ids.
    A fact is session memory unless ``durable``; a durable fact links durable entities
    only. An endpoint that names no visible entity creates one with the fact's
    durability."""

    subject: Name
    predicate: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_PREDICATE_CHARS)]
    object: Name
    confidence: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 1.0
    source_client: Annotated[str, msgspec.Meta(max_length=MAX_SOURCE_CLIENT_CHARS)] = ""
    durable: bool = False
    # the code the fact is about, as for an entity; given, they replace the fact's anchors
    anchors: Annotated[list[AnchorIn], msgspec.Meta(max_length=MAX_ANCHORS)] | None = None


class RememberParams(msgspec.Struct, **_STRUCT):
    entities: Annotated[list[EntityIn], msgspec.Meta(max_length=MAX_ENTITIES_PER_REQUEST)] = []
    facts: Annotated[list[FactIn], msgspec.Meta(max_length=MAX_FACTS_PER_REQUEST)] = []


class RecallParams(msgspec.Struct, **_STRUCT):
    """``limit`` is clamped to 1..8, ``hops`` to 0..2, ``maxFacts`` to 0..80."""

    query: str
    limit: int = RECALL_MAX_ENTRIES
    hops: int = 1
    max_facts: int = RECALL_MAX_FACTS
    include_ids: bool = False


class FactRef(msgspec.Struct, **_STRUCT):
    subject: Name
    predicate: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_PREDICATE_CHARS)]
    object: Name


class ForgetParams(msgspec.Struct, **_STRUCT):
    """Forget entities (by id, or by exact name/alias) and all their facts, and single
    facts. Forgetting is a tombstone: ``valid_to`` is set and recall stops at once."""

    ids: Annotated[list[str], msgspec.Meta(max_length=MAX_FORGET_ITEMS)] = []
    names: Annotated[list[Name], msgspec.Meta(max_length=MAX_FORGET_ITEMS)] = []
    facts: Annotated[list[FactRef], msgspec.Meta(max_length=MAX_FORGET_ITEMS)] = []


class ListParams(msgspec.Struct, **_STRUCT):
    """``durable``: true lists durable entities, false this session's, absent both.
    ``cursor`` is the ``nextCursor`` of the previous page."""

    durable: bool | None = None
    cursor: Annotated[str, msgspec.Meta(max_length=2048)] = ""
    limit: int = LIST_DEFAULT_LIMIT
    include_ids: bool = False


# ---- results ------------------------------------------------------------------------------


class LegReport(msgspec.Struct, kw_only=True, rename="camel", frozen=True, omit_defaults=True):
    """Whether a retrieval leg ran and how many candidates it gave; ``reason`` (only when
    there is one) says why it did not run, or which engine ran it."""

    ran: bool
    hits: int
    reason: str = ""


class Legs(msgspec.Struct, kw_only=True, rename="camel", frozen=True, omit_defaults=True):
    """The legs of a recall; ``fusion`` is given only when it is not the in-process RRF
    k=60 (None), e.g. ``milvus-rrf-k60`` for the native hybrid search."""

    exact: LegReport
    lexical: LegReport
    dense: LegReport
    fusion: str | None = None


# Recall and list items leave out what is at its default (docs/PROTOCOL.md "Memory answers"):
# an empty type, durable false, updatedAt equal to createdAt (None here), confidence 1.0, hop 1.


class AnchorOut(msgspec.Struct, **_OUT):
    """An anchor of a recalled entry: where its symbol is now and a one-line card.
    ``status`` (only when the code moved on): ``moved`` (re-anchored: same content under
    another name or file; ``previous`` says where it was), ``changed`` (the symbol's
    content changed since it was remembered) or ``removed`` (no symbol with that name or
    content is left; ``path``/``line`` say where it was); ``statusAt`` when that was seen."""

    qualified_name: str
    path: str
    line: int
    card: str
    status: str = ""
    status_at: str = ""
    previous: str = ""


class Entry(msgspec.Struct, **_OUT):
    name: str
    found_by: list[str]
    created_at: str
    updated_at: str | None = None
    type: str = ""
    durable: bool = False
    aliases: list[str] = []
    anchors: list[AnchorOut] = []
    id: str | None = None


class FactOut(msgspec.Struct, **_OUT):
    subject: str
    predicate: str
    object: str
    created_at: str
    updated_at: str | None = None
    confidence: float | None = None  # None: 1.0 (msgspec compares a float default by identity)
    durable: bool = False
    hop: int = 1
    source_client: str = ""
    anchors: list[AnchorOut] = []
    id: str | None = None


class Omitted(msgspec.Struct, kw_only=True, rename="camel", frozen=True):
    entries: int = 0
    facts: int = 0
    anchors: int = 0
    how_to_get_more: str = ""


class RecallResult(msgspec.Struct, **_RES, omit_defaults=True):
    """``omitted`` only when something was left out (then ``truncated`` is true), ``hint``
    only when nothing matched."""

    entries: list[Entry]
    facts: list[FactOut]
    truncated: bool
    legs: Legs
    notice: str
    omitted: Omitted | None = None
    hint: str = ""
    tokens: int = 0
    result_bytes: int = 0


class RememberedEntity(msgspec.Struct, **_RES):
    name: str
    durable: bool
    status: str  # "created" | "updated" | "unchanged"
    id: str | None = None
    anchors: list[str] = []  # the qualified names anchored (positions resolved)


class RememberResult(msgspec.Struct, **_RES):
    entities: list[RememberedEntity]
    facts_created: int
    facts_updated: int
    embedded: int
    embedding_pending: int
    embedding_note: str = ""
    tokens: int = 0
    result_bytes: int = 0


class ForgetResult(msgspec.Struct, **_RES):
    entities: int
    facts: int
    not_found: list[str] = []
    tokens: int = 0
    result_bytes: int = 0


class ListedEntity(msgspec.Struct, **_OUT):
    name: str
    facts: int
    created_at: str
    updated_at: str | None = None
    type: str = ""
    durable: bool = False
    aliases: list[str] = []
    id: str | None = None


class ListResult(msgspec.Struct, **_RES):
    entries: list[ListedEntity]
    truncated: bool
    next_cursor: str = ""
    tokens: int = 0
    result_bytes: int = 0


# ---- validation ---------------------------------------------------------------------------


def _check_text(field: str, value: str, *, what: str = "text") -> None:
    if not value.strip():
        raise InvalidParams(field, f"{what} must not be blank")
    if _CONTROL_RE.search(value):
        raise InvalidParams(field, f"{what} must not contain control characters")


def _check_predicate(field: str, value: str) -> None:
    if not PREDICATE_RE.match(value):
        raise InvalidParams(
            field,
            "predicate must match [A-Za-z][A-Za-z0-9_]* (at most "
            f"{MAX_PREDICATE_CHARS} characters), e.g. blocked_by",
        )


def validate_remember(p: RememberParams) -> RememberParams:
    if not p.entities and not p.facts:
        raise InvalidParams("entities", "remember needs at least one entity or fact")
    for i, e in enumerate(p.entities):
        _check_text(f"entities[{i}].name", e.name, what="name")
        for j, a in enumerate(e.aliases):
            _check_text(f"entities[{i}].aliases[{j}]", a, what="alias")
        for j, a in enumerate(e.anchors or ()):
            if isinstance(a, str):
                _check_text(f"entities[{i}].anchors[{j}]", a, what="anchor")
        if not TYPE_RE.match(e.type):
            raise InvalidParams(
                f"entities[{i}].type",
                f"type must match [A-Za-z0-9_.-]* (at most {MAX_TYPE_CHARS} characters)",
            )
    for i, f in enumerate(p.facts):
        _check_text(f"facts[{i}].subject", f.subject, what="subject")
        _check_text(f"facts[{i}].object", f.object, what="object")
        _check_predicate(f"facts[{i}].predicate", f.predicate)
        for j, a in enumerate(f.anchors or ()):
            if isinstance(a, str):
                _check_text(f"facts[{i}].anchors[{j}]", a, what="anchor")
        if f.source_client and _CONTROL_RE.search(f.source_client):
            raise InvalidParams(
                f"facts[{i}].sourceClient", "sourceClient must not contain control characters"
            )
    return p


def validate_recall(p: RecallParams) -> RecallParams:
    size = len(p.query.encode("utf-8"))
    if size > MAX_QUERY_BYTES:
        raise InvalidParams("query", f"query is {size} bytes; the limit is {MAX_QUERY_BYTES} bytes")
    if not p.query.strip():
        raise InvalidParams("query", "query must not be blank")
    return p


def validate_forget(p: ForgetParams) -> ForgetParams:
    if not (p.ids or p.names or p.facts):
        raise InvalidParams("ids", "forget needs ids, names or facts")
    for i, v in enumerate(p.ids):
        if not (ENTITY_ID_RE.match(v) or FACT_ID_RE.match(v)):
            raise InvalidParams(f"ids[{i}]", "not an entity id (mem_…) or fact id (fact_…)")
    for i, n in enumerate(p.names):
        _check_text(f"names[{i}]", n, what="name")
    for i, f in enumerate(p.facts):
        _check_predicate(f"facts[{i}].predicate", f.predicate)
    return p


def validate_list(p: ListParams) -> ListParams:
    if p.limit < 1 or p.limit > LIST_MAX_LIMIT:
        raise InvalidParams("limit", f"limit must be 1..{LIST_MAX_LIMIT}")
    return p


def decode_remember(params: Any) -> RememberParams:
    return validate_remember(decode(params, RememberParams))


def decode_recall(params: Any) -> RecallParams:
    return validate_recall(decode(params, RecallParams))


def decode_forget(params: Any) -> ForgetParams:
    return validate_forget(decode(params, ForgetParams))


def decode_list(params: Any) -> ListParams:
    return validate_list(decode(params, ListParams))
