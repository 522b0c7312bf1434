"""The opt-in metrics endpoint (issue 20 #2) of a real server started by a real LSP client,
scraped with a real HTTP client: every label set is on the allow-list, and no session id,
tenant, path or query text appears anywhere in it. A port in use is a warning, and the
server keeps answering without metrics. The session's ledger is read over the same
connection (issue 20 #1)."""

from __future__ import annotations

import asyncio
import re
import shutil
import socket
import tempfile
import urllib.request

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.e2e.lspclient import FIXTURES, config, eventually, init_params, request, wait_indexed

DATA = tempfile.mkdtemp(prefix="codesynapse-e2e-metrics-")
TENANT = "acme-tenant-4471"
QUERY = "zzqueryneedle total"
METHODS = {"codesynapse/indexStatus", "codesynapse/symbolCard", "codesynapse/symbolContext", "codesynapse/callGraph",
           "codesynapse/minimalContext", "codesynapse/prContext", "codesynapse/search", "codesynapse/snippet",
           "codesynapse/modules", "codesynapse/memory/remember", "codesynapse/memory/recall",
           "codesynapse/memory/forget", "codesynapse/memory/list", "codesynapse/policyEffects",
           "codesynapse/ledger", "other"}
ALLOWED = {"method": METHODS, "outcome": {"ok", "error"}, "baseline": {"a", "b"},
           "kind": {"InvalidParams", "BudgetError", "DeadlineExceeded", "RequestFailed", "internal"}}
_SAMPLE = re.compile(r'^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})? (?P<value>\S+)$')
_LABEL = re.compile(r'(?P<k>[a-zA-Z_]\w*)="(?P<v>(?:[^"\\]|\\.)*)"')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest_lsp.fixture(config=config(data_dir=DATA, CODESYNAPSE_EMBEDDER="none", CODESYNAPSE_TENANT=TENANT))
async def client(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert r.status == 200
        return r.read().decode("utf-8")


def _samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        assert m, line
        labels = dict((x.group("k"), x.group("v")) for x in _LABEL.finditer(m.group("labels") or ""))
        out.append((m.group("name"), labels, float(m.group("value"))))
    return out


async def test_metrics_carry_no_session_tenant_path_or_query(client, tmp_path):
    root = tmp_path / "python_repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    port = _free_port()
    await client.initialize_session(init_params(root, metricsPort=port))
    await wait_indexed(client)
    await request(client, "codesynapse/symbolCard", {"selector": "shop.cart.Cart.total"})
    await request(client, "codesynapse/symbolCard", {"selector": "shop.cart.Cart.total"})
    await request(client, "codesynapse/search", {"query": QUERY})
    await request(client, "codesynapse/memory/remember",
                  {"facts": [{"subject": "Gateway", "predicate": "owned_by", "object": "team-zz9"}]})
    with pytest.raises(JsonRpcException):
        await request(client, "codesynapse/callGraph", {"selector": "shop.cart.Cart.total", "depth": 0,
                                                        "colour": "blue"})
    ledger = await request(client, "codesynapse/ledger", {"last": 10})
    # this connection's answers, newest first; the raw estimates are computed by now
    # (wait_indexed's indexStatus polls are not answers about the code: not in the ledger)
    assert [r["method"] for r in ledger["last"]] == ["codesynapse/memory/remember", "codesynapse/search",
                                                      "codesynapse/symbolCard", "codesynapse/symbolCard"]
    assert ledger["session"]["answers"] == 4 and "codesynapse/indexStatus" not in ledger["methods"]
    cards = [r for r in ledger["last"] if r["method"] == "codesynapse/symbolCard"]
    assert len(cards) == 2 and cards[1]["cacheHitTokens"] == 0 and cards[0]["cacheHitTokens"] > 0
    assert ledger["methods"]["codesynapse/callGraph"]["errors"] == 1
    assert ledger["session"]["pending"] == 0 and ledger["session"]["rawA"] > 0

    text = _scrape(port)
    samples = _samples(text)
    names = {n for n, _, _ in samples}
    for want in ("codesynapse_requests_total", "codesynapse_request_seconds_bucket", "codesynapse_errors_total",
                 "codesynapse_tokens_returned_total", "codesynapse_tokens_avoided_total",
                 "codesynapse_cache_hit_tokens_total", "codesynapse_index_freshness_lag_seconds",
                 "codesynapse_index_pending_files", "codesynapse_store_files", "codesynapse_store_symbols",
                 "codesynapse_embedding_backlog"):
        assert want in names, want
    for name, labels, _ in samples:
        for k, v in labels.items():
            if k == "le" and name.endswith("_bucket"):
                assert v == "+Inf" or float(v) > 0
                continue
            assert k in ALLOWED, (name, k)
            assert v in ALLOWED[k], (name, k, v)
    # nothing that names a session, a tenant, a path or a query, in a label or anywhere else
    assert TENANT not in text
    assert str(tmp_path) not in text and "python_repo" not in text and "shop/" not in text
    assert "zzqueryneedle" not in text and "team-zz9" not in text and "Cart.total" not in text
    assert not re.search(r"\b[0-9a-f]{32}\b", text)  # session ids and their digests are 32 hex digits
    value = {(n, tuple(sorted(lb.items()))): v for n, lb, v in samples}
    assert value[("codesynapse_requests_total", (("method", "codesynapse/symbolCard"), ("outcome", "ok")))] == 2
    assert value[("codesynapse_errors_total", (("kind", "InvalidParams"), ("method", "codesynapse/callGraph")))] == 1
    assert value[("codesynapse_store_files", ())] == 6  # shop/4 modules, tests/test_cart.py, README.md
    returned = value[("codesynapse_tokens_returned_total", (("method", "codesynapse/symbolCard"),))]
    assert returned == sum(r["tokens"] for r in cards)


async def test_a_port_in_use_is_a_warning_and_the_server_runs_on(client, tmp_path):
    root = tmp_path / "python_repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        await client.initialize_session(init_params(root, metricsPort=port))
        st = await wait_indexed(client)
        warnings = await eventually(lambda: _async([m.message for m in client.messages
                                                    if m.type == types.MessageType.Warning]))
    assert len(warnings) == 1
    assert warnings[0].startswith(f"CodeSynapse: metrics.port {port}: the port cannot be used on 127.0.0.1")
    assert warnings[0].endswith("CodeSynapse runs without metrics")
    assert st["state"] == "ready"
    card = await request(client, "codesynapse/symbolCard", {"selector": "shop.pricing.with_tax"})
    assert card["found"]


async def _async(v):
    await asyncio.sleep(0)
    return v
