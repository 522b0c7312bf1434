"""Running full indexes: one at a time with the state it leaves (``IndexRunner.run``), a
retry loop with a growing pause after a failure (``retry``), and the background indexing
thread a server starts on ``initialized`` (``start``).

The App gives the runner its one full-index step (open the store if it could not be opened,
index the tree, stamp the meta) and delegates ``App.index`` / ``App.retry_index`` here; the
LSP layer hands its progress reporting and the live updater's start to ``start`` as hooks.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from codesynapse.errors import CodeSynapseError
from codesynapse.index.indexer import IndexReport, Progress
from codesynapse.index.state import IndexState, short_reason

log = logging.getLogger(__name__)

RETRY_FIRST_S = 1.0  # pause before the first retry of a failed index; doubled after each failure
RETRY_MAX_S = 60.0  # ... up to this


class IndexRunner:
    """Runs ``index_once(progress)`` (a full index: raises when nothing was committed) and
    keeps ``state`` in line: ``indexing`` while it runs, ``ready`` after it, ``failed`` with
    the reason when it raised (the last committed index keeps answering). ``closing`` set
    ends a retry loop."""

    def __init__(self, state: IndexState, index_once: Callable[[Progress | None], IndexReport],
                 closing: threading.Event | None = None):
        self.state = state
        self._index_once = index_once
        self.closing = closing or threading.Event()

    def run(self, progress: Progress | None = None) -> IndexReport:
        """One full index. When it fails the state says ``failed`` with the reason and the
        error is raised; ``retry`` tries again."""
        self.state.begin()
        try:
            report = self._index_once(progress)
        except BaseException as e:
            self.state.failed(short_reason(e))
            raise
        self.state.succeeded()
        return report

    def retry(self, progress: Progress | None = None,
              run: Callable[[Progress | None], IndexReport] | None = None) -> IndexReport | None:
        """After a failed index: index again after RETRY_FIRST_S, then after twice as long
        each time (at most RETRY_MAX_S), until an index succeeds (its report) or ``closing``
        is set (None). Each failure is logged in one line. ``run`` is the full index to try
        (``App.index``: what follows a success, such as the dense leg's sync, follows it)."""
        run = run or self.run
        delay = RETRY_FIRST_S
        attempt = 1
        while self.state.state == "failed":
            if self.closing.wait(delay):
                return None
            attempt += 1
            try:
                report = run(progress)
            except Exception as e:  # noqa: BLE001 - any cause: logged in one line, tried again later
                delay = min(delay * 2, RETRY_MAX_S)
                log.warning("indexing failed again (attempt %d): %s; next attempt in %.0f s",
                            attempt, short_reason(e), delay)
                continue
            log.info("indexing succeeded at attempt %d", attempt)
            return report
        return None

    def start(self, run: Callable[[Progress | None], IndexReport], *,
              progress: Progress | None = None,
              before: Callable[[], None] | None = None,
              ended: Callable[[IndexReport | None, str], None] | None = None,
              after: Callable[[], None] | None = None) -> threading.Thread:
        """The background indexing thread. The state says ``indexing`` from now on; the
        thread calls ``before()``, runs the first full index (``run``: ``App.index``), tells
        ``ended(report, "")`` or ``ended(None, reason)``, then ``after()`` whatever happened
        (the live updater starts, requests are let in), and after a failure retries with a
        growing pause until an index succeeds or ``closing`` is set. A failing hook is
        logged and never stops the thread."""
        self.state.begin()

        def hook(fn, *args) -> None:
            if fn is None:
                return
            try:
                fn(*args)
            except Exception:
                log.exception("an indexing hook failed")

        def body() -> None:
            hook(before)
            failed = False
            try:
                report = run(progress)
                hook(ended, report, "")
            except Exception as e:
                failed = True
                reason = short_reason(e)  # the state keeps it for indexStatus
                log.error("indexing failed: %s; retrying in the background (meanwhile requests are answered "
                          "from the last committed index, if there is one)", reason,
                          exc_info=not isinstance(e, CodeSynapseError))
                hook(ended, None, reason)
            finally:
                hook(after)
            if failed:  # again after a growing pause, until it succeeds or the App closes
                self.retry(progress=None, run=run)

        t = threading.Thread(target=body, name="codesynapse-index", daemon=True)
        t.start()
        return t
