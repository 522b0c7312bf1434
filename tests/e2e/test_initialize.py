"""initialize over a real LSP connection: the client's initializationOptions (typed, each
one not applied named in a warning) and a session without a workspace folder (the case in
which the editor extension starts the server: ``onLanguage:python`` in a loose file)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient, client_capabilities

from tests.e2e.lspclient import FIXTURES, config, eventually, init_params, request, wait_indexed

DATA = tempfile.mkdtemp(prefix="codesynapse-e2e-init-")


@pytest_lsp.fixture(config=config(data_dir=DATA, CODESYNAPSE_EMBEDDER="none"))
async def client(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


async def test_options_not_applied_are_named_in_a_warning_and_keep_the_servers_value(client, tmp_path):
    root = tmp_path / "python_repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    await client.initialize_session(init_params(
        root, workers="many", colour="blue", backend="neo4j", embedder="gpt-9", debounceMs=20))
    st = await wait_indexed(client)
    warnings = await eventually(lambda: _async([m.message for m in client.messages
                                                if m.type == types.MessageType.Warning]))
    assert sorted(warnings) == sorted([
        "CodeSynapse: setting workers='many' is invalid (expected an integer); using 2",
        "CodeSynapse: setting 'colour' is unknown; ignored (known: dataDir, workers, watch, debounceMs, "
        "embedder, nativeHybrid, findingsDiagnostics, sessionLabel, unresolvedCandidates, metricsPort)",
        "CodeSynapse: setting 'backend' is the server's own (environment CODESYNAPSE_BACKEND); ignored",
        "CodeSynapse: setting embedder='gpt-9' is invalid (expected one of minilm-int8, none, off, ); using 'none'",
    ])
    assert st["backend"] == "sqlite"
    # the embedder stays the server's (none, from its environment): the dense leg says it is off
    status = await eventually(lambda: _reason_if_off(client))
    assert "the embedder is off" in status


async def test_options_that_are_not_an_object_are_named(client, tmp_path):
    root = tmp_path / "python_repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    params = init_params(root)
    params.initialization_options = ["workers", 4]
    await client.initialize_session(params)
    await wait_indexed(client)
    shown = await eventually(lambda: _async([m.message for m in client.messages]))
    assert shown == ["CodeSynapse: initializationOptions must be an object, not list; ignored"]


async def test_document_events_without_a_workspace_folder_do_not_hold_up_requests(client, tmp_path):
    """Without a workspace folder there is no index and no live updater: didChange, didSave,
    didClose and watched-file events are ignored at once. Before, each held the event loop
    for 30 s waiting for an index that never comes, so the request after five of them waited
    150 s; here it is answered (an error naming the missing folder) while the test waits at
    most 60 s for it."""
    loose = tmp_path / "loose.py"
    loose.write_text("def f():\n    return 1\n", encoding="utf-8")
    uri = loose.as_uri()
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), workspace_folders=None, root_uri=None))
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=loose.read_text())))
    for v in (2, 3):
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=v),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=f"def f():\n    return {v}\n")]))
    client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=uri, type=types.FileChangeType.Changed)]))
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    for method, params in (("codesynapse/indexStatus", {}),
                           ("codesynapse/symbolCard", {"selector": "f"}),
                           ("codesynapse/memory/list", {})):
        with pytest.raises(JsonRpcException) as e:
            await asyncio.wait_for(request(client, method, params), 60)
        assert "not been initialized with a workspace folder" in str(e.value), method
    hover = client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=4)))
    with pytest.raises(JsonRpcException) as e:
        await asyncio.wait_for(hover, 60)
    assert "not been initialized with a workspace folder" in str(e.value)


async def _async(value):
    return value


async def _reason_if_off(client: LanguageClient) -> str:
    sv = (await request(client, "codesynapse/indexStatus", {})).get("symbolVectors", {})
    return sv.get("reason", "") if "off" in sv.get("reason", "") else ""
