"""Sub-sessions on the shared workspace daemon (issue 19 #3): a parent editor connection hands
out handles (``codesynapse/session/child``); a child connects over LSP (a new ``codesynapse
serve`` with ``initializationOptions.sessionHandle``) or over MCP (``codesynapse mcp
--session``). Real proxies, a real daemon, the real MCP SDK client.

A child keeps its parent's tenant, graph and namespace, reads the parent's session memory,
writes its own (which nobody else sees), can never widen its scope, and ends with its parent.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.e2e.mcp_client import call, call_error, mcp_session
from tests.reliability.rawlsp import RpcError
from tests.reliability.test_daemon import (  # noqa: F401  (repo, data: the daemon tests' fixtures)
    ENV,
    client,
    daemon_pids,
    data,
    init,
    repo,
    session_rows,
    wait_until,
)
from tests.reliability.test_security import _everything, _ids, _remember_all

pytestmark = pytest.mark.asyncio


def _refused(fn, code: int = -32602) -> RpcError:
    with pytest.raises(RpcError) as e:
        fn()
    assert e.value.code == code, e.value
    return e.value


async def _mcp_everything(s) -> str:
    parts = []
    for q in ["Alice", "billing service", "PROJ-42", "deploy pipeline", "shop.cart.Cart", "alias", "team", "session",
              "acme", "reviewer note"]:
        parts.append(json.dumps(await call(s, "recall", {"query": q, "hops": 2, "maxFacts": 80, "includeIds": True})))
    return "\n".join(parts)


async def test_children_over_lsp_and_mcp_inherit_read_parent_and_end_with_it(repo, data, tmp_path):
    parent = client(data, tmp_path, "parent")
    lsp_child = other = None
    try:
        init(parent, repo, "editor")
        parent.wait_ready()
        _remember_all(parent, "acme")
        parent_view = _everything(parent)
        assert "acme session" in parent_view and "acme team" in parent_view
        status = parent.request("codesynapse/indexStatus", {})

        # asking for a child can never widen it: scope fields and unknown fields are refused
        for params in ({"tenant": "evil"}, {"namespace": "evil|x"}, {"graphId": "0" * 16}, {"session": "s"},
                       {"label": "x", "scope": {"tenant": "evil"}}, {"handle": "csc_" + "a" * 43},
                       {"label": "x" * 65}, {"label": "tab\tlabel"}):
            err = _refused(lambda: parent.request("codesynapse/session/child", params))
            assert err.data.get("field") in ("tenant", "namespace", "graphId", "session", "scope", "params", "label")
        lsp_handle = parent.request("codesynapse/session/child", {"label": "reviewer"})
        mcp_handle = parent.request("codesynapse/session/child", {})
        assert lsp_handle["label"] == "reviewer" and "label" not in mcp_handle
        for h in (lsp_handle["handle"], mcp_handle["handle"]):
            assert re.fullmatch(r"csc_[A-Za-z0-9_-]{43}", h)
        assert lsp_handle["handle"] != mcp_handle["handle"]

        # the LSP child: the parent's graph and namespace, its session memory, its own writes
        lsp_child = client(data, tmp_path, "lsp-child")
        init(lsp_child, repo, "sub-agent", sessionHandle=lsp_handle["handle"])
        mine = lsp_child.request("codesynapse/indexStatus", {})
        assert mine["graphId"] == status["graphId"] and mine["files"] == status["files"]
        assert sorted(c["name"] for c in mine["clients"]) == ["editor", "sub-agent"]
        seen = _everything(lsp_child)
        assert "acme session" in seen and "acme team" in seen  # the parent's session memory and durable memory
        lsp_child.request("codesynapse/memory/remember", {"entities": [{"name": "reviewer note"}]})
        assert "reviewer note" in _everything(lsp_child)
        assert "reviewer note" not in _everything(parent)
        # the child reads the parent's session memory but never changes it
        stranger = client(data, tmp_path, "stranger")
        try:
            init(stranger, repo, "stranger")
            parent_session_ids = sorted(_ids(parent_view) - _ids(_everything(stranger)))
        finally:
            stranger.close()
        assert parent_session_ids
        assert set(parent_session_ids) <= _ids(seen)
        out = lsp_child.request("codesynapse/memory/forget", {"ids": parent_session_ids})
        assert (out["entities"], out["facts"]) == (0, 0) and sorted(out["notFound"]) == parent_session_ids
        assert _everything(parent) == parent_view

        # a handle is for one connection of this daemon: used, the parent's own session, or made up
        for i, handle in enumerate((lsp_handle["handle"], "csc_" + "b" * 43, "not a handle", 42)):
            other = client(data, tmp_path, f"other{i}")
            err = _refused(lambda: init(other, repo, "intruder", sessionHandle=handle))
            assert err.data.get("field") == "initializationOptions.sessionHandle"
            other.close()
        other = None
        # a client of another tenant is served by another daemon, where no handle is known
        globex = client(data, tmp_path, "globex", CODESYNAPSE_TENANT="globex")
        try:
            _refused(lambda: init(globex, repo, "globex", sessionHandle=mcp_handle["handle"]))
        finally:
            globex.close()

        # the MCP child: a separate MCP connection started with the handle
        async with mcp_session(repo, data, "--session", mcp_handle["handle"], errlog=tmp_path / "mcp.log",
                               **ENV) as agent:
            got = await _mcp_everything(agent)
            assert "acme session" in got and "acme team" in got
            assert "reviewer note" not in got  # a sibling's session memory is its own
            await call(agent, "remember", {"entities": [{"name": "mcp agent finding"}]})
            assert "mcp agent finding" in json.dumps(await call(agent, "recall", {"query": "mcp agent finding"}))
            assert "mcp agent finding" not in _everything(parent)
            assert "mcp agent finding" not in _everything(lsp_child)
            err = await call_error(agent, "recall", {"query": "Alice", "namespace": "evil|x"})
            assert err["kind"] == "InvalidParams" and err["field"] == "namespace"
            assert len(daemon_pids(data)) == 1  # parent, both children and the refused ones: one daemon
            # two LSP clients and an MCP client on the one daemon, each named in indexStatus
            assert sorted(c["name"] for c in parent.request("codesynapse/indexStatus", {})["clients"]) == [
                "codesynapse-mcp", "editor", "sub-agent"]

            # the parent leaves: its children end with it, their session memory too
            parent.close()
            wait_until(lambda: session_rows(data) == 0, 30, "the session memory of parent and children deleted")
            err = _refused(lambda: lsp_child.request("codesynapse/memory/recall", {"query": "reviewer note"}), -32803)
            assert err.data.get("kind") == "SessionEnded"
            _refused(lambda: lsp_child.request("codesynapse/symbolCard", {"selector": "shop.cart.Cart.total"}), -32803)
            err = await call_error(agent, "recall", {"query": "mcp agent finding"})
            assert err["kind"] == "SessionEnded" and "ended" in err["message"]
            # nothing the children wrote can be written again under their ended sessions
            err = await call_error(agent, "remember", {"entities": [{"name": "late write"}]})
            assert err["kind"] == "SessionEnded"
            assert session_rows(data) == 0
    finally:
        for x in (parent, lsp_child, other):
            if x is not None:
                x.close()


async def test_a_child_cannot_open_children(repo, data, tmp_path):
    parent = client(data, tmp_path, "parent")
    child = None
    try:
        init(parent, repo, "editor")
        h = parent.request("codesynapse/session/child", {"label": "one"})["handle"]
        child = client(data, tmp_path, "child")
        init(child, repo, "sub-agent", sessionHandle=h)
        err = _refused(lambda: child.request("codesynapse/session/child", {}))
        assert "cannot open sub-sessions" in err.message
    finally:
        for x in (parent, child):
            if x is not None:
                x.close()
