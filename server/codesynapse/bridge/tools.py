"""The MCP tools: one row per tool, naming the daemon request it sends and its input schema.

A tool's arguments are the request's params as they are (camelCase, the same names and
limits as docs/PROTOCOL.md), so a tool answers exactly what the LSP request answers; the
daemon validates them and names a bad field. The definitions are short on purpose: an agent
pays for the whole ``tools/list`` answer on every turn (the issue's cap is 2,000 cl100k
tokens for all of them; ``codesynapse bench mcp`` counts it). Descriptions say what each
tool is for; PROTOCOL.md holds the details.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Tool(NamedTuple):
    name: str
    method: str  # the daemon request
    description: str
    schema: dict[str, Any]


def _obj(props: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    s: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        s["required"] = list(required)
    return s


def _int(desc: str, lo: int | None = None, hi: int | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"type": "integer", "description": desc}
    if lo is not None:
        d["minimum"] = lo
    if hi is not None:
        d["maximum"] = hi
    return d


_SEL = {"type": ["string", "object"],
        "description": "qualified name (pkg.mod.Class.meth), bare or dotted-suffix name, or {uri,line,character}"}
_MAX = _int("answer budget in tokens (256-20000)", 256, 20000)
_IDS = {"type": "boolean", "description": "include opaque ids"}
_CUR = {"type": "string", "description": "cursor of the previous page"}
_DURABLE = {"type": "boolean", "description": "kept after this session (default false)"}

TOOLS: tuple[Tool, ...] = (
    Tool("symbol_card", "codesynapse/symbolCard",
         "One symbol: signature, path, range, summary, counts, top callers/callees/tests.",
         _obj({"selector": _SEL, "maxTokens": _MAX, "includeIds": _IDS}, ("selector",))),
    Tool("symbol_context", "codesynapse/symbolContext",
         "A symbol's card plus related cards (container, callees, implementations, callers, tests); "
         "cursor pages the card's lists.",
         _obj({"selector": _SEL, "maxTokens": _MAX, "includeIds": _IDS, "cursor": _CUR}, ("selector",))),
    Tool("call_graph", "codesynapse/callGraph",
         "Callers and/or callees to a depth, with call sites and unresolved name matches; paged.",
         _obj({"selector": _SEL,
               "direction": {"enum": ["callers", "callees", "both"], "description": "default both"},
               "depth": _int("1-3", 1, 3), "limit": _int("nodes per direction and page (25, <=200)", 1, 200),
               "cursor": _CUR, "maxTokens": _MAX}, ("selector",))),
    Tool("minimal_context", "codesynapse/minimalContext",
         "The fewest symbol cards that cover a task in plain words or identifiers.",
         _obj({"task": {"type": "string", "description": "the task (<=8 KiB)"},
               "paths": {"type": "array", "items": {"type": "string"}, "description": "workspace paths to favour"},
               "maxTokens": _MAX}, ("task",))),
    Tool("pr_context", "codesynapse/prContext",
         "Changed symbols of a diff or git range with callers, tests and findings. Give diff or base.",
         _obj({"diff": {"type": "string", "description": "unified diff (<=4 MiB)"},
               "base": {"type": "string", "description": "git ref"},
               "head": {"type": "string", "description": "git ref (default: working tree)"},
               "maxTokens": _MAX})),
    Tool("search", "codesynapse/search",
         "Find symbols by name, identifier, phrase or plain words: exact first, then approximate.",
         _obj({"query": {"type": "string", "description": "<=4 KiB"},
               "mode": {"enum": ["full", "compact", "summary"], "description": "summary: counts by kind and file"},
               "limit": _int("50, <=500", 1, 500), "offset": _int("skip", 0),
               "kind": {"type": "string", "description": "only this kind (function, class, method, ...)"},
               "cursor": _CUR, "maxTokens": _MAX}, ("query",))),
    Tool("snippet", "codesynapse/snippet",
         "A symbol's source from disk (redacted).",
         _obj({"selector": _SEL, "mode": {"enum": ["signature", "head_tail", "full"], "description": "default full"},
               "maxLines": _int("200", 1, 5000), "maxTokens": _MAX}, ("selector",))),
    Tool("remember", "codesynapse/memory/remember",
         "Store entities and facts in memory (session-only unless durable).",
         _obj({"entities": {"type": "array", "description": "<=100", "items": _obj(
                   {"name": {"type": "string"}, "aliases": {"type": "array", "items": {"type": "string"}},
                    "type": {"type": "string"}, "durable": _DURABLE,
                    "anchors": {"type": "array", "items": {"type": ["string", "object"]},
                                "description": "code it is about: qualified names or {uri,line,character}"}},
                   ("name",))},
               "facts": {"type": "array", "description": "<=200", "items": _obj(
                   {"subject": {"type": "string"}, "predicate": {"type": "string", "description": "e.g. blocked_by"},
                    "object": {"type": "string"}, "confidence": {"type": "number", "description": "0-1"},
                    "sourceClient": {"type": "string"}, "durable": _DURABLE},
                   ("subject", "predicate", "object"))}})),
    Tool("recall", "codesynapse/memory/recall",
         "Entries and facts from memory matching a query (agent-supplied, not verified against code).",
         _obj({"query": {"type": "string", "description": "<=4 KiB"}, "limit": _int("entries (8)", 1, 8),
               "hops": _int("fact hops (1)", 0, 2), "maxFacts": _int("80", 0, 80), "includeIds": _IDS}, ("query",))),
    Tool("forget", "codesynapse/memory/forget",
         "Forget memory by ids, names, or {subject,predicate,object} facts.",
         _obj({"ids": {"type": "array", "items": {"type": "string"}, "description": "mem_… or fact_… ids"},
               "names": {"type": "array", "items": {"type": "string"}, "description": "an entity and its facts"},
               "facts": {"type": "array", "items": _obj(
                   {"subject": {"type": "string"}, "predicate": {"type": "string"}, "object": {"type": "string"}},
                   ("subject", "predicate", "object"))}})),
    Tool("index_status", "codesynapse/indexStatus",
         "Index size, languages, freshness and vector state.",
         _obj({})),
)

BY_NAME = {t.name: t for t in TOOLS}
