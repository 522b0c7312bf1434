"""Row ids of a team checkout's composite store (store/composite.py) when it moves from a
full base to a delta base (``reset_overlay``, as ``TeamGraphStore.prepare_index`` does after
a pull): the overlay's ids must move above the new base's id range, or an overlay row and a
delta-base row share an id and reads by id (``symbol_by_id``) or writes by id (the
resolver's ``update_*_targets``) reach the wrong level. Real SQLite stores throughout."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from codesynapse.index.indexer import Indexer
from codesynapse.policy import load_policy
from codesynapse.store.composite import CompositeGraphStore
from codesynapse.store.sqlite.graph import SqliteGraphStore
from codesynapse.store.team import build_base_into, clean_paths, export_commit

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "python_repo"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), "-c", "user.email=t@example.invalid", "-c", "user.name=t",
                           *args], check=True, capture_output=True, text=True).stdout.strip()


def export(root: Path, commit: str, dest: Path) -> Path:
    dest.mkdir()
    export_commit(root, commit, dest)
    return dest


def test_overlay_ids_move_above_a_delta_base_after_a_pull(tmp_path: Path):
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "c1")
    c1 = git(root, "rev-parse", "HEAD")
    full = SqliteGraphStore(tmp_path / "full.db", "g@" + c1)
    Indexer(export(root, c1, tmp_path / "t1"), full, workers=1).index_tree()

    # the checkout stands on c1's base
    overlay = SqliteGraphStore(tmp_path / "overlay.db", "g")
    comp = CompositeGraphStore(full, overlay, base_commit=c1, clean=clean_paths(root, c1, full))
    Indexer(root, comp, workers=1).index_tree()

    # c2 changes one file; its base is a delta over c1's (as publish_base builds it)
    (root / "shop" / "pricing.py").write_text((root / "shop" / "pricing.py").read_text()
                                              + "\n\ndef loyalty_bonus(total):\n    return total\n")
    git(root, "commit", "-qam", "c2")
    c2 = git(root, "rev-parse", "HEAD")
    below = SqliteGraphStore(tmp_path / "full.db", "g@" + c1)
    delta = SqliteGraphStore(tmp_path / "delta.db", "g@" + c2)
    tree = export(root, c2, tmp_path / "t2")
    build_base_into(delta, tree, load_policy(tree)[0], 1, below, {"shop/pricing.py"})
    readable = CompositeGraphStore(below, delta, base_commit=c2, frozen=True)

    # the pull: move to c2's base, then the checkout's own new file goes to the overlay
    comp.reset_overlay(readable, c2, clean_paths(root, c2, readable))
    (root / "shop" / "wip.py").write_text("def wip_only():\n    return 1\n")
    Indexer(root, comp, workers=1).index_tree()

    symbols = list(comp.all_symbols())
    ids = [s.id for s in symbols]
    assert len(ids) == len(set(ids))  # no two levels share an id
    by_qname = {s.qname: s for s in symbols}
    # one symbol of each level: the full base's, the delta base's and the overlay's
    for qname in ("shop.cart.Cart", "shop.pricing.loyalty_bonus", "shop.wip.wip_only"):
        s = by_qname[qname]
        assert comp.symbol_by_id(s.id) == s, qname
    assert comp.offset >= readable.id_ceiling
    comp.close()
