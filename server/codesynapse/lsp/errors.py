"""Our errors as JSON-RPC errors: the one mapping every handler raises through.

A module of its own, below the server and its handlers, so that handlers can raise these
without importing the server that imports them."""

from __future__ import annotations

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from codesynapse.errors import BudgetError, CodeSynapseError, DeadlineExceeded, InvalidParams


class JsonRpcRequestFailed(JsonRpcException):
    CODE = -32803  # LSP RequestFailed


def to_jsonrpc(e: Exception) -> JsonRpcException:
    if isinstance(e, InvalidParams):
        return JsonRpcInvalidParams(str(e), data={"field": e.field})
    if isinstance(e, BudgetError):
        return JsonRpcRequestFailed(str(e), data={"kind": "budget", "needed": e.needed, "maxTokens": e.max_tokens})
    if isinstance(e, DeadlineExceeded):
        return JsonRpcRequestFailed(str(e), data={"kind": "deadline"})
    if isinstance(e, CodeSynapseError):
        return JsonRpcRequestFailed(str(e), data={"kind": e.__class__.__name__})
    return JsonRpcRequestFailed(f"internal error: {e.__class__.__name__}: {e}"[:500], data={"kind": "internal"})
