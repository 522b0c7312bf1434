"""codesynapse/memory/{remember,recall,forget,list}: thin handlers over the memory rows of
the method table (``codesynapse.methods``).

Each request runs in the server's worker pool with this connection's immutable Scope
(built on initialize; request params can never set it). Memory does not need the code
index, so these requests do not wait for indexing.
"""

from __future__ import annotations

import logging
from typing import Any

from codesynapse.lsp.errors import JsonRpcRequestFailed
from codesynapse.methods import METHODS, call_method

log = logging.getLogger(__name__)


def _scope(ls: Any):
    app = ls.require_app()
    if ls.scope is None:
        raise JsonRpcRequestFailed("the server has no scope yet (initialize first)")
    return app, ls.scope


def register(server: Any) -> None:
    for name, method in METHODS.items():
        if method.reads == "memory":
            _register_one(server, name)


def _register_one(server: Any, name: str) -> None:
    @server.feature(name)
    async def handler(ls: Any, params: Any) -> Any:
        def run() -> Any:
            app, scope = _scope(ls)
            return call_method(app, name, params, scope)

        return await ls.run_sync(run)

    handler.__name__ = "handle_" + name.replace("/", "_")
