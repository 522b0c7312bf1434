"""A small per-file memo for hooks that need whole-file facts (struct fields, result types,
CommonJS exports) while the engine asks unit by unit: computed once per file content.

Keyed by the source bytes themselves (their hash is cached by Python, so a lookup is cheap
after the first) and a label; bounded, and safe to share between threads (at worst a value
is computed twice).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_MAX = 64
_memo: dict[tuple[bytes, str], object] = {}


def per_file(src: bytes, label: str, compute: Callable[[], T]) -> T:
    key = (src, label)
    try:
        return _memo[key]  # type: ignore[return-value]
    except KeyError:
        pass
    value = compute()
    if len(_memo) >= _MAX:
        _memo.clear()
    _memo[key] = value
    return value
