"""Bridges from other protocols to the daemon's requests: ``codesynapse mcp`` (mcp_server.py)
speaks the Model Context Protocol to an agent and LSP to ``codesynapse serve`` (lspconn.py)."""
