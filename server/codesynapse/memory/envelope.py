"""What every memory answer shares: ``stamp`` (its ``tokens`` and ``resultBytes``),
``changed`` (``updatedAt`` only when it differs) and the ``memory/list`` cursor."""

from __future__ import annotations

import base64
import binascii
import json
from typing import TypeVar

import msgspec

from codesynapse.context.budget import dumps, tokens_for
from codesynapse.errors import CodeSynapseError, InvalidParams

S = TypeVar("S", bound=msgspec.Struct)


def stamp(result: S) -> S:
    """Fill ``tokens`` = ceil(resultBytes/4) and ``resultBytes`` of the complete JSON, the
    digits of both numbers included (iterated to a fixed point). The JSON is the one every
    answer is measured in (``codesynapse.context.budget.dumps``): msgspec writes floats
    differently (``1e-7`` for ``1e-07``), which made memory answers disagree by a byte."""
    tokens = nbytes = 0
    for _ in range(8):
        cur = msgspec.structs.replace(result, tokens=tokens, result_bytes=nbytes)
        size = len(dumps(msgspec.to_builtins(cur)))
        if size == nbytes and tokens == tokens_for(size):
            return cur
        nbytes, tokens = size, tokens_for(size)
    raise CodeSynapseError("token estimate did not converge")  # pragma: no cover


def changed(created_at: str, updated_at: str) -> str | None:
    """``updatedAt`` of an answer item: only when it differs from ``createdAt``."""
    return updated_at if updated_at != created_at else None


def encode_cursor(name: str, eid: str) -> str:
    raw = json.dumps([name, eid], ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        name, eid = json.loads(raw)
        if not isinstance(name, str) or not isinstance(eid, str):
            raise ValueError
        return name, eid
    except (ValueError, binascii.Error, TypeError) as e:
        raise InvalidParams("cursor", "not a cursor returned by memory/list") from e
