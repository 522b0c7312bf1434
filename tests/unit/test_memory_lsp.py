"""The four memory requests over real LSP connections: each client is its own server
process on one shared data folder (the first one owns milvus-lite, the others join it),
with separate sessions, and a third client of another tenant by configuration."""

from __future__ import annotations

import json
import math
import os
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features

from codesynapse.lsp.server import keep_dicts_converter

DATA = f"/tmp/codesynapse-memory-lsp-{os.getpid()}"


def _client() -> LanguageClient:
    c = LanguageClient(converter_factory=keep_dicts_converter)
    register_lsp_features(c)
    return c


def _config(**env: str) -> ClientServerConfig:
    e = dict(os.environ)
    e.update({"CODESYNAPSE_DATA_DIR": DATA, "CODESYNAPSE_WATCH": "false", **env})
    return ClientServerConfig(server_command=[sys.executable, "-m", "codesynapse", "serve"],
                              client_factory=_client, server_env=e)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    r = tmp_path_factory.mktemp("ws") / "memrepo"
    r.mkdir()
    (r / "app.py").write_text("def main():\n    return 1\n")
    return r


def _init(root, label: str) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
        root_uri=root.as_uri(), initialization_options={"sessionLabel": label})


@pytest_lsp.fixture(config=_config())
async def alice(lsp_client: LanguageClient, root):
    await lsp_client.initialize_session(_init(root, "alice"))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=_config())
async def bob(lsp_client: LanguageClient, root):
    await lsp_client.initialize_session(_init(root, "bob"))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=_config(CODESYNAPSE_TENANT="globex"))
async def globex(lsp_client: LanguageClient, root):
    await lsp_client.initialize_session(_init(root, "globex"))
    yield
    await lsp_client.shutdown_session()


async def call(client: LanguageClient, what: str, params: dict):
    return await client.protocol.send_request_async(f"codesynapse/memory/{what}", params)


def check_envelope(answer: dict) -> None:
    raw = json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode()
    assert answer["resultBytes"] == len(raw)
    assert answer["tokens"] == math.ceil(len(raw) / 4)


async def test_memory_across_sessions_processes_and_tenants(alice, bob, globex):
    out = await call(alice, "remember", {
        "entities": [{"name": "net.Backoff", "aliases": ["RetryPolicy"], "type": "class",
                      "durable": True},
                     {"name": "alice scratch"}],
        "facts": [{"subject": "net.Backoff", "predicate": "configured_in",
                   "object": "settings.yaml", "durable": True, "sourceClient": "pytest"}]})
    check_envelope(out)
    assert [(e["name"], e["durable"], e["status"]) for e in out["entities"]] == [
        ("net.Backoff", True, "created"), ("alice scratch", False, "created"),
        ("settings.yaml", True, "created")]
    assert out["embedded"] == 3

    # bob: another process and session of the same namespace sees durable memory only,
    # and its dense leg runs through alice's milvus-lite
    res = await call(bob, "recall", {"query": "where is the retry policy"})
    check_envelope(res)
    assert [e["name"] for e in res["entries"]] == ["net.Backoff"]
    assert res["legs"]["dense"]["ran"] is True
    assert [(f["subject"], f["predicate"], f["object"]) for f in res["facts"]] == [
        ("net.Backoff", "configured_in", "settings.yaml")]
    assert (await call(bob, "recall", {"query": "alice scratch"}))["entries"] == []
    listed = await call(bob, "list", {})
    assert [e["name"] for e in listed["entries"]] == ["net.Backoff", "settings.yaml"]

    # another tenant by configuration: nothing
    other = await call(globex, "recall", {"query": "net.Backoff"})
    assert other["entries"] == [] and other["facts"] == []

    # alice forgets; bob no longer recalls it
    gone = await call(alice, "forget", {"names": ["net.Backoff"]})
    assert (gone["entities"], gone["facts"]) == (1, 1)
    assert "net.Backoff" not in [e["name"] for e in
                                 (await call(bob, "recall", {"query": "net.Backoff"}))["entries"]]


async def test_scope_fields_and_limits_are_invalid_params(alice):
    with pytest.raises(JsonRpcInvalidParams) as info:
        await call(alice, "recall", {"query": "x", "namespace": "acme|other"})
    assert "namespace" in str(info.value)
    with pytest.raises(JsonRpcInvalidParams) as info:
        await call(alice, "recall", {"query": "q" * 4097})
    assert "4096" in str(info.value)
    with pytest.raises(JsonRpcInvalidParams) as info:
        await call(alice, "remember", {"entities": [{"name": "x", "tenant": "globex"}]})
    assert "tenant" in str(info.value)
