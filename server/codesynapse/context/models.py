"""Request params of the context methods (camelCase on the wire). Limits from DESIGN.md."""

from __future__ import annotations

from typing import Annotated, Literal, Union

import msgspec

from codesynapse.errors import InvalidParams

KIB = 1024
SELECTOR_MAX = 4 * KIB
TASK_MAX = 8 * KIB
PATHS_MAX = 100
DIFF_MAX = 4 * 1024 * KIB
QUERY_MAX = 4 * KIB


class Position(msgspec.Struct, kw_only=True, rename="camel", frozen=True, forbid_unknown_fields=True):
    uri: Annotated[str, msgspec.Meta(max_length=SELECTOR_MAX)]
    line: Annotated[int, msgspec.Meta(ge=0, le=10_000_000)]
    character: Annotated[int, msgspec.Meta(ge=0, le=10_000_000)] = 0


Selector = Union[Annotated[str, msgspec.Meta(min_length=1)], Position]

_Tokens = Annotated[int, msgspec.Meta(ge=-(2**53), le=2**53)]


class _Base(msgspec.Struct, kw_only=True, rename="camel", frozen=True, forbid_unknown_fields=True):
    pass


class SymbolParams(_Base):
    selector: Selector
    max_tokens: _Tokens | None = None
    include_ids: bool = False
    cursor: str | None = None  # symbolContext: the next page of the card's callers/callees (context/paging.py)


class CallGraphParams(_Base):
    selector: Selector
    direction: Literal["callers", "callees", "both"] = "both"
    depth: Annotated[int, msgspec.Meta(ge=-(2**53), le=2**53)] = 1
    limit: Annotated[int, msgspec.Meta(ge=-(2**53), le=2**53)] = 25
    max_tokens: _Tokens | None = None
    include_ids: bool = False
    cursor: str | None = None  # the next page, as the previous answer gave it (context/paging.py)


class MinimalContextParams(_Base):
    task: Annotated[str, msgspec.Meta(min_length=1)]
    paths: list[str] = []
    max_tokens: _Tokens | None = None
    include_ids: bool = False


class PrContextParams(_Base):
    diff: str | None = None
    base: Annotated[str, msgspec.Meta(max_length=256)] | None = None
    head: Annotated[str, msgspec.Meta(max_length=256)] | None = None
    max_tokens: _Tokens | None = None
    include_ids: bool = False


class SearchParams(_Base):
    query: Annotated[str, msgspec.Meta(min_length=1)]
    mode: Literal["full", "compact", "summary"] = "full"
    limit: Annotated[int, msgspec.Meta(ge=1, le=500)] = 50
    offset: Annotated[int, msgspec.Meta(ge=0, le=1_000_000)] = 0
    kind: str | None = None
    max_tokens: _Tokens | None = None
    include_ids: bool = False
    cursor: str | None = None  # the next page, as the previous answer gave it (context/paging.py)


class SnippetParams(_Base):
    selector: Selector
    mode: Literal["signature", "head_tail", "full"] = "full"
    max_lines: Annotated[int, msgspec.Meta(ge=1, le=5000)] = 200
    max_tokens: _Tokens | None = None


class StatusParams(_Base):
    pass


def check_len(field: str, value: str | None, limit: int, unit: str = "bytes") -> None:
    if value is None:
        return
    n = len(value.encode("utf-8", "surrogatepass"))
    if n > limit:
        raise InvalidParams(field, f"is {n} bytes; the limit is {limit} bytes")


def check_selector(sel) -> None:
    if isinstance(sel, str):
        check_len("selector", sel, SELECTOR_MAX)
    else:
        check_len("selector.uri", sel.uri, SELECTOR_MAX)
