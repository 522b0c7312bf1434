"""Incremental updates on every backend: the real Indexer on a temporary copy of
fixtures/python_repo; after files are modified, deleted and added, the incrementally
updated graph must equal a full re-index of the same tree on the same backend, and must
equal what SQLite holds for that tree."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from codesynapse.index.indexer import Indexer
from codesynapse.store.sqlite.graph import SqliteGraphStore

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "python_repo"

CART_V2 = '''"""Shopping carts."""
from shop.pricing import with_tax
from . import pricing


class BaseCart:
    """Common cart behaviour."""

    def __init__(self):
        self.items = []

    def add(self, name, price):
        """Add an item to the cart."""
        self.items.append((name, price))
        return self.size()

    def size(self):
        return len(self.items)

    def clear(self):
        self.items = []


class Cart(BaseCart):
    """A cart that knows its total."""

    def total(self, percent=0):
        """Total price after discount and tax."""
        net = sum(price for _, price in self.items)
        net = pricing.apply_discount(net, percent)
        return with_tax(net)
'''

SHIPPING = '''"""Shipping costs."""
from shop.pricing import with_tax
from shop.cart import Cart


def ship(cart: Cart):
    """Ship a cart: taxed total plus a flat fee."""
    cart.clear()
    return with_tax(cart.total()) + 5
'''


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "python_repo"
    shutil.copytree(FIXTURE, root)
    return root


def index(store, root: Path):
    return Indexer(root, store, workers=1).index_tree()


def sqlite_dump(root: Path, db: Path) -> dict:
    store = SqliteGraphStore(db, "reference")
    try:
        index(store, root)
        return store.dump()
    finally:
        store.close()


def callers(store, qname: str) -> list[tuple[str, str]]:
    return [(c.caller, c.resolution) for c in store.callers(qname)]


def test_full_index_of_the_fixture_is_the_same_on_every_backend(make_graph_store, repo, tmp_path):
    store = make_graph_store()
    report = index(store, repo)
    assert [f.path for f in store.files()] == ["README.md", "shop/__init__.py", "shop/cart.py", "shop/payment.py",
                                                "shop/pricing.py", "tests/test_cart.py"]
    assert report.parsed == sum(f.status != "skipped" for f in store.files()) and report.deleted == 0
    assert store.dump() == sqlite_dump(repo, tmp_path / "ref.sqlite3")
    assert callers(store, "shop.cart.Cart.total") == [("shop.cart.Cart.checkout", "self"),
                                                      ("test_cart.test_total", "inferred")]
    assert callers(store, "shop.cart.BaseCart.add") == [("shop.payment.pay_for", "inferred"),
                                                        ("test_cart.test_total", "inferred")]
    assert [i.child for i in store.subtypes("shop.cart.BaseCart")] == ["shop.cart.Cart"]
    # a second run with nothing changed parses nothing and changes nothing
    before = store.dump()
    again = index(store, repo)
    assert (again.parsed, again.deleted) == (0, 0)
    assert store.dump() == before


def test_incremental_updates_equal_a_full_reindex(make_graph_store, repo, tmp_path):
    store = make_graph_store()
    index(store, repo)

    # round 1: modify one file, delete one, add one
    (repo / "shop" / "cart.py").write_text(CART_V2)
    (repo / "shop" / "payment.py").unlink()
    (repo / "shop" / "shipping.py").write_text(SHIPPING)
    report = index(store, repo)
    assert (report.parsed, report.deleted) == (2, 1)

    full = make_graph_store()
    index(full, repo)
    assert store.dump() == full.dump()
    assert store.dump() == sqlite_dump(repo, tmp_path / "ref1.sqlite3")
    assert store.symbols_by_qname("shop.payment.pay_for") == []
    assert store.symbols_by_qname("shop.cart.BaseCart.count") == []
    assert callers(store, "shop.cart.BaseCart.size") == [("shop.cart.BaseCart.add", "self")]
    assert callers(store, "shop.pricing.with_tax") == [("shop.cart.Cart.total", "import"),
                                                       ("shop.shipping.ship", "import")]
    assert callers(store, "shop.cart.BaseCart.add") == [("test_cart.test_total", "inferred")]
    # the test file still imports pay_for, which is gone: the import no longer resolves
    assert {(i.name, i.target) for i in store.imports("tests/test_cart.py")} >= {("pay_for", "")}

    # round 2: bring payment back, drop shipping
    shutil.copy(FIXTURE / "shop" / "payment.py", repo / "shop" / "payment.py")
    (repo / "shop" / "shipping.py").unlink()
    report = index(store, repo)
    assert (report.parsed, report.deleted) == (1, 1)
    full2 = make_graph_store()
    index(full2, repo)
    assert store.dump() == full2.dump()
    assert store.dump() == sqlite_dump(repo, tmp_path / "ref2.sqlite3")
    assert callers(store, "shop.cart.BaseCart.add") == [("shop.payment.pay_for", "inferred"),
                                                        ("test_cart.test_total", "inferred")]
    assert {(i.name, i.target) for i in store.imports("tests/test_cart.py")} >= {
        ("pay_for", "shop.payment.pay_for")}
