"""The index's state, shared under one lock by the indexing thread, the live updater, the
watcher and requests: ``IndexState``.

It holds what they used to read from (and write into) the App directly: whether the index
is ready, building or failed (with the reason), how many changes wait, and the repository
policy in force with its diagnostics. The policy is replaced here only, under the lock, so
the indexer (which reads it through the state), the live updater and requests all see one
policy at a time.
"""

from __future__ import annotations

import threading
from typing import Any

from codesynapse.errors import CodeSynapseError


def short_reason(e: BaseException) -> str:
    """One line for a user: our own errors by their message, others with their type; no
    traceback, at most 300 characters."""
    text = str(e) if isinstance(e, CodeSynapseError) else f"{e.__class__.__name__}: {e}"
    return " ".join(text.split())[:300]


class IndexState:
    """The index's state, read by requests, the watcher and the LSP layer under one lock:
    ``idle`` (not built by this process yet), ``indexing``, ``ready``, or ``failed`` with
    ``error`` (a short reason) while the last committed index keeps answering; ``failures``
    counts full indexes failed in a row; ``pending`` is the number of changes the live
    updater holds; ``open_buffers`` the files whose content in the index is an unsaved
    buffer. ``failed`` stands until a full index succeeds: a retry running meanwhile
    does not hide it. A failed live update (``update_failed``) says ``failed`` too, until the
    next live update or full index succeeds; it never replaces a failed full index's reason.
    ``policy`` is the repository policy in force (None: no policy) and
    ``policy_diagnostics`` what its last load reported."""

    def __init__(self, policy: Any = None, policy_diagnostics: list | None = None) -> None:
        self._lock = threading.Lock()
        self._state = "idle"
        self._error = ""
        self._failures = 0
        self._by_update = False  # ``failed`` was set by a live update (cleared by the next one)
        self._pending = 0
        self._policy = policy
        self._policy_diagnostics = policy_diagnostics if policy_diagnostics is not None else []
        self._open_buffers: set[str] = set()

    # -- the index -----------------------------------------------------------------------------
    def begin(self) -> None:
        with self._lock:
            if self._state != "failed":
                self._state = "indexing"

    def succeeded(self) -> None:
        with self._lock:
            self._state, self._error, self._failures, self._by_update = "ready", "", 0, False

    def failed(self, reason: str) -> int:
        """Record a failed index; returns how many have failed in a row."""
        with self._lock:
            self._state, self._error, self._by_update = "failed", reason, False
            self._failures += 1
            return self._failures

    def update_failed(self, reason: str) -> None:
        """Record a failed live update (its changes wait for a retry): ``failed`` with the
        reason, unless a failed full index already says why."""
        with self._lock:
            if self._state == "failed" and not self._by_update:
                return
            self._state, self._error, self._by_update = "failed", reason, True

    def update_succeeded(self) -> None:
        """A live update was applied: a failure of an earlier one no longer stands (a failed
        full index does, until a full index succeeds)."""
        with self._lock:
            if self._state == "failed" and self._by_update:
                self._state, self._error, self._by_update = "ready", "", False

    @property
    def state(self) -> str:
        with self._lock:
            return self._state

    @property
    def error(self) -> str:
        with self._lock:
            return self._error

    @property
    def pending(self) -> int:
        with self._lock:
            return self._pending

    @pending.setter
    def pending(self, n: int) -> None:
        with self._lock:
            self._pending = n

    @property
    def open_buffers(self) -> set[str]:
        """A copy of the paths whose unsaved buffer is (or is about to be) in the index."""
        with self._lock:
            return set(self._open_buffers)

    @open_buffers.setter
    def open_buffers(self, paths) -> None:
        with self._lock:
            self._open_buffers = set(paths)

    def buffer_in(self, rel: str) -> None:
        """``rel``'s unsaved buffer goes into the index."""
        with self._lock:
            self._open_buffers.add(rel)

    def buffer_out(self, rel: str) -> None:
        """``rel`` is the disk's again (saved, or closed)."""
        with self._lock:
            self._open_buffers.discard(rel)

    def snapshot(self) -> tuple[str, str, int, int]:
        """(state, error, failures, pending), read together."""
        with self._lock:
            return self._state, self._error, self._failures, self._pending

    # -- the policy ----------------------------------------------------------------------------
    @property
    def policy(self) -> Any:
        with self._lock:
            return self._policy

    @policy.setter
    def policy(self, policy: Any) -> None:
        with self._lock:
            self._policy = policy

    @property
    def policy_diagnostics(self) -> list:
        with self._lock:
            return self._policy_diagnostics

    @policy_diagnostics.setter
    def policy_diagnostics(self, diagnostics: list | None) -> None:
        with self._lock:
            self._policy_diagnostics = diagnostics if diagnostics is not None else []

    def adopt_policy(self, policy: Any, diagnostics: list | None) -> bool:
        """A policy file was loaded again: its diagnostics replace the last ones, and
        ``policy`` (None: invalid, the previous one stays) replaces the policy in force when
        its fingerprint differs. True when the policy in force changed."""
        with self._lock:
            self._policy_diagnostics = diagnostics if diagnostics is not None else []
            if policy is None or getattr(policy, "fingerprint", None) == getattr(self._policy, "fingerprint", None):
                return False
            self._policy = policy
            return True
