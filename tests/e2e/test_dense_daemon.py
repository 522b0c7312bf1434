"""The dense leg in the daemon (``codesynapse serve`` over a real LSP connection, real MiniLM
and milvus-lite): the symbol vectors are computed in the background once the first index is
done (indexStatus says pending, then ready), a saved edit re-embeds the symbol it changed and
a deleted function leaves the dense hits. Expected names are written out from
fixtures/python_repo."""

from __future__ import annotations

import shutil

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.e2e.lspclient import (
    FIXTURES,
    config,
    eventually,
    init_params,
    request,
    wait_indexed,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

DATA = "/tmp/codesynapse-e2e-dense"


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("dense") / "python_repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    shutil.rmtree(DATA, ignore_errors=True)
    return root


@pytest_lsp.fixture(config=config(data_dir=DATA, CODESYNAPSE_WATCH="0"), scope="module")
async def client(lsp_client: LanguageClient, repo):
    await lsp_client.initialize_session(init_params(repo))
    await wait_indexed(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def vectors(client) -> dict:
    return (await request(client, "codesynapse/indexStatus", {}))["symbolVectors"]


async def ready(client) -> dict:
    async def probe():
        sv = await vectors(client)
        assert sv["state"] in ("pending", "ready"), sv  # never unavailable here
        return sv if sv["state"] == "ready" else None

    return await eventually(probe, timeout=180)


def dense_names(answer: dict) -> list[str]:
    return [c["qualifiedName"] for c in answer["cards"] if "dense" in c.get("legs", [])]


async def test_vectors_are_computed_in_the_background_after_the_index(client):
    sv = await ready(client)
    assert sv["embedded"] == sv["total"] == 23  # every symbol of fixtures/python_repo
    a = await request(client, "codesynapse/minimalContext", {"task": "lower the price by some percent"})
    assert "dense" in a["provenance"]["legs"]
    assert "shop.pricing.apply_discount" in dense_names(a)


async def test_a_saved_edit_is_reembedded_and_a_deleted_function_leaves_the_hits(client, repo):
    await ready(client)
    pricing = repo / "shop" / "pricing.py"
    text = pricing.read_text()
    start, end = text.index("def apply_discount"), text.index("def with_tax")
    pricing.write_text(text[:start] + text[end:])
    client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=pricing.as_uri())))

    async def gone():
        sv = await vectors(client)
        return sv if sv["state"] == "ready" and sv["total"] == 22 else None

    sv = await eventually(gone, timeout=60)
    assert sv["embedded"] == 22
    a = await request(client, "codesynapse/minimalContext", {"task": "lower the price by some percent"})
    assert "shop.pricing.apply_discount" not in [c["qualifiedName"] for c in a["cards"]]
