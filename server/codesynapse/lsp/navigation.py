"""Standard LSP from the same index: workspace/document symbols, definition, references,
hover (the symbol card as Markdown) and call hierarchy.

The reads are the NavigationService's (context/navigation.py), over the same store reads as
the custom requests; the handlers here only convert. The graph keeps 1-based lines and byte
columns; here they become LSP positions in the encoding negotiated with the client
(``ls.workspace.position_codec``: UTF-16 unless the client offers UTF-8 or UTF-32) using the
line's text from the open document or the file on disk.
"""

from __future__ import annotations

import errno
import logging
import os
import re
from collections.abc import Sequence
from urllib.parse import unquote, urlparse

from lsprotocol import types

from codesynapse.context.navigation import SAFETY_CAP, Group
from codesynapse.graph.model import SymbolRow
from codesynapse.lsp.errors import JsonRpcRequestFailed

_KIND = {
    "function": types.SymbolKind.Function, "method": types.SymbolKind.Method, "class": types.SymbolKind.Class,
    "struct": types.SymbolKind.Struct, "interface": types.SymbolKind.Interface, "trait": types.SymbolKind.Interface,
    "enum": types.SymbolKind.Enum, "type": types.SymbolKind.TypeParameter, "constant": types.SymbolKind.Constant,
    "module": types.SymbolKind.Module, "test": types.SymbolKind.Function, "section": types.SymbolKind.String,
    "key": types.SymbolKind.Key,
}
_WORD = re.compile(r"[A-Za-z_$][\w$]*")
log = logging.getLogger(__name__)
PARTIAL_BATCH = 500  # results per $/progress notification when the client gave a partialResultToken
UNRESOLVED_DETAIL = "unresolved name match: {callee} (not bound to {qname}; it may call something else)"


def _over_cap(what: str, total: int | None) -> str | None:
    """The note of an answer cut at the service's SAFETY_CAP (``total``: its full count)."""
    if total is None or total <= SAFETY_CAP:
        return None
    return f"CodeSynapse: {what}: showing the first {SAFETY_CAP:,} of {total:,} call sites"


async def send_results(ls, token, results: list, note: str | None) -> list:
    """The answer of a request that may be long: a note over the safety cap is logged and
    shown; with a ``partialResultToken`` the results are streamed as ``$/progress``
    notifications of ``PARTIAL_BATCH`` items and the response itself is empty (LSP 3.17
    "Partial Result Progress")."""
    if note:
        log.warning("%s", note)
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=note))
    if token is None:
        return results
    for i in range(0, len(results), PARTIAL_BATCH):
        ls.protocol.notify(types.PROGRESS, types.ProgressParams(token=token, value=results[i:i + PARTIAL_BATCH]))
    return []


class Positions:
    """Byte column → the client's column (its negotiated position encoding), reading each
    file once per request."""

    def __init__(self, ls):
        self.ls = ls
        self.units = ls.workspace.position_codec.client_num_units  # str → code units
        self.cache: dict[str, list[str]] = {}

    def lines(self, rel: str) -> list[str]:
        if rel not in self.cache:
            uri = (self.ls.app.workspace.root / rel).as_uri()
            doc = self.ls.workspace.text_documents.get(uri)
            if doc is not None:
                self.cache[rel] = doc.source.splitlines()
            else:
                try:
                    with open(os.path.join(self.ls.app.workspace.root, rel), encoding="utf-8",
                              errors="replace") as f:
                        self.cache[rel] = f.read().splitlines()
                except OSError:
                    self.cache[rel] = []
        return self.cache[rel]

    def col(self, rel: str, line1: int, byte_col: int) -> int:
        lines = self.lines(rel)
        if not 1 <= line1 <= len(lines):
            return byte_col
        prefix = lines[line1 - 1].encode("utf-8")[:byte_col].decode("utf-8", "ignore")
        return self.units(prefix)

    def range(self, s: SymbolRow) -> types.Range:
        return types.Range(
            start=types.Position(line=s.start_line - 1, character=self.col(s.path, s.start_line, s.start_col)),
            end=types.Position(line=s.end_line - 1, character=self.col(s.path, s.end_line, s.end_col)))

    def name_range(self, s: SymbolRow) -> types.Range:
        lines = self.lines(s.path)
        line = lines[s.start_line - 1] if 0 < s.start_line <= len(lines) else ""
        i = line.find(s.name, 0)
        if i < 0:
            return types.Range(start=types.Position(line=s.start_line - 1, character=0),
                               end=types.Position(line=s.start_line - 1, character=0))
        start = self.units(line[:i])
        return types.Range(start=types.Position(line=s.start_line - 1, character=start),
                           end=types.Position(line=s.start_line - 1, character=start + self.units(s.name)))

    def line_range(self, rel: str, line1: int, byte_col: int, text: str) -> types.Range:
        """The range of ``text`` starting at ``byte_col`` of line ``line1``."""
        c = self.col(rel, line1, byte_col)
        return types.Range(start=types.Position(line=line1 - 1, character=c),
                           end=types.Position(line=line1 - 1, character=c + self.units(text)))


def _rel(ls, uri: str) -> str | None:
    p = urlparse(uri)
    return ls.app.workspace.relpath(unquote(p.path)) if p.scheme in ("file", "") else None


def _uri(ls, rel: str) -> str:
    return (ls.app.workspace.root / rel).as_uri()


_UNREADABLE = {errno.ELOOP: "a symbolic link loop", errno.EISDIR: "a directory, not a file",
               errno.ENOENT: "no such file", errno.EACCES: "permission denied", errno.EPERM: "permission denied",
               errno.ENAMETOOLONG: "the name is too long"}


def document_lines(ls, uri: str, rel: str) -> Sequence[str]:
    """The lines of the open document, or of the file on disk (bytes that are not UTF-8
    replaced, as the indexer reads them). A file that cannot be read (a symlink loop, a
    directory, no permission) is a RequestFailed naming its workspace-relative path, never
    the OS error with an absolute path."""
    doc = ls.workspace.get_text_document(uri)
    try:
        try:
            return doc.lines
        except UnicodeDecodeError:
            with open(doc.path, encoding="utf-8", errors="replace") as f:
                return f.read().splitlines(True)
    except OSError as e:
        reason = _UNREADABLE.get(e.errno or 0, "the file cannot be read")
    raise JsonRpcRequestFailed(f"cannot read {rel}: {reason}", data={"kind": "unreadable", "path": rel})


def word_at(ls, uri: str, pos: types.Position, rel: str = "") -> str | None:
    lines = document_lines(ls, uri, rel or _rel(ls, uri) or "the document")
    if pos.line >= len(lines):
        return None
    line = lines[pos.line]
    # the client's character (its negotiated encoding) → a str index; a copy, since the codec
    # clamps the position it is given in place
    idx = ls.workspace.position_codec.position_from_client_units(
        lines, types.Position(line=pos.line, character=pos.character)).character
    for m in _WORD.finditer(line):
        if m.start() <= idx <= m.end():
            return m.group(0)
    return None


def target_at(ls, uri: str, pos: types.Position) -> SymbolRow | None:
    """The symbol a position refers to (NavigationService.target_at, given the word under
    the position as the client's encoding places it)."""
    rel = _rel(ls, uri)
    if rel is None:
        return None
    word = word_at(ls, uri, pos, rel)
    if word is None:
        return None
    return ls.app.services.navigation.target_at(rel, pos.line + 1, word)


def card_markdown(card: dict) -> str:
    parts = [f"**{card['qualifiedName']}** · {card['kind']}", "", f"```\n{card['signature']}\n```" if card.get(
        "signature") else ""]
    if card.get("summary"):
        parts.append(card["summary"])
    for note in card.get("annotations", []):
        parts.append(f"> {note}")
    c = card.get("counts", {})
    parts.append(f"callers {c.get('callers', 0)} · callees {c.get('callees', 0)} · "
                 f"implementations {c.get('implementations', 0)} · tests {c.get('tests', 0)}"
                 + (f" · unresolved candidates {c['unresolvedCallers']}" if c.get("unresolvedCallers") else ""))
    if card.get("callers"):
        parts.append("callers: " + ", ".join(f"`{x['qualifiedName']}`" for x in card["callers"]))
    start, end = card["range"]
    parts.append(f"_{card['path']}:{start}-{end}_")
    return "\n\n".join(p for p in parts if p)


def sym_info(ls, pos: Positions, s: SymbolRow) -> types.SymbolInformation:
    return types.SymbolInformation(name=s.name, kind=_KIND.get(s.kind, types.SymbolKind.Variable),
                                   location=types.Location(uri=_uri(ls, s.path), range=pos.range(s)),
                                   container_name=s.parent or None)


async def workspace_symbol(ls, params: types.WorkspaceSymbolParams):
    ls.require_app()

    def run():
        pos = Positions(ls)
        return [sym_info(ls, pos, r) for r in ls.app.services.navigation.workspace_symbols(params.query)]

    return await ls.run_read(run)


async def document_symbol(ls, params: types.DocumentSymbolParams):
    ls.require_app()

    def run():
        rel = _rel(ls, params.text_document.uri)
        if rel is None:
            return []
        pos = Positions(ls)
        rows = ls.app.services.navigation.document_symbols(rel)
        nodes: dict[str, types.DocumentSymbol] = {}
        roots: list[types.DocumentSymbol] = []
        for r in rows:
            ds = types.DocumentSymbol(name=r.name, kind=_KIND.get(r.kind, types.SymbolKind.Variable),
                                      range=pos.range(r), selection_range=pos.name_range(r),
                                      detail=r.signature or None, children=[])
            parent = nodes.get(r.parent)
            (parent.children if parent is not None else roots).append(ds)
            nodes.setdefault(r.qname, ds)
        return roots

    return await ls.run_read(run)


async def definition(ls, params: types.DefinitionParams):
    ls.require_app()

    def run():
        s = target_at(ls, params.text_document.uri, params.position)
        if s is None:
            return None
        return [types.Location(uri=_uri(ls, s.path), range=Positions(ls).name_range(s))]

    return await ls.run_read(run)


async def references(ls, params: types.ReferenceParams):
    ls.require_app()

    def run():
        s = target_at(ls, params.text_document.uri, params.position)
        if s is None:
            return [], None
        pos = Positions(ls)
        out = []
        if params.context.include_declaration:
            out.append(types.Location(uri=_uri(ls, s.path), range=pos.name_range(s)))
        # the resolved call sites, then the unresolved ones named like it
        calls = ls.app.services.navigation.references(s)
        for c in calls.rows:
            out.append(types.Location(uri=_uri(ls, c.path), range=pos.line_range(
                c.path, c.line, c.col, c.callee)))
        return out, _over_cap(f"references of {s.qname}", calls.total)

    out, note = await ls.run_read(run)
    return await send_results(ls, params.partial_result_token, out, note)


async def hover(ls, params: types.HoverParams):
    ls.require_app()

    def run():
        s = target_at(ls, params.text_document.uri, params.position)
        if s is None:
            return None
        card = ls.app.services.navigation.card(s)
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                        value=card_markdown(card)))

    return await ls.run_read(run)


def item(ls, pos: Positions, s: SymbolRow) -> types.CallHierarchyItem:
    return types.CallHierarchyItem(name=s.name, kind=_KIND.get(s.kind, types.SymbolKind.Function),
                                   uri=_uri(ls, s.path), range=pos.range(s), selection_range=pos.name_range(s),
                                   detail=s.qname, data={"qname": s.qname})


async def prepare(ls, params: types.CallHierarchyPrepareParams):
    ls.require_app()

    def run():
        s = target_at(ls, params.text_document.uri, params.position)
        return [item(ls, Positions(ls), s)] if s is not None else None

    return await ls.run_read(run)


def _qname(it: types.CallHierarchyItem) -> str:
    data = it.data
    if isinstance(data, dict) and isinstance(data.get("qname"), str):
        return data["qname"]
    return it.detail or it.name


def ranges(pos: Positions, calls) -> list[types.Range]:
    return [pos.line_range(c.path, c.line, c.col, c.callee) for c in calls]


def caller_item(ls, pos: Positions, g: Group, qname: str) -> types.CallHierarchyItem:
    """A caller; for unresolved calls named like the subject, its detail says these are
    name matches, not calls bound to it."""
    it = item(ls, pos, g.symbol)
    if g.unresolved:
        it.detail = UNRESOLVED_DETAIL.format(callee=g.rows[0].callee, qname=qname)
        it.data = {"qname": g.symbol.qname, "unresolved": True}
    return it


async def incoming(ls, params: types.CallHierarchyIncomingCallsParams):
    ls.require_app()

    def run():
        pos = Positions(ls)
        q = _qname(params.item)
        groups, total = ls.app.services.navigation.incoming(q)
        return [types.CallHierarchyIncomingCall(from_=caller_item(ls, pos, g, q), from_ranges=ranges(pos, g.rows))
                for g in groups], _over_cap(f"incoming calls of {q}", total)

    out, note = await ls.run_read(run)
    return await send_results(ls, params.partial_result_token, out, note)


async def outgoing(ls, params: types.CallHierarchyOutgoingCallsParams):
    ls.require_app()

    def run():
        pos = Positions(ls)
        q = _qname(params.item)
        groups, total = ls.app.services.navigation.outgoing(q)
        return [types.CallHierarchyOutgoingCall(to=item(ls, pos, g.symbol), from_ranges=ranges(pos, g.rows))
                for g in groups], _over_cap(f"outgoing calls of {q}", total)

    out, note = await ls.run_read(run)
    return await send_results(ls, params.partial_result_token, out, note)


# the standard features: (LSP method, handler); each handler converts through the negotiated
# position codec and calls services.navigation (or .context for hover cards), nothing else
FEATURES = (
    (types.WORKSPACE_SYMBOL, workspace_symbol),
    (types.TEXT_DOCUMENT_DOCUMENT_SYMBOL, document_symbol),
    (types.TEXT_DOCUMENT_DEFINITION, definition),
    (types.TEXT_DOCUMENT_REFERENCES, references),
    (types.TEXT_DOCUMENT_HOVER, hover),
    (types.TEXT_DOCUMENT_PREPARE_CALL_HIERARCHY, prepare),
    (types.CALL_HIERARCHY_INCOMING_CALLS, incoming),
    (types.CALL_HIERARCHY_OUTGOING_CALLS, outgoing),
)


def register(server) -> None:
    for method, handler in FEATURES:
        server.feature(method)(handler)
