"""The shared workspace daemon: one process per data folder serves every client.

``codesynapse serve`` (cli.cmd_serve) is a thin stdio ↔ socket proxy (``daemon.proxy``) to
the daemon of the workspace's data folder, started detached when none runs
(``daemon.host``, ``serve --daemon``); ``daemon.election`` holds the lock file, the owner-only
socket (or the 127.0.0.1 + token fallback) and the stale-lock takeover; ``daemon.pump`` is
what a proxy becomes once it joined (stdlib only). ``serve --no-share``
/ ``CODESYNAPSE_SHARE=0`` keeps one process per client.

API for code that extends a connection (sub-sessions, the MCP bridge):

* Every LSP connection is a ``lsp.server.CodeSynapseServer`` (``ls``) with ``ls.app`` (the
  shared App), ``ls.scope`` (its immutable Scope), ``ls.live`` (the live updater; on the
  daemon a ``daemon.host.ConnectionLive``: the shared updater plus this connection's unsaved
  buffers and listeners; ``daemon.views.Views``, ``Host.views``, runs each graph answer on
  the index as the asking connection's own unsaved buffers and the disk make it),
  ``ls.host`` (the ``daemon.host.Host``, None in one-process mode) and ``ls.session``.
* ``ls.session`` is a ``daemon.session.Session``, made on ``initialize`` in both modes:
  ``.scope``, ``.app``, ``.client_name`` / ``.client_version``, ``.children`` (a list a
  sub-session feature may use), ``.on_close(fn)`` (called when the connection ends, newest
  first, before the session's memory is deleted), ``.close()`` (idempotent),
  ``.client_entry(asking_scope)`` (what indexStatus shows: name, version, age, ``self``).
* ``Host.clients(asking_scope)`` lists the initialized connections (indexStatus ``clients``).
"""
