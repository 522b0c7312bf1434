"""``codesynapse mcp``: a Model Context Protocol server over stdio (the official ``mcp`` SDK)
that answers each tool with the daemon's answer to the matching request.

The bridge holds one LSP connection to ``codesynapse serve`` for the workspace (that process
is the workspace daemon, or a proxy to it), so a tool answers exactly what the LSP request
answers: budgets, ``omitted``, freshness and provenance included. Each answer is returned as
structured content and, as the MCP specification asks for clients that read text only, as
the same JSON in one text block. A daemon error (InvalidParams naming the field,
RequestFailed with its kind) becomes a tool error (``isError``) carrying the daemon's
message; the bridge never crashes on one. When the daemon process ends, the next tool call
starts a new one (a call already on its way when it ended is a tool error saying so).

``--session HANDLE`` makes this MCP connection a child session: the handle (from
``codesynapse/session/child``) is passed at initialize as ``initializationOptions.sessionHandle``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server

from codesynapse.bridge.lspconn import DaemonError, DaemonGone, LspConnection
from codesynapse.bridge.tools import BY_NAME, TOOLS

log = logging.getLogger(__name__)

INSTRUCTIONS = ("Code context for this repository from a live index: start with minimal_context or search, "
                "then symbol_card / call_graph / snippet. Answers fit maxTokens; 'omitted' says what was left "
                "out and how to get it. Memory tools keep notes across turns (session-only unless durable).")


class Bridge:
    """The daemon connection of one MCP connection, started again when it ends."""

    def __init__(self, root: Path, *, session_handle: str = "", env: dict[str, str] | None = None,
                 command: list[str] | None = None):
        self.root = root
        self.options: dict[str, Any] = {"sessionHandle": session_handle} if session_handle else {}
        self.env = env
        self.command = command
        self.conn: LspConnection | None = None
        self.refused: DaemonError | None = None  # initialize refused (a bad session handle): for good
        self._lock = asyncio.Lock()

    async def connection(self) -> LspConnection:
        async with self._lock:
            if self.refused is not None:
                raise self.refused
            if self.conn is not None and self.conn.alive:
                return self.conn
            if self.conn is not None:
                await self.conn.close(timeout=2.0)
            self.conn = None
            conn = LspConnection(self.root, init_options=self.options, env=self.env, command=self.command)
            try:
                await conn.start()
            except BaseException as e:  # refused at initialize (a bad session handle) or gone: not kept
                await conn.close(timeout=2.0)
                if isinstance(e, DaemonError) and e.code == -32602:
                    self.refused = e  # the same options would be refused again: not retried
                raise
            self.conn = conn
            return conn

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        conn = await self.connection()
        return await conn.request(method, params)

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()


def _text(answer: Any) -> str:
    return json.dumps(answer, ensure_ascii=False, separators=(",", ":"))


def tool_error(message: str, **detail: Any) -> types.CallToolResult:
    err = {"message": message, **{k: v for k, v in detail.items() if v is not None}}
    return types.CallToolResult(content=[types.TextContent(text=_text({"error": err}))],
                                structured_content={"error": err}, is_error=True)


def list_tools_result() -> types.ListToolsResult:
    return types.ListToolsResult(tools=[
        types.Tool(name=t.name, description=t.description, input_schema=t.schema) for t in TOOLS])


def build_server(bridge: Bridge) -> Server:
    from codesynapse import __version__

    @asynccontextmanager
    async def lifespan(_server):
        try:  # start the daemon now, so the index is under way before the first call
            await bridge.connection()
        except Exception as e:
            log.warning("the daemon did not start: %s (the next tool call tries again)", e)
        try:
            yield {}
        finally:
            await bridge.close()

    async def on_list_tools(ctx, params) -> types.ListToolsResult:
        return list_tools_result()

    async def on_call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = BY_NAME.get(params.name)
        if tool is None:
            return tool_error(f"unknown tool {params.name!r}; known: {', '.join(sorted(BY_NAME))}")
        args = params.arguments if params.arguments is not None else {}
        try:
            answer = await bridge.call(tool.method, args)
        except DaemonError as e:
            data = e.data if isinstance(e.data, dict) else {}
            return tool_error(e.message, code=e.code, kind=data.get("kind") or e.kind, field=data.get("field"))
        except DaemonGone as e:
            return tool_error(f"{e}; the next call starts the daemon again", kind="DaemonGone")
        except OSError as e:
            return tool_error(f"the daemon could not be started: {e}", kind="DaemonGone")
        structured = answer if isinstance(answer, dict) else {"result": answer}
        return types.CallToolResult(content=[types.TextContent(text=_text(answer))],
                                    structured_content=structured)

    return Server("codesynapse", version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan,
                  on_list_tools=on_list_tools, on_call_tool=on_call_tool)


async def serve_stdio(bridge: Bridge) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(bridge)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run(root: str, *, session_handle: str = "", serve_args: list[str] | None = None) -> int:
    """Serve MCP on stdio for the workspace ``root``; ``serve_args`` are passed to ``codesynapse
    serve`` (--data-dir, --tenant, --backend, --workers)."""
    import anyio

    from codesynapse.bridge.lspconn import serve_command

    path = Path(root).resolve()
    if not path.is_dir():
        raise FileNotFoundError(f"no such folder: {root}")
    bridge = Bridge(path, session_handle=session_handle, command=serve_command() + list(serve_args or ()))
    anyio.run(serve_stdio, bridge)
    return 0
