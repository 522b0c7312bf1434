"""Findings as diagnostics on the documents open in the editor (source ``codesynapse/<tool>``).

Published when a document opens and again after every live update (a SARIF file the policy
watches was rewritten, or an edit made a finding stale), for every open document; cleared
when a document closes. The setting ``findingsDiagnostics`` (default true) turns it off.
SARIF columns count UTF-16 code units (its default ``columnKind``): they reach the client in
the encoding it negotiated through pygls' position codecs (unchanged for UTF-16, converted
with the document's line for UTF-8 and UTF-32).
"""

from __future__ import annotations

import logging
import weakref
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.workspace import PositionCodec

log = logging.getLogger(__name__)

MAX_PER_DOCUMENT = 500
_SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
             "note": types.DiagnosticSeverity.Information, "none": types.DiagnosticSeverity.Hint}


def enabled(ls) -> bool:
    app = getattr(ls, "app", None)
    return (app is not None and getattr(app.settings, "findings_diagnostics", True)
            and app.services.navigation.keeps_findings())


SARIF_COLUMNS = PositionCodec(types.PositionEncodingKind.Utf16)  # SARIF's default columnKind


def _to_client(ls, uri: str):
    """(line, SARIF column) → the client's Position: through the UTF-16 codec to a character
    of the document's line, then through the negotiated codec."""
    codec = ls.workspace.position_codec
    if codec.encoding == types.PositionEncodingKind.Utf16:
        return lambda line, col: types.Position(line=line, character=col)
    lines: list[str] | None = None

    def position(line: int, col: int) -> types.Position:
        nonlocal lines
        if lines is None:
            try:
                lines = list(ls.workspace.get_text_document(uri).lines)
            except (OSError, UnicodeDecodeError):  # gone or not text: as counted
                lines = []
        if line >= len(lines):
            return types.Position(line=line, character=col)
        return codec.position_to_client_units(
            lines, SARIF_COLUMNS.position_from_client_units(lines, types.Position(line=line, character=col)))

    return position


def diagnostics_for(ls, uri: str, rel: str) -> list[types.Diagnostic]:
    """The findings of ``rel`` (NavigationService.findings) as LSP diagnostics, most severe
    first, in the client's position encoding."""
    position = _to_client(ls, uri)
    out = []
    for f, stale in ls.app.services.navigation.findings(rel, MAX_PER_DOCUMENT):
        line = max(f.start_line - 1, 0)
        if f.end_line and f.end_col:
            end = position(max(f.end_line - 1, line), f.end_col)
        else:
            end = types.Position(line=line + 1, character=0)  # the whole line
        start = position(line, f.start_col) if f.start_line else types.Position(line=line, character=0)
        msg = f.message + (" (stale: the file changed since the scan)" if stale else "")
        out.append(types.Diagnostic(
            range=types.Range(start=start, end=end),
            message=msg, severity=_SEVERITY.get(f.level, types.DiagnosticSeverity.Warning),
            code=f.rule_id or None, source=f"codesynapse/{f.tool}"))
    return out


def _rel(ls, uri: str) -> str | None:
    p = urlparse(uri)
    if p.scheme not in ("file", ""):
        return None
    return ls.app.workspace.relpath(unquote(p.path))


def publish(ls, uris) -> None:
    """Read the findings of ``uris`` (call from a worker thread) and publish them from the
    event loop."""
    if not enabled(ls):
        return
    for uri in uris:
        rel = _rel(ls, uri)
        if rel is None:
            continue
        try:
            diags = diagnostics_for(ls, uri, rel)
        except Exception:  # a store error must not break document handling
            log.warning("findings diagnostics for %s failed", rel, exc_info=True)
            continue
        ls.in_loop(ls.text_document_publish_diagnostics,
                   types.PublishDiagnosticsParams(uri=uri, diagnostics=diags))


def open_uris(ls) -> list[str]:
    try:
        return list(ls.workspace.text_documents)
    except Exception:
        return []


_followed: weakref.WeakSet = weakref.WeakSet()  # live updaters already re-publishing


def follow(ls, live) -> None:
    """After each live update, re-publish the findings of every open document (once per
    live updater)."""
    if live in _followed:
        return
    _followed.add(live)
    live.subscribe(lambda _paths: publish(ls, open_uris(ls)))


def clear(ls, uri: str) -> None:
    if enabled(ls):
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
