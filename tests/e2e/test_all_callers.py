"""Every caller is reachable (issue 18): callGraph pages with exact omitted counts, cursors
bound to the index version, references and incoming calls without a silent cap, and
unresolved same-name call sites named (not shown as none) unless the setting turns it off.

The fixture is generated: ``lib/target.py`` defines ``hot``; 40 modules each define 30
functions that call ``hot()`` twice — 1,200 distinct callers, 2,400 call sites. ``bank.py``
holds the ``transfer``/``withdraw`` example: ``source.withdraw(amount)`` on an untyped
parameter is unresolved; ``pay`` calls ``Account().withdraw`` (resolved)."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from tests.e2e.lspclient import check_budget, config, init_params, request, wait_indexed

pytestmark = pytest.mark.asyncio(loop_scope="module")

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
