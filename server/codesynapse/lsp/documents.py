"""Document events → the live updater; policy diagnostics on .codesynapse.yaml."""

from __future__ import annotations

import logging
from urllib.parse import unquote, urlparse

import threading

from lsprotocol import types

from codesynapse.lsp import findings

log = logging.getLogger(__name__)


def _rel(ls, uri: str) -> str | None:
    if ls.app is None:
        return None
    p = urlparse(uri)
    if p.scheme not in ("file", ""):
        return None
    return ls.app.workspace.relpath(unquote(p.path))


def publish_policy_diagnostics(ls, diagnostics) -> None:
    if ls.app is None:
        return
    uri = (ls.app.workspace.root / ".codesynapse.yaml").as_uri()
    out = []
    lines: list[str] | None = None

    def position(line: int, column: int) -> types.Position:
        """The policy's (line, column in characters) in the client's position encoding."""
        nonlocal lines
        if lines is None:
            try:
                lines = ls.workspace.get_text_document(uri).lines
            except (OSError, UnicodeDecodeError):  # the policy file is gone or not text: as counted
                lines = []
        if line >= len(lines):
            return types.Position(line=line, character=column)
        return ls.workspace.position_codec.position_to_client_units(lines, types.Position(line=line, character=column))

    for d in diagnostics or []:
        out.append(types.Diagnostic(
            range=types.Range(start=position(d.line, d.column),
                              end=position(getattr(d, "end_line", d.line), getattr(d, "end_column", d.column + 1))),
            message=d.message,
            severity=types.DiagnosticSeverity.Error if d.severity == "error" else types.DiagnosticSeverity.Warning,
            source="codesynapse"))
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=out))


def register(server) -> None:
    def live(ls):
        # the live updater exists from `initialized` on and queues what arrives before the
        # first index is ready; without a workspace (or before initialized) there is none,
        # and these handlers run on the event loop: never wait here
        return ls.live

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls, params: types.DidOpenTextDocumentParams):
        rel = _rel(ls, params.text_document.uri)
        if rel is None:
            return
        if rel == ".codesynapse.yaml" and ls.app is not None:
            publish_policy_diagnostics(ls, ls.app.policy_diagnostics)
            return
        lv = ls.live
        if lv is not None and params.text_document.text:
            lv.buffer_opened(rel, params.text_document.text)
        if lv is not None and findings.enabled(ls):  # in a worker: the store is read
            findings.follow(ls, lv)
            threading.Thread(target=findings.publish, args=(ls, [params.text_document.uri]), daemon=True,
                             name="findings-diagnostics").start()

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls, params: types.DidChangeTextDocumentParams):
        rel = _rel(ls, params.text_document.uri)
        lv = live(ls)
        if rel is None or lv is None or not params.content_changes:
            return
        change = params.content_changes[-1]
        text = getattr(change, "text", None)
        if isinstance(text, str) and getattr(change, "range", None) is None:
            lv.buffer_changed(rel, text)
        else:
            doc = ls.workspace.get_text_document(params.text_document.uri)
            lv.buffer_changed(rel, doc.source)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls, params: types.DidSaveTextDocumentParams):
        rel = _rel(ls, params.text_document.uri)
        lv = live(ls)
        if rel is not None and lv is not None:
            lv.buffer_saved(rel)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls, params: types.DidCloseTextDocumentParams):
        rel = _rel(ls, params.text_document.uri)
        lv = live(ls)
        if rel is not None and lv is not None:
            lv.buffer_closed(rel)
        if rel is not None:
            findings.clear(ls, params.text_document.uri)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched(ls, params: types.DidChangeWatchedFilesParams):
        lv = live(ls)
        if lv is None:
            return
        for ev in params.changes:
            rel = _rel(ls, ev.uri)
            if rel is not None:
                lv.disk_changed(rel)
