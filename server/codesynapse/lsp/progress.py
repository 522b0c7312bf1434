"""Background indexing with LSP work-done progress; then the live updater starts. The
thread and its retries are index/runner.py's (``IndexRunner.start``); this module gives it
the progress reporting and what follows the first index as hooks.

The watcher starts before the first index so that changes made while it runs are queued,
not lost; they are applied as soon as the index is built. Messages to the client are sent
from the event loop thread (``ls.in_loop``)."""

from __future__ import annotations

import logging
import threading
import uuid

from lsprotocol import types

log = logging.getLogger(__name__)


def start_indexing(ls) -> None:
    from codesynapse.lsp.documents import publish_policy_diagnostics
    from codesynapse.watch.live import LiveUpdater

    token = f"codesynapse-index-{uuid.uuid4().hex[:8]}"
    app = ls.app
    window = getattr(ls.client_capabilities, "window", None)
    can_progress = bool(getattr(window, "work_done_progress", False))
    created = threading.Event()

    def send(kind: str, message: str = "", pct: int | None = None) -> None:
        if not can_progress or not created.is_set():
            return
        if kind == "begin":
            value = types.WorkDoneProgressBegin(title="CodeSynapse: indexing", message=message, percentage=0)
            ls.in_loop(ls.work_done_progress.begin, token, value)
        elif kind == "report":
            ls.in_loop(ls.work_done_progress.report, token,
                       types.WorkDoneProgressReport(message=message, percentage=pct))
        else:
            ls.in_loop(ls.work_done_progress.end, token, types.WorkDoneProgressEnd(message=message))

    if can_progress:
        ls.in_loop(lambda: ls.work_done_progress.create(token, callback=lambda *a: created.set()))

    live = LiveUpdater(app, on_policy=lambda d: ls.in_loop(publish_policy_diagnostics, ls, d))
    ls.live = live
    if app.policy_diagnostics:
        ls.in_loop(publish_policy_diagnostics, ls, app.policy_diagnostics)

    def before() -> None:
        _purge_orphaned_memory(ls)
        live.start_watcher(app.settings.watch)
        created.wait(2.0)
        send("begin", "scanning the workspace")

    last = [-1]

    def progress(done: int, total: int, what: str) -> None:
        pct = int(done * 100 / total) if total else 100
        if pct != last[0]:
            last[0] = pct
            send("report", f"{done}/{total} files", pct)

    def ended(rep, reason: str) -> None:
        if rep is not None:
            send("end", f"{rep.files} files, {rep.symbols} symbols in {rep.seconds:.1f} s")
        else:
            send("end", f"indexing failed: {reason}; retrying")

    def after() -> None:
        live.start_worker()
        app.services.open_memory_sections()  # before requests: the first card does not pay it
        ls.ready.set()
        if app.symbol_vectors is not None:  # the dense leg, computed from the ready graph in the
            app.symbol_vectors.start()  # background; live updates keep it in line
            app.symbol_vectors.sync()

    # the first index, then (after a failure) retries with a growing pause until one succeeds
    # or the App closes; requests are let in once the first has ended either way
    app.runner.start(app.index, progress=progress, before=before, ended=ended, after=after)


def _purge_orphaned_memory(ls) -> None:
    """Session memory of processes that are gone (a daemon killed with -9 could not end its
    session) is deleted at start; see memory/owner.py. A failure is logged, never fatal."""
    app = ls.app
    if ls.scope is None:
        return
    try:
        from codesynapse.memory.factory import purge_orphaned_memory
        from codesynapse.memory.methods import memory_settings

        purge_orphaned_memory(app.workspace.data_dir / "memory", ls.scope, memory_settings(app))
    except Exception:
        log.warning("memory: purging the session memory of ended processes failed", exc_info=True)
