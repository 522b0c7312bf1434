"""A catch-up that finds the tree as stored is stat-only (issue 24 #2): it reads no symbol
table and counts nothing again; the first change reads the table and resolves against it.

Real SQLite store and real extraction over a copy of fixtures/python_repo; a second Indexer
on the same store stands for a daemon started again on a built index.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from codesynapse.index.indexer import COUNTS_META, Indexer
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
