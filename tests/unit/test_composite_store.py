"""The composite store of a team checkout (store/composite.py) on two real SQLite stores: the
base built from a commit's tree (``git archive``, as store/team.py publishes it) and the
checkout's overlay. Whatever the checkout changed, the composite answers exactly what a full
index of the working tree holds (``dump``), while the indexer parses only the changed files
and never writes the base."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from codesynapse.index.indexer import Indexer
from codesynapse.store.composite import OVERLAY_IDS, CompositeGraphStore
from codesynapse.store.sqlite.graph import SqliteGraphStore
from codesynapse.store.team import clean_paths, export_commit

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "python_repo"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), "-c", "user.email=t@example.invalid", "-c", "user.name=t",
                           *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    (root / "shop" / "refunds.py").write_text(
        "from shop.payment import pay_for\n\n\ndef refund(items):\n    return pay_for(items)\n")
    (root / "shop" / "gone.py").write_text("from shop.cart import Cart\n\n\nclass OldCart(Cart):\n    pass\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "c1")
    return root, git(root, "rev-parse", "HEAD")


def build_base(tmp_path: Path, root: Path, commit: str, store_cls=SqliteGraphStore) -> SqliteGraphStore:
    tree = tmp_path / "tree"
    tree.mkdir()
    export_commit(root, commit, tree)
    base = store_cls(tmp_path / "base.db", "g@" + commit)
    Indexer(tree, base, workers=1).index_tree()
    return base


def full_dump(tmp_path: Path, root: Path, name: str = "full") -> dict:
    """What a plain SQLite index of the working tree holds."""
    store = SqliteGraphStore(tmp_path / f"{name}.db", name)
    try:
        Indexer(root, store, workers=1).index_tree()
        return store.dump()
    finally:
        store.close()


def composite(tmp_path: Path, root: Path, commit: str, base: SqliteGraphStore) -> CompositeGraphStore:
    overlay = SqliteGraphStore(tmp_path / "overlay.db", "g")
    return CompositeGraphStore(base, overlay, base_commit=commit, clean=clean_paths(root, commit, base))


def test_unchanged_checkout_parses_nothing_and_equals_a_full_index(tmp_path, repo):
    root, commit = repo
    base = build_base(tmp_path, root, commit)
    before = base.dump()
    comp = composite(tmp_path, root, commit, base)
    report = Indexer(root, comp, workers=1).index_tree()
    assert report.parsed == 0
    assert comp.overlay_files() == 0
    assert comp.dump() == full_dump(tmp_path, root)
    assert base.dump() == before
    comp.close()


def test_a_touched_clean_file_stays_in_the_base_and_is_caught_up_by_its_stat(tmp_path, repo):
    import os

    root, commit = repo
    base = build_base(tmp_path, root, commit)
    comp = composite(tmp_path, root, commit, base)
    Indexer(root, comp, workers=1).index_tree()
    cart = root / "shop" / "cart.py"
    mtime = cart.stat().st_mtime_ns + 5 * 10**9
    os.utime(cart, ns=(mtime, mtime))  # the bytes as committed, a new mtime
    ix = Indexer(root, comp, workers=1)
    report = ix.index_tree()
    assert (report.parsed, report.unchanged) == (0, 1) and not ix._loaded
    assert comp.overlay_files() == 0  # not written to the overlay: it differs from the base in no byte
    assert comp.file("shop/cart.py").mtime_ns == mtime
    again = Indexer(root, comp, workers=1)
    assert again.index_tree().unchanged == 0 and not again._loaded
    assert comp.dump() == full_dump(tmp_path, root)

    # a file the overlay holds (edited) is restamped there
    cart.write_text(cart.read_text() + "\n\ndef carol_probe(c):\n    return c\n")
    assert again.index_tree().parsed == 1 and comp.overlay_files() == 1
    mtime = cart.stat().st_mtime_ns + 5 * 10**9
    os.utime(cart, ns=(mtime, mtime))
    assert again.index_tree().unchanged == 1 and comp.overlay.file("shop/cart.py").mtime_ns == mtime
    assert Indexer(root, comp, workers=1).index_tree().unchanged == 0
    comp.close()


def test_a_checkout_under_the_bases_redaction_extracts_nothing_and_under_another_everything(tmp_path, repo):
    """The redaction a base's text was extracted under is the checkout's until it extracts
    the tree under its own: the same patterns parse nothing; other patterns extract every file
    into the overlay (the base's text was redacted otherwise), as a full index would have it."""
    from codesynapse.policy import parse_policy

    root, commit = repo
    redacting, _ = parse_policy('redact: ["pay_[a-z]+"]\n')
    tree = tmp_path / "tree"
    tree.mkdir()
    export_commit(root, commit, tree)
    base = SqliteGraphStore(tmp_path / "base.db", "g@" + commit)
    Indexer(tree, base, redacting, workers=1).index_tree()
    same = composite(tmp_path, root, commit, base)
    assert Indexer(root, same, redacting, workers=1).index_tree().parsed == 0
    assert same.overlay_files() == 0
    same.close()

    base = SqliteGraphStore(tmp_path / "base.db", "g@" + commit)
    (tmp_path / "overlay.db").unlink()
    other = CompositeGraphStore(base, SqliteGraphStore(tmp_path / "overlay.db", "g"), base_commit=commit,
                                clean=clean_paths(root, commit, base))
    report = Indexer(root, other, None, workers=1).index_tree()  # no pattern in force here
    assert report.parsed == len([f for f in base.files() if f.status != "skipped"])
    assert other.dump() == full_dump(tmp_path, root)
    other.close()


def test_changes_shadow_the_base_and_equal_a_full_index(tmp_path, repo):
    root, commit = repo
    base = build_base(tmp_path, root, commit)
    before = base.dump()
    # pay_for is removed (refunds.py, unchanged, calls it: its base call row is re-resolved in
    # the overlay), a new file and function, a deleted file with a subclass
    pay = root / "shop" / "payment.py"
    text = pay.read_text()
    start = text.index("def pay_for")
    pay.write_text(text[:start] + "def settle(items):\n    return len(items)\n")
    (root / "shop" / "wip.py").write_text("def alice_private_refund(order):\n    return order\n")
    (root / "shop" / "gone.py").unlink()
    comp = composite(tmp_path, root, commit, base)
    report = Indexer(root, comp, workers=1).index_tree()
    assert report.parsed == 2  # payment.py and wip.py; every other file comes from the base
    assert comp.overlay_files() == 3
    full = full_dump(tmp_path, root)
    assert comp.dump() == full
    assert base.dump() == before  # the base is never written

    assert comp.symbols_by_qname("shop.payment.pay_for") == []
    assert comp.callers("shop.payment.pay_for") == [] and comp.count_callers("shop.payment.pay_for") == 0
    assert comp.file("shop/gone.py") is None and comp.symbols_by_qname("shop.gone.OldCart") == []
    assert comp.subtypes("shop.cart.Cart") == [r for r in comp.inherits() if r.target == "shop.cart.Cart"]
    wip = comp.symbols_by_qname("shop.wip.alice_private_refund")
    assert len(wip) == 1 and wip[0].id >= OVERLAY_IDS
    assert comp.symbol_by_id(wip[0].id) == wip[0]
    assert [s.qname for s, _ in comp.search("alice_private_refund", 5)][:1] == ["shop.wip.alice_private_refund"]
    stats = comp.stats()
    assert (stats.files, stats.symbols, stats.calls) == (
        len([f for f in full["files"] if f[6] != "skipped"]), len(full["symbols"]), len(full["calls"]))
    comp.close()


def test_the_overlay_follows_later_edits_and_a_revert(tmp_path, repo):
    root, commit = repo
    base = build_base(tmp_path, root, commit)
    comp = composite(tmp_path, root, commit, base)
    ix = Indexer(root, comp, workers=1)
    ix.index_tree()
    cart = root / "shop" / "cart.py"
    original = cart.read_text()
    cart.write_text(original + "\n\ndef bob_private_discount(cart):\n    return cart\n")
    assert ix.index_tree().parsed == 1
    assert comp.dump() == full_dump(tmp_path, root, "edited")
    cart.write_text(original)
    ix.index_tree()
    assert comp.symbols_by_qname("shop.cart.bob_private_discount") == []
    assert comp.dump() == full_dump(tmp_path, root, "reverted")
    comp.close()


def test_a_delta_base_stores_only_changed_files_and_stacks_under_an_overlay(tmp_path, repo):
    from codesynapse.store.team import build_base_into, changed_since

    root, c1 = repo
    base = build_base(tmp_path, root, c1)
    # commit 2 changes one file (a function removed that another file calls) and adds one
    pay = root / "shop" / "payment.py"
    text = pay.read_text()
    pay.write_text(text[:text.index("def pay_for")] + "def settle(items):\n    return len(items)\n")
    (root / "shop" / "loyalty.py").write_text("def loyalty_bonus(total):\n    return total\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "c2")
    c2 = git(root, "rev-parse", "HEAD")
    tree2 = tmp_path / "tree2"
    tree2.mkdir()
    export_commit(root, c2, tree2)
    delta = SqliteGraphStore(tmp_path / "delta.db", "g@" + c2)
    changed = {line for line in git(root, "diff", "--name-only", c1, c2).splitlines()}
    report = build_base_into(delta, tree2, None, 1, below=base, changed=changed)
    assert report.parsed == 2
    assert sorted(f.path for f in delta.files()) == ["shop/loyalty.py", "shop/payment.py"]
    assert delta.stats().symbols < base.stats().symbols / 2  # the rest is shared with commit 1's base
    readable = CompositeGraphStore(base, delta, base_commit=c2, frozen=True)
    assert readable.dump() == full_dump(tmp_path, tree2, "c2")

    # a checkout of commit 2 with its own edit, on top of the delta base
    (root / "shop" / "wip.py").write_text("def alice_private_refund(order):\n    return order\n")
    assert changed_since(root, c2) == set()  # untracked only
    overlay = SqliteGraphStore(tmp_path / "overlay.db", "g")
    comp = CompositeGraphStore(readable, overlay, base_commit=c2, clean=clean_paths(root, c2, readable))
    assert Indexer(root, comp, workers=1).index_tree().parsed == 1
    assert comp.dump() == full_dump(tmp_path, root, "checkout")
    ids = {s.id for s in comp.all_symbols()}
    assert len(ids) == len(comp.dump()["symbols"])  # three levels, no id shared
    wip = comp.symbols_by_qname("shop.wip.alice_private_refund")[0]
    loyalty = comp.symbols_by_qname("shop.loyalty.loyalty_bonus")[0]
    assert comp.symbol_by_id(wip.id) == wip and comp.symbol_by_id(loyalty.id) == loyalty
    comp.close()


def test_the_composite_takes_the_ports_parameters():
    from codesynapse.graph.depmodel import DependencyStore
    from codesynapse.store.graph import GraphStore

    from tests.contract.support import signature_differences

    for port in (GraphStore, DependencyStore):
        assert signature_differences(port, CompositeGraphStore.__new__(CompositeGraphStore)) == []


def test_an_unsaved_buffer_goes_to_the_overlay_and_leaves_with_it(tmp_path, repo):
    from codesynapse.index.indexer import Candidate

    root, commit = repo
    base = build_base(tmp_path, root, commit)
    comp = composite(tmp_path, root, commit, base)
    ix = Indexer(root, comp, workers=1)
    ix.index_tree()
    rel = "shop/pricing.py"
    disk = (root / rel).read_bytes()
    buffer = disk + b"\n\ndef draft_only(x):\n    return x\n"
    cand = Candidate(rel, "python", len(buffer), 0)
    ix.update([cand], [], overlays={rel: buffer})  # the editor's unsaved text, as the live updater sends it
    assert [s.qname for s in comp.symbols_by_qname("shop.pricing.draft_only")] == ["shop.pricing.draft_only"]
    assert comp.overlay_files() == 1
    assert base.symbols_by_qname("shop.pricing.draft_only") == []
    st = (root / rel).stat()
    ix.update([Candidate(rel, "python", st.st_size, st.st_mtime_ns)], [])  # the buffer closed: the disk again
    assert comp.symbols_by_qname("shop.pricing.draft_only") == []
    assert comp.dump() == full_dump(tmp_path, root)
    comp.close()


class _CountingStore(SqliteGraphStore):
    """A real SQLite base that counts the scans of every call (the parameter pass's count of
    names handed on as values reads them all unless the count is kept)."""

    scans = 0

    def all_calls(self):
        type(self).scans += 1
        return super().all_calls()


def test_a_checkout_reads_the_bases_value_counts_instead_of_scanning_it(tmp_path, repo):
    import json

    from codesynapse.store.graph import VALUE_REFS_META

    root, commit = repo
    (root / "shop" / "jobs.py").write_text(
        "from shop.payment import pay_for\n\n\ndef later(run, items):\n    return run(pay_for, items)\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "c2")
    commit = git(root, "rev-parse", "HEAD")
    base = build_base(tmp_path, root, commit, _CountingStore)
    kept = json.loads(base.get_meta(VALUE_REFS_META))
    assert kept.get("pay_for") == 1

    # a clean checkout: the base's counts are the view's; no scan of the base's calls
    comp = composite(tmp_path, root, commit, base)
    _CountingStore.scans = 0
    assert Indexer(root, comp, workers=1).index_tree().parsed == 0
    assert _CountingStore.scans == 0
    assert json.loads(comp.get_meta(VALUE_REFS_META)) == kept

    # a change that hands another name on: the checkout's counts are the base's with the
    # change applied, as a full index of the working tree counts them
    (root / "shop" / "wip.py").write_text(
        "from shop.refunds import refund\n\n\ndef soon(run):\n    return run(refund, [])\n")
    assert Indexer(root, comp, workers=1).index_tree().parsed == 1
    plain = SqliteGraphStore(tmp_path / "plain.db", "plain")
    try:
        Indexer(root, plain, workers=1).index_tree()
        assert json.loads(comp.get_meta(VALUE_REFS_META)) == json.loads(plain.get_meta(VALUE_REFS_META))
        assert json.loads(comp.get_meta(VALUE_REFS_META)).get("refund") == 1
    finally:
        plain.close()
    assert json.loads(base.get_meta(VALUE_REFS_META)) == kept  # the base is never written
    comp.close()
