"""Modules and findings end to end on every graph backend (SQLite, Neo4j, HugeGraph): the
App indexes fixtures/deps_repo (manifests with the code), a real ruff SARIF log is imported,
and codesynapse/modules, a card and prContext give the same written-out answers."""

from __future__ import annotations

import shutil
from pathlib import Path

from codesynapse.app import App
from codesynapse.findings.sarif import import_sarif
from codesynapse.methods import call_method
from codesynapse.settings import load_settings
from tests.unit.test_findings import ruff_sarif

REPO = Path(__file__).resolve().parents[2] / "fixtures" / "deps_repo"


def test_modules_and_findings_answers_on_the_backend(backend, neo4j_uri, hugegraph_url, tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(REPO, root)
    over = {"data_dir": str(tmp_path / "data"), "workers": 1, "backend": backend}
    if backend == "neo4j":
        over["neo4j_uri"] = neo4j_uri
    elif backend == "hugegraph":
        over["hugegraph_url"] = hugegraph_url
    app = App(root, load_settings(over))
    try:
        app.index()
        a = call_method(app, "codesynapse/modules", {"limit": 100, "files": 1})
        assert a["total"] == 23
        assert [(m["ecosystem"], m["name"], m["importedBy"]["files"]) for m in a["modules"]][:8] == [
            ("cargo", "rand", 0), ("cargo", "serde", 1), ("cargo", "serde_json", 1), ("cargo", "tempfile", 0),
            ("go", "github.com/pkg/errors", 1), ("go", "golang.org/x/text", 0), ("go", "gopkg.in/yaml.v3", 1),
            ("maven", "com.google.guava:guava", 0)]
        assert a["unmappedImports"]["top"] == [{"module": "leftpadlib", "language": "python", "files": 1}]
        with app.indexer.lock, app.store.transaction():
            s = import_sarif(app.store, app.workspace, ruff_sarif(root, tmp_path / "r.sarif"), app.policy)
        assert s["runs"][0]["stored"] == 4
        card = call_method(app, "codesynapse/symbolCard", {"selector": "app.unsafe.run"})["card"]
        assert card["counts"]["findings"] == 1
        assert card["findings"] == [{"tool": "ruff", "ruleId": "S602", "level": "error", "severity": "high",
                                     "line": 8, "message": "`subprocess` call with `shell=True` identified, "
                                                           "security issue"}]
        diff = "--- a/app/unsafe.py\n+++ b/app/unsafe.py\n@@ -16 +16 @@\n-x\n+        return eval(blob)\n"
        pr = call_method(app, "codesynapse/prContext", {"diff": diff})
        assert [(f["ruleId"], f["line"], f["symbol"]) for f in pr["findings"]] == [("S307", 16,
                                                                                    "app.unsafe.Store.load")]
    finally:
        if backend != "sqlite":
            app.store.delete_graph()
        app.close()
