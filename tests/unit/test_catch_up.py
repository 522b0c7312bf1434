"""A catch-up that finds the tree as stored is stat-only (issue 24 #2): it reads no symbol
table and counts nothing again; the first change reads the table and resolves against it.

Real SQLite store and real extraction over a copy of fixtures/python_repo; a second Indexer
on the same store stands for a daemon started again on a built index.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from codesynapse.index.indexer import COUNTS_META, Candidate, Indexer
from codesynapse.store.sqlite.graph import SqliteGraphStore

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "python_repo"


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    return root


def test_an_unchanged_tree_is_caught_up_without_reading_the_symbol_table(tmp_path):
    root = _tree(tmp_path)
    store = SqliteGraphStore(tmp_path / "graph.db", "g")
    try:
        first = Indexer(root, store).index_tree()
        assert first.parsed > 5 and first.symbols > 0 and first.edges > 0

        again = Indexer(root, store)  # a daemon started again on the built index
        report = again.index_tree()
        assert report.parsed == 0 and report.deleted == 0
        assert not again._loaded and not again.index.files  # nothing was read for resolution
        assert (report.symbols, report.edges, report.lines, report.files) == (
            first.symbols, first.edges, first.lines, first.files)
        assert report.languages == first.languages

        # a change: the table is read, and the new call resolves through the file's import
        # of a name another file defines (the table holds pricing.with_tax)
        cart = root / "shop" / "cart.py"
        cart.write_text(cart.read_text() + "\n\ndef probe_total(x):\n    return with_tax(x)\n")
        st = cart.stat()
        os.utime(cart, ns=(st.st_mtime_ns + 10**9, st.st_mtime_ns + 10**9))
        changed = again.index_tree()
        assert changed.parsed == 1 and again._loaded and again.index.files
        assert changed.symbols == first.symbols + 1
        assert [c.target for c in store.calls_in_files(["shop/cart.py"]) if c.caller.endswith("probe_total")] \
            == ["shop.pricing.with_tax"]
    finally:
        store.close()


def test_the_kept_counts_are_counted_again_once_the_index_changes(tmp_path):
    root = _tree(tmp_path)
    store = SqliteGraphStore(tmp_path / "graph.db", "g")
    try:
        Indexer(root, store).index_tree()
        # counts kept under another generation (an index another process wrote since) are not used
        store.set_meta({COUNTS_META: '{"generation": "not-this-one", "symbols": 1, "edges": 1}'})
        report = Indexer(root, store).index_tree()
        assert report.symbols == store.stats().symbols and report.symbols > 1
    finally:
        store.close()


def _touch(path: Path, seconds: int = 5) -> int:
    """A new mtime, the same bytes (``touch``, or a checkout writing a file back as it was)."""
    st = path.stat()
    mtime = st.st_mtime_ns + seconds * 10**9
    os.utime(path, ns=(mtime, mtime))
    return mtime


def test_a_touched_file_is_stamped_and_the_next_catch_up_is_stat_only(tmp_path):
    root = _tree(tmp_path)
    store = SqliteGraphStore(tmp_path / "graph.db", "g")
    try:
        Indexer(root, store).index_tree()
        before = store.dump()
        mtime = _touch(root / "shop" / "cart.py")

        again = Indexer(root, store)  # a daemon started again, one file touched meanwhile
        report = again.index_tree()
        assert (report.parsed, report.unchanged) == (0, 1)
        assert not again._loaded and not again.index.files  # hashed, not extracted, nothing resolved
        assert store.file("shop/cart.py").mtime_ns == mtime
        assert store.dump() == before  # only the stamp moved (the dump holds no mtime)

        third = Indexer(root, store)
        report = third.index_tree()
        assert (report.parsed, report.unchanged) == (0, 0) and not third._loaded
    finally:
        store.close()


def test_a_file_touched_under_a_live_update_is_stamped_too(tmp_path):
    root = _tree(tmp_path)
    store = SqliteGraphStore(tmp_path / "graph.db", "g")
    try:
        live = Indexer(root, store)
        live.index_tree()
        cart = root / "shop" / "cart.py"
        mtime = _touch(cart)
        # as the watcher hands a touched file over: hashed, found as stored, not extracted, stamped
        report = live.update([Candidate("shop/cart.py", "python", cart.stat().st_size, mtime)], [])
        assert (report.parsed, report.unchanged) == (0, 1)
        assert store.file("shop/cart.py").mtime_ns == mtime

        restarted = Indexer(root, store)
        report = restarted.index_tree()
        assert (report.parsed, report.unchanged) == (0, 0) and not restarted._loaded
    finally:
        store.close()


def test_an_edit_that_keeps_the_size_is_still_extracted(tmp_path):
    root = _tree(tmp_path)
    store = SqliteGraphStore(tmp_path / "graph.db", "g")
    try:
        Indexer(root, store).index_tree()
        cart = root / "shop" / "cart.py"
        text = cart.read_text()
        assert "def " in text
        edited = text.replace("def ", "def X", 1)[:-1]  # one byte in, one out: the same size
        assert len(edited.encode()) == len(text.encode()) and edited != text
        cart.write_text(edited)
        _touch(cart)

        again = Indexer(root, store)
        report = again.index_tree()
        assert (report.parsed, report.unchanged) == (1, 0) and again._loaded
        fresh = SqliteGraphStore(tmp_path / "fresh.db", "g")
        try:
            Indexer(root, fresh).index_tree()
            assert store.dump() == fresh.dump()
        finally:
            fresh.close()
    finally:
        store.close()


def test_touched_skipped_files_are_caught_up_without_the_symbol_table(tmp_path):
    root = _tree(tmp_path)
    (root / "blob.py").write_bytes(b"x = 1\x00\x01\x02\n")  # skipped for its bytes (binary)
    (root / "huge.py").write_text("x = 1\n" * 300_000)  # skipped by its size (walk)
    store = SqliteGraphStore(tmp_path / "graph.db", "g")
    try:
        first = Indexer(root, store).index_tree()
        assert {f.path: f.status for f in store.files() if f.status == "skipped"} == {
            "blob.py": "skipped", "huge.py": "skipped"}
        blob, huge = _touch(root / "blob.py"), _touch(root / "huge.py")

        again = Indexer(root, store)
        report = again.index_tree()
        assert report.parsed == 0 and not again._loaded
        assert (store.file("blob.py").mtime_ns, store.file("huge.py").mtime_ns) == (blob, huge)
        assert report.skipped == first.skipped
        third = Indexer(root, store)
        assert third.index_tree().unchanged == 0 and not third._loaded
    finally:
        store.close()


def test_a_files_language_is_its_suffix_as_pathlib_reads_it():
    from pathlib import PurePosixPath

    from codesynapse.extract.languages import _BY_EXT, detect

    names = ["a.py", "pkg/mod.PY", "x.tar.gz", "src/.hidden.c", ".py", "pkg/.py", "notes.", "a.b/c", "a.b/c.h",
             "dir.py/readme", "..", "a/..c", "Makefile", "x.d.ts", "docs/index.md", "a/b.c.yml", "ç/é.rs", ""]
    names += [f"dir/f{ext}" for ext in _BY_EXT] + [f"dir/f{ext.upper()}" for ext in _BY_EXT]
    for n in names:
        want = _BY_EXT.get(PurePosixPath(n).suffix.lower()) if n else None
        assert detect(n) is want, n


def _policy(root: Path):
    from codesynapse.policy import load_policy

    policy, diagnostics = load_policy(root, None)
    assert not [d for d in diagnostics if d.severity == "error"], diagnostics
    return policy


def _fresh_dump(root: Path, tmp_path: Path, name: str) -> dict:
    fresh = SqliteGraphStore(tmp_path / f"{name}.db", "g")
    try:
        Indexer(root, fresh, _policy(root)).index_tree()
        return fresh.dump()
    finally:
        fresh.close()


def _summary(store: SqliteGraphStore, name: str) -> str:
    return next(s.summary for s in store.symbols_by_name(name))


def test_a_redaction_pattern_added_reaches_what_was_stored_before_it(tmp_path):
    """A ``redact`` pattern added to the policy redacts the files indexed before it, although
    none of them changed on disk; taken out again, the text comes back. Each time the index
    equals a full index under the policy in force."""
    root = _tree(tmp_path)
    (root / "shop" / "tickets.py").write_text(
        'def settle(order):\n    """Settle order ticket ACME-12345678 with the bank."""\n    return order\n')
    store = SqliteGraphStore(tmp_path / "graph.db", "g")
    try:
        Indexer(root, store, _policy(root)).index_tree()
        assert "ACME-12345678" in _summary(store, "settle")

        (root / ".codesynapse.yaml").write_text('redact: ["ACME-[0-9]{8}"]\n')
        report = Indexer(root, store, _policy(root)).index_tree()
        assert report.parsed >= 6  # every file, not only the policy file
        assert "ACME-12345678" not in _summary(store, "settle") and "REDACTED" in _summary(store, "settle")
        assert store.dump() == _fresh_dump(root, tmp_path, "redacted")
        again = Indexer(root, store, _policy(root))
        assert again.index_tree().parsed == 0 and not again._loaded  # recorded: stat-only again

        (root / ".codesynapse.yaml").write_text("version: 1\n")
        Indexer(root, store, _policy(root)).index_tree()
        assert "ACME-12345678" in _summary(store, "settle")
        assert store.dump() == _fresh_dump(root, tmp_path, "plain")
    finally:
        store.close()


def test_an_index_that_does_not_say_its_redaction_is_extracted_again_once_patterns_are_in_force(tmp_path):
    from codesynapse.index.indexer import REDACTION_META

    root = _tree(tmp_path)
    (root / "shop" / "tickets.py").write_text(
        'def settle(order):\n    """Settle order ticket ACME-12345678 with the bank."""\n    return order\n')
    store = SqliteGraphStore(tmp_path / "graph.db", "g")
    try:
        Indexer(root, store, _policy(root)).index_tree()
        # an index written before the indexer kept its redaction key
        store._conn().execute("DELETE FROM meta WHERE key=?", (REDACTION_META,))
        store._conn().commit()
        quiet = Indexer(root, store, _policy(root))
        assert quiet.index_tree().parsed == 0 and not quiet._loaded  # no pattern in force: nothing to redact
        store._conn().execute("DELETE FROM meta WHERE key=?", (REDACTION_META,))
        store._conn().commit()
        (root / ".codesynapse.yaml").write_text('redact: ["ACME-[0-9]{8}"]\n')
        Indexer(root, store, _policy(root)).index_tree()
        assert "ACME-12345678" not in _summary(store, "settle")
        assert store.dump() == _fresh_dump(root, tmp_path, "redacted")
    finally:
        store.close()


def test_a_language_the_policy_now_gives_a_file_is_extracted_again(tmp_path):
    root = _tree(tmp_path)
    (root / "native").mkdir()
    (root / "native" / "codec.h").write_text("namespace codec {\nint encode_frame(int x) { return x; }\n}\n")
    store = SqliteGraphStore(tmp_path / "graph.db", "g")
    try:
        Indexer(root, store, _policy(root)).index_tree()
        assert store.file("native/codec.h").language == "c"  # a .h file is C by default
        (root / ".codesynapse.yaml").write_text('languages: {"*.h": cpp}\n')
        Indexer(root, store, _policy(root)).index_tree()
        assert store.file("native/codec.h").language == "cpp"
        assert [s.qname.endswith("codec::encode_frame") for s in store.symbols_by_name("encode_frame")] == [True]
        assert store.dump() == _fresh_dump(root, tmp_path, "cpp")
    finally:
        store.close()
