"""initialize / initialized / shutdown: build the App, the Scope, and index in the background."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from urllib.parse import unquote, urlparse

from lsprotocol import types

from codesynapse import metrics
from codesynapse.app import short_reason
from codesynapse.daemon.session import Session
from codesynapse.lsp.errors import to_jsonrpc
from codesynapse.lsp.subsessions import bind as bind_child
from codesynapse.lsp.subsessions import child_scope_for, take_handle
from codesynapse.scope import Scope, make_scope
from codesynapse.settings import with_client_options

log = logging.getLogger(__name__)


def _root_of(params: types.InitializeParams) -> str | None:
    if params.workspace_folders:
        return unquote(urlparse(params.workspace_folders[0].uri).path)
    if params.root_uri:
        return unquote(urlparse(params.root_uri).path)
    if params.root_path:
        return params.root_path
    return None


def make_connection_scope(ls, settings=None) -> Scope:
    """This connection's immutable Scope (request params can never set it; the client's
    sessionLabel option names the session: this connection's, not the shared App's)."""
    app = ls.app
    label = (settings or app.settings).session_label
    return make_scope(app.settings.tenant, app.workspace.identity, label)


def register(server) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls, params: types.InitializeParams):
        try:
            ls.loop = asyncio.get_running_loop()
        except RuntimeError:
            ls.loop = asyncio.get_event_loop()
        root = _root_of(params)
        # server-side settings (tenant, backend and its credentials, scope fields) come only
        # from the server's configuration; the client may tune settings.CLIENT_OPTIONS. Each
        # option not applied is named in a warning (shown on initialized) and keeps its value.
        # a sub-session's handle (codesynapse/session/child) names this connection's session
        options, handle = take_handle(params.initialization_options)
        settings, problems = with_client_options(ls.base_settings, options)
        for problem in problems:
            log.warning("initializationOptions: %s", problem)
        ls.app_notices = [("warning", f"CodeSynapse: {p}") for p in problems]
        if root is None or not Path(root).is_dir():
            log.warning("no workspace folder; custom requests will fail until one is given")
            return
        try:
            ls.app, ignored = ls.open_app(root, settings)
        except Exception as e:  # initialize answers; each request then names the cause
            ls.init_error = f"the workspace could not be opened: {short_reason(e)}"
            log.debug("opening the workspace failed", exc_info=True)  # the notice below is logged
            ls.app_notices.append(("error", f"CodeSynapse: {ls.init_error}. Check the data folder "
                                            "(setting dataDir / CODESYNAPSE_DATA_DIR) and restart the server."))
            return
        ls.app_notices.extend(ls.app.notices)
        ls.app_notices.extend(("warning", f"CodeSynapse: {p}") for p in ignored)
        problem = metrics.start(settings.metrics_port, ls.app)  # opt-in; a port in use is a warning
        if problem:
            ls.app_notices.append(("warning", f"CodeSynapse: {problem}"))
        ls.scope = make_connection_scope(ls, settings)
        if handle is not None:  # the sub-session's scope, or InvalidParams: initialize fails
            try:
                ls.scope = child_scope_for(ls, handle, ls.scope)
            except Exception as e:
                ls.scope = None
                raise to_jsonrpc(e) from e
        info = params.client_info
        ls.session = Session(ls.app, ls.scope, info.name if info else "", (info.version or "") if info else "")
        bind_child(ls)
        if ls.host is not None:
            ls.host.attach(ls)
        if ls.app.services.clients is None:  # indexStatus' clients (methods.py); the daemon's are set
            ls.app.services.clients = ls.clients

    @server.feature(types.INITIALIZED)
    def initialized(ls, params: types.InitializedParams):
        _show_notices(ls)
        if ls.app is None:
            return
        ls.begin_indexing()

    @server.feature(types.SHUTDOWN)
    def shutdown(ls, params):
        ls.stop_background()


def _show_notices(ls) -> None:
    """Tell the user what went wrong at start and what to do (a damaged index moved aside, a
    store that cannot be opened): window/showMessage, and the log for errors (a moved-aside
    index is logged where it is moved, for the CLI too)."""
    kinds = {"warning": types.MessageType.Warning, "error": types.MessageType.Error}
    for level, message in getattr(ls, "app_notices", None) or ():
        if level == "error":
            log.error("%s", message)
        try:
            ls.window_show_message(types.ShowMessageParams(type=kinds.get(level, types.MessageType.Info),
                                                           message=message))
        except Exception:
            log.debug("showMessage failed", exc_info=True)
    ls.app_notices = []
