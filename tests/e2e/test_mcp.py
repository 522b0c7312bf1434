"""``codesynapse mcp`` through the official MCP SDK's own stdio client: the tool list is
complete and compact (cl100k), every tool answers what its LSP request answers (budget,
omissions, freshness, provenance) as structured content plus the same JSON as text, bad input
is a tool error carrying the daemon's message, memory stays with its MCP connection, and a
daemon that dies is started again."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.lspclient import FIXTURES
from tests.e2e.mcp_client import TOOL_NAMES, call, call_error, check_budget, mcp_session

pytestmark = pytest.mark.asyncio

DIFF = ("diff --git a/shop/pricing.py b/shop/pricing.py\n--- a/shop/pricing.py\n+++ b/shop/pricing.py\n"
        "@@ -6,3 +6,3 @@ TAX_RATE = 0.2\n def apply_discount(amount, percent):\n"
        "     \"\"\"Reduce an amount by a percentage.\"\"\"\n-    return round(amount * (1 - percent / 100), 2)\n"
        "+    return round(amount * (1 - percent / 100), 3)\n")


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("mcp") / "python_repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    return root


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("mcp-data")


async def test_tools_list_is_complete_and_under_2000_cl100k_tokens(repo, data):
    from codesynapse.bench.tokenizer import Tokenizers

    async with mcp_session(repo, data) as s:
        listed = await s.list_tools()
    assert sorted(t.name for t in listed.tools) == sorted(TOOL_NAMES)
    for t in listed.tools:
        assert t.description and len(t.description) <= 160, t.name
        assert t.input_schema["type"] == "object", t.name
        for name, prop in t.input_schema.get("properties", {}).items():
            assert prop, (t.name, name)  # every argument has a type or enum
    required = {t.name: t.input_schema.get("required", []) for t in listed.tools}
    assert required["symbol_card"] == ["selector"] and required["minimal_context"] == ["task"]
    assert required["search"] == ["query"] and required["recall"] == ["query"]
    assert required["index_status"] == [] and required["pr_context"] == []
    wire = json.dumps(listed.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":"))
    tokens = Tokenizers(("cl100k_base",)).count(wire)["cl100k_base"]
    assert 0 < tokens <= 2000, tokens


async def test_every_tool_answers_like_its_lsp_request(repo, data):
    async with mcp_session(repo, data) as s:
        card = await call(s, "symbol_card", {"selector": "shop.cart.Cart.total"})  # waits for the first index
        st = await call(s, "index_status")  # answers at once, indexed or not
        assert st["files"] == 6 and st["symbols"] > 0 and st["state"] == "ready" and st["pending"] == 0

        check_budget(card)
        assert card["card"]["qualifiedName"] == "shop.cart.Cart.total"
        assert [(c["qualifiedName"], c["line"]) for c in card["card"]["callers"]] == [
            ("shop.cart.Cart.checkout", 32), ("test_cart.test_total", 8)]
        assert card["provenance"] == {"legs": ["exact"], "freshness": {"state": "ready"}}
        # the same JSON `codesynapse query` prints for the request (one path per request)
        cli = subprocess.run([sys.executable, "-m", "codesynapse", "query", "codesynapse/symbolCard", "--root", str(repo),
                              "--data-dir", str(data), "--params", json.dumps({"selector": "shop.cart.Cart.total"}),
                              "--compact"], capture_output=True, text=True, timeout=120,
                             env={**os.environ, "CODESYNAPSE_EMBEDDER": "none"})
        assert cli.returncode == 0, cli.stderr
        assert json.loads(cli.stdout) == card

        small = await call(s, "symbol_context", {"selector": "shop.cart.Cart.total", "maxTokens": 300})
        check_budget(small)
        assert small["maxTokens"] == 300 and small["truncated"] is True
        assert small["omitted"] and all(o["count"] >= 1 and o["hint"] for o in small["omitted"])

        g = await call(s, "call_graph", {"selector": "shop.pricing.with_tax", "direction": "callers", "depth": 99,
                                         "limit": 1})
        check_budget(g)
        assert g["depth"] == 3 and g["depthRequested"] == 99
        assert [n["qualifiedName"] for n in g["callers"]["nodes"]] == ["shop.cart.Cart.total"]

        mc = await call(s, "minimal_context", {"task": "how is the cart total computed with tax"})
        check_budget(mc)
        assert "shop.cart.Cart.total" in [c["qualifiedName"] for c in mc["cards"]]
        assert mc["provenance"]["freshness"]["state"] == "ready"

        pr = await call(s, "pr_context", {"diff": DIFF})
        check_budget(pr)
        assert [c["qualifiedName"] for c in pr["changed"]] == ["shop.pricing.apply_discount"]

        found = await call(s, "search", {"query": "cart", "limit": 2})
        check_budget(found)
        assert [(r["qualifiedName"], r["match"]) for r in found["results"]] == [("shop.cart", "exact")]
        assert found["omitted"] == [{"what": "approximate matches after the exact ones", "count": 13,
                                     "hint": "ask again with offset 1"}]

        snip = await call(s, "snippet", {"selector": "shop.pricing.with_tax", "mode": "signature"})
        check_budget(snip)
        assert "def with_tax(amount)" in json.dumps(snip)

        out = await call(s, "remember", {"entities": [{"name": "flaky checkout test"}],
                                         "facts": [{"subject": "flaky checkout test", "predicate": "blocked_by",
                                                    "object": "shop.cart.Cart.checkout"}]})
        assert [(e["name"], e["status"]) for e in out["entities"]] == [
            ("flaky checkout test", "created"), ("shop.cart.Cart.checkout", "created")]
        got = await call(s, "recall", {"query": "flaky checkout test"})
        assert got["entries"][0]["name"] == "flaky checkout test"
        assert [(f["subject"], f["predicate"], f["object"]) for f in got["facts"]] == [
            ("flaky checkout test", "blocked_by", "shop.cart.Cart.checkout")]
        assert got["notice"] and got["truncated"] is False
        gone = await call(s, "forget", {"names": ["flaky checkout test"]})
        assert (gone["entities"], gone["facts"]) == (1, 1)
        assert (await call(s, "recall", {"query": "flaky checkout test"}))["facts"] == []


async def test_bad_input_is_a_tool_error_with_the_daemons_message(repo, data):
    async with mcp_session(repo, data) as s:
        err = await call_error(s, "minimal_context", {"task": "   "})
        assert err["kind"] == "InvalidParams" and err["code"] == -32602 and err["field"] == "task"
        assert err["message"].startswith("task: ")
        err = await call_error(s, "search", {"query": "cart", "limit": 501})
        assert err["kind"] == "InvalidParams" and err["field"] == "limit"
        err = await call_error(s, "minimal_context", {"task": "x" * 9000})
        assert err["field"] == "task" and "9000 bytes; the limit is 8192 bytes" in err["message"]
        err = await call_error(s, "symbol_card", {"selector": "shop.cart.Cart", "maxTokens": 256, "bogus": 1})
        assert err["kind"] == "InvalidParams" and "unknown field `bogus`" in err["message"]
        err = await call_error(s, "recall", {"query": "x", "namespace": "local|other"})
        assert err["kind"] == "InvalidParams" and err["field"] == "namespace"
        err = await call_error(s, "no_such_tool", {})
        assert "unknown tool 'no_such_tool'" in err["message"]
        # the bridge is still there after each of them
        assert (await call(s, "symbol_card", {"selector": "shop.cart.Cart.total"}))["found"] is True


NAMES = ["Alice", "billing service", "PROJ-42", "deploy pipeline", "shop.cart.Cart"]


def _remember_all(owner: str) -> dict:
    """The adversarial suite's memory (tests/reliability/test_security.py): the same names
    durable and session-scoped, facts of both kinds."""
    ents = [{"name": n, "aliases": [f"{n} alias", "shared alias"], "type": "thing", "durable": durable}
            for n in NAMES for durable in (True, False)]
    facts = [{"subject": n, "predicate": "owned_by", "object": f"{owner} team", "durable": True,
              "sourceClient": owner} for n in NAMES]
    facts += [{"subject": n, "predicate": "seen_by", "object": f"{owner} session", "durable": False} for n in NAMES]
    return {"entities": ents, "facts": facts}


async def _everything(s) -> str:
    parts = []
    for q in NAMES + ["alias", "shared alias", "team", "session", "acme", "evil", "owned_by"]:
        parts.append(json.dumps(await call(s, "recall", {"query": q, "hops": 2, "maxFacts": 80, "includeIds": True})))
    return "\n".join(parts)


def _ids(blob: str) -> set[str]:
    return set(re.findall(r"(?:mem|fact)_[0-9a-f]{24}", blob))


async def test_two_mcp_connections_keep_their_session_memory(repo, tmp_path):
    """Two agents on one workspace through MCP: durable memory is shared, session memory is
    not, one agent's ids forget nothing of the other's, and scope fields are refused."""
    data = tmp_path / "data"
    async with mcp_session(repo, data) as a, mcp_session(repo, data) as b:
        await call(a, "remember", _remember_all("acme"))
        seen_a, seen_b = await _everything(a), await _everything(b)
        assert "acme team" in seen_a and "acme session" in seen_a
        assert "acme team" in seen_b and "acme session" not in seen_b
        foreign = sorted(_ids(seen_a) - _ids(seen_b))
        assert foreign
        out = await call(b, "forget", {"ids": foreign})
        assert (out["entities"], out["facts"]) == (0, 0) and sorted(out["notFound"]) == foreign
        assert "acme session" in await _everything(a)
        for args in ({"query": "Alice", "tenant": "evil"}, {"query": "Alice", "session": "s"},
                     {"query": "Alice", "graphId": "g"}):
            err = await call_error(b, "recall", args)
            assert err["kind"] == "InvalidParams" and err["field"] == next(k for k in args if k != "query")


def _children_of(pid: int) -> list[int]:
    out = []
    for t in Path(f"/proc/{pid}/task").iterdir():
        try:
            out += [int(x) for x in (t / "children").read_text().split()]
        except OSError:
            pass
    return out


def _serve_pids(bridge_pid: int) -> list[int]:
    return [p for p in _children_of(bridge_pid)
            if b"serve" in Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")]


def _bridge_pid(root: Path) -> int:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"mcp" in argv and str(root).encode() in argv and b"codesynapse" in argv:
            return int(entry.name)
    raise AssertionError("no codesynapse mcp process")


async def test_a_killed_daemon_is_started_again(repo, tmp_path):
    root = tmp_path / "killed"
    shutil.copytree(repo, root)
    async with mcp_session(root, tmp_path / "data") as s:
        assert (await call(s, "symbol_card", {"selector": "shop.cart.Cart.total"}))["found"] is True
        (serve,) = _serve_pids(_bridge_pid(root))
        os.kill(serve, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while Path(f"/proc/{serve}").exists() and b"Z" not in Path(f"/proc/{serve}/stat").read_bytes()[-40:]:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        # the bridge notices the exit: the next call starts a new daemon; a call that was
        # already on its way is a tool error saying so (never a crash or a hang)
        first = await s.call_tool("symbol_card", {"selector": "shop.cart.Cart.total"})
        if first.is_error:
            err = json.loads(first.content[0].text)["error"]
            assert err["kind"] == "DaemonGone" and "the next call starts the daemon again" in err["message"]
        again = await call(s, "symbol_card", {"selector": "shop.cart.Cart.total"})
        assert again["card"]["qualifiedName"] == "shop.cart.Cart.total"
        assert _serve_pids(_bridge_pid(root)) != [serve]


async def test_paths_outside_the_workspace_are_refused_through_mcp(repo, data, tmp_path):
    """The adversarial suite's path checks (tests/reliability/test_security.py) through the
    bridge: a selector or path outside the workspace, and git refs that look like options,
    are tool errors naming the field; a diff naming outside files reads nothing."""
    root = repo.as_posix()
    outside = ["file:///etc/passwd", f"file://{root}/../outside/escape.py", f"file://{root}/%2e%2e/%2e%2e/etc/passwd",
               "/etc/passwd", "../../etc/passwd", "https://example.com/app.py"]
    async with mcp_session(repo, data) as s:
        for uri in outside:
            for tool in ("symbol_card", "call_graph", "snippet"):
                err = await call_error(s, tool, {"selector": {"uri": uri, "line": 0}})
                assert err["kind"] == "InvalidParams" and err["field"] == "selector.uri", (tool, uri, err)
            err = await call_error(s, "minimal_context", {"task": "cart total", "paths": ["shop/cart.py", uri]})
            assert err["field"] == "paths[1]", (uri, err)
        for bad in ("--output=/tmp/pwned-mcp", "HEAD;id", "$(id)"):
            err = await call_error(s, "pr_context", {"base": bad})
            assert err["kind"] == "InvalidParams" and err["field"] in ("base", "head")
        diff = "".join(f"--- a/{p}\n+++ b/{p}\n@@ -1,3 +1,3 @@\n+x\n" for p in ("../outside/escape.py", "/etc/passwd"))
        assert (await call(s, "pr_context", {"diff": diff}))["changed"] == []
    assert not Path("/tmp/pwned-mcp").exists()


async def test_a_bad_session_handle_is_every_calls_error(repo, data):
    """`codesynapse mcp --session` with a handle this daemon never made: initialize is refused
    (InvalidParams naming the option) and every tool call answers that error."""
    async with mcp_session(repo, data, "--session", "csc_" + "z" * 43) as s:
        for tool, args in (("index_status", {}), ("recall", {"query": "anything"})):
            err = await call_error(s, tool, args)
            assert err["kind"] == "InvalidParams" and err["field"] == "initializationOptions.sessionHandle"
            assert "not an open sub-session handle" in err["message"]
