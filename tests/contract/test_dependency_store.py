"""Module and finding nodes (graph/depmodel.py's DependencyStore), one contract on SQLite,
Neo4j and HugeGraph: manifests and their REQUIRED_BY rows, module listing, the import rows
IMPORTED_BY is derived from, and findings with their runs."""

from __future__ import annotations

import pytest

from codesynapse.extract.manifests import Requirement
from codesynapse.extract.model import FileExtraction, ImportRef
from codesynapse.graph.depmodel import DependencyStore, FindingRow, FindingRun, ManifestRow
from tests.contract.support import signature_differences


def req(name, constraint="", resolved="", scope="", line=1, eco="pypi"):
    return Requirement(ecosystem=eco, name=name, constraint=constraint, resolved=resolved, scope=scope,
                       start_line=line, end_line=line)


def man(path, kind="requirements", eco="pypi", stamp="1:1", notes=""):
    return ManifestRow(path=path, kind=kind, ecosystem=eco, stamp=stamp, notes=notes)


@pytest.fixture
def d(graph_store):
    graph_store.write_manifests([
        (man("requirements.txt"), [req("PyYAML", "==6.0.2", line=2), req("requests", ">=2", line=3)]),
        (man("web/package.json", "npm", "npm", notes="x"), [req("lodash", "^4", "4.17.21", eco="npm", line=5),
                                                            req("@scope/pkg", "~2", eco="npm", line=6)]),
        (man("pyproject.toml", "pyproject"), [req("pyyaml", ">=6", line=9), req("pytest", ">=8", "", "dev", 12)]),
    ])
    return graph_store


def test_implements_the_dependency_protocol(graph_store):
    assert isinstance(graph_store, DependencyStore)
    assert signature_differences(DependencyStore, graph_store) == []


def test_manifests_and_required_by_rows_round_trip(d):
    assert [(m.path, m.kind, m.ecosystem, m.stamp, m.notes, m.requirements) for m in d.manifests()] == [
        ("pyproject.toml", "pyproject", "pypi", "1:1", "", 2),
        ("requirements.txt", "requirements", "pypi", "1:1", "", 2),
        ("web/package.json", "npm", "npm", "1:1", "x", 2),
    ]
    # ordered by (ecosystem, key, manifest, line); PyYAML and pyyaml are one module
    assert [(r.ecosystem, r.key, r.name, r.manifest, r.constraint, r.resolved, r.scope, r.start_line)
            for r in d.requirements()] == [
        ("npm", "@scope/pkg", "@scope/pkg", "web/package.json", "~2", "", "", 6),
        ("npm", "lodash", "lodash", "web/package.json", "^4", "4.17.21", "", 5),
        ("pypi", "pytest", "pytest", "pyproject.toml", ">=8", "", "dev", 12),
        ("pypi", "pyyaml", "pyyaml", "pyproject.toml", ">=6", "", "", 9),
        ("pypi", "pyyaml", "PyYAML", "requirements.txt", "==6.0.2", "", "", 2),
        ("pypi", "requests", "requests", "requirements.txt", ">=2", "", "", 3),
    ]
    assert [(r.manifest, r.constraint) for r in d.requirements([("pypi", "pyyaml"), ("npm", "nope")])] == [
        ("pyproject.toml", ">=6"), ("requirements.txt", "==6.0.2")]


def test_rewriting_a_manifest_replaces_its_rows_and_deleting_drops_them(d):
    d.write_manifests([(man("requirements.txt", stamp="2:2"), [req("httpx", "==0.27", line=1)])],
                      deleted=["web/package.json"])
    assert [m.path for m in d.manifests()] == ["pyproject.toml", "requirements.txt"]
    assert [(r.key, r.manifest) for r in d.requirements()] == [
        ("httpx", "requirements.txt"), ("pytest", "pyproject.toml"), ("pyyaml", "pyproject.toml")]
    assert d.module_keys() == [("pypi", "httpx"), ("pypi", "pytest"), ("pypi", "pyyaml")]


def test_module_keys_filter_page_and_count(d):
    assert d.module_keys() == [("npm", "@scope/pkg"), ("npm", "lodash"), ("pypi", "pytest"), ("pypi", "pyyaml"),
                               ("pypi", "requests")]
    assert d.count_modules() == 5
    assert d.module_keys(offset=1, limit=2) == [("npm", "lodash"), ("pypi", "pytest")]
    assert d.module_keys(ecosystem="npm") == [("npm", "@scope/pkg"), ("npm", "lodash")]
    assert d.module_keys("YAML") == [("pypi", "pyyaml")] and d.count_modules("yaml") == 1
    assert d.module_keys("%") == [] and d.count_modules("_") == 0  # no pattern syntax
    assert d.count_modules("e", "npm") == 1


def test_imports_under_a_module_name_not_resolved_in_the_graph(graph_store):
    fx = FileExtraction(path="app/m.py", language="python", hash="h", size=10, lines=5, module="app.m",
                        imports=[ImportRef(module="yaml", line=1), ImportRef(module="yaml.constructor", line=2),
                                 ImportRef(module="yamlish", line=3), ImportRef(module="app.yaml", line=4),
                                 ImportRef(module="requests.adapters", name="HTTPAdapter", line=5)])
    js = FileExtraction(path="web/i.js", language="javascript", hash="j", size=10, lines=2, module="web.i",
                        imports=[ImportRef(module="@scope/pkg/sub", name="x", line=2)])
    graph_store.write_files([(fx, 1), (js, 1)], import_targets={("app/m.py", 3): "app.yaml"})
    got = graph_store.imports_under(["yaml", "@scope/pkg"])
    assert [(i.path, i.module, i.line) for i in got] == [
        ("app/m.py", "yaml", 1), ("app/m.py", "yaml.constructor", 2), ("web/i.js", "@scope/pkg/sub", 2)]
    assert graph_store.imports_under([]) == []
    assert graph_store.external_imports() == [
        ("javascript", "@scope/pkg/sub", 1), ("python", "requests.adapters", 1), ("python", "yaml", 1),
        ("python", "yaml.constructor", 1), ("python", "yamlish", 1)]


def f(tool, rule, level, path, line, symbol="", source="s.sarif", **kw):
    return FindingRow(tool=tool, rule_id=rule, level=level, severity=kw.pop("severity", "high"), message=f"{rule} m",
                      path=path, start_line=line, start_col=2, end_line=line, end_col=9, symbol=symbol,
                      file_hash="fh", source=source, **kw)


def run(tool, source="s.sarif", n=0):
    return FindingRun(tool=tool, source=source, stamp="3:4", scanned_at=100.0, results=n, imported_at=200.0)


def test_findings_are_replaced_per_tool_and_read_by_file_and_lines(graph_store):
    g = graph_store
    g.replace_findings([run("ruff", n=3)], [f("ruff", "F401", "error", "a.py", 1), f("ruff", "S1", "note", "a.py", 9,
                                                                                    "a.f"),
                                            f("ruff", "S2", "warning", "b.py", 4, "b.g")])
    g.replace_findings([run("bandit", "b.sarif", 1)], [f("bandit", "B1", "warning", "a.py", 9, "a.f", "b.sarif")])
    key = lambda x: (x.tool, x.rule_id, x.level, x.path, x.start_line, x.symbol)  # noqa: E731
    # most severe first, then path, line, tool, rule
    assert [key(x) for x in g.findings()] == [
        ("ruff", "F401", "error", "a.py", 1, ""), ("bandit", "B1", "warning", "a.py", 9, "a.f"),
        ("ruff", "S2", "warning", "b.py", 4, "b.g"), ("ruff", "S1", "note", "a.py", 9, "a.f")]
    assert [key(x) for x in g.findings("a.py", 5, 10)] == [("bandit", "B1", "warning", "a.py", 9, "a.f"),
                                                           ("ruff", "S1", "note", "a.py", 9, "a.f")]
    assert g.count_findings("a.py") == 3 and g.count_findings("a.py", 2, 8) == 0 and g.count_findings() == 4
    # the batch reads: each span as its one-span read, in the order given
    assert g.count_findings_many([("a.py", 0, 0), ("a.py", 2, 8), ("a.py", 5, 10), ("b.py", 1, 4), ("x.py", 1, 9)]) \
        == [3, 0, 2, 1, 0]
    assert g.count_findings_many([]) == []
    assert [key(x) for x in g.findings_in_ranges([("b.py", 1, 9), ("a.py", 5, 10), ("a.py", 1, 1)], limit=1)] == [
        ("ruff", "S2", "warning", "b.py", 4, "b.g"), ("bandit", "B1", "warning", "a.py", 9, "a.f"),
        ("ruff", "F401", "error", "a.py", 1, "")]
    assert len(g.findings(limit=1)) == 1
    one = g.findings("b.py")[0]
    assert (one.message, one.severity, one.start_col, one.end_col, one.file_hash, one.source) == (
        "S2 m", "high", 2, 9, "fh", "s.sarif")
    assert [(r.tool, r.source, r.stamp, r.scanned_at, r.results) for r in g.finding_runs()] == [
        ("bandit", "b.sarif", "3:4", 100.0, 1), ("ruff", "s.sarif", "3:4", 100.0, 3)]
    # ruff again: its three findings are replaced, bandit's stays
    g.replace_findings([run("ruff", n=1)], [f("ruff", "S9", "error", "c.py", 2)])
    assert sorted((x.tool, x.rule_id) for x in g.findings()) == [("bandit", "B1"), ("ruff", "S9")]
    assert g.delete_findings_from("b.sarif") == 1
    assert [(x.tool, x.rule_id) for x in g.findings()] == [("ruff", "S9")]
    assert [r.tool for r in g.finding_runs()] == ["ruff"]


def test_modules_and_findings_of_one_graph_are_not_seen_from_another(make_graph_store):
    a, b = make_graph_store(), make_graph_store()
    a.write_manifests([(man("requirements.txt"), [req("x")])])
    a.replace_findings([run("t")], [f("t", "R", "error", "a.py", 1)])
    assert b.manifests() == [] and b.requirements() == [] and b.module_keys() == [] and b.count_modules() == 0
    assert b.findings() == [] and b.finding_runs() == [] and b.count_findings() == 0
    assert b.delete_findings_from("s.sarif") == 0 and a.count_findings() == 1
