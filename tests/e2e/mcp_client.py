"""The official MCP SDK's stdio client on a real ``codesynapse mcp`` process (which starts its
own ``codesynapse serve``): what the MCP tests talk through."""

from __future__ import annotations

import json
import math
import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

TOOL_NAMES = ["symbol_card", "symbol_context", "call_graph", "minimal_context", "pr_context", "search", "snippet",
              "remember", "recall", "forget", "index_status"]


def mcp_params(root: Path, data: Path, *args: str, **env: str) -> StdioServerParameters:
    e = dict(os.environ)  # the SDK passes only a few variables by default: the tests pass theirs
    e.update({"CODESYNAPSE_EMBEDDER": "none", **env})
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "codesynapse", "mcp", "--root", str(root), "--data-dir", str(data), *args],
                                 env=e)


@asynccontextmanager
async def mcp_session(root: Path, data: Path, *args: str, errlog=None, **env: str):
    with open(errlog or os.devnull, "a") as err:
        async with stdio_client(mcp_params(root, data, *args, **env), errlog=err) as (r, w):
            async with ClientSession(r, w, read_timeout_seconds=120) as s:
                await s.initialize()
                yield s


async def call(s: ClientSession, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """A tool call that must succeed: its structured content, checked against its text."""
    res = await s.call_tool(tool, args or {})
    text = res.content[0].text
    assert res.is_error is False, text
    assert len(res.content) == 1 and res.content[0].type == "text"
    assert json.loads(text) == res.structured_content
    return res.structured_content


async def call_error(s: ClientSession, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """A tool call that must fail as a tool error: the error object it carries."""
    res = await s.call_tool(tool, args or {})
    assert res.is_error is True, res
    err = json.loads(res.content[0].text)["error"]
    assert res.structured_content == {"error": err}
    return err


def check_budget(answer: dict[str, Any]) -> None:
    raw = json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    assert answer["resultBytes"] == len(raw)
    assert answer["tokens"] == math.ceil(len(raw) / 4)
    if "maxTokens" in answer:
        assert answer["tokens"] <= answer["maxTokens"]
