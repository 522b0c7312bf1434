"""Positions in the encoding the client negotiated (``general.positionEncodings``): UTF-16
by default, UTF-8 when the client offers it first. The file has characters outside the
Basic Multilingual Plane (4 UTF-8 bytes, 2 UTF-16 units, 1 character) before an identifier
that is not ASCII either (``größe``: 5 characters, 7 UTF-8 bytes), so every encoding gives
other numbers; the expected ones are counted by hand below."""

from __future__ import annotations

import json
import tempfile

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from tests.e2e.lspclient import config, eventually, wait_indexed

DATA = tempfile.mkdtemp(prefix="codesynapse-e2e-positions-")

SOURCE = (
    "def größe():\n"
    "    return 1\n"
    "\n"
    "\n"
    "def caller():\n"
    '    s = "😀😀😀😀"; n = größe()\n'
    "    return n\n"
)
# line 5: `    s = "` is 9 characters, 4 emoji, `"; n = ` 7 more: größe starts at character 20
EXPECTED = {
    # encoding: (definition name range on line 0, call site on line 5)
    "utf-16": ((4, 9), (24, 29)),  # each emoji 2 units: 20 + 4; größe 5 units
    "utf-8": ((4, 11), (32, 39)),  # each emoji 4 bytes: 20 + 12; größe 7 bytes
}
# a policy whose unknown key `bogus` (characters 30-35) follows two emoji on its line
POLICY = '{version: 1, exclude: ["😀😀"], bogus: 1}\n'
POLICY_EXPECTED = {"utf-16": (32, 37), "utf-8": (36, 41)}


@pytest_lsp.fixture(config=config(data_dir=DATA, CODESYNAPSE_SYMBOL_VECTORS="0", CODESYNAPSE_EMBEDDER="none"))
async def client(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


async def _start(client: LanguageClient, root, encoding: str, policy: str = POLICY) -> str:
    (root / "sizes.py").write_text(SOURCE, encoding="utf-8")
    (root / ".codesynapse.yaml").write_text(policy, encoding="utf-8")
    caps = client_capabilities("visual-studio-code")
    caps.general = types.GeneralClientCapabilities(position_encodings=[
        types.PositionEncodingKind(encoding), types.PositionEncodingKind.Utf16])
    result = await client.initialize_session(types.InitializeParams(
        capabilities=caps, workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
        root_uri=root.as_uri()))
    assert result.capabilities.position_encoding == encoding
    await wait_indexed(client)
    return (root / "sizes.py").as_uri()


def _span(r: types.Range) -> tuple[int, int, int]:
    assert r.start.line == r.end.line
    return r.start.line, r.start.character, r.end.character


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8"])
async def test_definition_references_and_call_hierarchy_in_the_negotiated_encoding(client, tmp_path, encoding):
    uri = await _start(client, tmp_path, encoding)
    (def_start, def_end), (call_start, call_end) = EXPECTED[encoding]
    at_call = types.Position(line=5, character=call_start)  # the first unit of `größe` in the call

    defs = await client.text_document_definition_async(types.DefinitionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=at_call))
    assert [(d.uri, _span(d.range)) for d in defs] == [(uri, (0, def_start, def_end))]

    refs = await client.text_document_references_async(types.ReferenceParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=at_call,
        context=types.ReferenceContext(include_declaration=True)))
    assert sorted((r.uri, _span(r.range)) for r in refs) == [
        (uri, (0, def_start, def_end)), (uri, (5, call_start, call_end))]

    items = await client.text_document_prepare_call_hierarchy_async(types.CallHierarchyPrepareParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=def_start)))
    assert [(i.name, _span(i.selection_range)) for i in items] == [("größe", (0, def_start, def_end))]
    incoming = await client.call_hierarchy_incoming_calls_async(types.CallHierarchyIncomingCallsParams(
        item=items[0]))
    assert [(c.from_.name, [_span(r) for r in c.from_ranges]) for c in incoming] == [
        ("caller", [(5, call_start, call_end)])]

    # the policy's diagnostics (characters in the parser) in the same encoding
    policy_uri = (tmp_path / ".codesynapse.yaml").as_uri()

    async def published():
        return client.diagnostics.get(policy_uri)

    diags = await eventually(published)
    assert [(d.message.split(";")[0], _span(d.range)) for d in diags] == [
        ("bogus: unknown key 'bogus'", (0, *POLICY_EXPECTED[encoding]))]


# a SARIF result on the call of `größe` (line 6): SARIF columns are 1-based UTF-16 units (its
# default columnKind): größe starts at unit 24 (column 25) and ends before unit 29 (column 30)
SARIF = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "lint"}}, "results": [{
    "ruleId": "L1", "level": "warning", "message": {"text": "a call of größe"},
    "locations": [{"physicalLocation": {"artifactLocation": {"uri": "sizes.py"},
                                        "region": {"startLine": 6, "startColumn": 25, "endLine": 6,
                                                   "endColumn": 30}}}]}]}]}


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8"])
async def test_findings_diagnostics_in_the_negotiated_encoding(client, tmp_path, encoding):
    """A finding's SARIF columns reach the client in its encoding: the same span as the call
    site above (UTF-8: each emoji 4 bytes, größe 7), not the UTF-16 numbers passed through."""
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "lint.sarif").write_text(json.dumps(SARIF), encoding="utf-8")
    uri = await _start(client, tmp_path, encoding, policy='findings: ["reports/*.sarif"]\n')
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=SOURCE)))

    async def published():
        return client.diagnostics.get(uri) or None

    diags = await eventually(published)
    assert [(d.source, d.code, _span(d.range)) for d in diags] == [
        ("codesynapse/lint", "L1", (5, *EXPECTED[encoding][1]))]
