"""A pytest-lsp client whose custom-request results stay plain dicts, and helpers that
check every context answer's budget envelope."""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features

from codesynapse.lsp.server import keep_dicts_converter

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=keep_dicts_converter)
    register_lsp_features(client)
    return client


def config(data_dir: str, **env: str) -> ClientServerConfig:
    e = dict(os.environ)
    e.update({"CODESYNAPSE_DATA_DIR": data_dir, **env})
    return ClientServerConfig(server_command=[sys.executable, "-m", "codesynapse", "serve"],
                              client_factory=make_client, server_env=e)


def init_params(root: Path, **options: Any) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
        root_uri=root.as_uri(),
        initialization_options=options or None,
    )


async def request(client: LanguageClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
    result = await client.protocol.send_request_async(method, params)
    return result


def check_budget(answer: dict[str, Any]) -> None:
    """tokens == ceil(bytes/4) of the complete JSON, and tokens <= maxTokens."""
    raw = json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    assert answer["resultBytes"] == len(raw)
    assert answer["tokens"] == math.ceil(len(raw) / 4)
    if "maxTokens" in answer:
        assert answer["tokens"] <= answer["maxTokens"]


async def ask(client: LanguageClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A custom request whose answer is checked against its budget (check_budget)."""
    answer = await request(client, method, params)
    check_budget(answer)
    return answer


async def wait_indexed(client: LanguageClient, timeout: float = 60.0) -> dict[str, Any]:
    import asyncio

    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        st = await request(client, "codesynapse/indexStatus", {})
        if st["state"] == "ready" and st["files"] > 0:
            return st
        if loop.time() > end:
            raise AssertionError(f"index not ready: {st}")
        await asyncio.sleep(0.1)


async def eventually(probe, timeout: float = 20.0):
    """Poll ``probe`` until it returns a truthy value (the daemon works asynchronously)."""
    import asyncio

    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        value = await probe()
        if value:
            return value
        if loop.time() > end:
            raise AssertionError(f"condition not reached; last: {value!r}")
        await asyncio.sleep(0.05)
