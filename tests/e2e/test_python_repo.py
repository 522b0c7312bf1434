"""The daemon over a real LSP connection on fixtures/python_repo: symbols, ranges, calls
with their resolution, imports, and the standard LSP features from the same index."""

from __future__ import annotations

import shutil

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

from tests.e2e.lspclient import FIXTURES, check_budget, config, init_params, request, wait_indexed


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("ws") / "python_repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    return root


@pytest_lsp.fixture(config=config(data_dir="/tmp/codesynapse-e2e-python"), scope="module")
async def client(lsp_client: LanguageClient, repo):
    await lsp_client.initialize_session(init_params(repo))
    await wait_indexed(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_index_status(client):
    st = await request(client, "codesynapse/indexStatus", {})
    check_budget(st)
    assert st["files"] == 6
    assert st["languages"] == {"markdown": 1, "python": 5}
    assert st["state"] == "ready"
    assert st["symbols"] >= 21


async def test_symbol_card_exact(client):
    card = await request(client, "codesynapse/symbolCard", {"selector": "shop.cart.Cart.total"})
    check_budget(card)
    c = card["card"]
    assert c["qualifiedName"] == "shop.cart.Cart.total"
    assert c["kind"] == "method"
    assert c["signature"] == "def total(self, percent=0)"
    assert c["range"] == [24, 28]
    assert c["summary"] == "Total price after discount and tax."
    assert [x["qualifiedName"] for x in c["callers"]] == ["shop.cart.Cart.checkout", "test_cart.test_total"]
    # bound through an import: no resolution given (the usual case, docs/PROTOCOL.md)
    assert [(x["qualifiedName"], x.get("resolution")) for x in c["callees"]] == [
        ("sum", "external"), ("shop.pricing.apply_discount", "module"), ("shop.pricing.with_tax", None)]
    assert c["counts"]["tests"] == 1


async def test_call_graph_resolution(client):
    g = await request(client, "codesynapse/callGraph", {"selector": "shop.cart.BaseCart.add", "direction": "callers"})
    check_budget(g)
    # each caller node carries its call sites (line, resolution; the file is the caller's)
    edges = sorted((n["qualifiedName"], e["line"], e["resolution"]) for n in g["callers"]["nodes"] for e in n["sites"])
    # `cart = Cart(); cart.add(...)` binds through the constructor and the base class
    assert edges == [("shop.payment.pay_for", 21, "inferred"), ("test_cart.test_total", 7, "inferred")]
    g2 = await request(client, "codesynapse/callGraph", {"selector": "shop.payment.Gateway.charge",
                                                         "direction": "callers"})
    # `gateway.charge(amount)` on the untyped parameter of Cart.checkout: its one caller (pay_for)
    # passes a Gateway(), so the parameter is typed and the call is inferred (issue 18); an untyped
    # parameter no call types stays an unresolved candidate (test_all_callers: bank.transfer)
    assert [(n["qualifiedName"], n["sites"]) for n in g2["callers"]["nodes"]] == [
        ("shop.cart.Cart.checkout", [{"line": 33, "resolution": "inferred", "confidence": 0.75}])]
    assert g2["callers"].get("unresolvedCandidates", 0) == 0 and "unresolved" not in g2["callers"]


async def test_imports_resolve_through_reexport(client):
    g = await request(client, "codesynapse/callGraph", {"selector": "shop.pricing.apply_discount",
                                                        "direction": "callers"})
    edges = sorted((n["qualifiedName"], e.get("resolution", "import")) for n in g["callers"]["nodes"] for e in n["sites"])
    # `from shop import discount` follows `from .pricing import apply_discount as discount`
    assert edges == [("shop.cart.Cart.total", "module"), ("test_cart.test_discount", "import")]


async def test_invalid_params_name_the_field(client):
    with pytest.raises(JsonRpcInvalidParams) as e:
        await request(client, "codesynapse/minimalContext", {"task": "x" * 9000})
    assert "task" in str(e.value) and "8192" in str(e.value)
    with pytest.raises(JsonRpcInvalidParams) as e:
        await request(client, "codesynapse/callGraph", {"selector": "Cart", "direction": "sideways"})
    assert "direction" in str(e.value)
    with pytest.raises(JsonRpcInvalidParams) as e:
        await request(client, "codesynapse/symbolCard", {"selector": "Cart", "tenant": "other"})
    assert "tenant" in str(e.value)


async def test_workspace_and_document_symbols(client, repo):
    res = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="with_tax"))
    assert [(s.name, s.location.uri.endswith("shop/pricing.py"), s.location.range.start.line) for s in res][0] == \
        ("with_tax", True, 10)
    uri = (repo / "shop" / "cart.py").as_uri()
    syms = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    assert [(s.name, [c.name for c in s.children]) for s in syms] == [
        ("BaseCart", ["__init__", "add", "count"]), ("Cart", ["total", "checkout"])]


async def test_definition_hover_references(client, repo):
    uri = (repo / "shop" / "cart.py").as_uri()
    text = (repo / "shop" / "cart.py").read_text()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    # line 28 (0-based 27): "        return with_tax(net)"
    pos = types.Position(line=27, character=16)
    defs = await client.text_document_definition_async(types.DefinitionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=pos))
    assert defs[0].uri.endswith("shop/pricing.py") and defs[0].range.start.line == 10
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=pos))
    assert "**shop.pricing.with_tax**" in hover.contents.value
    assert "Add tax to a net amount." in hover.contents.value
    refs = await client.text_document_references_async(types.ReferenceParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=pos,
        context=types.ReferenceContext(include_declaration=False)))
    assert [(r.uri.endswith("shop/cart.py"), r.range.start.line) for r in refs] == [(True, 27)]


async def test_call_hierarchy(client, repo):
    uri = (repo / "shop" / "pricing.py").as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=(repo / "shop" / "pricing.py").read_text())))
    items = await client.text_document_prepare_call_hierarchy_async(types.CallHierarchyPrepareParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=5, character=6)))
    assert items[0].name == "apply_discount"
    inc = await client.call_hierarchy_incoming_calls_async(types.CallHierarchyIncomingCallsParams(item=items[0]))
    assert sorted(i.from_.name for i in inc) == ["test_discount", "total"]
