"""initialize over a real LSP connection: the client's initializationOptions (typed, each
one not applied named in a warning)."""

from __future__ import annotations

import shutil
import tempfile

import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

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
        "embedder, nativeHybrid, findingsDiagnostics, sessionLabel, unresolvedCandidates)",
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


async def _async(value):
    return value


async def _reason_if_off(client: LanguageClient) -> str:
    sv = (await request(client, "codesynapse/indexStatus", {})).get("symbolVectors", {})
    return sv.get("reason", "") if "off" in sv.get("reason", "") else ""
