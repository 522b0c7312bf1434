"""Per-thread connections that end with their thread.

The stores keep one connection per thread (SQLite's are not shared across threads; an HTTP
keep-alive connection serves one request at a time). The daemon reads from short-lived threads
too — findings published after a didOpen, the warm-up of opened documents, the test-support
refresh, each full index — and a connection kept for the store's lifetime per thread ever
started held descriptors (and SQLite's page cache, up to 32 MB) until the process ran out.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any


class _Token:
    """Lives in one thread's locals; its end is the thread's (or the locals' when replaced)."""

    __slots__ = ("__weakref__",)


def on_thread_end(local: threading.local, fn: Callable[..., Any], *args: Any) -> None:
    """Call ``fn(*args)`` once the calling thread ends, once ``local`` is let go (a store's
    ``close`` replaces its locals), or once this is called again from the same thread on the
    same ``local`` (the thread's connection was replaced: the old one is let go then). ``fn``
    runs in whichever thread lets the token go: it must take only locks it can take there
    (re-entrant ones when it may run under them)."""
    token = _Token()
    weakref.finalize(token, fn, *args)
    local._end_token = token
