"""Row pieces every memory store shares: new ids, the rows of an anchor write and the
grouping of anchor records by owner. Each backend maps its own stored rows to the port's
records (``store.memory``); what they build alike is here, once."""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from typing import Any

from codesynapse.store.memory import AnchorRecord, AnchorSpec


def new_entity_id() -> str:
    return "mem_" + secrets.token_hex(12)


def new_fact_id() -> str:
    return "fact_" + secrets.token_hex(12)


def new_anchor_id() -> str:
    return "anc_" + secrets.token_hex(12)


def anchor_rows(anchors: Sequence[AnchorSpec]) -> list[dict[str, Any]]:
    """The anchors of one owner (entity or fact) as rows to write, in order: a new id each,
    the symbol's qname, name, path, hash, kind and line, and its position."""
    return [{"id": new_anchor_id(), "qname": a.qname, "name": a.name, "path": a.path, "hash": a.hash,
             "kind": a.kind, "line": a.line, "position": i} for i, a in enumerate(anchors)]


def by_owner(records: Iterable[AnchorRecord]) -> dict[str, list[AnchorRecord]]:
    """Anchor records grouped by their owner's id (``entity_id``: an entity's or a fact's),
    each group in the order given."""
    out: dict[str, list[AnchorRecord]] = {}
    for a in records:
        out.setdefault(a.entity_id, []).append(a)
    return out
