"""Custom requests that read the code graph: each one is a thin handler over its row of the
method table (``codesynapse.methods``); the memory rows are lsp/memory.py's."""

from __future__ import annotations

import asyncio

from codesynapse.methods import METHODS


def register(server) -> None:
    for name, method in METHODS.items():
        if method.reads in ("graph", "session"):  # session: codesynapse/ledger
            _register_one(server, name)


def _register_one(server, name: str) -> None:
    @server.feature(name)
    async def handler(ls, params):
        started = asyncio.get_running_loop().time()  # the deadline counts the wait for the index too
        ls.require_app()  # without a workspace there is no index to wait for
        if name != "codesynapse/indexStatus":
            await _wait_ready(ls)
        return await ls.run_method(name, params, started)

    handler.__name__ = "handle_" + name.replace("/", "_")


async def _wait_ready(ls, timeout: float = 9.0) -> None:
    """Requests that arrive during the first index wait for it, within the deadline."""
    if ls.ready.is_set():
        return
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, ls.ready.wait, timeout)
