"""Memory anchored to code through a real LSP connection (issue 25): remember with a
qualified-name and a position anchor, an unsaved edit (didChange) and a save (didSave) that
change the anchored function mark it ``changed`` in recall and in its symbolCard's memory
section, and an unknown anchor is a JSON-RPC InvalidParams naming it."""

from __future__ import annotations

import shutil

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from tests.e2e.lspclient import FIXTURES, ask, config, eventually, init_params, request, wait_indexed


@pytest.fixture()
def repo(tmp_path):
    root = tmp_path / "python_repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    return root


@pytest_lsp.fixture(config=config(data_dir="/tmp/codesynapse-e2e-anchors", CODESYNAPSE_EMBEDDER="none"))
async def client(lsp_client: LanguageClient, repo):
    await lsp_client.initialize_session(init_params(repo))
    await wait_indexed(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def anchor_of(client, name: str) -> dict:
    res = await ask(client, "codesynapse/memory/recall", {"query": name})
    entry = next(e for e in res["entries"] if e["name"] == name)
    return entry["anchors"]


@pytest.mark.asyncio
async def test_anchors_follow_unsaved_and_saved_edits(client: LanguageClient, repo):
    pricing = repo / "shop" / "pricing.py"
    uri = pricing.as_uri()
    out = await ask(client, "codesynapse/memory/remember", {"entities": [
        {"name": "tax rounding decision", "anchors": ["shop.pricing.with_tax"]},
        {"name": "discount decision", "anchors": [{"uri": uri, "line": 6, "character": 4}]}]})
    assert [e["anchors"] for e in out["entities"]] == [["shop.pricing.with_tax"], ["shop.pricing.apply_discount"]]
    (tax,) = await anchor_of(client, "tax rounding decision")
    assert (tax["qualifiedName"], tax["path"], tax["line"]) == ("shop.pricing.with_tax", "shop/pricing.py", 11)
    assert "status" not in tax

    text = pricing.read_text()
    edited = text.replace("return round(amount * (1 + TAX_RATE), 2)", "return round(amount * (1 + TAX_RATE), 4)")
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=edited)]))

    async def changed():
        # recall shows `changed` as soon as the graph holds the new hash; the mark with its time
        # (`statusAt`) is written by the staleness pass just after the update commits: wait for it
        (a,) = await anchor_of(client, "tax rounding decision")
        return a if a.get("status") == "changed" and a.get("statusAt") else None

    got = await eventually(changed)
    (disc,) = await anchor_of(client, "discount decision")
    assert "status" not in disc  # the other function did not change
    card = await ask(client, "codesynapse/symbolCard", {"selector": "shop.pricing.with_tax"})
    assert card["memory"]["count"] == 1
    assert card["memory"]["entries"][0] == {"name": "tax rounding decision", "symbol": "shop.pricing.with_tax",
                                            "anchor": "changed", "anchorAt": got["statusAt"]}

    # saved to disk without apply_discount: its memory says the symbol was removed
    removed = edited.replace('def apply_discount(amount, percent):\n    """Reduce an amount by a percentage."""\n'
                             '    return round(amount * (1 - percent / 100), 2)\n', "")
    pricing.write_text(removed)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=removed)]))
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))

    async def gone():
        (a,) = await anchor_of(client, "discount decision")
        return a if a.get("status") == "removed" else None

    assert (await eventually(gone))["qualifiedName"] == "shop.pricing.apply_discount"


@pytest.mark.asyncio
async def test_unknown_anchor_is_invalid_params(client: LanguageClient):
    with pytest.raises(JsonRpcInvalidParams) as e:
        await request(client, "codesynapse/memory/remember",
                      {"entities": [{"name": "x", "anchors": ["shop.pricing.no_such_thing"]}]})
    assert e.value.code == -32602
    assert "entities[0].anchors[0]" in e.value.message and "no_such_thing" in e.value.message
    res = await request(client, "codesynapse/memory/recall", {"query": "x"})
    assert "x" not in [x["name"] for x in res["entries"]]  # nothing was written


@pytest.mark.asyncio
async def test_a_rename_in_place_is_re_anchored_and_facts_carry_anchors(client: LanguageClient, repo):
    pricing = repo / "shop" / "pricing.py"
    uri = pricing.as_uri()
    await ask(client, "codesynapse/memory/remember", {
        "entities": [{"name": "discount decision", "anchors": ["shop.pricing.apply_discount"]}],
        "facts": [{"subject": "tax rounding decision", "predicate": "implemented_by", "object": "tax helper",
                   "anchors": ["shop.pricing.with_tax"]}]})
    res = await ask(client, "codesynapse/memory/recall", {"query": "tax rounding decision"})
    (fa,) = next(f for f in res["facts"] if f["predicate"] == "implemented_by")["anchors"]
    assert (fa["qualifiedName"], fa["path"], fa["line"]) == ("shop.pricing.with_tax", "shop/pricing.py", 11)
    with pytest.raises(JsonRpcInvalidParams) as e:
        await request(client, "codesynapse/memory/remember", {"facts": [
            {"subject": "a", "predicate": "uses", "object": "b", "anchors": ["shop.pricing.nope"]}]})
    assert "facts[0].anchors[0]" in e.value.message

    # renamed in the editor (didChange), then saved (didSave): same body, new name
    text = pricing.read_text()
    renamed = text.replace("def apply_discount(", "def discount_price(")
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=renamed)]))
    pricing.write_text(renamed)
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))

    async def moved():
        (a,) = await anchor_of(client, "discount decision")
        return a if a.get("status") == "moved" else None

    got = await eventually(moved)
    assert (got["qualifiedName"], got["line"]) == ("shop.pricing.discount_price", 6)
    assert got["previous"] == "shop.pricing.apply_discount @ shop/pricing.py:6"
    card = await ask(client, "codesynapse/symbolCard", {"selector": "shop.pricing.with_tax"})
    assert {"fact": "tax rounding decision implemented_by tax helper",
            "symbol": "shop.pricing.with_tax"} in card["memory"]["entries"]
