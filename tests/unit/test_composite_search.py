"""Search across a team checkout's base and overlay (store/composite.py): the two stores'
BM25 scores come from two sets of statistics (a small overlay's IDF is near zero), so when
both have hits the union is scored again with the view's statistics. On real SQLite stores:
an overlay symbol whose name is the query ranks above a base symbol that only contains the
word, whichever store holds which, and the order is the same on every page and every call."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from codesynapse.index.indexer import Indexer
from codesynapse.store.composite import CompositeGraphStore
from codesynapse.store.sqlite.graph import SqliteGraphStore
from codesynapse.store.team import clean_paths, export_commit

from tests.unit.test_composite_store import FIXTURE, git


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    # a base with many symbols, so that its statistics and a one-file overlay's differ widely
    for i in range(30):
        (root / "shop" / f"gen_{i:02d}.py").write_text(f"def step_{i}(x):\n    return x + {i}\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "c1")
    return root, git(root, "rev-parse", "HEAD")


def checkout(tmp_path: Path, root: Path, commit: str) -> CompositeGraphStore:
    tree = tmp_path / "tree"
    tree.mkdir()
    export_commit(root, commit, tree)
    base = SqliteGraphStore(tmp_path / "base.db", "g@" + commit)
    Indexer(tree, base, workers=1).index_tree()
    comp = CompositeGraphStore(base, SqliteGraphStore(tmp_path / "overlay.db", "g"), base_commit=commit,
                               clean=clean_paths(root, commit, base))
    Indexer(root, comp, workers=1).index_tree()
    return comp


def test_an_overlay_hit_and_a_base_hit_are_ranked_on_one_scale(tmp_path, repo):
    root, commit = repo
    # the overlay: a new function named exactly as the query; the base has apply_discount
    (root / "shop" / "wip.py").write_text("def discount(amount):\n    return amount\n")
    comp = checkout(tmp_path, root, commit)
    try:
        assert comp.overlay_files() == 1
        hits = [s.qname for s, _ in comp.search("discount", 10)]
        assert hits[:2] == ["shop.wip.discount", "shop.pricing.apply_discount"]
        # stable: the same order again, and page by page
        assert [s.qname for s, _ in comp.search("discount", 10)] == hits
        assert [s.qname for s, _ in comp.search("discount", 1)] + \
            [s.qname for s, _ in comp.search("discount", 1, offset=1)] == hits[:2]
    finally:
        comp.close()


def test_a_base_hit_that_names_the_query_ranks_above_an_overlay_hit_that_contains_it(tmp_path, repo):
    root, commit = repo
    # the other way round: the base names the query (shop.pricing.with_tax), the overlay only
    # contains the word
    (root / "shop" / "wip.py").write_text("def tax_report(amount):\n    return amount\n\n\n"
                                          "def with_tax_draft(amount):\n    return amount\n")
    comp = checkout(tmp_path, root, commit)
    try:
        hits = [s.qname for s, _ in comp.search("with_tax", 10)]
        assert hits[0] == "shop.pricing.with_tax"
        assert "shop.wip.with_tax_draft" in hits
    finally:
        comp.close()
