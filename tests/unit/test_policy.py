"""The .codesynapse.yaml policy: exclusions, re-inclusion, language overrides, annotations,
fingerprints, diagnostics that point at the offending YAML node, and scope keys rejected."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codesynapse.policy import (
    DEFAULT_MAX_FILE_BYTES,
    Annotation,
    LanguageOverride,
    Policy,
    PolicyDiagnostic,
    default_policy,
    load_policy,
    parse_policy,
)
from codesynapse.policy.globs import PathMatcher, parse_path_glob

EXAMPLE = """\
version: 1
exclude: ["generated/**", "**/*.min.js"]      # globs, relative to repo root
include: ["vendor/ourlib/**"]                   # re-include a default exclusion
maxFileBytes: 1048576
languages: {"*.pyi": python, "scripts/*": python}
annotations:
  - path: "src/payments/**"
    note: "PCI scope: changes need review by #payments"
  - symbol: "pkg.mod.Class.method"
    note: "Hot path: keep allocation-free"
redact: ["ACME-[0-9]{8}"]
"""


def _policy(text: str) -> Policy:
    policy, diagnostics = parse_policy(text)
    assert [d for d in diagnostics if d.severity == "error"] == []
    return policy


def _where(diagnostics: list[PolicyDiagnostic]) -> list[tuple[int, int, str, str]]:
    return [(d.line, d.column, d.severity, d.key) for d in diagnostics]


# ---------------------------------------------------------------------------------------
# exclusion
# ---------------------------------------------------------------------------------------

DEFAULT_CASES = [
    ("src/app/main.py", False, None),
    ("README.md", False, None),
    ("node_modules", True, "excluded by default: node_modules/"),
    ("web/node_modules/react/index.js", False, "excluded by default: node_modules/"),
    (".git", True, "excluded by default: .git"),
    (".git/config", False, "excluded by default: .git"),
    (".codesynapse-data/graph.db", False, "excluded by default: .codesynapse-data/"),
    ("vendor/github.com/x/y.go", False, "excluded by default: vendor/"),
    ("third_party/zlib/zlib.h", False, "excluded by default: third_party/"),
    ("dist/bundle.js", False, "excluded by default: dist/"),
    ("pkg/build/out.o", False, "excluded by default: build/"),
    ("rust/target", True, "excluded by default: target/"),
    ("out", True, "excluded by default: out/"),
    (".venv/lib/site.py", False, "excluded by default: .venv/"),
    ("venv", True, "excluded by default: venv/"),
    ("env/bin/activate", False, "excluded by default: env/"),
    ("src/__pycache__/m.cpython-311.pyc", False, "excluded by default: __pycache__/"),
    (".tox", True, "excluded by default: .tox/"),
    (".mypy_cache/3.11/x.json", False, "excluded by default: .mypy_cache/"),
    (".pytest_cache", True, "excluded by default: .pytest_cache/"),
    (".idea/workspace.xml", False, "excluded by default: .idea/"),
    (".vscode/settings.json", False, "excluded by default: .vscode/"),
    ("coverage/lcov.info", False, "excluded by default: coverage/"),
    ("static/js/app.min.js", False, "excluded by default: *.min.js"),
    ("static/js/app.js.map", False, "excluded by default: *.map"),
    ("poetry.lock", False, "excluded by default: *.lock"),
    ("web/yarn.lock", False, "excluded by default: *.lock"),
    ("web/package-lock.json", False, "excluded by default: package-lock.json"),
    ("go.sum", False, "excluded by default: go.sum"),
    ("api/v1/service_pb2.py", False, "excluded by default: *_pb2.py"),
    ("api/v1/service_pb2_grpc.py", False, "excluded by default: *_pb2_grpc.py"),
    ("api/v1/service.pb.go", False, "excluded by default: *.pb.go"),
    ("src/client.generated.ts", False, "excluded by default: *.generated.*"),
    ("assets/logo.png", False, "excluded by default: *.png"),
    ("x.egg-info", True, "excluded by default: *.egg-info/"),
    # near misses stay in
    ("src/vendored.py", False, None),
    ("src/builder/build.py", False, None),
    ("docs/environment.md", False, None),
    ("src/outbox.py", False, None),
    ("package.json", False, None),
    ("src/map.py", False, None),
    ("src/app.min.jsx", False, None),
    ("src/generated.ts", False, None),
    ("src/build", False, None),  # a file named build: `build/` matches directories only
    (".github/workflows/ci.yml", False, None),
    (".codesynapse.yaml", False, None),
]


@pytest.mark.parametrize(("path", "is_dir", "reason"), DEFAULT_CASES)
def test_default_exclusions(path: str, is_dir: bool, reason: str | None) -> None:
    assert default_policy().excluded(path, is_dir=is_dir) == reason


CUSTOM_CASES = [
    ("generated/a.py", False, "excluded by policy: generated/**"),
    ("generated/deep/b.py", False, "excluded by policy: generated/**"),
    ("generated", True, "excluded by policy: generated/**"),
    ("src/generated/a.py", False, None),  # anchored: only at the root
    ("web/app.min.js", False, "excluded by policy: **/*.min.js"),
    ("vendor/ourlib/util.go", False, None),  # re-included
    ("vendor/ourlib", True, None),
    ("vendor", True, None),  # not pruned: vendor/ourlib is below it
    ("vendor/other/x.go", False, "excluded by default: vendor/"),
    ("vendor/other", True, "excluded by default: vendor/"),
    ("vendor/x.go", False, "excluded by default: vendor/"),
    ("src/payments/api.py", False, None),
]


@pytest.mark.parametrize(("path", "is_dir", "reason"), CUSTOM_CASES)
def test_policy_exclusions_and_reinclusion(path: str, is_dir: bool, reason: str | None) -> None:
    assert _policy(EXAMPLE).excluded(path, is_dir=is_dir) == reason


def test_gitignore_glob_semantics() -> None:
    policy = _policy(
        'exclude: ["/build", "docs/**/drafts", "*.snap", "tmp/", "notes?.txt", "data[0-9]/", "a/*/c"]\n'
    )
    cases = [
        ("build/x.c", "excluded by policy: /build"),
        # "/build" is anchored; src/build/ is still dropped by the default `build/`
        ("src/build/x.c", "excluded by default: build/"),
        ("docs/drafts/a.md", "excluded by policy: docs/**/drafts"),
        ("docs/x/y/drafts/a.md", "excluded by policy: docs/**/drafts"),
        ("docs/drafts2/a.md", None),
        ("ui/__snapshots__/App.test.js.snap", "excluded by policy: *.snap"),
        ("tmp/scratch.py", "excluded by policy: tmp/"),
        ("src/tmp/scratch.py", "excluded by policy: tmp/"),
        ("tmp", None),  # a file named tmp: `tmp/` matches directories only
        ("notes1.txt", "excluded by policy: notes?.txt"),
        ("notes10.txt", None),
        ("data7/x.csv", "excluded by policy: data[0-9]/"),
        ("datax/x.csv", None),
        ("a/b/c", "excluded by policy: a/*/c"),
        ("a/b/c/d.py", "excluded by policy: a/*/c"),
        ("a/b/x/c", None),
    ]
    for path, reason in cases:
        assert policy.excluded(path) == reason, path


def test_include_cannot_reinclude_git_or_our_data() -> None:
    policy = _policy('include: [".git/**", "**/*.py", ".codesynapse-data/"]\n')
    assert policy.excluded(".git/hooks/pre-commit.py") == "excluded by default: .git"
    assert policy.excluded(".git", is_dir=True) == "excluded by default: .git"
    assert policy.excluded(".codesynapse-data/x.py") == "excluded by default: .codesynapse-data/"
    # other defaults can be re-included
    assert policy.excluded("node_modules/pkg/index.py") is None
    assert policy.excluded("node_modules/pkg/index.js") == "excluded by default: node_modules/"


def test_an_unanchored_include_keeps_excluded_directories_walkable() -> None:
    policy = _policy('include: ["*.proto"]\n')
    assert policy.excluded("third_party", is_dir=True) is None  # a .proto may be inside
    assert policy.excluded("third_party/google/api.proto") is None
    assert policy.excluded("third_party/google/api.cc") == "excluded by default: third_party/"


def test_paths_are_normalized() -> None:
    policy = default_policy()
    assert policy.excluded("./node_modules/x.js") == "excluded by default: node_modules/"
    assert policy.excluded("web\\node_modules\\x.js") == "excluded by default: node_modules/"
    assert policy.excluded("node_modules/", is_dir=True) == "excluded by default: node_modules/"
    assert policy.excluded("") is None


def test_size_cap() -> None:
    policy = _policy("maxFileBytes: 2048\n")
    assert policy.max_file_bytes == 2048
    assert policy.size_exceeded(2048) is None
    assert policy.size_exceeded(2049) == "larger than maxFileBytes (2049 > 2048 bytes)"
    assert default_policy().max_file_bytes == 1_048_576 == DEFAULT_MAX_FILE_BYTES


# ---------------------------------------------------------------------------------------
# languages, annotations, redaction
# ---------------------------------------------------------------------------------------


def test_language_overrides_match_the_file_itself_first_match_wins() -> None:
    policy = _policy(
        'languages:\n  "*.pyi": python\n  "scripts/*": python\n  "tools/**": javascript\n'
        '  "tools/legacy/*.x": python\n'
    )
    assert policy.language_override("stubs/os.pyi") == "python"
    assert policy.language_override("scripts/deploy") == "python"
    assert policy.language_override("scripts/lib/helper.json") is None  # not the file itself
    assert policy.language_override("tools/a/b/run") == "javascript"
    assert policy.language_override("tools/legacy/old.x") == "javascript"  # earlier glob wins
    assert policy.language_override("src/main.py") is None
    assert policy.languages == (
        LanguageOverride(glob="*.pyi", language="python"),
        LanguageOverride(glob="scripts/*", language="python"),
        LanguageOverride(glob="tools/**", language="javascript"),
        LanguageOverride(glob="tools/legacy/*.x", language="python"),
    )


def test_annotations_by_path_and_by_symbol() -> None:
    policy = _policy(
        """\
annotations:
  - path: "src/payments/**"
    note: "PCI scope: changes need review by #payments"
  - path: "src/payments/refunds.py"
    note: "Refunds are idempotent by request id"
  - symbol: "pkg.mod.Class.method"
    note: "Hot path"
  - symbol: "billing.**"
    note: "Billing domain"
  - symbol: "*.tests.*"
    note: "Test helper"
  - path: "docs"
    note: "PCI scope: changes need review by #payments"
"""
    )
    assert policy.annotations_for("src/payments/refunds.py") == [
        "PCI scope: changes need review by #payments",
        "Refunds are idempotent by request id",
    ]
    assert policy.annotations_for("src/payments/api.py") == ["PCI scope: changes need review by #payments"]
    assert policy.annotations_for("src/orders/api.py") == []
    assert policy.annotations_for("src/orders/api.py", "pkg.mod.Class.method") == ["Hot path"]
    assert policy.annotations_for("src/orders/api.py", "pkg.mod.Class.method2") == []
    assert policy.annotations_for("src/orders/api.py", "pkg.mod.Class") == []
    assert policy.annotations_for("b.py", "billing") == ["Billing domain"]
    assert policy.annotations_for("b.py", "billing.invoice.Invoice.total") == ["Billing domain"]
    assert policy.annotations_for("b.py", "billingx.a") == []
    assert policy.annotations_for("t.py", "app.tests.make_user") == ["Test helper"]
    assert policy.annotations_for("t.py", "app.tests.sub.make_user") == []
    # path annotation on a directory covers files below it; duplicates are not repeated
    assert policy.annotations_for("docs/guide.md") == ["PCI scope: changes need review by #payments"]
    assert policy.annotations_for("src/payments/api.py", "billing.charge") == [
        "PCI scope: changes need review by #payments",
        "Billing domain",
    ]


def test_redact_patterns_are_compiled() -> None:
    from codesynapse.extract.redact import redact

    policy = _policy(EXAMPLE)
    assert [p.pattern for p in policy.redact_patterns] == ["ACME-[0-9]{8}"]
    assert redact("licence ACME-12345678", policy.redact_patterns) == "licence [REDACTED:custom]"
    assert default_policy().redact_patterns == ()


def test_a_secret_in_a_note_is_redacted_with_a_warning() -> None:
    policy, diagnostics = parse_policy(
        'annotations:\n  - path: "ops/**"\n    note: "deploy with ACME-12345678 and password=Sup3r-s3cret"\n'
        'redact: ["ACME-[0-9]{8}"]\n'
    )
    assert policy.annotations == (
        Annotation(path="ops/**", note="deploy with [REDACTED:custom] and password=[REDACTED:password]"),
    )
    assert _where(diagnostics) == [(2, 10, "warning", "annotations[0].note")]


def test_the_example_policy_parses_to_these_values() -> None:
    policy, diagnostics = parse_policy(EXAMPLE)
    assert diagnostics == []
    assert policy.version == 1
    assert policy.exclude == ("**/*.min.js", "generated/**")
    assert policy.include == ("vendor/ourlib/**",)
    assert policy.max_file_bytes == 1_048_576
    assert policy.annotations == (
        Annotation(path="src/payments/**", note="PCI scope: changes need review by #payments"),
        Annotation(symbol="pkg.mod.Class.method", note="Hot path: keep allocation-free"),
    )
    assert policy.redact == ("ACME-[0-9]{8}",)
    assert re.fullmatch(r"[0-9a-f]{64}", policy.fingerprint)


# ---------------------------------------------------------------------------------------
# fingerprint
# ---------------------------------------------------------------------------------------

EQUIVALENT_TO_EXAMPLE = [
    # block style, other key order, other quoting, comments, explicit defaults
    """\
# our policy
redact:
  - 'ACME-[0-9]{8}'
annotations:
  - note: 'PCI scope: changes need review by #payments'
    path: src/payments/**
  - symbol: pkg.mod.Class.method
    note: "Hot path:   keep allocation-free"
languages:
  "*.pyi": Python
  scripts/*: python
include:
  - ./vendor/ourlib/**
exclude:
  - "**/*.min.js"
  - generated/**
  - "./generated/**"
maxFileBytes: 0x100000
version: 1
""",
    EXAMPLE.replace('"generated/**"', '"/generated/**"'),
]


def test_equivalent_policies_have_equal_fingerprints() -> None:
    base = _policy(EXAMPLE)
    for text in EQUIVALENT_TO_EXAMPLE:
        other = _policy(text)
        assert other.fingerprint == base.fingerprint
        assert other == base


def test_defaults_spelled_out_equal_the_default_policy() -> None:
    spelled = _policy("version: 1\nexclude: []\ninclude: []\nmaxFileBytes: 1048576\nlanguages: {}\n"
                      "annotations: []\nredact: []\n")
    assert spelled.fingerprint == default_policy().fingerprint
    assert _policy("").fingerprint == default_policy().fingerprint
    assert _policy("# only a comment\n").fingerprint == default_policy().fingerprint


DIFFERENT_FROM_EXAMPLE = [
    EXAMPLE.replace('"generated/**"', '"generated/"'),
    EXAMPLE.replace('"generated/**"', '"gen/**"'),
    EXAMPLE.replace('include: ["vendor/ourlib/**"]', "include: []"),
    EXAMPLE.replace("maxFileBytes: 1048576", "maxFileBytes: 1048577"),
    EXAMPLE.replace('"scripts/*": python', '"scripts/*": javascript'),
    EXAMPLE.replace('{"*.pyi": python, "scripts/*": python}', '{"scripts/*": python, "*.pyi": python}'),
    EXAMPLE.replace("#payments", "#billing"),
    EXAMPLE.replace("pkg.mod.Class.method", "pkg.mod.Class.*"),
    EXAMPLE.replace('redact: ["ACME-[0-9]{8}"]', 'redact: ["ACME-[0-9]{9}"]'),
    EXAMPLE.replace('redact: ["ACME-[0-9]{8}"]', ""),
]


def test_any_effective_change_changes_the_fingerprint() -> None:
    fingerprints = {_policy(EXAMPLE).fingerprint, default_policy().fingerprint}
    for text in DIFFERENT_FROM_EXAMPLE:
        fingerprints.add(_policy(text).fingerprint)
    assert len(fingerprints) == len(DIFFERENT_FROM_EXAMPLE) + 2


def test_fingerprint_is_sha256_of_the_canonical_json() -> None:
    import hashlib
    import json

    policy = _policy("exclude: [b/**, a/**]\nmaxFileBytes: 10\n")
    canonical = policy.canonical()
    assert canonical["exclude"] == ["a/**", "b/**"]
    assert canonical["maxFileBytes"] == 10
    assert canonical["schema"] == 1
    assert canonical["defaultExclude"][:4] == [".git", ".hg/", ".svn/", ".codesynapse-data/"]
    blob = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert policy.fingerprint == hashlib.sha256(blob.encode()).hexdigest()


def test_policy_round_trips_through_msgspec() -> None:
    policy = _policy(EXAMPLE)
    data = msgspec.to_builtins(policy)
    assert data["maxFileBytes"] == 1_048_576
    assert data["annotations"][1] == {"note": "Hot path: keep allocation-free", "symbol": "pkg.mod.Class.method"}
    again = msgspec.convert(data, Policy)
    assert again == policy and again.fingerprint == policy.fingerprint
    tampered = msgspec.convert(data | {"fingerprint": "0" * 64}, Policy)
    assert tampered.fingerprint == policy.fingerprint  # always recomputed


# ---------------------------------------------------------------------------------------
# invalid policies
# ---------------------------------------------------------------------------------------

INVALID = """\
version: 2
exlude: ["x/**"]
exclude:
  - "ok/**"
  - "[abc"
  - "!keep/**"
  - "../outside"
maxFileBytes: -5
languages:
  "*.pyi": pyhton
  "docs/": markdown
annotations:
  - path: "src/**"
  - symbol: "a.b"
    path: "c"
    note: "both"
  - note: "fine"
    path: "lib/**"
    owner: "me"
redact: ["ACME-[0-9"]
tenant: "acme"
"""


def test_invalid_policy_diagnostics_point_at_the_offending_nodes() -> None:
    previous = _policy(EXAMPLE)
    policy, diagnostics = parse_policy(INVALID, previous)
    assert policy is previous
    assert _where(diagnostics) == [
        (0, 9, "error", "version"),
        (1, 0, "error", "exlude"),
        (4, 4, "error", "exclude[1]"),
        (5, 4, "error", "exclude[2]"),
        (6, 4, "error", "exclude[3]"),
        (7, 14, "error", "maxFileBytes"),
        (9, 11, "warning", "languages.*.pyi"),
        (10, 2, "error", "languages.docs/"),
        (12, 4, "error", "annotations[0]"),
        (13, 4, "error", "annotations[1]"),
        (18, 4, "error", "annotations[2].owner"),
        (19, 9, "error", "redact[0]"),
        (20, 0, "error", "tenant"),
    ]
    messages = [d.message for d in diagnostics]
    assert messages[0] == "version: unsupported version 2; this server understands version 1"
    assert messages[1] == "exlude: unknown key 'exlude'; did you mean 'exclude'?"
    assert messages[2] == "exclude[1]: glob '[abc': unterminated character class '['"
    assert "negation ('!') is not supported" in messages[3]
    assert "'..' segments are not allowed" in messages[4]
    assert messages[5] == "maxFileBytes: must be a positive number of bytes (found -5)"
    assert messages[6] == "languages.*.pyi: 'pyhton' is not a language this server indexes; did you mean 'python'?"
    assert messages[8] == "annotations[0]: 'note' is required"
    assert "exactly one of 'path'" in messages[9]
    assert messages[10].startswith("annotations[2].owner: unknown key 'owner'")
    assert messages[11].startswith("redact[0]: redact pattern 'ACME-[0-9': invalid regular expression")
    assert "cannot set 'tenant'" in messages[12]
    d = diagnostics[2]
    assert (d.end_line, d.end_column) == (4, 10)  # the whole "[abc" scalar, quotes included


def test_without_a_previous_policy_an_invalid_one_falls_back_to_the_default() -> None:
    policy, diagnostics = parse_policy(INVALID)
    assert policy is default_policy()
    # the same 13 problems as with a previous policy in force: falling back hides none of them
    assert [(line, sev, field) for line, _col, sev, field in _where(diagnostics)] == [
        (0, "error", "version"), (1, "error", "exlude"), (4, "error", "exclude[1]"), (5, "error", "exclude[2]"),
        (6, "error", "exclude[3]"), (7, "error", "maxFileBytes"), (9, "warning", "languages.*.pyi"),
        (10, "error", "languages.docs/"), (12, "error", "annotations[0]"), (13, "error", "annotations[1]"),
        (18, "error", "annotations[2].owner"), (19, "error", "redact[0]"), (20, "error", "tenant"),
    ]


def test_previous_policy_stays_in_force_across_edits() -> None:
    first, _ = parse_policy(EXAMPLE)
    broken, diagnostics = parse_policy(EXAMPLE + "maxFileBytes: 10\n", first)  # duplicate key
    assert broken is first
    assert _where(diagnostics) == [(11, 0, "error", "maxFileBytes")]
    assert diagnostics[0].message == "maxFileBytes: duplicate key (first set on line 4)"
    fixed, diagnostics = parse_policy(EXAMPLE.replace("1048576", "2048"), broken)
    assert diagnostics == [] and fixed.max_file_bytes == 2048


def test_warnings_do_not_block_a_policy() -> None:
    policy, diagnostics = parse_policy('languages: {"*.tpl": jinja}\n')
    assert [d.severity for d in diagnostics] == ["warning"]
    assert policy.language_override("web/index.tpl") == "jinja"


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("exclude: [*.min.js]\n", (0, 11, "error", ""),
         "invalid YAML: expected alphabetic or numeric character, but found '.' (while scanning an alias); "
         "quote globs that start with '*', e.g. \"*.min.js\""),
        ("exclude:\n  - a\n - b\n", (2, 1, "error", ""), None),
        ("exclude: [a, b\n", (1, 0, "error", ""), None),
        ("- a\n- b\n", (0, 0, "error", ""), "the policy must be a mapping of keys (version, exclude, include, "
         "maxFileBytes, languages, annotations, redact, findings), found a list"),
        ("exclude: generated/**\n", (0, 9, "error", "exclude"), "exclude: expected a list of globs, found a string"),
        ("exclude: [[a]]\n", (0, 10, "error", "exclude[0]"), "exclude[0]: expected a glob, found a list"),
        ("exclude: " + "[" * 100 + "]" * 100, (0, 0, "error", ""), "invalid YAML: nested too deeply"),
        ('maxFileBytes: "1MB"\n', (0, 14, "error", "maxFileBytes"),
         "maxFileBytes: expected a whole number of bytes, found a string"),
        ("maxFileBytes: 0\n", (0, 14, "error", "maxFileBytes"), "maxFileBytes: must be a positive number of bytes (found 0)"),
        ("maxFileBytes: true\n", (0, 14, "error", "maxFileBytes"),
         "maxFileBytes: expected a whole number of bytes, found true/false"),
        ("maxFileBytes: 2000000000\n", (0, 14, "error", "maxFileBytes"),
         "maxFileBytes: at most 1073741824 bytes (1 GiB) (found 2000000000)"),
        ('version: "1"\n', (0, 9, "error", "version"), "version: expected the number 1, found a string"),
        ("languages: [python]\n", (0, 11, "error", "languages"),
         "languages: expected a mapping of glob → language, found a list"),
        ("annotations:\n  - just a string\n", (1, 4, "error", "annotations[0]"),
         "annotations[0]: expected a mapping with 'path' or 'symbol' and 'note', found a string"),
        ('annotations:\n  - symbol: "a..b"\n    note: x\n', (1, 12, "error", "annotations[0].symbol"),
         "annotations[0].symbol: symbol glob 'a..b': empty name component"),
        ('annotations:\n  - path: "x"\n    note: "   "\n', (2, 10, "error", "annotations[0].note"),
         "annotations[0].note: must not be empty"),
        ('redact: ["x*"]\n', (0, 9, "error", "redact[0]"), "redact[0]: redact pattern 'x*': matches the empty string"),
        ("exclude: ['a//b']\n", (0, 10, "error", "exclude[0]"), "exclude[0]: glob 'a//b': empty path segment ('//')"),
    ],
)
def test_single_error_diagnostics(text: str, where: tuple[int, int, str, str], message: str | None) -> None:
    policy, diagnostics = parse_policy(text)
    assert policy is default_policy()
    assert _where(diagnostics) == [where]
    if message is not None:
        assert diagnostics[0].message == message


@pytest.mark.parametrize(
    "key", ["tenant", "tenant_id", "tenantId", "namespace", "session", "sessionId", "graph", "graphId", "graph_id", "scope"]
)
def test_scope_keys_are_rejected(key: str) -> None:
    previous = _policy(EXAMPLE)
    policy, diagnostics = parse_policy(f'exclude: ["x/**"]\n{key}: other\n', previous)
    assert policy is previous
    assert _where(diagnostics) == [(1, 0, "error", key)]
    assert diagnostics[0].message == (
        f"{key}: a repository policy cannot set '{key}': the tenant, graph, namespace and session "
        "scope is fixed by the server and cannot be chosen or widened by a policy"
    )


def test_scope_keys_are_rejected_inside_annotations_too() -> None:
    _, diagnostics = parse_policy('annotations:\n  - path: "a/**"\n    note: n\n    namespace: other\n')
    assert _where(diagnostics) == [(3, 4, "error", "annotations[0].namespace")]


def test_policy_has_no_scope_fields() -> None:
    fields = set(Policy.__struct_fields__)
    assert fields == {"version", "exclude", "include", "max_file_bytes", "languages", "annotations", "redact",
                      "findings", "fingerprint"}


# ---------------------------------------------------------------------------------------
# load_policy
# ---------------------------------------------------------------------------------------


def test_load_policy_without_a_file_is_the_default(tmp_path: Path) -> None:
    assert load_policy(tmp_path) == (default_policy(), [])


def test_load_policy_reads_the_file(tmp_path: Path) -> None:
    (tmp_path / ".codesynapse.yaml").write_text(EXAMPLE, encoding="utf-8")
    policy, diagnostics = load_policy(tmp_path)
    assert diagnostics == []
    assert policy == _policy(EXAMPLE)


def test_load_policy_keeps_the_previous_policy_when_the_file_breaks(tmp_path: Path) -> None:
    path = tmp_path / ".codesynapse.yaml"
    path.write_text(EXAMPLE, encoding="utf-8")
    good, _ = load_policy(tmp_path)
    path.write_text("exclude: [unclosed\n", encoding="utf-8")
    policy, diagnostics = load_policy(tmp_path, good)
    assert policy is good
    assert _where(diagnostics) == [(1, 0, "error", "")]
    path.write_bytes(b"exclude: ['caf\xe9']\n")
    policy, diagnostics = load_policy(tmp_path, good)
    assert policy is good
    assert diagnostics == [PolicyDiagnostic(message=".codesynapse.yaml is not valid UTF-8 (byte 14)",
                                            line=0, end_line=0, end_column=1)]
    path.unlink()
    assert load_policy(tmp_path, good) == (default_policy(), [])


# ---------------------------------------------------------------------------------------
# the fast matcher agrees with plain gitignore regexes
# ---------------------------------------------------------------------------------------

_SEGMENTS = st.sampled_from(["a", "b", "src", "node_modules", "x.min.js", "y.py", "z_pb2.py", "build", "c.d.e", ".git"])
_GLOBS = st.sampled_from([
    "a", "b/", "src/**", "**/b", "*.py", "*.min.js", "a/*/c", "node_modules/", "*_pb2.py", "x*", "?.py",
    "[ab]", "src/*.py", "/b", "a/**/y.py", "*.d.*", "build/",
])


def _reference(globs: list[str], path: str, is_dir: bool) -> bool:
    """gitignore semantics written plainly: a glob matches the path or one of its parent
    directories. For a directory, a glob that matches everything inside it (``dir/**``)
    counts as matching the directory too: that is what lets a walker prune it."""
    for text in globs:
        g = parse_path_glob(text)
        rx = re.compile(g.body + r"\Z", re.DOTALL)
        if is_dir and rx.match(path + "/"):
            return True
        parts = path.split("/")
        for k in range(1, len(parts) + 1):
            prefix = "/".join(parts[:k])
            prefix_is_dir = k < len(parts) or is_dir
            if (prefix_is_dir or not g.dir_only) and rx.match(prefix):
                return True
    return False


@settings(max_examples=400, deadline=None)
@given(st.lists(_GLOBS, min_size=1, max_size=5), st.lists(_SEGMENTS, min_size=1, max_size=5), st.booleans())
def test_fast_matcher_agrees_with_the_reference(globs: list[str], segments: list[str], is_dir: bool) -> None:
    path = "/".join(segments)
    matcher = PathMatcher([parse_path_glob(g) for g in globs])
    assert (matcher.match(path, is_dir) is not None) == _reference(globs, path, is_dir)


def test_directory_pruning_never_hides_an_included_path() -> None:
    """Brute force over a small tree: whenever a path below a directory matches an include
    glob, the directory must not be reported as prunable."""
    import itertools

    names = ["a", "b", "src", "x.py", "c.d"]
    paths = ["/".join(p) for n in range(1, 5) for p in itertools.product(names, repeat=n)]
    dirs = sorted({p for p in paths if p.count("/") <= 2})
    for glob in ["a", "b/", "src/**", "**/b", "*.py", "a/*/c.d", "/b", "a/**/x.py", "src/*/b/**", "[ab]/x.py"]:
        matcher = PathMatcher([parse_path_glob(glob)])
        for d in dirs:
            below = any(matcher.match(p) is not None for p in paths if p.startswith(d + "/"))
            if below:
                assert matcher.may_match_below(d), (glob, d)


_YAMLISH = st.text(alphabet=st.sampled_from(list("abexcludinrtsvo:-[]{}\"'*&!#|>\n  .0129/?,@%")), max_size=200)


@settings(max_examples=400, deadline=None)
@given(st.one_of(_YAMLISH, st.text(max_size=200)))
def test_any_text_gives_a_policy_and_diagnostics_never_an_exception(text: str) -> None:
    previous = default_policy()
    policy, diagnostics = parse_policy(text, previous)
    assert isinstance(policy, Policy)
    for d in diagnostics:
        assert d.severity in {"error", "warning"}
        assert 0 <= d.line <= d.end_line and d.column >= 0 and d.end_column >= 0
    if any(d.severity == "error" for d in diagnostics):
        assert policy is previous
