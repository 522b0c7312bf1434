"""The resolver's table of a team checkout (store/symtable.py): a base keeps the table of its
own rows in its meta, and a checkout's ``Indexer.load`` composes it with a delta base and its
overlay instead of reading every base row. On real SQLite stores (the shape is the same on
Neo4j: meta entries): the loaded SymbolIndex equals the one read row by row, whatever the
levels shadow, tombstone or re-resolve."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from codesynapse.index.indexer import Indexer
from codesynapse.store import symtable
from codesynapse.store.composite import CompositeGraphStore
from codesynapse.store.sqlite.graph import SqliteGraphStore
from codesynapse.store.team import build_base_into, clean_paths, export_commit

from tests.unit.test_composite_store import FIXTURE, git


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    (root / "shop" / "gone.py").write_text("from shop.cart import Cart\n\n\nclass OldCart(Cart):\n    pass\n")
    (root / "shop" / "premium.py").write_text(
        "from shop.cart import Cart\n\n\nclass PremiumCart(Cart):\n    def total(self) -> float:\n"
        "        return 0.0\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "c1")
    return root, git(root, "rev-parse", "HEAD")


def build(tmp_path: Path, root: Path, commit: str, name: str, below=None, changed=None) -> SqliteGraphStore:
    """A published base: its rows, then its table kept in its meta (as publish_base does)."""
    tree = tmp_path / f"tree-{name}"
    tree.mkdir()
    export_commit(root, commit, tree)
    store = SqliteGraphStore(tmp_path / f"{name}.db", f"g@{commit}")
    build_base_into(store, tree, None, 1, below=below, changed=changed)
    assert symtable.write_table(store) > 0
    return store


def loaded(store, rows: bool) -> dict:
    """The resolver's in-memory table after Indexer.load: from the kept tables, or row by row."""
    ix = Indexer(Path("/nonexistent"), store, workers=1)
    if rows:
        ix._load_rows()
        ix.index.set_bases(ix._bases())
    else:
        ix.load()
    idx = ix.index
    files = {p: {k: getattr(fi, k) for k in type(fi).__slots__} for p, fi in idx.files.items()}
    return {"files": files, "kinds": idx.kinds, "parents": idx.parents, "bases": idx.bases,
            "results": idx.results, "module_files": {k: sorted(v) for k, v in idx.module_files.items() if v},
            "inherits": ix._inherits_by_file}


def test_a_checkout_loads_its_bases_kept_tables_and_equals_the_rows(tmp_path, repo):
    root, c1 = repo
    base = build(tmp_path, root, c1, "c1")
    # commit 2: Cart's module loses a function, a new module, gone.py deleted (a tombstone)
    pay = root / "shop" / "payment.py"
    text = pay.read_text()
    pay.write_text(text[:text.index("def pay_for")] + "def settle(items):\n    return len(items)\n")
    (root / "shop" / "loyalty.py").write_text("def loyalty_bonus(total):\n    return total\n")
    (root / "shop" / "gone.py").unlink()
    git(root, "add", "-A")
    git(root, "commit", "-qm", "c2")
    c2 = git(root, "rev-parse", "HEAD")
    changed = set(git(root, "diff", "--name-only", c1, c2).splitlines())
    delta = build(tmp_path, root, c2, "c2", below=base, changed=changed)
    readable = CompositeGraphStore(base, delta, base_commit=c2, frozen=True)
    # the checkout: Cart is renamed away (premium.py's base row re-resolves: an inherit override),
    # a new file, a deleted one
    cart = root / "shop" / "cart.py"
    cart.write_text(cart.read_text().replace("class Cart", "class Basket"))
    (root / "shop" / "wip.py").write_text("class Draft:\n    pass\n")
    (root / "shop" / "pricing.py").unlink()
    overlay = SqliteGraphStore(tmp_path / "overlay.db", "g")
    comp = CompositeGraphStore(readable, overlay, base_commit=c2, clean=clean_paths(root, c2, readable))
    Indexer(root, comp, workers=1).index_tree()
    assert comp._overrides("team.inherit_overrides", object) != {}  # premium.py's row moved in the overlay
    assert delta.get_meta("team.tombstones") == '["shop/gone.py"]'

    from_tables = loaded(comp, rows=False)
    assert from_tables == loaded(comp, rows=True)
    assert "shop.wip.Draft" in from_tables["kinds"] and "shop.cart.Cart" not in from_tables["kinds"]
    assert "shop/gone.py" not in from_tables["files"] and "shop/pricing.py" not in from_tables["files"]
    assert "shop.loyalty.loyalty_bonus" in from_tables["kinds"]
    assert "shop.premium.PremiumCart" not in from_tables["bases"]  # its base class is gone in this checkout
    comp.close()


def test_the_kept_table_is_read_instead_of_the_rows_and_checked_by_its_digest(tmp_path, repo):
    root, c1 = repo
    base = build(tmp_path, root, c1, "c1")
    level = symtable.stored_level(base)
    assert level is not None and sorted(level.files) == sorted(f.path for f in base.files()
                                                               if f.status != "skipped")
    # the kept table is what a reader gets: rows written after it (never, for a published base)
    # do not show
    base.delete_files(["shop/premium.py"])
    assert "shop/premium.py" in symtable.table_of(base).files
    # a part that does not match its digest is not used: the rows are read
    base.set_meta({f"{symtable.TABLE}.0": base.get_meta(f"{symtable.TABLE}.0")[:-8] + "AAAAAAAA"})
    assert symtable.stored_level(base) is None
    assert "shop/premium.py" not in symtable.table_of(base).files
    base.close()
