"""Paging cursors: opaque, bound to the index version and to the request they continue.

A cursor is base64url of a msgpack map ``{v: index version, k: what it pages, o: offset}``.
It is validated on decode: a string this server did not give, one given for another request
(another symbol, direction or query), or one given before the index changed is an
InvalidParams naming ``cursor`` with what to do instead (ask again without it).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any

import msgspec

from codesynapse.errors import InvalidParams

FIELD = "cursor"
CURSOR_MAX = 512  # characters; a cursor this server gives is well under 100 (about 300 with pinned ids and weights)
PINNED_MAX = 16  # pinned ids in one cursor (the dense leg gives at most 10)


class _Cursor(msgspec.Struct, frozen=True):
    v: str  # index version
    k: str  # digest of what the cursor pages (method, subject, direction / query and filters)
    o: int  # offset of the next item
    p: list[int] | None = None  # pinned: ids a per-request leg gave the first page (search's dense hits)
    s: str = ""  # the pinned leg's state on the first page ("" = ready)
    t: list[int] | None = None  # pinned: the tested leg's ids on the first page (it reads the dense leg's pool)
    w: list[int] | None = None  # and their fusion weights, per mille (retrieval.fuse)


def index_version(app) -> str:
    """Changes with every committed write of the index: a full index and each live update
    set ``App.last_update``; a process that has not written answers from the store's
    recorded ``updated_at`` (so a cursor survives a restart only if the index did not change)."""
    last = getattr(app, "last_update", None)
    if last is None:
        try:
            raw = app.store.get_meta("updated_at")
        except Exception:  # the store cannot be read: the request itself will say why
            raw = None
        last = float(raw) if raw else 0.0
    return f"{last:.6f}"


def key_of(*parts: object) -> str:
    return hashlib.blake2b("\x1f".join(str(p) for p in parts).encode(), digest_size=8).hexdigest()


def encode(app, key: str, offset: int, pinned: tuple[Any, ...] | None = None) -> str:
    """``pinned``: ids the walk must reuse instead of asking again (a leg whose answer can
    change without the index changing: the dense leg while vectors are still being embedded,
    or when its query timed out), with that leg's state then, and the ids of the ``tested``
    leg, which reads the dense leg's pool, with their fusion weights per mille, so that every
    page continues the first page's ranking."""
    ids, state, tested, weights = (tuple(pinned) + (None, None))[:4] if pinned is not None else (None, "", None, None)
    raw = msgspec.msgpack.encode(_Cursor(v=index_version(app), k=key, o=offset, p=ids, s=state, t=tested, w=weights))
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(app, cursor: str | None, key: str) -> int:
    """The offset a cursor continues from (0 without one); InvalidParams naming ``cursor``
    when it is not one of ours, pages another request, or predates the index."""
    if cursor is None:
        return 0
    return decode_full(app, cursor, key)[0]


def decode_full(app, cursor: str, key: str) -> tuple[int, tuple[Any, ...] | None]:
    """(offset, (pinned dense ids, their leg's state, pinned tested ids or None, their weights
    per mille or None) or None) of a cursor, validated as :func:`decode` does."""
    if not isinstance(cursor, str) or not cursor or len(cursor) > CURSOR_MAX:
        raise InvalidParams(FIELD, "is not a cursor this server gave; ask again without cursor")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        c = msgspec.msgpack.decode(raw, type=_Cursor)
    except (binascii.Error, ValueError, msgspec.DecodeError, msgspec.ValidationError):
        raise InvalidParams(FIELD, "is not a cursor this server gave; ask again without cursor") from None
    if c.k != key:
        raise InvalidParams(FIELD, "was given for another request (another symbol, direction or query); "
                                   "pass it only with the request that returned it")
    if c.v != index_version(app):
        raise InvalidParams(FIELD, "is stale: the index changed since it was given; ask again without cursor "
                                   "to start from the first page")
    if c.o < 0 or (c.p is not None and len(c.p) > PINNED_MAX) or len(c.s) > 16 or \
            (c.t is not None and len(c.t) > PINNED_MAX) or (c.w is not None and (c.t is None or len(c.w) != len(c.t))):
        raise InvalidParams(FIELD, "is not a cursor this server gave; ask again without cursor")
    return c.o, (None if c.p is None else (c.p, c.s, c.t, c.w))
