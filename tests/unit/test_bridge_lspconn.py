"""The MCP bridge's LSP connection to ``codesynapse serve`` (bridge/lspconn.py) on a real
daemon process: its stderr is read (a daemon that writes more than a pipe holds keeps
answering), an error answer keeps its code, message and data, and the end of the process is
told to the calls waiting on it."""

from __future__ import annotations

import asyncio
import logging
import shutil
import sys
from pathlib import Path

import pytest

from codesynapse.bridge.lspconn import DaemonError, DaemonGone, LspConnection

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

pytestmark = pytest.mark.asyncio

# 1 MiB on stderr before the daemon starts: a pipe holds 64 KiB, so a client that does not read
# stderr leaves this writer blocked and initialize unanswered
NOISY = ("import os, sys\n"
         "for _ in range(1024):\n"
         "    sys.stderr.write('INFO ' + 'x' * 1017 + '\\n')\n"
         "sys.stderr.flush()\n"
         "os.execv(sys.executable, [sys.executable, '-m', 'codesynapse', 'serve'])\n")


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    return root


async def test_a_daemon_writing_a_lot_to_stderr_keeps_answering(repo, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("CODESYNAPSE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CODESYNAPSE_EMBEDDER", "none")
    conn = LspConnection(repo, command=[sys.executable, "-c", NOISY])
    caplog.set_level(logging.INFO, logger="codesynapse.bridge.lspconn")
    try:
        init = await asyncio.wait_for(conn.start(), 30)
        assert init["serverInfo"]["name"] == "codesynapse"
        card = await conn.request("codesynapse/symbolCard", {"selector": "shop.cart.Cart.total"})
        assert card["card"]["qualifiedName"] == "shop.cart.Cart.total"
        with pytest.raises(DaemonError) as e:
            await conn.request("codesynapse/search", {"query": "cart", "limit": 501})
        assert e.value.code == -32602 and e.value.kind == "InvalidParams" and e.value.data == {"field": "limit"}
    finally:
        await conn.close()
    drained = [r for r in caplog.records if r.getMessage().startswith("daemon: INFO xxx")]
    assert len(drained) == 1024 and all(r.levelno == logging.INFO for r in drained)


async def test_the_end_of_the_daemon_reaches_the_waiting_call(repo, tmp_path, monkeypatch):
    monkeypatch.setenv("CODESYNAPSE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CODESYNAPSE_EMBEDDER", "none")
    conn = LspConnection(repo)
    try:
        await asyncio.wait_for(conn.start(), 60)
        assert conn.alive
        conn.proc.kill()
        with pytest.raises(DaemonGone) as e:
            await conn.request("codesynapse/symbolCard", {"selector": "shop.cart.Cart.total"}, timeout=30)
        assert "the daemon" in str(e.value)
        assert not conn.alive
    finally:
        await conn.close()
