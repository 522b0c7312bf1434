"""SARIF findings (findings/sarif.py, context/deps.py): logs written by real analyzers (ruff
and bandit, installed by the dev extras) on fixtures/deps_repo, imported into a real SQLite
index; expected values are written out from the fixture's source."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codesynapse.app import App
from codesynapse.findings.sarif import SarifError, import_sarif, read_sarif, sync_policy_findings
from codesynapse.methods import call_method
from codesynapse.settings import load_settings

REPO = Path(__file__).resolve().parents[2] / "fixtures" / "deps_repo"
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    exe = BIN / name
    if not exe.exists():
        pytest.skip(f"{name} is not installed (pip install -e '.[dev]')")
    return str(exe)


def ruff_sarif(root: Path, out: Path, select: str = "F401,S602,S307") -> Path:
    r = subprocess.run([_tool("ruff"), "check", "--no-cache", "--output-format", "sarif", "--select", select,
                        "--exit-zero", "app"], cwd=root, capture_output=True, check=True)
    out.write_bytes(r.stdout)
    return out


def bandit_sarif(root: Path, out: Path) -> Path:
    subprocess.run([_tool("bandit"), "-q", "-r", "app", "-f", "sarif", "-o", str(out), "--exit-zero"], cwd=root,
                   capture_output=True, check=True)
    return out


@pytest.fixture()
def app(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(REPO, root)
    a = App(root, load_settings({"data_dir": str(tmp_path / "data"), "workers": 1}))
    a.index()
    yield a
    a.close()


JSLINT = Path(__file__).resolve().parents[1] / "infra" / "jslint"
UNSAFE_JS = """export function run(code) {
  return eval(code);
}

export function compare(a) {
  if (a == null) {
    return 0;
  }
  return 1;
}
"""


def eslint_sarif(root: Path, out: Path) -> Path:
    eslint = JSLINT / "node_modules" / ".bin" / "eslint"
    formatter = JSLINT / "node_modules" / "@microsoft" / "eslint-formatter-sarif" / "sarif.js"
    if not eslint.exists() or not formatter.exists():
        pytest.skip("ESLint is not installed (scripts/setup.sh: npm ci --prefix tests/infra/jslint)")
    r = subprocess.run([str(eslint), "--no-eslintrc", "--parser-options=ecmaVersion:2022,sourceType:module",
                        "--rule", "no-eval: error", "--rule", "eqeqeq: warn", "-f", str(formatter), "web/src"],
                       cwd=root, capture_output=True, check=False)
    assert r.returncode in (0, 1), r.stderr  # 1: problems found
    out.write_bytes(r.stdout)
    return out


def _rows(app):
    return sorted((f.tool, f.rule_id, f.level, f.severity, f.path, f.start_line, f.symbol)
                  for f in app.store.findings())


def _import(app, sarif):
    with app.indexer.lock, app.store.transaction():
        return import_sarif(app.store, app.workspace, sarif, app.policy)


def test_real_ruff_and_bandit_results_attach_to_the_innermost_symbol(app, tmp_path):
    root = app.workspace.root
    r = _import(app, ruff_sarif(root, tmp_path / "ruff.sarif"))
    b = _import(app, bandit_sarif(root, tmp_path / "bandit.sarif"))
    assert [(x["tool"], x["results"], x["stored"], x["stale"]) for x in r["runs"] + b["runs"]] == [
        ("ruff", 4, 4, 0), ("Bandit", 3, 3, 0)]
    assert _rows(app) == [
        # bandit: B307 has no level, nor has its rule a default: SARIF's default "warning"
        ("Bandit", "B307", "warning", "medium", "app/unsafe.py", 16, "app.unsafe.Store.load"),
        ("Bandit", "B404", "note", "low", "app/unsafe.py", 2, ""),  # module level: the file only
        ("Bandit", "B602", "error", "high", "app/unsafe.py", 8, "app.unsafe.run"),
        ("ruff", "F401", "error", "high", "app/helpers.py", 1, ""),
        ("ruff", "F401", "error", "high", "app/unsafe.py", 3, ""),
        ("ruff", "S307", "error", "high", "app/unsafe.py", 16, "app.unsafe.Store.load"),
        ("ruff", "S602", "error", "high", "app/unsafe.py", 8, "app.unsafe.run"),
    ]


def test_real_eslint_results_in_a_javascript_file(app, tmp_path):
    root = app.workspace.root
    (root / "web" / "src" / "unsafe.js").write_text(UNSAFE_JS)
    app.index()
    s = _import(app, eslint_sarif(root, tmp_path / "eslint.sarif"))
    assert [(x["tool"], x["results"], x["stored"]) for x in s["runs"]] == [("ESLint", 2, 2)]
    # ESLint's columns are 1-based (SARIF): `eval` at column 10 is stored as 9
    assert sorted((f.tool, f.rule_id, f.level, f.path, f.start_line, f.start_col, f.symbol)
                  for f in app.store.findings()) == [
        ("ESLint", "eqeqeq", "warning", "web/src/unsafe.js", 6, 8, "web/unsafe.compare"),
        ("ESLint", "no-eval", "error", "web/src/unsafe.js", 2, 9, "web/unsafe.run"),
    ]


def test_cards_and_symbol_context_carry_finding_counts_and_the_top_findings(app, tmp_path):
    root = app.workspace.root
    _import(app, ruff_sarif(root, tmp_path / "ruff.sarif"))
    _import(app, bandit_sarif(root, tmp_path / "bandit.sarif"))
    card = call_method(app, "codesynapse/symbolCard", {"selector": "app.unsafe.Store.load"})["card"]
    assert card["counts"]["findings"] == 2
    assert card["findings"] == [
        {"tool": "ruff", "ruleId": "S307", "level": "error", "severity": "high", "line": 16,
         "message": "Use of possibly insecure function; consider using `ast.literal_eval`"},
        {"tool": "Bandit", "ruleId": "B307", "level": "warning", "severity": "medium", "line": 16,
         "message": "Use of possibly insecure function - consider using safer ast.literal_eval."},
    ]
    # the class holds its method: its card counts the method's findings
    assert call_method(app, "codesynapse/symbolCard", {"selector": "app.unsafe.Store"})["card"]["counts"][
        "findings"] == 2
    ctx = call_method(app, "codesynapse/symbolContext", {"selector": "app.unsafe.run"})
    assert [(f["tool"], f["ruleId"]) for f in ctx["card"]["findings"]] == [("Bandit", "B602"), ("ruff", "S602")]
    module = call_method(app, "codesynapse/symbolCard", {"selector": "app.unsafe"})["card"]
    assert module["counts"]["findings"] == 6


def test_reimporting_a_tools_run_replaces_that_tools_findings_only(app, tmp_path):
    root = app.workspace.root
    _import(app, ruff_sarif(root, tmp_path / "ruff.sarif"))
    _import(app, bandit_sarif(root, tmp_path / "bandit.sarif"))
    _import(app, ruff_sarif(root, tmp_path / "ruff2.sarif", select="S307"))
    assert [(t, rule) for t, rule, *_ in _rows(app)] == [
        ("Bandit", "B307"), ("Bandit", "B404"), ("Bandit", "B602"), ("ruff", "S307")]


def test_a_finding_whose_file_changed_since_the_scan_is_stale(app, tmp_path):
    root = app.workspace.root
    sarif = ruff_sarif(root, tmp_path / "ruff.sarif")
    _import(app, sarif)
    card = call_method(app, "codesynapse/symbolCard", {"selector": "app.unsafe.run"})["card"]
    assert "stale" not in card["findings"][0]
    src = root / "app" / "unsafe.py"
    src.write_text(src.read_text().replace('"""Run a shell command."""', '"""Run a command in a shell."""'))
    os.utime(src, ns=(time.time_ns(), time.time_ns() + 10**9))
    app.index()
    card = call_method(app, "codesynapse/symbolCard", {"selector": "app.unsafe.run"})["card"]
    assert card["findings"][0]["ruleId"] == "S602" and card["findings"][0]["stale"] is True
    # the file untouched since the scan: its finding is not stale
    helpers = call_method(app, "codesynapse/symbolCard", {"selector": "app.helpers"})["card"]
    assert helpers["findings"] == [{"tool": "ruff", "ruleId": "F401", "level": "error", "severity": "high",
                                    "line": 1, "message": "`leftpadlib` imported but unused"}]
    # imported after the edit, the old log is stale at once: the file is newer than the scan
    old = json.loads(sarif.read_text())
    old["runs"][0]["invocations"] = [{"executionSuccessful": True, "endTimeUtc": "2020-01-01T00:00:00Z"}]
    sarif.write_text(json.dumps(old))
    summary = _import(app, sarif)
    assert summary["runs"][0]["stale"] == 4


def _write(tmp_path, name, doc) -> Path:
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


def _log(results, rules=None):
    return {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "t", **({"rules": rules} if rules else {})}},
                                          "results": results}]}


def _result(line=8, uri="app/unsafe.py", **kw):
    return {"ruleId": "R1", "message": {"text": "m"},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri}, "region": {"startLine": line}}}],
            **kw}


@pytest.mark.parametrize("doc, where, what", [
    ('{"version": "2.1.0", "runs": [ {"tool": ', "$.runs[0].tool", "not valid JSON"),
    ({"version": "2.0.0", "runs": []}, "$.version", 'expected "2.1.0"'),
    ({"version": "2.1.0"}, "$.runs", "missing"),
    ({"version": "2.1.0", "runs": {}}, "$.runs", "expected an array"),
    (_log([_result(), _result(line="eight")]), "$.runs[0].results[1].locations[0].physicalLocation.region.startLine",
     "expected a non-negative integer"),
    (_log([_result(level="fatal")]), "$.runs[0].results[0].level", "is not a SARIF level"),
    (_log([{"ruleId": "R1"}]), "$.runs[0].results[0].message", "missing"),
    (_log([_result(ruleIndex=3)]), "$.runs[0].results[0].ruleIndex", "past the 0 rules"),
    ({"version": "2.1.0", "runs": [{"results": []}]}, "$.runs[0].tool", "missing"),
])
def test_malformed_sarif_names_the_file_and_the_json_path_and_stores_nothing(app, tmp_path, doc, where, what):
    good = _import(app, _write(tmp_path, "good.sarif", _log([_result()])))
    assert good["runs"][0]["stored"] == 1
    bad = _write(tmp_path, "bad.sarif", doc)
    with pytest.raises(SarifError) as e:
        _import(app, bad)
    assert str(e.value).startswith(f"{bad}: {where}: ")
    assert what in str(e.value)
    assert [(f.tool, f.rule_id, f.start_line) for f in app.store.findings()] == [("t", "R1", 8)]


def test_levels_default_from_the_rule_and_results_outside_the_workspace_are_counted(app, tmp_path):
    rules = [{"id": "R1", "defaultConfiguration": {"level": "note"},
              "properties": {"security-severity": "9.1"}}]
    doc = _log([_result(ruleIndex=0), _result(uri="file:///etc/passwd"), _result(uri="")], rules)
    doc["runs"][0]["results"][2]["locations"] = []
    s = _import(app, _write(tmp_path, "r.sarif", doc))["runs"][0]
    assert (s["results"], s["stored"], s["outsideWorkspace"], s["withoutLocation"]) == (3, 2, 1, 1)
    assert sorted((f.level, f.severity, f.path) for f in app.store.findings()) == [
        ("note", "critical", ""), ("note", "critical", "app/unsafe.py")]


def test_a_secret_in_a_message_is_stored_redacted(app, tmp_path):
    secret = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    doc = _log([_result(message={"text": f"token {secret}\nleaked   here"})])
    _import(app, _write(tmp_path, "s.sarif", doc))
    (f,) = app.store.findings()
    assert secret not in f.message and "REDACTED" in f.message and "\n" not in f.message


def test_a_card_with_many_findings_stays_within_its_budget(app, tmp_path):
    doc = _log([_result(line=16, ruleId=f"R{i}", message={"text": "a long message " * 15}) for i in range(40)])
    _import(app, _write(tmp_path, "many.sarif", doc))
    full = call_method(app, "codesynapse/symbolCard", {"selector": "app.unsafe.Store.load"})
    assert full["card"]["counts"]["findings"] == 40 and len(full["card"]["findings"]) == 5
    small = call_method(app, "codesynapse/symbolCard", {"selector": "app.unsafe.Store.load", "maxTokens": 300})
    assert small["tokens"] <= 300
    assert small["card"]["counts"]["findings"] == 40 and "findings" not in small["card"]
    assert {"what": "card findings", "count": 5, "hint": "raise maxTokens"} in small["omitted"]


def _git(root, *args):
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=root, check=True,
                   capture_output=True)


def test_pr_context_lists_findings_in_changed_code_and_module_changes(app, tmp_path):
    root = app.workspace.root
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    _import(app, bandit_sarif(root, tmp_path / "bandit.sarif"))
    src = root / "app" / "unsafe.py"
    src.write_text(src.read_text().replace("return eval(blob)", "return eval(blob)  # noqa"))
    req = root / "requirements.txt"
    req.write_text(req.read_text().replace("PyYAML==6.0.2\n", "PyYAML==6.0.3\nhttpx==0.27.2\n")
                   .replace("-e git+https://example.com/acme/toolkit.git#egg=acme-toolkit\n", ""))
    app.index()
    want_modules = {
        "added": [{"name": "httpx", "ecosystem": "pypi", "manifest": "requirements.txt", "constraint": "==0.27.2",
                   "line": 3}],
        "removed": [{"name": "acme-toolkit", "ecosystem": "pypi", "manifest": "requirements.txt",
                     "constraint": "editable"}],
        "changed": [{"name": "PyYAML", "ecosystem": "pypi", "manifest": "requirements.txt", "line": 2,
                     "from": {"constraint": "==6.0.2"}, "to": {"constraint": "==6.0.3"}}],
    }
    by_refs = call_method(app, "codesynapse/prContext", {"base": "HEAD"})
    diff = subprocess.run(["git", "diff", "--no-color", "HEAD"], cwd=root, capture_output=True, text=True).stdout
    by_diff = call_method(app, "codesynapse/prContext", {"diff": diff})
    for a in (by_refs, by_diff):
        assert a["modules"] == want_modules
        assert a["findingCount"] == 1
        assert a["findings"] == [{"tool": "Bandit", "ruleId": "B307", "level": "warning", "severity": "medium",
                                  "path": "app/unsafe.py", "line": 16, "symbol": "app.unsafe.Store.load",
                                  "message": "Use of possibly insecure function - consider using safer "
                                             "ast.literal_eval.", "stale": True}]


def test_a_diff_that_does_not_match_the_disk_says_so(app):
    diff = ("--- a/requirements.txt\n+++ b/requirements.txt\n@@ -2 +2 @@\n-PyYAML==5.0\n+PyYAML==9.9\n")
    a = call_method(app, "codesynapse/prContext", {"diff": diff})
    assert a["modules"] == {"notes": ["requirements.txt: the diff does not apply to the file as it is on disk: "
                                      "modules not compared"]}


def test_the_policy_findings_key_imports_watched_sarif_and_follows_it(app, tmp_path):
    from codesynapse.app import load_policy_for
    from codesynapse.watch.live import LiveUpdater

    root = app.workspace.root
    (root / "reports").mkdir()
    ruff_sarif(root, root / "reports" / "ruff.sarif")
    (root / ".codesynapse.yaml").write_text("findings: ['reports/*.sarif']\n")
    policy, diags = load_policy_for(root)
    assert diags == [] and policy.findings == ("reports/*.sarif",)
    app.policy = app.indexer.policy = policy
    app.index()
    assert sorted(f.rule_id for f in app.store.findings()) == ["F401", "F401", "S307", "S602"]
    # the analyzer runs again: the watched file changes, and only its new results remain
    ruff_sarif(root, root / "reports" / "ruff.sarif", select="S602")
    LiveUpdater(app)._apply({"reports/ruff.sarif": "disk"})
    assert [(f.rule_id, f.source) for f in app.store.findings()] == [("S602", "reports/ruff.sarif")]
    # an invalid rewrite keeps the last findings (logged); a deleted file drops them
    (root / "reports" / "ruff.sarif").write_text("{")
    LiveUpdater(app)._apply({"reports/ruff.sarif": "disk"})
    assert [f.rule_id for f in app.store.findings()] == ["S602"]
    (root / "reports" / "ruff.sarif").unlink()
    LiveUpdater(app)._apply({"reports/ruff.sarif": "disk"})
    assert app.store.findings() == []


def test_a_redaction_pattern_added_later_reaches_findings_imported_before_it(app):
    """The policy's SARIF files are imported again when its ``redact`` patterns change (their
    messages are stored redacted), though the files did not change on disk."""
    from codesynapse.app import load_policy_for

    root = app.workspace.root
    (root / "reports").mkdir()
    (root / "reports" / "scan.sarif").write_text(json.dumps(_log([_result(
        message={"text": "token ACME-12345678 found in the config loader"})])))
    (root / ".codesynapse.yaml").write_text("findings: ['reports/*.sarif']\n")
    app.policy = app.indexer.policy = load_policy_for(root)[0]
    app.index()
    assert [f.message for f in app.store.findings()] == ["token ACME-12345678 found in the config loader"]
    (root / ".codesynapse.yaml").write_text("findings: ['reports/*.sarif']\nredact: ['ACME-[0-9]{8}']\n")
    app.policy = app.indexer.policy = load_policy_for(root)[0]
    app.index()
    assert [f.message for f in app.store.findings()] == ["token [REDACTED:custom] found in the config loader"]


def test_a_findings_key_that_is_not_a_list_of_globs_is_a_policy_error():
    from codesynapse.policy import parse_policy

    _p, diags = parse_policy("findings: 3\n")
    assert [d.message for d in diags] == ["findings: expected a list of globs, found a number"]


def test_cli_import_reports_a_malformed_file_and_exits_1(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(REPO, root)
    bad = _write(tmp_path, "bad.sarif", {"version": "2.1.0", "runs": [{"tool": {"driver": {}}, "results": []}]})
    env = dict(os.environ, CODESYNAPSE_DATA_DIR=str(tmp_path / "data"))
    r = subprocess.run([str(BIN / "codesynapse"), "findings", "import", str(bad), "--root", str(root)],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 1
    assert f"{bad}: $.runs[0].tool.driver.name: missing (nothing stored)" in r.stderr
    good = ruff_sarif(root, tmp_path / "ruff.sarif")
    r = subprocess.run([str(BIN / "codesynapse"), "findings", "import", str(good), "--root", str(root)],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["runs"][0]["stored"] == 4


def test_read_sarif_streams_runs_with_rules_after_results(tmp_path):
    # the driver (with the rules) written after the results: levels still come from the rules
    doc = ('{"runs": [{"results": [{"ruleIndex": 0, "message": {"text": "x"}}], '
           '"tool": {"driver": {"name": "late", "rules": [{"id": "L1", "defaultConfiguration": {"level": "error"}}]}}}],'
           ' "version": "2.1.0"}')
    (run,) = read_sarif(_write(tmp_path, "late.sarif", doc))
    assert run.tool == "late" and [(r[0], r[1], r[-1]) for r in run.results] == [("L1", "error", "high")]


def test_sync_without_a_findings_key_does_nothing(app):
    assert sync_policy_findings(app.store, app.workspace.root, app.policy) == 0


def test_the_benchmark_log_is_sarif_that_imports_whole(app, tmp_path):
    from codesynapse.bench.findings_bench import make_repo, write_sarif

    sites = make_repo(app.workspace.root, 2)
    app.index()
    sarif = tmp_path / "bench.sarif"
    write_sarif(sarif, app.workspace.root, sites, 120, pad=50)
    s = _import(app, sarif)["runs"][0]
    assert (s["tool"], s["results"], s["stored"], s["stale"]) == ("benchlint", 120, 120, 0)
    # 100 call sites, results round robin: f0 of pkg/m0000.py (line 7) holds results 0 and 100
    first = app.store.findings("pkg/m0000.py", 7, 7)
    assert [(f.symbol, f.rule_id, f.level) for f in first] == [("pkg.m0000.f0", "B000", "warning")] * 2


def test_a_removed_line_that_reads_like_a_header_stays_in_its_hunk():
    from codesynapse.context.deps import file_hunks

    diff = ("--- a/r.txt\n+++ b/r.txt\n@@ -1,2 +1,2 @@\n x\n--- y\n+++ z\n"
            "--- a/q.txt\n+++ b/q.txt\n@@ -3,0 +4 @@\n+new\n")
    assert file_hunks(diff) == {"r.txt": [(1, 1, ["x", "-- y"], ["x", "++ z"])], "q.txt": [(3, 4, [], ["new"])]}
