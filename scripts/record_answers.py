"""Record the answers the VS Code extension's unit tests use as fakes, from the real server.

``python scripts/record_answers.py [OUT_DIR]`` copies fixtures/python_repo to a scratch folder,
starts ``codesynapse serve`` on it, speaks LSP to it over stdio (tests/reliability/rawlsp.py,
the same JSON-RPC framing the extension's language client uses), waits for the index, sends
the requests the extension sends and writes each answer as ``OUT_DIR/<name>.json`` (default
editor-client/test/unit/fixtures, which the vitest files read). ``hover.md`` is the hover the
server gives for ``Cart.total`` (textDocument/hover, Markdown).

The answers are recorded as they arrive; only the scratch folder's path is written back as
``/tmp/record/repo`` so that a re-recording differs only where the server changed.
tests/e2e/test_recorded_answers.py re-records into a temporary folder and fails when a
checked-in answer's shape (keys and value types) is no longer the server's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "fixtures" / "python_repo"
DEFAULT_OUT = REPO / "editor-client" / "test" / "unit" / "fixtures"
STABLE_ROOT = "/tmp/record/repo"

TASK = "apply a discount to the cart total"

# name -> (method, params): the requests the extension sends (editor-client/src/protocol.ts Methods)
REQUESTS: list[tuple[str, str, dict[str, Any]]] = [
    ("minimalContext", "codesynapse/minimalContext", {"task": TASK, "maxTokens": 1500}),
    ("search", "codesynapse/search", {"query": TASK, "limit": 50}),
    ("symbolCard", "codesynapse/symbolCard", {"selector": "shop.cart.Cart.checkout", "maxTokens": 2000}),
    ("symbolContext", "codesynapse/symbolContext", {"selector": "shop.cart.Cart.total", "maxTokens": 4000}),
    ("callGraphCallers", "codesynapse/callGraph",
     {"selector": "shop.pricing.with_tax", "direction": "callers", "depth": 2, "limit": 25, "maxTokens": 20000}),
    ("callGraphCallees", "codesynapse/callGraph",
     {"selector": "shop.cart.Cart.total", "direction": "callees", "depth": 2, "limit": 25, "maxTokens": 20000}),
    ("symbolCardTotal", "codesynapse/symbolCard", {"selector": "shop.cart.Cart.total", "maxTokens": 2000}),
    ("symbolCardPayFor", "codesynapse/symbolCard", {"selector": "shop.payment.pay_for", "maxTokens": 2000}),
    ("symbolCardTestTotal", "codesynapse/symbolCard", {"selector": "test_cart.test_total", "maxTokens": 2000}),
    ("snippet", "codesynapse/snippet", {"selector": "shop.cart.Cart.total", "mode": "head_tail", "maxLines": 200}),
    ("indexStatus", "codesynapse/indexStatus", {}),
    ("policyEffects", "codesynapse/policyEffects", {}),
    ("remember", "codesynapse/memory/remember", {
        "entities": [{"name": "shop.cart.Cart.total", "type": "symbol", "durable": True}],
        "facts": [{"subject": "shop.cart.Cart.total", "predicate": "note", "object": "def total(self, percent=0):",
                   "sourceClient": "vscode", "durable": True}]}),
    ("recall", "codesynapse/memory/recall", {"query": "Cart.total"}),
    ("list", "codesynapse/memory/list", {"includeIds": True}),
    ("forget", "codesynapse/memory/forget", {"names": ["shop.cart.Cart.total"]}),
    ("ledger", "codesynapse/ledger", {}),
]


def _pr_diff(root: Path) -> str:
    """The diff the extension sends for an edit of shop/pricing.py (with_tax rounds to 3)."""
    git = ["git", "-c", "user.email=r@example.invalid", "-c", "user.name=r", "-C", str(root)]
    # a fixed date: the same commit id on every recording
    env = {**os.environ, "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    subprocess.run(git + ["init", "-q", "-b", "main"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "fixture"], check=True, env=env)
    p = root / "shop" / "pricing.py"
    p.write_text(p.read_text(encoding="utf-8").replace("TAX_RATE), 2)", "TAX_RATE), 3)"), encoding="utf-8")
    out = subprocess.run(git + ["diff", "--no-color"], check=True, capture_output=True, text=True).stdout
    subprocess.run(git + ["checkout", "-q", "--", "."], check=True)
    return out


def _stable(value: Any, root: str) -> Any:
    if isinstance(value, str):
        return value.replace(root, STABLE_ROOT)
    if isinstance(value, list):
        return [_stable(v, root) for v in value]
    if isinstance(value, dict):
        return {k: _stable(v, root) for k, v in value.items()}
    return value


def _wait_vectors(lsp: Any, timeout: float = 300.0) -> None:
    """The dense leg in its settled state (vectors ready, or unavailable with a reason), so
    that answers do not depend on how fast the embedding model loads."""
    end = time.monotonic() + timeout
    while True:
        vectors = lsp.request("codesynapse/indexStatus", {}).get("symbolVectors")
        if vectors is None or vectors.get("state") != "pending":
            return
        if time.monotonic() > end:
            raise AssertionError(f"symbol vectors still pending after {timeout:.0f} s: {vectors}")
        time.sleep(0.2)


def _settled_ledger(lsp: Any, answer: dict[str, Any], timeout: float = 60.0) -> dict[str, Any]:
    """The ledger once every answer's raw estimate is in (a background worker makes them), so
    that no entry of ``last`` is still ``raw: "pending"``."""
    end = time.monotonic() + timeout
    while answer["session"]["pending"]:
        if time.monotonic() > end:
            raise AssertionError(f"raw estimates still pending after {timeout:.0f} s: {answer['session']}")
        time.sleep(0.2)
        answer = lsp.request("codesynapse/ledger", {})
    return answer


def record(out: Path, env: dict[str, str] | None = None) -> list[str]:
    """Record every answer into ``out``; returns the file names written."""
    sys.path.insert(0, str(REPO))
    from tests.reliability.rawlsp import RawLsp

    out.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    with tempfile.TemporaryDirectory(prefix="cs-record-", ignore_cleanup_errors=True) as tmp:
        root = Path(tmp) / "repo"
        shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns(".codesynapse-data"))
        diff = _pr_diff(root)
        with RawLsp(Path(tmp) / "data", env=env, log=Path(tmp) / "serve.log") as lsp:
            lsp.initialize(root)
            lsp.wait_ready()
            _wait_vectors(lsp)
            requests = REQUESTS + [("prContext", "codesynapse/prContext", {"diff": diff, "maxTokens": 20000})]
            for name, method, params in requests:
                answer = lsp.request(method, params)
                if name == "ledger":
                    answer = _settled_ledger(lsp, answer)
                answer = _stable(answer, str(root))
                (out / f"{name}.json").write_text(json.dumps(answer, indent=2, ensure_ascii=False) + "\n",
                                                  encoding="utf-8")
                written.append(f"{name}.json")
            # the hover of Cart.total: 'def total' in shop/cart.py, on the name
            cart = root / "shop" / "cart.py"
            lines = cart.read_text(encoding="utf-8").splitlines()
            line = next(i for i, t in enumerate(lines) if "def total(" in t)
            hover = lsp.request("textDocument/hover", {"textDocument": {"uri": cart.as_uri()},
                                                       "position": {"line": line,
                                                                    "character": lines[line].index("total")}})
            (out / "hover.md").write_text(_stable(hover["contents"]["value"], str(root)), encoding="utf-8")
            written.append("hover.md")
    return written


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUT
    for name in record(out):
        print(out / name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
