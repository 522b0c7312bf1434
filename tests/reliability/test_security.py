"""Security: secrets never reach a store or an answer; paths outside the workspace are
refused everywhere; the policy file cannot widen the scope; an adversarial tenant /
namespace / session collision suite finds nothing foreign.

The secrets corpus is ``fixtures/secrets`` (cloud keys, tokens, passwords, private keys,
connection strings in code, comments, docstrings, YAML, JSON, .env, Markdown), with every
planted value listed in ``tests/unit/test_redact.py``, and ``fixtures/secrets/prose``
(passwords written in prose: "use password X", "admin password X (…)", "password for the
read replica: X", and YAML block scalars ``password: |``), listed in ``PROSE_PLANTED`` here
with the ordinary prose and code beside them that must stay as it is. A policy maps the files no extractor
reads (.env, .txt, .pem, npmrc, pypirc) to YAML or Markdown so that every planted value
goes through extraction; the memory gets entities, aliases and facts made of them too.
Then every file of the data folder (SQLite graph and memory with their WAL files, the
milvus-lite data) and every answer is scanned for every planted value.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import time
import zlib
from pathlib import Path
from typing import Any

import pytest

from tests.reliability.rawlsp import RawLsp, RpcError
from tests.unit.test_redact import PLANTED

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
# fixtures/secrets/prose: every planted value, written out
PROSE_PLANTED: dict[str, list[str]] = {
    "prose/ops_notes.py": ["Vx7qLm2Rk9Tz", "Hq4nW8zPc2Lf-19", "Kp9vX2mQ7rT4", "Rb6tY3nMq8Wd", "Jz5cN1vBx7Ks",
                           "Gm3pQ9xLr6Tv"],
    "prose/deploy.yaml": ["Wf8kT2xNq5Zr", "Yc4mS7bLp2Qn", "Nd6vR3kXw9Ht", "Pq2zL8mCf5Jb", "Tk7wQ3zRx9Lm2Vb8Nc4Hs"],
    "prose/access.md": ["Mz8xK4pWq2Rv", "Bn5tH9cLx3Fs"],
}
# the same values as an agent might copy them into memory (a block scalar's key and value
# on one line: memory text has no newlines)
PROSE_MEMORY_LINES = [
    "Log in to the bastion with password Vx7qLm2Rk9Tz before running these.",
    "Use password Hq4nW8zPc2Lf-19 for staging.", "Default admin password Kp9vX2mQ7rT4 (change it).",
    "Password for the read replica: Rb6tY3nMq8Wd.", 'password for backup@example.org = "Jz5cN1vBx7Ks"',
    "The password of the vault admin is Gm3pQ9xLr6Tv.", "password: Wf8kT2xNq5Zr", "replica_password: Yc4mS7bLp2Qn",
    "secret: Nd6vR3kXw9Ht", "secret: Pq2zL8mCf5Jb", "token: Tk7wQ3zRx9Lm2Vb8Nc4Hs",
    "The password for the staging database: Mz8xK4pWq2Rv", "Log in with password Bn5tH9cLx3Fs, then rotate it.",
]
# Secrets only the repository policy's ``redact:`` patterns know (POLICY below): in a heading
# and a config key of fixtures/secrets/policy, and in the memory of fixtures/secrets/memory
POLICY_PLANTED = ["ACME-LIC-48213907", "ACME-LIC-59302817", "ACME-LIC-73019264", "ACME7305918264",
                  "ACME-LIC-60418273", "ACME5820193746"]
# fixtures/secrets/memory/remember.json: remember params with secrets in an entity's type and
# aliases, a fact's predicate and source (issue 17)
MEMORY_PLANTED = ["AKIAZJTA2SKNTDRODMAT", "AKIA6PE03KS8O79GMRBE", "ghp_5D99UbnilshbdE1beeo87TGYVJ7pjblRRZ5Y"]
SECRETS = sorted({s for values in [*PLANTED.values(), *PROSE_PLANTED.values(), POLICY_PLANTED, MEMORY_PLANTED]
                  for s in values}, key=len, reverse=True)
SECRET_RE = re.compile(b"|".join(re.escape(s.encode()) for s in SECRETS))
POLICY = """version: 1
languages:
  "*.env": yaml
  "npmrc": yaml
  "pypirc": yaml
  "*.txt": markdown
  "*.pem": markdown
annotations:
  - path: "settings.py"
    note: "Billing settings; the old key was sk_live_lqbHgNLhBrTrK2GhMPhBfJBB"
redact:
  - "ACME-LIC-[0-9]{8}"
  - "ACME[0-9]{10}"
"""


def remember_params() -> dict:
    """fixtures/secrets/memory/remember.json without its note."""
    params = json.loads((FIXTURES / "secrets" / "memory" / "remember.json").read_text())
    params.pop("note")
    return params


def leaks_in(data: bytes) -> list[str]:
    return sorted({m.group(0).decode("utf-8", "replace") for m in SECRET_RE.finditer(data)})


def scan_tree(path: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for p in sorted(path.rglob("*")):
        if p.is_file() and not p.is_symlink():
            data = p.read_bytes()
            if p.suffix == ".kept":  # a large file's extraction kept for live updates, compressed
                data = zlib.decompress(data)
            hits = leaks_in(data)
            if hits:
                found[str(p.relative_to(path))] = hits
    return found


@pytest.fixture(scope="module")
def outside(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("outside-the-workspace")
    (out / "escape.py").write_text('def outside_secret_fn():\n    """Lives outside."""\n    return 1\n')
    (out / "sub").mkdir()
    (out / "sub" / "deep.py").write_text("def outside_deep_fn():\n    return 2\n")
    return out


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, outside) -> Path:
    root = tmp_path_factory.mktemp("sec") / "secrets_repo"
    shutil.copytree(FIXTURES / "secrets", root)
    (root / ".codesynapse.yaml").write_text(POLICY)
    (root / "link_out").symlink_to(outside, target_is_directory=True)  # a symlinked folder out
    (root / "escape_link.py").symlink_to(outside / "escape.py")  # a symlinked file out
    (root / "app.py").write_text(
        "from settings import *\n\n\ndef connect():\n    \"\"\"Connect; the staging admin password is Adm1nStag1ng-77.\"\"\"\n"
        "    return open_db('postgres://app:Tr0ub4dor&3@db/app')\n")
    return root


@pytest.fixture(scope="module")
def daemon(workspace, tmp_path_factory):
    data = tmp_path_factory.mktemp("sec-data")
    d = RawLsp(data, env={"CODESYNAPSE_TENANT": "acme", "CODESYNAPSE_LOG": "1"}, log=data.parent / "sec-daemon.log")
    d.initialize(workspace)
    d.wait_ready()
    d.data = data  # type: ignore[attr-defined]
    yield d
    d.close()


def test_the_corpus_really_holds_the_secrets(workspace):
    raw = b"".join(p.read_bytes() for p in workspace.rglob("*") if p.is_file() and not p.is_symlink())
    assert set(leaks_in(raw)) == set(SECRETS)


# ---- secrets -----------------------------------------------------------------------------------


def _all_answers(d: RawLsp, workspace: Path) -> list[tuple[str, Any]]:
    """Every kind of answer over the whole corpus: cards, contexts, call graphs and snippets
    of every symbol, searches, minimal and PR contexts, standard LSP features, memory."""
    out: list[tuple[str, Any]] = []

    def ask(method: str, params: Any) -> None:
        try:
            out.append((f"{method} {json.dumps(params)[:80]}", d.request(method, params)))
        except RpcError as e:
            out.append((f"{method} error", {"message": e.message, "data": e.data}))

    ask("codesynapse/indexStatus", {})
    db = sqlite3.connect(f"file:{d.data / 'graph.db'}?mode=ro", uri=True)
    qnames = [r[0] for r in db.execute("SELECT DISTINCT qname FROM symbols ORDER BY qname")]
    paths = [r[0] for r in db.execute("SELECT path FROM files ORDER BY path")]
    db.close()
    assert len(qnames) > 20 and len(paths) >= 10
    for q in qnames:
        ask("codesynapse/symbolCard", {"selector": q, "includeIds": True})
        ask("codesynapse/symbolContext", {"selector": q})
        ask("codesynapse/callGraph", {"selector": q, "depth": 3})
        for mode in ("full", "head_tail", "signature"):
            ask("codesynapse/snippet", {"selector": q, "mode": mode, "maxLines": 5000})
        for lines in (2, 3, 5, 8):  # cuts land inside multi-line secrets (PEM bodies, YAML block values)
            ask("codesynapse/snippet", {"selector": q, "mode": "head_tail", "maxLines": lines})
    for word in ("password", "secret", "token", "key", "api", "auth", "client", "database", "stripe", "aws",
                 "connection", "private", "webhook", "config", "deploy", "admin", "access", "licence", "slack",
                 "grants", "tokens", "keys", "github", "url", "release"):
        for mode in ("full", "compact", "summary"):
            ask("codesynapse/search", {"query": word, "mode": mode, "limit": 500, "includeIds": True})
    for task in ("how is the database password configured", "where is the stripe key used", "deploy key and tokens",
                 "which licence and access keys does the release use", "build the reporting database url"):
        ask("codesynapse/minimalContext", {"task": task, "paths": paths[:100], "maxTokens": 20000})
    diff = "".join(f"--- a/{p}\n+++ b/{p}\n@@ -1,400 +1,400 @@\n+changed\n" for p in paths)
    ask("codesynapse/prContext", {"diff": diff, "maxTokens": 20000})
    for p in paths:
        uri = (workspace / p).as_uri()
        ask("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
        for line in range(0, 60, 3):
            ask("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": line, "character": 6}})
            ask("codesynapse/symbolCard", {"selector": {"uri": uri, "line": line}})
    for query in ("", "key", "password", "secret"):
        ask("workspace/symbol", {"query": query})
    return out


def corpus_lines() -> list[str]:
    """The corpus lines that hold a planted value, as an agent might copy them into memory."""
    out: list[str] = list(PROSE_MEMORY_LINES)
    for name, values in PLANTED.items():
        text = (FIXTURES / "secrets" / name).read_text()
        if "PRIVATE KEY-----" in text:
            head = text.splitlines()
            out.append(f"{head[0]} {head[1]}")  # a key copied from its BEGIN line
            continue
        for line in text.splitlines():
            line = line.strip()
            if any(v in line for v in values) and len(line) <= 256:
                out.append(line)
    return list(dict.fromkeys(out))


def test_secrets_never_reach_a_store_or_an_answer(daemon, workspace):
    d = daemon
    # memory made of the corpus: every line that holds a planted value (a private key from
    # its BEGIN line) as entity names, aliases, fact endpoints and source clients
    lines = corpus_lines()
    d.request("codesynapse/memory/remember", remember_params())
    for i in range(0, len(lines), 4):
        part = lines[i:i + 4]
        d.request("codesynapse/memory/remember", {
            "entities": [{"name": ln, "aliases": [lines[(i + j + 1) % len(lines)]], "type": "secret",
                          "durable": True} for j, ln in enumerate(part)],
            "facts": [{"subject": f"service {j}", "predicate": "uses", "object": ln, "sourceClient": ln[:128],
                       "durable": bool(j % 2)} for j, ln in enumerate(part)]})
    answers = _all_answers(d, workspace)
    for q in ("service", "password", "token", "key", "uses", "postgres", "secret", "api", "upload job",
              "licence server", "licence"):
        answers.append((f"recall {q}", d.request("codesynapse/memory/recall", {"query": q, "hops": 2,
                                                                            "includeIds": True})))
    answers.append(("list", d.request("codesynapse/memory/list", {"limit": 200, "includeIds": True})))
    leaked = {what: leaks_in(json.dumps(a, ensure_ascii=False).encode()) for what, a in answers}
    leaked = {k: v for k, v in leaked.items() if v}
    assert not leaked, f"secrets in answers: {dict(list(leaked.items())[:5])}"
    # the redactions are there, not just an empty index
    cards = [a for w, a in answers if w.startswith("codesynapse/snippet") and isinstance(a, dict) and "text" in a]
    assert any("[REDACTED:" in c["text"] for c in cards)
    mem = [a for w, a in answers if w.startswith("list")][0]
    assert any("[REDACTED:" in e["name"] for e in mem["entries"])

    # the stores on disk: graph, memory and vectors (WAL files included), every byte
    d.request("codesynapse/indexStatus", {})
    found = scan_tree(d.data)
    assert not found, f"secrets stored on disk: {found}"
    # nor in the daemon's log (INFO level: CODESYNAPSE_LOG)
    log = d.data.parent / "sec-daemon.log"
    assert log.stat().st_size > 0 and leaks_in(log.read_bytes()) == []
    _record(answers=len(answers), secrets=len(SECRETS), files_scanned=sum(1 for p in d.data.rglob("*") if p.is_file()))


# Passwords in prose and YAML block scalars: (text, what the redactor makes of it), written out.
PROSE_CASES = [
    ("Use password Adm1nStag1ng-77 for staging.", "Use password [REDACTED:password] for staging."),
    ("Default admin password Kp9vX2mQ7rT4 (change it).", "Default admin password [REDACTED:password] (change it)."),
    ("# use password Kp9vX2mQ7rT4", "# use password [REDACTED:password]"),
    ("login with password 'hunt3r!'", "login with password '[REDACTED:password]'"),
    ("ALTER USER bob WITH PASSWORD 'Kp9vX2mQ7rT4';", "ALTER USER bob WITH PASSWORD '[REDACTED:password]';"),
    ("The password for staging: Kp9vX2mQ7rT4", "The password for staging: [REDACTED:password]"),
    ("password for the admin account: hunter2xyz", "password for the admin account: [REDACTED:password]"),
    ("Password for db: s3cr3tPass", "Password for db: [REDACTED:password]"),
    ("password for root = 'abc12'", "password for root = '[REDACTED:password]'"),
    ("The password of the vault admin is Gm3pQ9xLr6Tv.", "The password of the vault admin is [REDACTED:password]."),
    ("password: |\n  Zr9#vQ2!mLp7\n", "password: |\n  [REDACTED:password]\n"),
    ("db:\n  password: |\n    Zr9vQ2mLp7xx\n    second line\n\n  user: x\n",
     "db:\n  password: |\n    [REDACTED:password]\n\n  user: x\n"),
    ("secret: >-\n  kQ8r2ZfW9xLm4TbV7nYp3CsH6uJe1GdA\n", "secret: >-\n  [REDACTED:generic_secret]\n"),
    ("- password: |-\n    Zr9vQ2mLp7xx\n  user: x\n", "- password: |-\n    [REDACTED:password]\n  user: x\n"),
    ('"db_password": |\n  Zr9vQ2mLp7xx\n', '"db_password": |\n  [REDACTED:password]\n'),
    ("token: |\n  Tk7wQ3zRx9Lm2Vb8Nc4Hs\n", "token: |\n  [REDACTED:generic_token]\n"),
]
# Ordinary prose, code and config about passwords: unchanged.
PROSE_NEGATIVES = [
    "def check_password(password):",
    "the password is hashed",
    "The password is hashed with scrypt; use password hashing for every new store.",
    "Use password hashing for storage.",
    "use password authentication",
    "password for the user is required",
    "The password for the account: the one in the vault.",
    "The password for user: str",
    "password for the database: ${DB_PASSWORD}",
    "passwords for the users: see vault",
    "Use password SHA-256 hashing",
    "password v1.2.3 format",
    "set password NEW_PASSWORD_ENV",
    "password base64-encoded",
    "password pbkdf2_sha256",
    "if password and len(password) > 8:",
    "func Login(user string, password string) error",
    'print("password", x)',
    "password 'hunter'",
    '"GET ../../../../etc/passwd HTTP/1.1\\r\\n" +',
    "Pass the password via the PGPASSWORD environment variable.",
    "password: |\n  ${DB_PASSWORD}\n",
    "password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6231\n",
    "token: |\n  rotate every ninety days\n",
    "description: |\n  The password is hashed; the password for each user is salted.\n",
    "password_policy: |\n  at least twelve characters\n",
]


def test_a_kept_extraction_holds_no_secret_and_no_source(tmp_path):
    """The extraction of a large Python file is kept on disk for its first live change
    (extract/incremental.py, ``<data dir>/kept``): decompressed, it holds no planted value and
    none of the file's code, only what the graph holds (names, signatures, redacted summaries)."""
    from codesynapse.extract import incremental
    from codesynapse.index.indexer import Indexer
    from codesynapse.store.sqlite.graph import SqliteGraphStore

    planted = (FIXTURES / "secrets" / "settings.py").read_text() + "\n\n" + \
        (FIXTURES / "secrets" / "prose" / "ops_notes.py").read_text()
    filler = "".join(f"def filler_{i}(x):\n    return x * {i} + 11\n\n\n" for i in range(900))
    text = planted + "\n\n" + filler + planted
    assert len(text.encode()) >= incremental.MIN_BYTES
    assert set(leaks_in(text.encode())) >= {"Wq8nL2vRz7", "AKIAHRCTVVURXGF7PJW5", "Vx7qLm2Rk9Tz"}
    root = tmp_path / "repo"
    root.mkdir()
    (root / "big_settings.py").write_text(text)
    store = SqliteGraphStore(tmp_path / "g.db", "g")
    Indexer(root, store, None, workers=1, keep_dir=tmp_path / "kept").index_tree()
    store.close()
    kept = list((tmp_path / "kept").glob("*.kept"))
    assert len(kept) == 1
    raw = zlib.decompress(kept[0].read_bytes())
    assert leaks_in(raw) == []
    assert b"[REDACTED:" in raw  # the summaries are there, redacted
    assert b"filler_450" in raw and b"x * 450 + 11" not in raw


@pytest.mark.parametrize(("text", "expected"), PROSE_CASES)
def test_prose_and_block_scalar_passwords_are_redacted(text, expected):
    from codesynapse.extract.redact import redact

    assert redact(text) == expected
    assert redact(expected) == expected  # idempotent


@pytest.mark.parametrize("text", PROSE_NEGATIVES)
def test_ordinary_prose_about_passwords_stays(text):
    from codesynapse.extract.redact import redact

    assert redact(text) == text


def test_passwords_in_other_prose_forms_are_redacted(tmp_path):
    """The prose corpus indexed: summaries hold redactions where a password was, ordinary
    prose is kept word for word, and no planted value is in any stored byte."""
    from codesynapse.app import App
    from codesynapse.settings import load_settings

    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "secrets" / "prose", root)
    app = App(root, load_settings({"data_dir": str(tmp_path / "d"), "watch": False}))
    try:
        app.index()
        summaries = {s.qname: s.summary for s in app.store.all_symbols() if s.summary}
    finally:
        app.close()
    assert summaries == {
        "access.md#Staging access (FAKE credentials planted for redaction tests)":
            "The password for the staging database: [REDACTED:password]",
        "access.md#Staging access (FAKE credentials planted for redaction tests) > Hashing":
            "The password is hashed with scrypt; use password hashing for every new store.",
        "deploy.yaml#database": "Deployment settings (FAKE credentials planted for redaction tests)",
        "deploy.yaml#notes": "Ordinary values: nothing below is a secret.",
        "ops_notes": "Operations helpers (FAKE credentials planted for redaction tests).",
        "ops_notes.admin": "Default admin password [REDACTED:password] (change it).",
        "ops_notes.backup": 'password for backup@example.org = "[REDACTED:password]"',
        "ops_notes.check_password": "Check a password against the stored hash; the password is hashed with scrypt.",
        "ops_notes.password_hash": "Use password hashing for storage; the password for each user is salted.",
        "ops_notes.replica": "Password for the read replica: [REDACTED:password].",
        "ops_notes.rotate": "Rotate a password (see NEW_PASSWORD_ENV); password SHA-256 digests are never logged.",
        "ops_notes.stage": "Use password [REDACTED:password] for staging.",
        "ops_notes.vault": "The password of the vault admin is [REDACTED:password].",
    }
    assert not scan_tree(tmp_path / "d")


def test_the_prose_corpus_holds_its_planted_values():
    for name, values in PROSE_PLANTED.items():
        text = (FIXTURES / "secrets" / name).read_text()
        assert [v for v in values if v not in text] == [], name


# ---- paths outside the workspace -----------------------------------------------------------------


def outside_uris(workspace: Path, outside: Path) -> list[str]:
    root = workspace.as_posix()
    return [
        (outside / "escape.py").as_uri(), f"file://{root}/../{outside.name}/escape.py",
        f"file://{root}/link_out/escape.py", f"file://{root}/link_out/sub/deep.py", f"file://{root}/escape_link.py",
        f"file://{root}/%2e%2e/%2e%2e/etc/passwd", "file:///etc/passwd", f"{root}/../../etc/passwd",
        "/etc/passwd", "../../etc/passwd", "link_out/escape.py", "escape_link.py", f"file://{root}/link_out/../../x.py",
        "file://otherhost/etc/passwd", "https://example.com/app.py",
    ]


@pytest.mark.parametrize("method", ["codesynapse/symbolCard", "codesynapse/symbolContext", "codesynapse/callGraph",
                                    "codesynapse/snippet"])
def test_selector_uris_outside_are_refused(daemon, workspace, outside, method):
    for uri in outside_uris(workspace, outside):
        with pytest.raises(RpcError) as e:
            daemon.request(method, {"selector": {"uri": uri, "line": 0}})
        assert e.value.code == -32602 and e.value.data["field"] == "selector.uri", (uri, e.value)


def test_minimal_context_paths_outside_are_refused(daemon, workspace, outside):
    for uri in outside_uris(workspace, outside):
        with pytest.raises(RpcError) as e:
            daemon.request("codesynapse/minimalContext", {"task": "connect", "paths": ["settings.py", uri]})
        assert e.value.code == -32602 and e.value.data["field"] == "paths[1]", (uri, e.value)


def test_pr_context_never_reads_outside(daemon, workspace, outside):
    diff = "".join(f"--- a/{p}\n+++ b/{p}\n@@ -1,3 +1,3 @@\n+x\n" for p in
                   ["../outside/escape.py", "link_out/escape.py", "escape_link.py", "/etc/passwd", "../../etc/passwd"])
    a = daemon.request("codesynapse/prContext", {"diff": diff})
    assert a["changed"] == []
    for bad in ("--output=/tmp/pwned", "-p", "HEAD;id", "$(id)", "a b"):
        with pytest.raises(RpcError) as e:
            daemon.request("codesynapse/prContext", {"base": bad})
        assert e.value.code == -32602 and e.value.data["field"] in ("base", "head")
    assert not Path("/tmp/pwned").exists()


def test_nothing_outside_is_indexed_or_served(daemon, workspace, outside):
    d = daemon
    for name in ("outside_secret_fn", "outside_deep_fn", "overlay_outside_fn", "late_link_fn"):
        assert d.request("codesynapse/search", {"query": name})["results"] == [] or all(
            name not in json.dumps(r) for r in d.request("codesynapse/search", {"query": name})["results"])
    # an editor buffer for a file outside: ignored, never an overlay
    uri = (outside / "escape.py").as_uri()
    d.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                       "text": "def overlay_outside_fn():\n    pass\n"}})
    d.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                        "contentChanges": [{"text": "def overlay_outside_fn():\n    pass\n"}]})
    d.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    d.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": uri, "type": 1}]})
    # a symlink out made while the daemon runs (the watcher sees it)
    late = outside / "late.py"
    late.write_text("def late_link_fn():\n    return 3\n")
    (workspace / "late_link.py").symlink_to(late)
    (workspace / "marker.py").write_text("def marker_fn():\n    return 4\n")
    end = time.monotonic() + 60
    while not d.request("codesynapse/symbolCard", {"selector": "marker.marker_fn"})["found"]:
        assert time.monotonic() < end, "the watcher never indexed marker.py"
        time.sleep(0.2)
    d.wait_ready()
    for name in ("outside_secret_fn", "outside_deep_fn", "overlay_outside_fn", "late_link_fn"):
        res = d.request("codesynapse/search", {"query": name, "mode": "compact"})
        assert all(name not in r["qualifiedName"] for r in res["results"]), res
        assert not d.request("codesynapse/symbolCard", {"selector": name})["found"]
    st = d.request("codesynapse/indexStatus", {})
    assert st["openBuffers"] == []
    for uri in outside_uris(workspace, outside)[:5]:
        for method, params in (("textDocument/hover", {"position": {"line": 0, "character": 5}}),
                               ("textDocument/definition", {"position": {"line": 0, "character": 5}}),
                               ("textDocument/documentSymbol", {})):
            try:
                r = d.request(method, {"textDocument": {"uri": uri}, **params})
            except RpcError:
                continue
            assert "outside" not in json.dumps(r), (method, uri, r)


# ---- the policy cannot widen the scope --------------------------------------------------------------

WIDENING_POLICIES = {
    "include outside": 'version: 1\ninclude: ["../**", "../outside-the-workspace0/**"]\n',
    "anchored absolute include": 'version: 1\ninclude: ["/etc/**", "/tmp/**", "link_out/**"]\n',
    "tenant key": "version: 1\ntenant: evil\n",
    "namespace and session keys": "version: 1\nnamespace: evil|x\nsession: s\ngraphId: g\n",
    "scope in an annotation": 'version: 1\nannotations:\n  - path: "**"\n    note: "x"\n    tenant: evil\n',
    "language override for outside": 'version: 1\nlanguages: {"../**": python, "/etc/*": python}\n',
    "huge size cap": "version: 1\nmaxFileBytes: 99999999999999\n",
    "yaml bomb": "version: 1\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                 "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                 "e: [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n",
}


def _policy_diagnostics(d: RawLsp) -> list[dict]:
    """The diagnostics published for the policy file (other files' diagnostics, findings on
    code, may arrive at any time and are not counted)."""
    return [n for n in d.notifications if n.get("method") == "textDocument/publishDiagnostics"
            and n["params"]["uri"].endswith(".codesynapse.yaml")]


def _wait_diagnostics(d: RawLsp, seen: int, timeout: float = 60.0) -> dict:
    end = time.monotonic() + timeout
    while True:
        diags = _policy_diagnostics(d)
        if len(diags) > seen:
            return diags[-1]["params"]
        assert time.monotonic() < end, "the policy change was never diagnosed"
        time.sleep(0.1)


def test_the_policy_cannot_widen_the_scope(tmp_path, outside):
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    (root / "link_out").symlink_to(outside, target_is_directory=True)
    data = tmp_path / "data"
    results = {}
    with RawLsp(data, env={"CODESYNAPSE_TENANT": "acme"}, log=tmp_path / "policy.log") as d:
        d.initialize(root)
        before = d.wait_ready()
        for name, text in WIDENING_POLICIES.items():
            seen = len(_policy_diagnostics(d))
            (root / ".codesynapse.yaml").write_text(text)
            diag = _wait_diagnostics(d, seen)
            st = d.wait_ready()
            results[name] = [x["message"][:80] for x in diag["diagnostics"]]
            assert st["graphId"] == before["graphId"] and st["root"] == before["root"]
            assert st["files"] <= before["files"] + 1, (name, st["files"])
            for fn in ("outside_secret_fn", "outside_deep_fn"):
                assert not d.request("codesynapse/symbolCard", {"selector": fn})["found"], name
            d.request("codesynapse/memory/remember", {"entities": [{"name": f"after {name}", "durable": True}]})
        # every memory row belongs to the configured tenant, whatever the policy said
        conn = sqlite3.connect(f"file:{data / 'memory' / 'memory.sqlite3'}?mode=ro", uri=True)
        tenants = {r[0] for r in conn.execute("SELECT DISTINCT tenant FROM memory_entities")}
        conn.close()
        assert tenants == {"acme"}
    for name in ("include outside", "tenant key", "namespace and session keys", "scope in an annotation",
                 "language override for outside", "huge size cap", "yaml bomb"):
        assert results[name], f"policy {name!r} was accepted without a diagnostic"
    _record(policies=len(WIDENING_POLICIES), diagnosed=sum(1 for v in results.values() if v))


# ---- tenants, namespaces and sessions ------------------------------------------------------------------

NAMES = ["Alice", "billing service", "PROJ-42", "deploy pipeline", "shop.cart.Cart"]


def _remember_all(d: RawLsp, owner: str) -> dict:
    ents = [{"name": n, "aliases": [f"{n} alias", "shared alias"], "type": "thing", "durable": durable}
            for n in NAMES for durable in (True, False)]
    facts = [{"subject": n, "predicate": "owned_by", "object": f"{owner} team", "durable": True,
              "sourceClient": owner} for n in NAMES]
    facts += [{"subject": n, "predicate": "seen_by", "object": f"{owner} session", "durable": False} for n in NAMES]
    return d.request("codesynapse/memory/remember", {"entities": ents, "facts": facts})


def _everything(d: RawLsp) -> str:
    parts = []
    for q in NAMES + ["alias", "shared alias", "team", "session", "acme", "evil", "owned_by"]:
        parts.append(json.dumps(d.request("codesynapse/memory/recall", {"query": q, "hops": 2, "maxFacts": 80,
                                                                         "includeIds": True})))
    cursor = ""
    while True:
        page = d.request("codesynapse/memory/list", {"limit": 200, "cursor": cursor, "includeIds": True})
        parts.append(json.dumps(page))
        cursor = page["nextCursor"]
        if not cursor:
            break
    return "\n".join(parts)


def _ids(blob: str) -> set[str]:
    return set(re.findall(r"(?:mem|fact)_[0-9a-f]{24}", blob))


def test_tenant_namespace_session_collisions_find_nothing_foreign(tmp_path):
    """Two tenants on one machine and one checkout (so one data folder: one memory file, one
    milvus-lite folder), identical entity names, durable and session memory; then a second
    session of the same tenant. Each side recalls, lists, and tries to forget with the other
    side's ids and names; scope fields in params are refused."""
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    data = tmp_path / "shared-data"
    env = {"CODESYNAPSE_WATCH": "0"}
    acme = RawLsp(data, env={**env, "CODESYNAPSE_TENANT": "acme"}, log=tmp_path / "acme.log")
    evil = RawLsp(data, env={**env, "CODESYNAPSE_TENANT": "evil"}, log=tmp_path / "evil.log")
    try:
        acme.initialize(root, sessionLabel="same-label")
        evil.initialize(root, sessionLabel="same-label")
        acme.wait_ready()
        evil.wait_ready()
        _remember_all(acme, "acme")
        _remember_all(evil, "evil")
        seen_acme, seen_evil = _everything(acme), _everything(evil)
        assert "acme team" in seen_acme and "evil team" not in seen_acme
        assert "evil team" in seen_evil and "acme team" not in seen_evil
        assert "acme session" in seen_acme and "evil session" not in seen_acme
        acme_ids, evil_ids = _ids(seen_acme), _ids(seen_evil)
        assert acme_ids and evil_ids and not (acme_ids & evil_ids)

        # the other side's ids and names: not found, nothing forgotten on the owner's side
        out = evil.request("codesynapse/memory/forget", {"ids": sorted(acme_ids)[:200]})
        assert out["entities"] == 0 and out["facts"] == 0 and len(out["notFound"]) == min(200, len(acme_ids))
        for i in sorted(acme_ids)[:20]:  # recall by a foreign id finds nothing of the other tenant
            r = evil.request("codesynapse/memory/recall", {"query": i, "includeIds": True})
            assert not _ids(json.dumps(r)) & acme_ids and "acme" not in json.dumps(r).replace(i, ""), r
        assert _everything(acme) == seen_acme or "acme team" in _everything(acme)
        # scope fields in params, top level and nested, are refused
        for params in ({"query": "Alice", "tenant": "acme"}, {"query": "Alice", "namespace": "acme|x"},
                       {"query": "Alice", "session": "s"}, {"query": "Alice", "scope": {"tenant": "acme"}}):
            with pytest.raises(RpcError) as e:
                evil.request("codesynapse/memory/recall", params)
            assert e.value.code == -32602
        with pytest.raises(RpcError):
            evil.request("codesynapse/memory/remember", {"entities": [{"name": "x", "tenant": "acme"}]})

        # a second session of acme: durable memory shared, session memory not
        acme2 = RawLsp(data, env={**env, "CODESYNAPSE_TENANT": "acme"}, log=tmp_path / "acme2.log")
        try:
            acme2.initialize(root, sessionLabel="same-label")
            acme2.wait_ready()
            seen2 = _everything(acme2)
            assert "acme team" in seen2 and "acme session" not in seen2 and "evil" not in seen2.replace(
                '"query":"evil"', "")
            out = acme2.request("codesynapse/memory/forget", {"names": ["Alice"]})
            assert out["entities"] == 1  # its own durable Alice only
        finally:
            acme2.close()
        after = _everything(acme)
        assert '"name":"Alice"' in after.replace(" ", "")  # acme's session Alice survives the other session
        assert "evil team" not in after
        assert "Alice" in _everything(evil)  # evil's Alice untouched by acme's forget
    finally:
        acme.close()
        evil.close()
    # on disk: every fact's endpoints are of its own tenant and namespace
    from codesynapse.graph.integrity import check_memory

    rep = check_memory(data / "memory" / "memory.sqlite3")
    assert rep.ok, str(rep)
    _record(tenants=2, sessions=3, names=len(NAMES))


def _record(**row) -> None:
    out = os.environ.get("CODESYNAPSE_RELIABILITY_TALLY")
    if out:
        with open(out, "a", encoding="utf-8") as f:
            f.write(json.dumps({"module": "security", **row}) + "\n")
