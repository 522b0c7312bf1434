"""Policy effects (codesynapse/policyEffects, `codesynapse policy effects`): per exclusion rule
the files, lines, bytes and tokens it keeps out, per annotation the cards it changes, per
redaction rule the values it removed, with the fingerprint and the difference from the
previous policy (issue 20 #3)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codesynapse.app import App
from codesynapse.errors import InvalidParams
from codesynapse.methods import call_method
from codesynapse.settings import Settings

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

POLICY = """exclude:
  - "tests/"
annotations:
  - path: "shop/cart.py"
    note: "cart: owned by team A"
  - symbol: "shop.pricing.*"
    note: "pricing: owned by finance"
redact:
  - "TOKEN_[0-9]{4}"
  - "never_matches_[q]{9}"
"""


@pytest.fixture()
def repo(tmp_path):
    root = tmp_path / "python_repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    (root / "node_modules" / "lib").mkdir(parents=True)
    (root / "node_modules" / "lib" / "index.js").write_text("a\nb\nc\n")  # 3 lines, 6 bytes
    (root / "node_modules" / "lib" / "util.js").write_text("x")  # 1 line, 1 byte
    (root / "shop" / "secrets.py").write_text('def TOKEN_1234():\n    """Uses TOKEN_9999."""\n')
    (root / ".codesynapse.yaml").write_text(POLICY)
    return root


def _effects(root, data):
    app = App(root, Settings(data_dir=str(data), watch=False, embedder="none"))
    try:
        app.index()
        return call_method(app, "codesynapse/policyEffects", {}), app.policy.fingerprint
    finally:
        app.close()


def test_each_rule_reports_what_it_changes(repo, tmp_path):
    e, fp = _effects(repo, tmp_path / "data")
    assert e["fingerprint"] == fp and len(fp) == 64
    excl = {x["rule"]: x for x in e["exclusions"]}
    tests = sum((repo / "tests" / f).stat().st_size for f in ("test_cart.py",))
    assert excl["tests/"] == {"rule": "tests/", "source": "policy", "files": 1,
                              "lines": len((repo / "tests/test_cart.py").read_text().splitlines()),
                              "bytes": tests, "estTokens": -(-tests // 4)}
    assert excl["node_modules/"] == {"rule": "node_modules/", "source": "default", "files": 2, "lines": 4,
                                     "bytes": 7, "estTokens": 2}
    ann = {json.dumps(a["annotation"], sort_keys=True): a for a in e["annotations"]}
    # shop/cart.py: module, BaseCart, its __init__/add/count, Cart, total, checkout
    assert ann['{"path": "shop/cart.py"}']["cards"] == 8
    # shop.pricing.*: TAX_RATE, apply_discount and with_tax (not the module "shop.pricing" itself)
    assert ann['{"symbol": "shop.pricing.*"}']["cards"] == 3
    red = {r["rule"]: r for r in e["redactions"]}
    assert red["never_matches_[q]{9}"] == {"rule": "never_matches_[q]{9}", "values": 0, "files": 0}
    assert red["TOKEN_[0-9]{4}"]["files"] == 1
    assert red["TOKEN_[0-9]{4}"]["values"] >= 2  # the name and the summary, at least
    assert "previous" not in e and "delta" not in e
    assert "not summed" in e["note"]


def test_a_policy_change_reports_the_difference(repo, tmp_path):
    data = tmp_path / "data"
    first, fp1 = _effects(repo, data)
    (repo / ".codesynapse.yaml").write_text(POLICY.replace('  - "tests/"\n', '  - "tests/"\n  - "shop/payment.py"\n'))
    second, fp2 = _effects(repo, data)
    assert fp1 != fp2
    assert second["previous"]["fingerprint"] == fp1
    size = (repo / "shop/payment.py").stat().st_size
    assert second["delta"]["exclusions"] == [{"rule": "policy:shop/payment.py", "change": "added", "files": 1,
                                              "lines": len((repo / "shop/payment.py").read_text().splitlines()),
                                              "bytes": size, "estTokens": -(-size // 4)}]
    assert second["delta"]["annotations"] == [] and second["delta"]["redactions"] == []
    # measuring again under the same policy still reports the change from the previous policy
    third, _ = _effects(repo, data)
    assert third["previous"]["fingerprint"] == fp1 and third["delta"] == second["delta"]


def test_unknown_and_scope_fields_are_invalid_params(repo, tmp_path):
    app = App(repo, Settings(data_dir=str(tmp_path / "data"), watch=False, embedder="none"))
    try:
        for params, field in (({"rule": "x"}, "params"), ({"namespace": "n"}, "namespace")):
            with pytest.raises(InvalidParams) as e:
                call_method(app, "codesynapse/policyEffects", params)
            assert e.value.field == field
    finally:
        app.close()


def test_cli_prints_the_effects(repo, tmp_path):
    out = subprocess.run([sys.executable, "-m", "codesynapse", "policy", "effects", "--root", str(repo),
                          "--data-dir", str(tmp_path / "data")], capture_output=True, text=True, timeout=300,
                         check=True).stdout
    assert "policy fingerprint: " in out
    assert "node_modules/" in out and "tests/" in out
    assert "TOKEN_[0-9]{4}" in out
