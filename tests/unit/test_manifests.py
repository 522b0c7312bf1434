"""Dependency manifests → modules (extract/manifests.py, graph/deps.py, codesynapse/modules):
the fixture repository fixtures/deps_repo has a manifest in every supported format; the
expected requirements are written out from the files."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from codesynapse.app import App
from codesynapse.extract.manifests import read_manifest
from codesynapse.methods import call_method
from codesynapse.settings import load_settings

REPO = Path(__file__).resolve().parents[2] / "fixtures" / "deps_repo"


def _reqs(rel: str):
    def read(p: str):
        f = REPO / p
        return f.read_text() if f.exists() else None

    mx = read_manifest(rel, (REPO / rel).read_text(), read)
    return [(r.name, r.constraint, r.resolved, r.scope, r.start_line, r.end_line) for r in mx.requirements], \
        mx.lockfile, mx.notes


def test_pyproject_pep621_dependency_groups_and_build_requires():
    reqs, lock, notes = _reqs("pyproject.toml")
    assert reqs == [
        ("PyYAML", ">=6.0", "", "", 9, 9),
        ("requests", ">=2.31,<3", "", "", 10, 10),  # extras and markers are not the constraint
        ("msgspec", "", "", "", 11, 11),
        ("pytest", ">=8", "", "optional:test", 15, 15),
        ("ruff", "==0.6.9", "", "group:lint", 18, 18),
        ("setuptools", ">=68", "", "build", 2, 2),
    ]
    assert lock == "" and notes == []


def test_poetry_tables_with_versions_from_poetry_lock():
    reqs, lock, notes = _reqs("poetry_app/pyproject.toml")
    assert reqs == [
        ("httpx", "^0.27", "0.27.2", "", 7, 7),
        ("attrs", ">=23.1", "24.2.0", "optional", 8, 8),
        ("pytest", "^8.0", "8.3.3", "group:dev", 11, 11),
    ]
    assert lock == "poetry_app/poetry.lock" and notes == []


def test_requirements_txt_with_continuation_hashes_and_editable():
    reqs, _lock, notes = _reqs("requirements.txt")
    assert reqs == [
        ("PyYAML", "==6.0.2", "", "", 2, 2),
        ("requests", "==2.32.3", "", "", 3, 4),
        ("acme-toolkit", "editable", "", "", 5, 5),
    ]
    assert notes == []


def test_package_json_with_package_lock_versions():
    reqs, lock, _notes = _reqs("web/package.json")
    assert reqs == [
        ("lodash", "^4.17.21", "4.17.21", "", 5, 5),
        ("@scope/pkg", "~2.1.0", "2.1.4", "", 6, 6),
        ("jest", "^29.7.0", "29.7.0", "dev", 9, 9),
    ]
    assert lock == "web/package-lock.json"


def test_go_mod_with_go_sum_and_an_unapplied_replace():
    reqs, lock, notes = _reqs("svc/go.mod")
    assert reqs == [
        ("github.com/pkg/errors", "v0.9.1", "v0.9.1", "", 5, 5),
        ("golang.org/x/text", "v0.14.0", "", "indirect", 8, 8),  # not in go.sum
        ("gopkg.in/yaml.v3", "v3.0.1", "v3.0.1", "", 9, 9),
    ]
    assert lock == "svc/go.sum"
    assert notes == ["line 12: replace directive not applied (gopkg.in/yaml.v3 => ../yaml)"]


def test_cargo_toml_with_renamed_crate_and_cargo_lock():
    reqs, lock, _notes = _reqs("crate/Cargo.toml")
    assert reqs == [
        ("serde", "1.0", "1.0.210", "", 7, 7),
        ("serde_json", "1.0.128", "1.0.128", "", 8, 8),
        ("rand", "0.8", "0.8.5", "", 9, 9),  # `rng = { package = "rand" }`
        ("tempfile", "3", "", "dev", 12, 12),
    ]
    assert lock == "crate/Cargo.lock"


def test_pom_properties_and_what_it_could_not_read():
    reqs, _lock, notes = _reqs("jvm/pom.xml")
    assert reqs == [
        ("com.google.guava:guava", "33.3.1-jre", "", "", 10, 14),
        ("org.junit.jupiter:junit-jupiter", "${junit.version}", "", "test", 15, 20),
    ]
    assert notes == ["line 15: property junit.version not defined in this POM"]


def test_gradle_best_effort_names_the_lines_it_did_not_read():
    reqs, _lock, notes = _reqs("jvm/build.gradle")
    assert reqs == [
        ("org.slf4j:slf4j-api", "2.0.16", "", "", 2, 2),
        ("org.junit.jupiter:junit-jupiter", "5.11.0", "", "test", 3, 3),
    ]
    assert notes == ["1 dependency declaration(s) not read (version catalog, variable or interpolated "
                     "coordinates) at line(s) 4"]
    reqs, _lock, notes = _reqs("kt/build.gradle.kts")
    assert reqs == [("com.squareup.okhttp3:okhttp", "4.12.0", "", "", 2, 2)]
    assert notes[0].endswith("at line(s) 3")


def test_a_broken_manifest_is_named_not_raised():
    mx = read_manifest("package.json", '{"dependencies": {"a": "1"', lambda p: None)
    assert mx.requirements == [] and mx.notes[0].startswith("not read: invalid JSON at line 1")
    mx = read_manifest("pom.xml", '<!DOCTYPE x [<!ENTITY a "b">]><project/>', lambda p: None)
    assert mx.notes == ["not read: the POM declares entities (not read)"]


def test_a_url_constraint_with_a_token_is_stored_redacted():
    from codesynapse.extract.redact import redact

    text = "private-lib @ https://deploy:ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5@git.example.com/x.git\n"
    mx = read_manifest("requirements.txt", text, lambda p: None, redact)
    assert mx.requirements[0].name == "private-lib"
    assert "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5" not in mx.requirements[0].constraint
    assert "REDACTED" in mx.requirements[0].constraint


@pytest.fixture()
def app(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(REPO, root)
    a = App(root, load_settings({"data_dir": str(tmp_path / "data"), "workers": 1}))
    a.index()
    yield a
    a.close()


def _module(answer, name):
    return next(m for m in answer["modules"] if m["name"] == name)


def test_modules_request_lists_versions_requirers_and_importing_files(app):
    a = call_method(app, "codesynapse/modules", {"limit": 100})
    assert a["total"] == 23  # distinct (ecosystem, key) over the ten manifests
    assert [(m["ecosystem"], m["name"]) for m in a["modules"]][:5] == [
        ("cargo", "rand"), ("cargo", "serde"), ("cargo", "serde_json"), ("cargo", "tempfile"),
        ("go", "github.com/pkg/errors")]
    yaml = _module(a, "PyYAML")
    assert yaml["ecosystem"] == "pypi"
    assert yaml["requiredBy"] == [{"manifest": "pyproject.toml", "constraint": ">=6.0", "range": [9, 9]},
                                  {"manifest": "requirements.txt", "constraint": "==6.0.2", "range": [2, 2]}]
    # PyYAML is imported as `yaml`: known from the installed distribution's metadata
    assert yaml["importedBy"] == {"files": 1, "importNames": ["_yaml", "yaml"], "via": "metadata",
                                  "top": [{"path": "app/main.py", "line": 3, "module": "yaml"}]}
    assert _module(a, "requests")["importedBy"]["top"] == [
        {"path": "app/main.py", "line": 4, "module": "requests.adapters"}]
    assert _module(a, "@scope/pkg")["importedBy"]["top"] == [
        {"path": "web/src/index.js", "line": 2, "module": "@scope/pkg/sub"}]
    assert _module(a, "@scope/pkg")["requiredBy"][0]["resolved"] == "2.1.4"
    assert _module(a, "github.com/pkg/errors")["importedBy"]["files"] == 1
    assert _module(a, "serde_json")["importedBy"]["top"] == [
        {"path": "crate/src/lib.rs", "line": 2, "module": "serde_json"}]
    assert _module(a, "jest")["importedBy"] == {"files": 0, "importNames": ["jest"], "via": "name"}
    # an import no manifest requires is left unresolved, and said so; os (stdlib) is not listed
    assert a["unmappedImports"]["top"] == [{"module": "leftpadlib", "language": "python", "files": 1}]
    assert {n["path"] for n in a["manifestNotes"]} == {"jvm/build.gradle", "jvm/pom.xml", "kt/build.gradle.kts",
                                                      "svc/go.mod"}
    assert a["tokens"] <= 8000


def test_modules_are_paged_filtered_and_budgeted(app):
    page = call_method(app, "codesynapse/modules", {"limit": 2, "offset": 1, "ecosystem": "cargo"})
    assert [m["name"] for m in page["modules"]] == ["serde", "serde_json"]
    assert page["total"] == 4 and page["hasMore"] is True
    assert page["paginationHint"] == "more modules: ask again with this cursor (or offset 3)"
    rest = call_method(app, "codesynapse/modules", {"limit": 2, "ecosystem": "cargo", "cursor": page["cursor"]})
    assert [m["name"] for m in rest["modules"]] == ["tempfile"] and rest["hasMore"] is False and "cursor" not in rest
    first = call_method(app, "codesynapse/modules", {"limit": 1, "ecosystem": "cargo"})
    walked = [m["name"] for m in first["modules"]]
    while "cursor" in first:
        first = call_method(app, "codesynapse/modules", {"limit": 1, "ecosystem": "cargo", "cursor": first["cursor"]})
        walked += [m["name"] for m in first["modules"]]
    assert len(walked) == 4 and walked[1:] == ["serde", "serde_json", "tempfile"]  # rand (as rng) first
    assert "manifestNotes" not in page  # the notes of the other ecosystems' manifests are not for this list
    assert call_method(app, "codesynapse/modules", {"ecosystem": "go"})["manifestNotes"] == [
        {"path": "svc/go.mod", "notes": "line 12: replace directive not applied (gopkg.in/yaml.v3 => ../yaml)"}]
    q = call_method(app, "codesynapse/modules", {"query": "yaml"})
    assert [m["name"] for m in q["modules"]] == ["gopkg.in/yaml.v3", "PyYAML"]
    small = call_method(app, "codesynapse/modules", {"maxTokens": 300})
    assert small["tokens"] <= 300 and small["truncated"] is True
    assert any(o["what"] == "modules" for o in small["omitted"])
    from codesynapse.errors import InvalidParams

    with pytest.raises(InvalidParams) as e:
        call_method(app, "codesynapse/modules", {"ecosystem": "cpan"})
    assert e.value.field == "ecosystem"
    for bad in ({"cursor": "not-ours", "ecosystem": "cargo"},  # not a cursor this server gave
                {"cursor": page["cursor"], "ecosystem": "go", "limit": 2},  # given for another list
                {"cursor": page["cursor"], "ecosystem": "cargo", "offset": 1}):  # both ways at once
        with pytest.raises(InvalidParams) as e:
            call_method(app, "codesynapse/modules", bad)
        assert e.value.field == "cursor"


def test_search_finds_modules(app):
    a = call_method(app, "codesynapse/search", {"query": "lodash"})
    assert a["modules"] == [{"name": "lodash", "ecosystem": "npm", "requiredBy": ["web/package.json"]}]


def test_manifests_follow_edits_and_deletions_incrementally(app):
    root = app.workspace.root
    mtimes = {m.path: m.stamp for m in app.store.manifests()}
    req = root / "requirements-dev.txt"
    req.write_text("pytest>=8  # tests\nhypothesis==6.100.0\n")
    os.utime(req, ns=(time.time_ns(), time.time_ns() + 10**9))
    (root / "svc" / "go.mod").unlink()
    app.index()
    after = {m.path: m.stamp for m in app.store.manifests()}
    assert "svc/go.mod" not in after
    assert after["requirements-dev.txt"] != mtimes["requirements-dev.txt"]
    # the manifests that did not change were not read again
    assert {p: s for p, s in after.items() if p != "requirements-dev.txt"} == \
        {p: s for p, s in mtimes.items() if p not in ("requirements-dev.txt", "svc/go.mod")}
    assert [(r.name, r.constraint) for r in app.store.requirements() if r.manifest == "requirements-dev.txt"] == \
        [("hypothesis", "==6.100.0"), ("pytest", ">=8")]
    a = call_method(app, "codesynapse/modules", {"ecosystem": "go"})
    assert a["total"] == 0


def test_a_live_update_of_a_lockfile_updates_resolved_versions(app):
    from codesynapse.watch.live import LiveUpdater

    lock = app.workspace.root / "web" / "package-lock.json"
    lock.write_text(lock.read_text().replace('"version": "4.17.21"', '"version": "4.17.22"'))
    LiveUpdater(app)._apply({"web/package-lock.json": "disk"})
    lodash = [r for r in app.store.requirements() if r.name == "lodash"]
    assert [(r.constraint, r.resolved) for r in lodash] == [("^4.17.21", "4.17.22")]


def test_a_redaction_pattern_added_later_reaches_manifests_read_before_it(tmp_path):
    """A ``redact`` pattern added to the policy of an indexed tree: the manifests read before it
    are read again (their stamp did not change on disk) and stored redacted, as the code's
    summaries are (index/indexer.py)."""
    root = tmp_path / "repo"
    shutil.copytree(REPO, root)
    (root / "requirements.txt").write_text("internal-lib @ https://pkgs.example.com/ACME-12345678/internal.tar.gz\n")
    (root / "billing.py").write_text('def bill(x):\n    """Bill under contract ACME-87654321."""\n    return x\n')
    settings = load_settings({"data_dir": str(tmp_path / "data"), "workers": 1})

    def stored(app) -> str:
        req = [r.constraint for r in app.store.requirements() if r.name == "internal-lib"]
        return " ".join(req) + " " + " ".join(s.summary for s in app.store.symbols_by_name("bill"))

    a = App(root, settings)
    try:
        a.index()
        assert "ACME-12345678" in stored(a) and "ACME-87654321" in stored(a)
    finally:
        a.close()
    (root / ".codesynapse.yaml").write_text('redact: ["ACME-[0-9]{8}"]\n')
    a = App(root, settings)  # the daemon started again (a running one indexes on the policy change)
    try:
        a.index()
        assert "ACME-" not in stored(a) and stored(a).count("REDACTED") == 2
    finally:
        a.close()
