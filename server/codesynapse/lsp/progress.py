"""Background indexing with LSP work-done progress; then the live updater starts."""

from __future__ import annotations

import logging
import threading
import uuid

from lsprotocol import types

log = logging.getLogger(__name__)


def start_indexing(ls) -> None:
    token = f"codesynapse-index-{uuid.uuid4().hex[:8]}"
    app = ls.app
    app.state = "indexing"
    can_progress = bool(getattr(getattr(ls.client_capabilities, "window", None), "work_done_progress", False))

    def report(kind: str, message: str = "", pct: int | None = None) -> None:
        if not can_progress:
            return
        try:
            if kind == "begin":
                ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
                    title="CodeSynapse: indexing", message=message, percentage=0, cancellable=False))
            elif kind == "report":
                ls.work_done_progress.report(token, types.WorkDoneProgressReport(message=message, percentage=pct))
            else:
                ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
        except Exception:  # progress is cosmetic; never let it stop the index
            log.debug("progress report failed", exc_info=True)

    def run() -> None:
        last = [-1]

        def progress(done: int, total: int, what: str) -> None:
            pct = int(done * 100 / total) if total else 100
            if pct != last[0]:
                last[0] = pct
                report("report", f"{done}/{total} files", pct)

        try:
            rep = app.index(progress)
            report("end", f"{rep.files} files, {rep.symbols} symbols in {rep.seconds:.1f} s")
        except Exception as e:
            ls.index_error = f"{e.__class__.__name__}: {e}"
            log.exception("indexing failed")
            report("end", "indexing failed: see the server log")
        finally:
            ls.ready.set()
        try:
            from codesynapse.watch.live import LiveUpdater

            from codesynapse.lsp.documents import publish_policy_diagnostics

            ls.live = LiveUpdater(app, on_policy=lambda d: publish_policy_diagnostics(ls, d))
            if app.policy_diagnostics:
                publish_policy_diagnostics(ls, app.policy_diagnostics)
            ls.live.start(watch=app.settings.watch)
        except Exception:
            log.exception("live updates unavailable")

    def begin_then_run() -> None:
        if can_progress:
            try:
                fut = ls.work_done_progress.create(token)
                fut.result(timeout=5)
            except Exception:
                log.debug("client did not accept a progress token", exc_info=True)
        report("begin", "scanning the workspace")
        run()

    threading.Thread(target=begin_then_run, name="codesynapse-index", daemon=True).start()
