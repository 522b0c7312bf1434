"""Bad input is skipped with a counted reason or indexed partially — never a crash."""

from __future__ import annotations

import os
from pathlib import Path

from codesynapse.index.indexer import Indexer
from codesynapse.store.sqlite.graph import SqliteGraphStore


def _index(root: Path, tmp: Path):
    store = SqliteGraphStore(tmp / "g.db", "g")
    report = Indexer(root, store, None, workers=1).index_tree()
    return store, report


def test_bad_files_are_skipped_with_reasons(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "ok.py").write_text("def fine():\n    return 1\n")
    (root / "binary.py").write_bytes(b"\x00\x01\x02def x(): pass\n")
    (root / "latin1.py").write_bytes("s = 'caf\xe9'\n".encode("latin-1"))
    (root / "huge.py").write_text("x = 1\n" * 300_000)  # 1.8 MB > the 1 MiB default cap
    (root / "loop").symlink_to(root, target_is_directory=True)  # a symlink loop
    (root / "dangling.py").symlink_to(root / "missing.py")
    outside = tmp_path / "outside.py"
    outside.write_text("def secret():\n    pass\n")
    (root / "escape.py").symlink_to(outside)
    os.mkfifo(root / "pipe.py")  # not a regular file: must not block the walk
    store, report = _index(root, tmp_path)
    rows = {f.path: (f.status, f.reason) for f in store.files()}
    assert rows == {
        "ok.py": ("indexed", ""),
        "binary.py": ("skipped", "binary (NUL byte)"),
        "latin1.py": ("skipped", "not UTF-8"),
        "huge.py": ("skipped", "too large (1800000 > 1048576 bytes)"),
        "dangling.py": ("skipped", "unreadable (FileNotFoundError)"),
        "escape.py": ("skipped", "symlink outside workspace"),
    }
    assert report.skipped["binary"] == 1
    assert report.skipped["not UTF-8"] == 1
    assert report.skipped["too large"] == 1
    assert [s.qname for s in store.symbols_in_file("ok.py")] == ["ok", "ok.fine"]
    assert store.symbols_by_qname("outside.secret") == []
    store.close()


def test_syntax_errors_are_indexed_partially(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "broken.py").write_text(
        "def good():\n    return helper()\n\n\ndef helper(:\n    pass\n\n\nclass Still:\n    def works(self):\n"
        "        return good()\n")
    store, _ = _index(root, tmp_path)
    f = store.file("broken.py")
    assert (f.status, f.reason) == ("partial", "syntax errors; partial extraction")
    names = [s.qname for s in store.symbols_in_file("broken.py")]
    assert "broken.good" in names and "broken.Still.works" in names
    assert [c.caller for c in store.callers("broken.good")] == ["broken.Still.works"]
    store.close()


def test_deeply_nested_and_long_lines_do_not_crash(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "deep.py").write_text("x = " + "[" * 5000 + "]" * 5000 + "\n" + "def after():\n    pass\n")
    (root / "wide.py").write_text("y = " + " + ".join(["f(1)"] * 20000) + "\n")
    store, _ = _index(root, tmp_path)
    assert store.file("deep.py").status in ("indexed", "partial")
    assert [s.qname for s in store.symbols_in_file("deep.py")][-1] == "deep.after"
    assert len(store.callees("wide")) == 1000  # the callees query limit; all 20000 are stored
    assert store.count_callees("wide") == 20000
    store.close()


def test_index_lives_outside_the_source_tree(tmp_path: Path, monkeypatch) -> None:
    from codesynapse.workspace import open_workspace

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("CODESYNAPSE_DATA_DIR", raising=False)
    root = tmp_path / "repo"
    root.mkdir()
    ws = open_workspace(root)
    assert str(ws.data_dir).startswith(str(tmp_path / "cache" / "codesynapse"))
    assert not str(ws.data_dir).startswith(str(root))
