"""Our own errors. Adapters translate driver errors into these (``raise … from e``); the LSP
layer turns them into JSON-RPC errors."""

from __future__ import annotations


class CodeSynapseError(Exception):
    """Base class."""


class InvalidParams(CodeSynapseError):
    """A request parameter is missing, of the wrong type, or over a limit.

    ``field`` names the parameter (dotted path for nested ones) so the client can fix it.
    """

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}" if field else message)


class BudgetError(CodeSynapseError):
    """The subject of a request and its envelope cannot fit the token budget."""

    def __init__(self, needed: int, max_tokens: int, what: str = "subject"):
        self.needed = needed
        self.max_tokens = max_tokens
        super().__init__(
            f"budget: the {what} needs {needed} tokens but maxTokens is {max_tokens}; "
            f"raise maxTokens (at most 20000) or narrow the request"
        )


class DeadlineExceeded(CodeSynapseError):
    def __init__(self, seconds: float):
        super().__init__(f"deadline: the request did not finish within {seconds:g} s")


class StoreError(CodeSynapseError):
    """A store operation failed (bad data, constraint, query error)."""


class StoreUnavailable(StoreError):
    """The store's server cannot be reached or timed out."""
