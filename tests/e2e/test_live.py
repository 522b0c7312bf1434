"""Live incremental indexing through a real LSP connection: unsaved buffers as overlays,
saves, closes, and changes made on disk outside the editor (watchfiles)."""

from __future__ import annotations

import shutil

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.e2e.lspclient import FIXTURES, eventually, check_budget, config, init_params, request, wait_indexed


@pytest.fixture()
def repo(tmp_path):
    root = tmp_path / "python_repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    return root


@pytest_lsp.fixture(config=config(data_dir="/tmp/codesynapse-e2e-live"))
async def client(lsp_client: LanguageClient, repo):
    await lsp_client.initialize_session(init_params(repo))
    await wait_indexed(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def card(client, selector: str):
    return await request(client, "codesynapse/symbolCard", {"selector": selector})


async def card_when_found(client, selector: str):
    """The card of ``selector`` once the index has it."""
    async def found():
        c = await card(client, selector)
        return c if c["found"] else None
    return await eventually(found)


def did_open(client, uri: str, text: str) -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))


def did_change(client, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


def did_save(client, uri: str) -> None:
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))


def did_close(client, uri: str) -> None:
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))


async def test_unsaved_buffer_is_an_overlay_dropped_on_close(client, repo):
    path = repo / "shop" / "pricing.py"
    uri = path.as_uri()
    text = path.read_text()
    did_open(client, uri, text)
    edited = text + "\n\ndef loyalty_bonus(amount):\n    \"\"\"Bonus for loyal customers.\"\"\"\n    return with_tax(amount)\n"
    did_change(client, uri, 2, edited)

    c = await card_when_found(client, "shop.pricing.loyalty_bonus")
    check_budget(c)
    assert c["card"]["range"] == [16, 18]
    assert c["card"]["summary"] == "Bonus for loyal customers."
    assert c["provenance"]["freshness"]["openBuffers"] == ["shop/pricing.py"]
    g = await request(client, "codesynapse/callGraph", {"selector": "shop.pricing.with_tax", "direction": "callers"})
    assert sorted(n["qualifiedName"] for n in g["callers"]["nodes"]) == ["shop.cart.Cart.total", "shop.pricing.loyalty_bonus"]

    # closing without saving drops the overlay: the graph goes back to the file on disk
    did_close(client, uri)

    async def gone():
        c = await card(client, "shop.pricing.loyalty_bonus")
        return not c["found"]

    await eventually(gone)
    st = await request(client, "codesynapse/indexStatus", {})
    assert st["openBuffers"] == []


async def test_save_is_indexed(client, repo):
    path = repo / "shop" / "cart.py"
    uri = path.as_uri()
    text = path.read_text().replace("def count(self):", "def size(self):").replace("self.count()", "self.size()")
    did_open(client, uri, path.read_text())
    path.write_text(text)
    did_save(client, uri)

    c = await card_when_found(client, "shop.cart.BaseCart.size")
    assert [x["qualifiedName"] for x in c["card"]["callers"]] == ["shop.cart.BaseCart.add"]
    assert not (await card(client, "shop.cart.BaseCart.count"))["found"]


async def test_disk_create_delete_rename_outside_the_editor(client, repo):
    new = repo / "shop" / "refunds.py"
    new.write_text("from shop.payment import Gateway\n\n\ndef refund(amount):\n    return Gateway().charge(-amount)\n")

    async def created():
        g = await request(client, "codesynapse/callGraph", {"selector": "shop.payment.Gateway.charge",
                                                            "direction": "callers"})
        return g if "shop.refunds.refund" in [n["qualifiedName"] for n in g["callers"]["nodes"]] else None

    g = await eventually(created)
    # Cart.checkout calls it on its gateway parameter, which pay_for types (parameter inference)
    assert [(n["qualifiedName"], e["resolution"]) for n in g["callers"]["nodes"] for e in n["sites"]] == [
        ("shop.cart.Cart.checkout", "inferred"), ("shop.refunds.refund", "inferred")]

    # rename on disk: the old module's nodes and edges leave, the new ones enter
    new.rename(repo / "shop" / "returns.py")

    async def moved():
        g = await request(client, "codesynapse/callGraph", {"selector": "shop.payment.Gateway.charge",
                                                            "direction": "callers"})
        froms = [n["qualifiedName"] for n in g["callers"]["nodes"]]
        return froms if froms == ["shop.cart.Cart.checkout", "shop.returns.refund"] else None

    await eventually(moved)
    assert not (await card(client, "shop.refunds.refund"))["found"]

    # delete: nothing stale survives
    (repo / "shop" / "payment.py").unlink()

    async def deleted():
        c = await card(client, "shop.payment.pay_for")
        return not c["found"]

    await eventually(deleted)
    c = await card(client, "shop.cart.Cart.checkout")
    assert [x["qualifiedName"] for x in c["card"].get("callers", [])] == []
    st = await request(client, "codesynapse/indexStatus", {})
    assert st["pending"] == 0
    assert st["files"] == 6  # 5 python files - payment.py + returns.py, and README.md


async def test_watched_files_notification(client, repo):
    path = repo / "shop" / "pricing.py"
    path.write_text(path.read_text() + "\n\ndef surcharge(amount):\n    return amount\n")
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        changes=[types.FileEvent(uri=path.as_uri(), type=types.FileChangeType.Changed)]))

    c = await card_when_found(client, "shop.pricing.surcharge")
    assert c["card"]["kind"] == "function"


def _lines(c) -> list[int]:
    r = c["card"]["range"]
    return [r["startLine"], r["endLine"]] if isinstance(r, dict) else list(r)


def _large_module(body: str) -> str:
    """A module large enough to be updated a statement at a time (extract/incremental.py):
    an import of ``with_tax`` (3 lines), then ``body``."""
    text = "from shop.pricing import with_tax\n\n\n" + body
    assert len(text.encode()) > 32 * 1024
    return text


def _insert_taxed(text: str, before: str, name: str) -> str:
    """``text`` with ``def name(amount): return with_tax(amount)`` (4 lines) inserted above ``before``."""
    return text.replace(before, f"def {name}(amount):\n    return with_tax(amount)\n\n\n{before}")


# 800 functions of 5 lines each after the 3 import lines: step_i is on lines 3 + 5i + 1 to 3 + 5i + 3
STEPS = "".join(f"def step_{i}(amount):\n    \"\"\"Step {i}.\"\"\"\n    return amount + {i}\n\n\n" for i in range(800))


async def test_large_file_opened_then_edited_mid_file(client, repo):
    """A file large enough to be updated a statement at a time (extract/incremental.py):
    opened (its extraction is prepared), then a function inserted in its middle and saved;
    the new function, its call and the moved lines of the functions below are all answered."""
    path = repo / "shop" / "big.py"
    text = _large_module(STEPS)
    path.write_text(text)
    c = await card_when_found(client, "shop.big.step_799")
    assert _lines(c) == [3 + 799 * 5 + 1, 3 + 799 * 5 + 3]
    uri = path.as_uri()
    did_open(client, uri, text)
    path.write_text(_insert_taxed(text, "def step_400(amount):", "taxed_step"))
    did_save(client, uri)
    c = await card_when_found(client, "shop.big.taxed_step")
    assert _lines(c) == [3 + 400 * 5 + 1, 3 + 400 * 5 + 2]
    below = await card(client, "shop.big.step_799")
    assert _lines(below) == [3 + 799 * 5 + 1 + 4, 3 + 799 * 5 + 3 + 4]
    above = await card(client, "shop.big.step_10")
    assert _lines(above) == [3 + 10 * 5 + 1, 3 + 10 * 5 + 3]
    g = await request(client, "codesynapse/callGraph", {"selector": "shop.pricing.with_tax", "direction": "callers"})
    callers = {n["qualifiedName"]: n for n in g["callers"]["nodes"]}
    assert "shop.big.taxed_step" in callers
    assert [s["line"] for s in callers["shop.big.taxed_step"]["sites"]] == [3 + 400 * 5 + 2]


async def test_large_file_unsaved_buffer_then_closed(client, repo):
    """A large file's unsaved buffer is updated a statement at a time like a save; closing it
    without saving brings back the file on disk — the moved lines included."""
    path = repo / "shop" / "ledger.py"
    text = _large_module("".join(f"def entry_{i}(amount):\n    return amount - {i}\n\n\n" for i in range(1000)))
    path.write_text(text)
    await card_when_found(client, "shop.ledger.entry_999")
    uri = path.as_uri()
    did_open(client, uri, text)
    did_change(client, uri, 2, _insert_taxed(text, "def entry_500(amount):", "taxed_entry"))
    c = await card_when_found(client, "shop.ledger.taxed_entry")
    assert _lines(c) == [3 + 500 * 4 + 1, 3 + 500 * 4 + 2]
    assert _lines(await card(client, "shop.ledger.entry_999")) == [3 + 999 * 4 + 1 + 4, 3 + 999 * 4 + 2 + 4]

    did_close(client, uri)

    async def gone():
        c = await card(client, "shop.ledger.taxed_entry")
        return not c["found"]

    await eventually(gone)
    assert _lines(await card(client, "shop.ledger.entry_999")) == [3 + 999 * 4 + 1, 3 + 999 * 4 + 2]
    assert _lines(await card(client, "shop.ledger.entry_500")) == [3 + 500 * 4 + 1, 3 + 500 * 4 + 2]
    g = await request(client, "codesynapse/callGraph", {"selector": "shop.pricing.with_tax", "direction": "callers"})
    assert "shop.ledger.taxed_entry" not in {n["qualifiedName"] for n in g["callers"]["nodes"]}


def test_large_file_edited_while_the_daemon_was_down(tmp_path, repo):
    """A large file's extraction is kept on disk (``<data dir>/…/kept``); a daemon restarted
    after the file was edited mid-file catches up from it: the new function, its call and the
    moved lines below are answered, the lines above stay where they are."""
    import time

    from tests.reliability.rawlsp import RawLsp

    data = tmp_path / "data"
    path = repo / "shop" / "big.py"
    text = _large_module(STEPS)
    path.write_text(text)

    def card_of(d: RawLsp, qname: str, timeout: float = 60.0):
        end = time.monotonic() + timeout
        while True:
            c = d.request("codesynapse/symbolCard", {"selector": qname})
            if c["found"] or time.monotonic() > end:
                return c
            time.sleep(0.1)

    with RawLsp(data, log=tmp_path / "first.log") as d:
        d.initialize(repo)
        d.wait_ready()
        assert _lines(card_of(d, "shop.big.step_799")) == [3 + 799 * 5 + 1, 3 + 799 * 5 + 3]
        d.close()
    assert len(list(data.rglob("*.kept"))) == 1  # big.py; the fixture's other files are small
    path.write_text(_insert_taxed(text, "def step_400(amount):", "taxed_step"))
    with RawLsp(data, log=tmp_path / "second.log") as d:
        d.initialize(repo)
        c = card_of(d, "shop.big.taxed_step")
        assert c["found"], d.log_tail()
        assert _lines(c) == [3 + 400 * 5 + 1, 3 + 400 * 5 + 2]
        assert _lines(card_of(d, "shop.big.step_799")) == [3 + 799 * 5 + 1 + 4, 3 + 799 * 5 + 3 + 4]
        assert _lines(card_of(d, "shop.big.step_10")) == [3 + 10 * 5 + 1, 3 + 10 * 5 + 3]
        g = d.request("codesynapse/callGraph", {"selector": "shop.pricing.with_tax", "direction": "callers"})
        sites = {n["qualifiedName"]: [s["line"] for s in n["sites"]] for n in g["callers"]["nodes"]}
        assert sites.get("shop.big.taxed_step") == [3 + 400 * 5 + 2]
