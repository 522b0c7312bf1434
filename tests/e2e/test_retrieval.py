"""Retrieval for tasks in plain words over a real LSP connection (fixtures/retrieval_repo):
stemming, role priors, one-hop expansion to the callee that does the work, ambiguous bare
names answered for the library symbol, and bad tasks as InvalidParams. Expected answers are
written out from the fixture's source."""

from __future__ import annotations

import shutil

import pytest
import pytest_lsp
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from tests.e2e.lspclient import (
    FIXTURES,
    ask,
    config,
    init_params,
    request,
    wait_indexed,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

DATA = "/tmp/codesynapse-e2e-retrieval"


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("ret") / "retrieval_repo"
    shutil.copytree(FIXTURES / "retrieval_repo", root)
    shutil.rmtree(DATA, ignore_errors=True)
    return root


# the lexical legs alone (the dense leg has its own tests): answers that do not depend on when
# the symbol vectors are ready
@pytest_lsp.fixture(config=config(data_dir=DATA, CODESYNAPSE_SYMBOL_VECTORS="0"), scope="module")
async def client(lsp_client: LanguageClient, repo):
    await lsp_client.initialize_session(init_params(repo))
    await wait_indexed(lsp_client)
    yield
    await lsp_client.shutdown_session()


def names(answer):
    return [c["qualifiedName"] for c in answer["cards"]]


async def test_an_inflected_word_finds_the_stem_in_a_name(client):
    # "parsed" is no name; its stem is the stem of parse (netkit/client.py:18). The tests'
    # parse methods share the name but are test code: they come after the library function
    a = await ask(client, "codesynapse/minimalContext", {"task": "what gets parsed"})
    assert names(a)[0] == "netkit.client.parse"
    assert "lexical" in a["cards"][0]["legs"] and "exact" not in a["cards"][0]["legs"]
    assert a["cards"][0]["range"] == [18, 20]
    assert "lexical" in a["provenance"]["legs"]


async def test_test_code_ranks_below_the_library_function_it_tests(client):
    # the test's name holds every word of the task (a stronger lexical match than the library
    # function's name and summary); the role prior puts it after the library code
    a = await ask(client, "codesynapse/minimalContext", {"task": "send request retries on server error"})
    got = names(a)
    assert got[0] == "netkit.client.send_request"
    test = "test_client.test_send_request_retries_request_on_server_error"
    assert test not in got or got.index(test) > got.index("netkit.client._attempt")


async def test_the_callee_that_does_the_work_is_brought_in_one_hop(client):
    # send_request only delegates to _attempt (netkit/client.py:11-15), whose name, signature
    # and summary share no word with the task: it is found one call away from the top hit
    a = await ask(client, "codesynapse/minimalContext", {"task": "send request retries on server error"})
    card = next(c for c in a["cards"] if c["qualifiedName"] == "netkit.client._attempt")
    assert card["legs"] == ["graph"]
    assert card["range"] == [11, 15]
    assert "graph" in a["provenance"]["legs"]


async def test_a_task_about_tests_keeps_test_code_up(client):
    # the task asks about a test: the prior does not set tests back
    a = await ask(client, "codesynapse/minimalContext",
                  {"task": "which test checks that send request retries on server error"})
    assert names(a)[0] == "test_client.test_send_request_retries_request_on_server_error"


@pytest.mark.parametrize("method", ["codesynapse/symbolCard", "codesynapse/symbolContext", "codesynapse/callGraph",
                                    "codesynapse/snippet"])
async def test_a_bare_name_shared_with_tests_is_answered_for_the_library_symbol(client, method):
    a = await ask(client, method, {"selector": "parse"})
    assert a["found"] is True and "candidates" not in a
    subject = a.get("card") or a.get("root") or a
    assert subject["qualifiedName"] == "netkit.client.parse"
    alt = next(o for o in a["omitted"] if o["what"] == "alternatives")
    assert alt["count"] == 2
    assert [(x["qualifiedName"], x["path"], x["range"]) for x in alt["alternatives"]] == [
        ("test_client.TestHeaders.parse", "tests/test_client.py", [14, 15]),
        ("test_client.TestParse.parse", "tests/test_client.py", [9, 10])]


@pytest.mark.parametrize("method,params,field", [
    ("codesynapse/minimalContext", {"task": "   \n\t "}, "task"),
    ("codesynapse/search", {"query": "  "}, "query"),
])
async def test_an_empty_task_or_query_is_invalid_params(client, method, params, field):
    with pytest.raises(JsonRpcInvalidParams) as e:
        await request(client, method, params)
    assert field in str(e.value) and "empty" in str(e.value)


async def test_plain_english_search_goes_through_the_same_legs(client):
    a = await ask(client, "codesynapse/search", {"query": "what gets parsed", "mode": "compact"})
    first = a["results"][0]
    assert (first["qualifiedName"], first["match"], first["legs"]) == ("netkit.client.parse", "approximate",
                                                                       ["lexical"])
    # the two test methods named parse come after the library function
    assert {r["qualifiedName"] for r in a["results"][1:3]} == {"test_client.TestHeaders.parse",
                                                                "test_client.TestParse.parse"}
