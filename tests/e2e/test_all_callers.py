"""Every caller is reachable (issue 18): callGraph pages with exact omitted counts, cursors
bound to the index version, references and incoming calls without a silent cap, and
unresolved same-name call sites named (not shown as none) unless the setting turns it off.

The fixture is generated: ``lib/target.py`` defines ``hot``; 40 modules each define 30
functions that call ``hot()`` twice — 1,200 distinct callers, 2,400 call sites. ``bank.py``
holds the ``transfer``/``withdraw`` example: ``source.withdraw(amount)`` on an untyped
parameter is unresolved; ``pay`` calls ``Account().withdraw`` (resolved)."""

from __future__ import annotations

import json
import time

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from tests.e2e.lspclient import check_budget, config, eventually, init_params, request, wait_indexed

ASYNC = pytest.mark.asyncio(loop_scope="module")

DATA = "/tmp/codesynapse-e2e-allcallers"
FILES, PER_FILE = 40, 30
BANK = """class Account:
    def withdraw(self, amount):
        return amount


def pay():
    return Account().withdraw(1)


def transfer(source, target, amount):
    source.withdraw(amount)
"""


def make_repo(root):
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "__init__.py").write_text("")
    (root / "lib" / "target.py").write_text("def hot():\n    return 1\n")
    (root / "callers").mkdir()
    (root / "callers" / "__init__.py").write_text("")
    for k in range(FILES):
        body = ["from lib.target import hot", ""]
        for i in range(PER_FILE):
            body += ["", f"def f_{k}_{i}():", "    hot()", "    return hot()", ""]
        (root / "callers" / f"c{k:02d}.py").write_text("\n".join(body))
    (root / "bank.py").write_text(BANK)
    return root


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return make_repo(tmp_path_factory.mktemp("allcallers") / "repo")


@pytest_lsp.fixture(config=config(data_dir=DATA), scope="module")
async def client(lsp_client: LanguageClient, repo):
    await lsp_client.initialize_session(init_params(repo))
    await wait_indexed(lsp_client)
    yield
    await lsp_client.shutdown_session()


ALL = {f"callers.c{k:02d}.f_{k}_{i}" for k in range(FILES) for i in range(PER_FILE)}


@ASYNC
async def test_first_page_counts_omitted_exactly_and_pages_reach_every_caller(client):
    g = await request(client, "codesynapse/callGraph", {"selector": "lib.target.hot", "direction": "callers"})
    check_budget(g)
    sec = g["callers"]
    assert len(sec["nodes"]) == 25
    assert all(len(n["sites"]) == 2 for n in sec["nodes"])
    # exact: distinct caller units, and call sites separately (each caller calls twice)
    assert sec["omittedNodes"] == 1175
    assert sec["omittedCallSites"] == 2350
    assert {(o["what"], o["count"]) for o in g["omitted"]} >= {("callers nodes", 1175), ("callers call sites", 2350)}
    seen = [n["qualifiedName"] for n in sec["nodes"]]
    cursor = sec["cursor"]
    pages = 1
    while cursor:
        g = await request(client, "codesynapse/callGraph", {"selector": "lib.target.hot", "direction": "callers",
                                                            "limit": 200, "cursor": cursor})
        check_budget(g)
        seen += [n["qualifiedName"] for n in g["callers"]["nodes"]]
        assert g["callers"].get("omittedNodes", 0) == 1200 - len(seen)
        cursor = g["callers"].get("cursor")
        pages += 1
    assert pages == 7  # 25, then 5 × 200, then 175
    assert len(seen) == 1200 and set(seen) == ALL


@ASYNC
async def test_bad_cursors_are_invalid_params_naming_cursor(client):
    g = await request(client, "codesynapse/callGraph", {"selector": "lib.target.hot", "direction": "callers"})
    cursor = g["callers"]["cursor"]
    for params, words in [
        ({"selector": "lib.target.hot", "direction": "callers", "cursor": "not-a-cursor!"}, "not a cursor"),
        ({"selector": "lib.target.hot", "direction": "callers", "cursor": cursor[:-4] + "AAAA"}, "cursor"),
        ({"selector": "bank.Account.withdraw", "direction": "callers", "cursor": cursor}, "another request"),
        ({"selector": "lib.target.hot", "direction": "callees", "cursor": cursor}, "another request"),
        ({"selector": "lib.target.hot", "direction": "both", "cursor": cursor}, "one direction"),
    ]:
        with pytest.raises(JsonRpcInvalidParams) as e:
            await request(client, "codesynapse/callGraph", params)
        assert "cursor" in str(e.value) and words in str(e.value)


@ASYNC
async def test_call_graph_names_unresolved_candidate_sites_after_resolved_ones(client):
    g = await request(client, "codesynapse/callGraph", {"selector": "bank.Account.withdraw", "direction": "callers"})
    sec = g["callers"]
    assert [n["qualifiedName"] for n in sec["nodes"]] == ["bank.pay"]
    assert sec["unresolvedCandidates"] == 1
    assert sec["unresolved"] == [{"path": "bank.py", "line": 11, "name": "source.withdraw", "from": "bank.transfer"}]
    assert "cursor" not in sec and "omittedNodes" not in sec
    # the unresolved sites come after the resolved units in the same paging: limit 1 shows
    # the resolved caller, and the cursor the unresolved site
    g1 = await request(client, "codesynapse/callGraph", {"selector": "bank.Account.withdraw", "direction": "callers",
                                                         "limit": 1})
    assert [n["qualifiedName"] for n in g1["callers"]["nodes"]] == ["bank.pay"]
    assert "unresolved" not in g1["callers"] and g1["callers"]["omittedUnresolved"] == 1
    g2 = await request(client, "codesynapse/callGraph", {"selector": "bank.Account.withdraw", "direction": "callers",
                                                         "limit": 1, "cursor": g1["callers"]["cursor"]})
    assert g2["callers"]["nodes"] == [] and g2["callers"]["unresolved"][0]["from"] == "bank.transfer"


async def refs_of(client, uri, line, character):
    return await client.text_document_references_async(types.ReferenceParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=character),
        context=types.ReferenceContext(include_declaration=False)))


async def incoming_of(client, uri, line, character):
    items = await client.text_document_prepare_call_hierarchy_async(types.CallHierarchyPrepareParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=character)))
    return await client.call_hierarchy_incoming_calls_async(types.CallHierarchyIncomingCallsParams(item=items[0]))


@ASYNC
async def test_references_and_incoming_calls_return_every_caller(client, repo):
    uri = (repo / "lib" / "target.py").as_uri()
    refs = await refs_of(client, uri, 0, 4)
    assert len(refs) == 2400  # every call site (the cap was 1,000)
    assert len({(r.uri, r.range.start.line) for r in refs}) == 2400
    incoming = await incoming_of(client, uri, 0, 4)
    names = [c.from_.detail for c in incoming]
    assert len(names) == 1200 and set(names) == ALL
    assert all(len(c.from_ranges) == 2 for c in incoming)


@ASYNC
async def test_unresolved_name_matches_follow_the_resolved_ones(client, repo):
    uri = (repo / "bank.py").as_uri()
    refs = await refs_of(client, uri, 1, 8)
    # pay's resolved call (line 7), then transfer's unresolved source.withdraw (line 11)
    assert [r.range.start.line for r in refs] == [6, 10]
    incoming = await incoming_of(client, uri, 1, 8)
    assert [c.from_.name for c in incoming] == ["pay", "transfer"]
    assert incoming[0].from_.detail == "bank.pay"
    assert incoming[1].from_.detail.startswith("unresolved name match: source.withdraw")
    assert [r.start.line for r in incoming[1].from_ranges] == [10]


def test_partial_results_stream_every_caller_and_the_setting_turns_name_matches_off(tmp_path):
    """Over a raw client: with a partialResultToken the results come as $/progress batches
    and the response is empty; with unresolvedCandidates false no name match is listed
    anywhere; a cursor given before the index changed is stale (InvalidParams)."""
    from tests.reliability.rawlsp import RawLsp, RpcError

    root = make_repo(tmp_path / "repo")
    with RawLsp(tmp_path / "data") as c:
        c.initialize(root, unresolvedCandidates=False)
        c.wait_ready(files=FILES + 4)
        hot = {"textDocument": {"uri": (root / "lib" / "target.py").as_uri()}, "position": {"line": 0, "character": 4}}
        res = c.request("textDocument/references", {**hot, "context": {"includeDeclaration": False},
                                                    "partialResultToken": "refs-1"})
        assert res == []
        batches = [n["params"]["value"] for n in c.notifications
                   if n["method"] == "$/progress" and n["params"]["token"] == "refs-1"]
        assert [len(b) for b in batches] == [500, 500, 500, 500, 400]
        assert len({(x["uri"], x["range"]["start"]["line"]) for b in batches for x in b}) == 2400
        items = c.request("textDocument/prepareCallHierarchy", hot)
        res = c.request("callHierarchy/incomingCalls", {"item": items[0], "partialResultToken": 7})
        assert res == []
        got = [x["from"]["detail"] for n in c.notifications if n["method"] == "$/progress"
               and n["params"]["token"] == 7 for x in n["params"]["value"]]
        assert len(got) == 1200 and set(got) == ALL
        # the setting off: the resolved caller only, everywhere
        bank = {"textDocument": {"uri": (root / "bank.py").as_uri()}, "position": {"line": 1, "character": 8}}
        refs = c.request("textDocument/references", {**bank, "context": {"includeDeclaration": False}})
        assert [r["range"]["start"]["line"] for r in refs] == [6]
        items = c.request("textDocument/prepareCallHierarchy", bank)
        assert [x["from"]["name"] for x in c.request("callHierarchy/incomingCalls", {"item": items[0]})] == ["pay"]
        g = c.request("codesynapse/callGraph", {"selector": "bank.Account.withdraw", "direction": "callers"})
        assert "unresolved" not in g["callers"] and g["callers"]["unresolvedCandidates"] == 1
        card = c.request("codesynapse/symbolCard", {"selector": "bank.Account.withdraw"})["card"]
        assert "unresolved" not in card and card["counts"]["unresolvedCallers"] == 1
        # a stale cursor: the index changes (a new caller file) after it was given
        g = c.request("codesynapse/callGraph", {"selector": "lib.target.hot", "direction": "callers"})
        cursor = g["callers"]["cursor"]
        (root / "callers" / "late.py").write_text("from lib.target import hot\n\n\ndef late():\n    hot()\n")
        end = time.monotonic() + 60
        while c.request("codesynapse/callGraph", {"selector": "lib.target.hot", "direction": "callers"}
                        )["callers"]["omittedNodes"] != 1176:  # the watcher indexed late.py
            assert time.monotonic() < end, "the new caller was not indexed"
            time.sleep(0.1)
        with pytest.raises(RpcError) as e:
            c.request("codesynapse/callGraph", {"selector": "lib.target.hot", "direction": "callers",
                                                "cursor": cursor})
        assert e.value.code == -32602 and "cursor" in e.value.message and "stale" in e.value.message


@ASYNC
async def test_symbol_context_pages_the_card_lists_and_cards_name_unresolved_sites(client):
    a = await request(client, "codesynapse/symbolContext", {"selector": "lib.target.hot"})
    check_budget(a)
    seen = [c["qualifiedName"] for c in a["card"]["callers"]]
    assert len(seen) == 5 and a["card"]["counts"]["callers"] == 2400
    assert {(o["what"], o["count"]) for o in a["omitted"]} >= {("card callers after the top 5", 1195)}
    cursor, pages = a["cursor"], 0
    while cursor:
        page = await request(client, "codesynapse/symbolContext", {"selector": "lib.target.hot", "cursor": cursor})
        check_budget(page)
        assert page["subject"]["qualifiedName"] == "lib.target.hot" and "callees" not in page
        seen += [c["qualifiedName"] for c in page["callers"]]
        left = {o["what"]: o["count"] for o in page.get("omitted", [])}.get("callers after this page", 0)
        assert left == 1200 - len(seen)
        cursor, pages = page.get("cursor"), pages + 1
    assert pages == 12 and len(seen) == 1200 and set(seen) == ALL
    card = await request(client, "codesynapse/symbolCard", {"selector": "bank.Account.withdraw"})
    assert card["card"]["counts"]["unresolvedCallers"] == 1
    assert card["card"]["unresolved"] == [{"path": "bank.py", "line": 11, "name": "source.withdraw",
                                           "from": "bank.transfer"}]


@ASYNC
async def test_search_cursor_walks_the_same_pages_as_offsets(client):
    q = {"query": "f_1_", "mode": "compact", "limit": 20}

    async def vectors_settled():  # the dense leg's hits change while symbols are being embedded
        st = await request(client, "codesynapse/indexStatus", {})
        return st.get("symbolVectors", {}).get("state", "ready") != "pending"

    await eventually(vectors_settled, timeout=180)
    for _attempt in range(3):
        # each offset page asks every leg again: the walk is only comparable when the dense leg
        # answered every page the same way (a query embedding can time out on a loaded machine)
        by_offset, offset, dense = [], 0, set()
        while True:
            a = await request(client, "codesynapse/search", {**q, "offset": offset})
            by_offset += [r["qualifiedName"] for r in a["results"]]
            dense |= {json.dumps(x, sort_keys=True) for x in a["provenance"]["legs"] if "dense" in str(x)}
            if not a["hasMore"]:
                assert "cursor" not in a
                break
            offset += len(a["results"])
        a = await request(client, "codesynapse/search", q)
        dense |= {json.dumps(x, sort_keys=True) for x in a["provenance"]["legs"] if "dense" in str(x)}
        if len(dense) <= 1:
            break
    by_cursor = [r["qualifiedName"] for r in a["results"]]
    while a.get("cursor"):
        a = await request(client, "codesynapse/search", {**q, "cursor": a["cursor"]})
        check_budget(a)
        by_cursor += [r["qualifiedName"] for r in a["results"]]
    assert len(by_offset) > 40 and by_cursor == by_offset  # three pages at least
    g = await request(client, "codesynapse/callGraph", {"selector": "lib.target.hot", "direction": "callers"})
    for bad, words in [(g["callers"]["cursor"], "another request"), ("%%%", "not a cursor")]:
        with pytest.raises(JsonRpcInvalidParams) as e:
            await request(client, "codesynapse/search", {**q, "cursor": bad})
        assert "cursor" in str(e.value) and words in str(e.value)
