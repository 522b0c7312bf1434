"""Decoding request params into msgspec Structs with errors that name the field."""

from __future__ import annotations

import re
from typing import Any, TypeVar

import msgspec

from codesynapse.errors import InvalidParams
from codesynapse.scope import SCOPE_FIELDS

T = TypeVar("T")

_PATH_RE = re.compile(r"at `\$(?P<path>[^`]*)`")


# No request has params nested deeper than a few levels; anything deeper is refused before
# it can exhaust the recursion limit (which would surface as an internal error).
MAX_DEPTH = 32


def to_plain(obj: Any, _depth: int = 0) -> Any:
    """Turn pygls/cattrs objects (namedtuples, attrs classes) into plain JSON-like data."""
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    if _depth >= MAX_DEPTH:
        raise InvalidParams("params", f"nested deeper than {MAX_DEPTH} levels")
    d = _depth + 1
    if isinstance(obj, dict):
        return {str(k): to_plain(v, d) for k, v in obj.items()}
    if hasattr(obj, "_asdict"):  # namedtuple from pygls' default converter
        return {k: to_plain(v, d) for k, v in obj._asdict().items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v, d) for v in obj]
    if hasattr(obj, "__attrs_attrs__"):
        return {a.name: to_plain(getattr(obj, a.name), d) for a in obj.__attrs_attrs__}
    return obj


def reject_bad_unicode(obj: Any, path: str = "") -> None:
    """Strings (keys and values) must be encodable as UTF-8: a lone surrogate (valid in a
    JSON escape, invalid as text) is refused here, naming the field, instead of failing
    later in a store or an encoder as an internal error."""
    stack = [(obj, path)]
    while stack:
        o, p = stack.pop()
        if isinstance(o, str):
            try:
                o.encode("utf-8")
            except UnicodeEncodeError as e:
                raise InvalidParams(p or "params", "is not valid Unicode (a lone surrogate)") from e
        elif isinstance(o, dict):
            for k, v in o.items():
                try:
                    k.encode("utf-8")
                except UnicodeEncodeError as e:
                    raise InvalidParams(p or "params", "has a field name that is not valid Unicode") from e
                stack.append((v, f"{p}.{k}" if p else k))
        elif isinstance(o, list):
            stack.extend((v, f"{p}[{i}]") for i, v in enumerate(o))


def reject_scope_fields(params: Any) -> None:
    """A request may never carry a scope field, at any depth of its params object."""
    if isinstance(params, dict):
        for key in params:
            if key in SCOPE_FIELDS:
                raise InvalidParams(
                    key, "scope fields cannot be set by a request; the server sets the scope"
                )


def decode(params: Any, typ: type[T]) -> T:
    """Convert params into ``typ``; a ValidationError becomes InvalidParams naming the field."""
    params = to_plain(params)
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise InvalidParams("params", "must be an object")
    reject_bad_unicode(params)
    reject_scope_fields(params)
    try:
        return msgspec.convert(params, typ, str_keys=True)
    except msgspec.ValidationError as e:
        msg = str(e)
        m = _PATH_RE.search(msg)
        field = m.group("path").lstrip(".") if m else ""
        if not field:
            m2 = re.search(r"missing required field `([^`]+)`", msg)
            field = m2.group(1) if m2 else "params"
        raise InvalidParams(field, msg) from e
