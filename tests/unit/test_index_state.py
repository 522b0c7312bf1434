"""The index package's seams (issue 23 #2): one locked IndexState holds the index's state and
the policy in force; the runner's failed index says ``failed`` (never ``ready``) and retries
until one succeeds; the live updater replaces the policy in the state, where the indexer and
requests read it. A real App on a copy of fixtures/python_repo, real SQLite."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from codesynapse.app import App
from codesynapse.errors import StoreError
from codesynapse.index.runner import IndexRunner
from codesynapse.index.state import IndexState
from codesynapse.methods import call_method
from codesynapse.settings import load_settings
from codesynapse.watch.live import LiveUpdater

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "python_repo"


@pytest.fixture
def app(tmp_path: Path):
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    a = App(root, load_settings({"data_dir": str(tmp_path / "data"), "workers": 1}))
    yield a
    a.close()


class Fingerprinted:
    def __init__(self, fingerprint: str):
        self.fingerprint = fingerprint


def test_adopt_policy_replaces_only_a_policy_that_differs_and_always_the_diagnostics() -> None:
    first = Fingerprinted("a")
    st = IndexState(first, [])
    assert st.adopt_policy(Fingerprinted("a"), ["warning"]) is False
    assert st.policy is first and st.policy_diagnostics == ["warning"]
    assert st.adopt_policy(None, ["error"]) is False  # an invalid file: the previous policy stays
    assert st.policy is first and st.policy_diagnostics == ["error"]
    second = Fingerprinted("b")
    assert st.adopt_policy(second, []) is True
    assert st.policy is second and st.policy_diagnostics == []


def test_the_indexer_and_requests_read_the_policy_from_the_state(app: App) -> None:
    replacement = Fingerprinted("replaced")
    app.index_state.policy = replacement
    assert app.policy is replacement and app.indexer.policy is replacement
    app.indexer.policy = None  # a bench sets it through the indexer: the one state follows
    assert app.index_state.policy is None and app.policy is None


def test_a_failed_full_index_says_failed_with_the_reason_never_ready(app: App) -> None:
    app.index()
    assert app.status()["state"] == "ready"
    # a real SQLite store that cannot grow (as a full disk): the next index cannot commit
    conn = app.store._conn()
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count={pages}")
    gen = app.workspace.root / "gen"
    gen.mkdir()
    for i in range(40):
        (gen / f"m{i}.py").write_text("".join(f"def f{j}(x):\n    return x + {j}\n" for j in range(50)))
    with pytest.raises(StoreError):
        app.index()
    st = app.status()
    assert st["state"] == "failed" and st["failedAttempts"] == 1, st
    assert "database or disk is full" in st["error"] and "\n" not in st["error"] and len(st["error"]) <= 300, st
    assert st["files"] == 6  # the last committed index keeps answering
    conn.execute("PRAGMA max_page_count=1073741823")  # room again: the next index succeeds
    app.index()
    st = app.status()
    assert st["state"] == "ready" and "error" not in st and st["files"] == 46, st


def test_the_runner_thread_reports_a_failure_then_retries_until_an_index_succeeds() -> None:
    state = IndexState()
    attempts: list[int] = []

    def index_once(progress):
        attempts.append(len(attempts) + 1)
        if len(attempts) == 1:
            raise OSError("disk full")
        return "report"

    runner = IndexRunner(state, index_once)
    seen: list[tuple] = []
    after = threading.Event()
    t = runner.start(runner.run, ended=lambda rep, reason: seen.append((rep, reason)), after=after.set)
    t.join(30)
    assert not t.is_alive()
    assert after.is_set()
    assert seen == [(None, "OSError: disk full")]
    assert attempts == [1, 2]
    assert state.snapshot()[:3] == ("ready", "", 0)


def test_a_closing_app_ends_the_retries() -> None:
    state = IndexState()
    closing = threading.Event()

    def fail(progress):
        raise OSError("still down")

    runner = IndexRunner(state, fail, closing)
    with pytest.raises(OSError):
        runner.run()
    closing.set()
    assert runner.retry() is None
    assert state.snapshot()[:3] == ("failed", "OSError: still down", 1)


def test_a_new_policy_file_is_adopted_by_the_state_and_reindexes_the_tree(app: App) -> None:
    app.index()
    before = app.policy.fingerprint
    assert any(f.path == "tests/test_cart.py" for f in app.store.files())
    (app.workspace.root / ".codesynapse.yaml").write_text('version: 1\nexclude: ["tests/**"]\n')
    seen: list = []
    live = LiveUpdater(app, on_policy=seen.append)
    live._apply({".codesynapse.yaml": "disk"})
    assert app.index_state.policy.fingerprint != before
    assert app.indexer.policy is app.index_state.policy
    assert seen == [[]]  # a valid file: no diagnostics
    assert not any(f.path == "tests/test_cart.py" and f.status != "skipped" for f in app.store.files())
    st = call_method(app, "codesynapse/indexStatus", {})
    assert st["policyFingerprint"] == app.index_state.policy.fingerprint


def test_open_buffers_are_the_states_and_freshness_names_them(app: App) -> None:
    app.index()
    live = LiveUpdater(app)
    live.buffer_changed("shop/cart.py", "def edited():\n    return 1\n")
    assert app.index_state.open_buffers == {"shop/cart.py"}
    assert app.freshness()["openBuffers"] == ["shop/cart.py"]
    live.buffer_saved("shop/cart.py")
    assert app.index_state.open_buffers == set()
    assert app.freshness()["openBuffers"] == []
    app.open_buffers = {"shop/pricing.py"}  # the shared daemon switches views this way (daemon/views.py)
    assert app.index_state.open_buffers == {"shop/pricing.py"}


def test_a_store_that_cannot_be_opened_says_failed_in_the_status_with_the_reason(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    # a real Neo4j driver against a port where nothing listens: connection refused at start
    a = App(root, load_settings({"data_dir": str(tmp_path / "data"), "backend": "neo4j",
                                 "neo4j_uri": "bolt://127.0.0.1:1"}))
    try:
        st = a.status()  # answers: the state and the error say why (no StoreUnavailable raised)
        assert st["state"] == "failed" and st["files"] == 0, st
        assert st["error"].startswith("the code index cannot be opened") and "127.0.0.1:1" in st["error"], st
        with pytest.raises(StoreError):
            a.index()  # still cannot be opened: the state keeps saying failed
        assert a.status()["state"] == "failed"
    finally:
        a.close()


def test_a_full_index_after_a_commit_stamps_the_new_head_at_once(tmp_path: Path) -> None:
    """The freshness stamp keeps HEAD for 2 s between answers; an index (what a HEAD move
    runs) reads it again, so the first answer after it names the commit it indexed."""
    import subprocess

    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)

    def git(*args: str) -> str:
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root,
                              check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "one")
    a = App(root, load_settings({"data_dir": str(tmp_path / "data"), "workers": 1}))
    try:
        a.index()
        first = git("rev-parse", "HEAD")
        assert a.freshness()["indexedCommit"] == first
        (root / "added.py").write_text("def added():\n    return 1\n", encoding="utf-8")
        git("add", "added.py")
        git("commit", "-q", "-m", "two")
        second = git("rev-parse", "HEAD")
        assert second != first
        a.index()
        assert a.freshness()["indexedCommit"] == second
    finally:
        a.close()


def test_a_new_policy_keeps_the_unsaved_buffers_in_the_index(app: App) -> None:
    """A policy edit indexes the tree again from the disk; the open documents' unsaved
    buffers go back in after it (as after a queue overflow), or the index would hold the
    disk's version of a file the editor shows edited until its next keystroke."""
    app.index()
    live = LiveUpdater(app)
    live.overlays["shop/cart.py"] = b"def only_in_the_buffer():\n    return 1\n"
    live._apply({"shop/cart.py": "overlay"})
    assert app.store.symbols_by_name("only_in_the_buffer", limit=5)
    (app.workspace.root / ".codesynapse.yaml").write_text('version: 1\nexclude: ["tests/**"]\n')
    live._apply({".codesynapse.yaml": "disk"})
    assert not any(f.path == "tests/test_cart.py" and f.status != "skipped" for f in app.store.files())
    [s] = app.store.symbols_by_name("only_in_the_buffer", limit=5)
    assert s.path == "shop/cart.py"
    assert live.in_index["shop/cart.py"] == live.overlays["shop/cart.py"]
