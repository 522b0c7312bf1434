"""codesynapse/memory/{remember,recall,forget,list}: thin handlers over MemoryService.

Each request runs in the server's worker pool with this connection's immutable Scope
(built on initialize; request params can never set it). Memory does not need the code
index, so these requests do not wait for indexing.
"""

from __future__ import annotations

import logging
from typing import Any

from codesynapse.memory.methods import HANDLERS

log = logging.getLogger(__name__)


def _scope(ls: Any):
    from codesynapse.lsp.server import JsonRpcRequestFailed

    app = ls.require_app()
    if ls.scope is None:
        raise JsonRpcRequestFailed("the server has no scope yet (initialize first)")
    # the CLI-style dispatch path of this App uses the same scope as the connection
    app.services.setdefault("memory_scope", ls.scope)
    return app, ls.scope


def register(server: Any) -> None:
    known = getattr(getattr(server, "protocol", None), "fm", None)
    for name, fn in HANDLERS.items():
        if known is not None and name in known.features:
            log.debug("%s already registered", name)
            continue
        _register_one(server, name, fn)


def _register_one(server: Any, name: str, fn: Any) -> None:
    @server.feature(name)
    async def handler(ls: Any, params: Any) -> Any:
        def run() -> Any:
            app, scope = _scope(ls)
            return fn(app, scope, params)

        return await ls.run_sync(run)

    handler.__name__ = "handle_" + name.replace("/", "_")
