"""Overlays of departed checkouts expire (issue 26 #4): ``codesynapse repo gc`` removes the
local ``overlay.db`` of a checkout of this repository whose folder is gone, and leaves the
others (a checkout that still exists, another repository's, one that records no folder). On
real SQLite overlays, as store/team.py opens them."""

from __future__ import annotations

from codesynapse.store.sqlite.graph import SqliteGraphStore
from codesynapse.store.team import CHECKOUT_ROOT, expire_overlays


def overlay(data_root, name, graph_id, checkout):
    folder = data_root / name
    folder.mkdir(parents=True)
    store = SqliteGraphStore(folder / "overlay.db", graph_id)
    try:
        if checkout is not None:
            store.set_meta({CHECKOUT_ROOT: str(checkout)})
    finally:
        store.close()
    return folder


def test_only_the_overlays_of_departed_checkouts_of_this_repository_expire(tmp_path):
    data = tmp_path / "data"
    alive, gone = tmp_path / "alive", tmp_path / "gone"
    alive.mkdir()
    kept = overlay(data, "alive-1", "repo", alive)
    departed = overlay(data, "gone-2", "repo", gone)  # its checkout folder never exists
    other = overlay(data, "other-3", "another-repo", gone)
    unknown = overlay(data, "unknown-4", "repo", None)
    (data / "plain-5").mkdir()  # a data folder without an overlay (an SQLite-only checkout)

    assert expire_overlays([data, tmp_path / "missing"], "repo") == [str(departed)]
    assert not (departed / "overlay.db").exists()
    assert all((f / "overlay.db").exists() for f in (kept, other, unknown))
    assert expire_overlays([data], "repo") == []  # nothing more to remove
    alive.rmdir()  # that checkout departs too
    assert expire_overlays([data], "repo") == [str(kept)]
