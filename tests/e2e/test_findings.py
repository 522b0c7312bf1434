"""Findings through a real LSP connection: a SARIF file that the policy watches (written by a
real ruff run) becomes diagnostics on an open document (source ``codesynapse/ruff``), cards
carry it, and rewriting the file on disk while the daemon runs updates both; the
``findingsDiagnostics`` setting turns the diagnostics off; ``codesynapse/modules`` answers
over the connection."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.e2e.lspclient import FIXTURES, check_budget, config, eventually, init_params, request, wait_indexed

RUFF = Path(sys.executable).parent / "ruff"


def ruff_sarif(root: Path, select: str) -> None:
    if not RUFF.exists():
        pytest.skip("ruff is not installed (pip install -e '.[dev]')")
    out = subprocess.run([str(RUFF), "check", "--no-cache", "--output-format", "sarif", "--select", select,
                          "--exit-zero", "app"], cwd=root, capture_output=True, check=True).stdout
    tmp = root / "reports" / "ruff.sarif.tmp"
    tmp.write_bytes(out)
    tmp.replace(root / "reports" / "ruff.sarif")  # as a tool writing its report would: whole


@pytest.fixture()
def repo(tmp_path):
    root = tmp_path / "deps_repo"
    shutil.copytree(FIXTURES / "deps_repo", root)
    (root / "reports").mkdir()
    ruff_sarif(root, "S602,S307")
    (root / ".codesynapse.yaml").write_text('findings: ["reports/*.sarif"]\n')
    return root


@pytest_lsp.fixture(config=config(data_dir="/tmp/codesynapse-e2e-findings"))
async def client(lsp_client: LanguageClient, repo):
    await lsp_client.initialize_session(init_params(repo))
    await wait_indexed(lsp_client)
    yield
    await lsp_client.shutdown_session()


def _open(client: LanguageClient, path: Path) -> str:
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=path.read_text())))
    return uri


def _shown(client: LanguageClient, uri: str) -> list[tuple]:
    return sorted((d.source, d.code, d.range.start.line, d.range.start.character, d.severity)
                  for d in client.diagnostics.get(uri, []))


async def test_watched_sarif_becomes_diagnostics_and_follows_the_file(client, repo):
    uri = _open(client, repo / "app" / "unsafe.py")

    async def published():
        return _shown(client, uri) or None

    # SARIF columns are 1-based; LSP characters 0-based: `subprocess.call` starts at column 12
    assert await eventually(published) == [
        ("codesynapse/ruff", "S307", 15, 15, types.DiagnosticSeverity.Error),
        ("codesynapse/ruff", "S602", 7, 11, types.DiagnosticSeverity.Error),
    ]
    card = await request(client, "codesynapse/symbolCard", {"selector": "app.unsafe.run"})
    check_budget(card)
    assert [(f["tool"], f["ruleId"], f["line"]) for f in card["card"]["findings"]] == [("ruff", "S602", 8)]

    # the analyzer runs again while the daemon runs: only F401 now
    ruff_sarif(repo, "F401")

    async def updated():
        shown = _shown(client, uri)
        return shown if shown and shown[0][1] == "F401" else None

    assert await eventually(updated) == [("codesynapse/ruff", "F401", 2, 7, types.DiagnosticSeverity.Error)]
    card = await request(client, "codesynapse/symbolCard", {"selector": "app.unsafe.run"})
    assert "findings" not in card["card"] and "findings" not in card["card"]["counts"]

    modules = await request(client, "codesynapse/modules", {"query": "lodash"})
    check_budget(modules)
    assert [(m["name"], m["importedBy"]["files"]) for m in modules["modules"]] == [("lodash", 1)]


@pytest_lsp.fixture(config=config(data_dir="/tmp/codesynapse-e2e-findings-off"))
async def quiet(lsp_client: LanguageClient, repo):
    await lsp_client.initialize_session(init_params(repo, findingsDiagnostics=False))
    await wait_indexed(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_the_setting_turns_findings_diagnostics_off(quiet, repo):
    uri = _open(quiet, repo / "app" / "unsafe.py")
    # the card still has the findings: only the diagnostics are off
    card = await request(quiet, "codesynapse/symbolCard", {"selector": "app.unsafe.run"})
    assert card["card"]["counts"]["findings"] == 1
    ruff_sarif(repo, "F401")

    async def updated():
        c = await request(quiet, "codesynapse/symbolCard", {"selector": "app.unsafe"})
        return c if c["card"]["counts"].get("findings") == 1 and c["card"]["findings"][0]["ruleId"] == "F401" \
            else None

    await eventually(updated)
    assert quiet.diagnostics.get(uri, []) == []
