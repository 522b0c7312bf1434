"""`.codesynapse.yaml` through a real LSP connection: exclusions and annotations apply,
editing the policy re-applies it incrementally, an invalid policy publishes diagnostics with
line numbers and keeps the last valid one in force, and indexStatus reports the fingerprint."""

from __future__ import annotations

import shutil

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.e2e.lspclient import FIXTURES, eventually, check_budget, config, init_params, request, wait_indexed

POLICY = """version: 1
exclude: ["tests/**"]
annotations:
  - symbol: "shop.pricing.*"
    note: "Pricing rules are owned by the finance team."
"""


@pytest.fixture()
def repo(tmp_path):
    root = tmp_path / "python_repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    (root / ".codesynapse.yaml").write_text(POLICY)
    return root


@pytest_lsp.fixture(config=config(data_dir="/tmp/codesynapse-e2e-policy"))
async def client(lsp_client: LanguageClient, repo):
    await lsp_client.initialize_session(init_params(repo))
    await wait_indexed(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_policy_excludes_annotates_and_reapplies(client, repo):
    st = await request(client, "codesynapse/indexStatus", {})
    fp1 = st["policyFingerprint"]
    assert len(fp1) == 64
    assert st["files"] == 6  # 4 shop modules, README.md, .codesynapse.yaml: tests/ excluded
    assert not (await request(client, "codesynapse/symbolCard", {"selector": "test_cart.test_total"}))["found"]
    card = await request(client, "codesynapse/symbolCard", {"selector": "shop.pricing.with_tax"})
    check_budget(card)
    assert card["card"]["annotations"] == ["Pricing rules are owned by the finance team."]

    # edit the policy on disk: tests/ comes back in, shop/payment.py leaves
    (repo / ".codesynapse.yaml").write_text('version: 1\nexclude: ["shop/payment.py"]\n')

    async def reapplied():
        s = await request(client, "codesynapse/indexStatus", {})
        return s if s["policyFingerprint"] != fp1 and s["files"] == 6 and s["pending"] == 0 else None

    st2 = await eventually(reapplied)
    assert (await request(client, "codesynapse/symbolCard", {"selector": "test_cart.test_total"}))["found"]
    assert not (await request(client, "codesynapse/symbolCard", {"selector": "shop.payment.pay_for"}))["found"]
    assert "annotations" not in (await request(client, "codesynapse/symbolCard",
                                               {"selector": "shop.pricing.with_tax"}))["card"]
    assert st2["policyFingerprint"] != fp1


async def test_invalid_policy_publishes_diagnostics_and_keeps_the_last_valid(client, repo):
    fp1 = (await request(client, "codesynapse/indexStatus", {}))["policyFingerprint"]
    (repo / ".codesynapse.yaml").write_text('version: 1\nexclude: ["tests/**"]\nmaxFileBytes: -5\ntenant: evil\n')
    uri = (repo / ".codesynapse.yaml").as_uri()

    async def diagnosed():
        return client.diagnostics.get(uri)

    diags = await eventually(diagnosed)
    lines = sorted((d.range.start.line, d.severity) for d in diags)
    assert lines == [(2, types.DiagnosticSeverity.Error), (3, types.DiagnosticSeverity.Error)]
    assert any("tenant" in d.message for d in diags)
    st = await request(client, "codesynapse/indexStatus", {})
    assert st["policyFingerprint"] == fp1  # the last valid policy stays in force
    assert st["files"] == 6
