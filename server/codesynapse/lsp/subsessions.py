"""``codesynapse/session/child`` and the child side of ``initialize``: thin handlers over the
App's sub-session registry (``app.services.subsessions``, daemon/children.py).

The request is about the asking connection's session itself (its children close with it),
so it is answered here, from the connection, and not through the method table, which
answers from an App and a Scope.
"""

from __future__ import annotations

import logging
from typing import Any

from lsprotocol import types

from codesynapse.codec import decode
from codesynapse.daemon.children import OPTION, ChildParams
from codesynapse.lsp.errors import JsonRpcRequestFailed
from codesynapse.scope import Scope

log = logging.getLogger(__name__)

METHOD = "codesynapse/session/child"


def take_handle(options: Any) -> tuple[Any, Any]:
    """(the options without ``sessionHandle``, the handle or None): the handle names the
    connection's session, it is no setting."""
    if isinstance(options, dict) and OPTION in options:
        rest = {k: v for k, v in options.items() if k != OPTION}
        return rest, options[OPTION]
    return options, None


def child_scope_for(ls: Any, handle: Any, base: Scope) -> Scope:
    """The Scope of the sub-session ``handle`` names, for a connection whose own would be
    ``base`` (InvalidParams for any handle that is not an open one of this daemon)."""
    return ls.app.services.subsessions.attach(handle, base)


def bind(ls: Any) -> None:
    """After initialize made ``ls.session`` of a child scope: its parent's close closes it,
    and the client is told."""
    if ls.scope is None or not ls.scope.parent_session or ls.session is None:
        return
    ls.app.services.subsessions.bind(ls.scope, ls.session)

    def told() -> None:
        ls.in_loop(ls.window_show_message, types.ShowMessageParams(
            type=types.MessageType.Warning,
            message="CodeSynapse: this sub-session has ended (its parent session closed); its session memory "
                    "is deleted and its requests now fail"))

    ls.session.on_close(told)


def register(server: Any) -> None:
    @server.feature(METHOD)
    async def session_child(ls: Any, params: Any) -> Any:
        def run() -> Any:
            ls.require_app()
            if ls.session is None:
                raise JsonRpcRequestFailed("the server has no session yet (initialize first)")
            prm = decode(params, ChildParams)
            return ls.app.services.subsessions.open(ls.session, prm.label)

        return await ls.run_sync(run)  # our errors become JSON-RPC errors there
