"""A running daemon follows its checkout's HEAD (issue 26, docs/TEAM.md), on the session's
graph server (test_team.py's ``team`` fixture and its backends) and a real git repository: a
commit, or a checkout of another commit, moves the daemon's store to the base of the new
HEAD (built when no one has, re-used when it exists) and its answers follow, without a
restart. A local commit moves nothing to the server: the daemon moves when the commit is
pushed (its bases are those of pushed commits, store/team.py ``pushed_point``). Unsaved
buffers stay in the index across a move. The daemon is an in-process App with its live
updater (file watcher, HEAD watcher, worker), as lsp/progress.py starts them."""

from __future__ import annotations

import time

import msgspec
from codesynapse.graph.model import GraphStats
from codesynapse.index.indexer import Indexer
from codesynapse.methods import call_method
from codesynapse.store.composite import BASE_STATS
from codesynapse.store.sqlite.graph import SqliteGraphStore
from codesynapse.watch.live import LiveUpdater

from tests.contract.test_team import Team, add_function, git, team  # noqa: F401 - the fixture


def wait_for(check, what: str, timeout: float = 240.0):
    end = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.2)


def index_after(app, live, before: float | None) -> None:
    """Wait for the full index the live worker runs after a move (HEAD, or its pushed point)."""
    wait_for(lambda: app.last_update != before and live.wait_idle(1.0) and app.state == "ready",
             "the index after the move")


def test_a_running_daemon_follows_head_without_restart(team: Team):  # noqa: F811 - the imported fixture
    team.use_remote()
    root = team.clone("dev")
    c1 = git(root, "rev-parse", "HEAD")
    app = team.app("dev")
    live = None
    try:
        app.index()  # the first index builds c1's base

        def status() -> dict:
            return call_method(app, "codesynapse/indexStatus", {})

        def found(qname: str) -> bool:
            return call_method(app, "codesynapse/symbolCard", {"selector": qname})["found"]

        assert (status()["baseCommit"], status()["overlayFiles"]) == (c1, 0)
        live = LiveUpdater(app)
        live.start(watch=True)

        # an edit: the overlay holds it, on c1's base
        add_function(root, "shop/pricing.py", "def loyalty_bonus(total):\n    return total\n")
        # (as an editor's didChangeWatchedFiles: the file watcher just started may miss the write)
        live.disk_changed("shop/pricing.py")
        wait_for(lambda: found("shop.pricing.loyalty_bonus"), "the edit in the overlay")
        assert (status()["baseCommit"], status()["overlayFiles"]) == (c1, 1)

        # committed, not pushed: HEAD moved, the daemon indexes again and stays on c1's base
        # (nothing unpushed is published); the commit's file is in its overlay
        before = app.last_update
        git(root, "commit", "-qam", "c2")
        c2 = git(root, "rev-parse", "HEAD")
        team.commits.add(c2)
        index_after(app, live, before)
        wait_for(lambda: status()["indexedCommit"] == c2, "HEAD in the stamp")  # (read again every 2 s)
        assert (status()["baseCommit"], status()["overlayFiles"]) == (c1, 1)
        assert found("shop.pricing.loyalty_bonus")
        assert team.base_listed() == [c1]

        # pushed: the daemon moves to c2's base (built now, a delta over c1's) and the edit
        # comes from it; the overlay is empty again
        git(root, "push", "-q", "origin", "main")
        wait_for(lambda: status()["baseCommit"] == c2, "the base of c2")
        wait_for(lambda: live.wait_idle(1.0) and status()["state"] == "ready", "the index after the move")
        assert status()["overlayFiles"] == 0
        assert found("shop.pricing.loyalty_bonus")
        card = call_method(app, "codesynapse/symbolCard", {"selector": "shop.pricing.loyalty_bonus"})
        assert card["provenance"]["freshness"]["baseCommit"] == c2
        base2 = team.base(c2)
        try:
            assert [f.path for f in base2.files()] == ["shop/pricing.py"]  # only what the commit changed
            assert base2.get_meta("base_parent") == c1
            # the base keeps the counts of its readable view (over c1's): a plain index of this tree's
            kept = msgspec.json.decode(base2.get_meta(BASE_STATS), type=GraphStats)
        finally:
            base2.close()
        plain = SqliteGraphStore(team.tmp / "plain.db", "plain")
        try:
            Indexer(root, plain, workers=1).index_tree()
            assert kept == plain.stats()
        finally:
            plain.close()

        # a checkout of c1 (its base exists): the daemon moves back; the function is gone again
        git(root, "checkout", "-q", c1)
        wait_for(lambda: status()["baseCommit"] == c1, "the base of c1 again")
        wait_for(lambda: live.wait_idle(1.0) and status()["state"] == "ready", "the index after the checkout")
        assert not found("shop.pricing.loyalty_bonus")
        assert found("shop.pricing.with_tax")
    finally:
        if live is not None:
            live.stop(join=10)
        app.close()


def test_unsaved_buffers_stay_in_the_index_when_the_daemon_moves_to_another_base(team: Team):  # noqa: F811
    """An open document's unsaved text is the checkout's own: when HEAD's move takes the daemon
    to another base (the tree indexed again from the disk), the buffer goes back into the
    overlay, instead of being dropped until its next edit."""
    team.use_remote()
    root = team.clone("dev")
    c1 = git(root, "rev-parse", "HEAD")
    app = team.app("dev")
    live = None
    try:
        app.index()

        def status() -> dict:
            return call_method(app, "codesynapse/indexStatus", {})

        def found(qname: str) -> bool:
            return call_method(app, "codesynapse/symbolCard", {"selector": qname})["found"]

        live = LiveUpdater(app)
        live.start(watch=True)
        cart = root / "shop" / "cart.py"
        live.buffer_changed("shop/cart.py", cart.read_text() + "\n\ndef unsaved_coupon(cart):\n    return cart\n")
        wait_for(lambda: found("shop.cart.unsaved_coupon"), "the unsaved buffer in the overlay")

        # another commit on the remote, pulled: HEAD moves to it (published now by this daemon)
        other = team.clone("other")
        add_function(other, "shop/pricing.py", "def pulled_rate(x):\n    return x\n")
        git(other, "commit", "-qam", "c2")
        git(other, "push", "-q", "origin", "main")
        c2 = git(other, "rev-parse", "HEAD")
        team.commits.add(c2)
        before = app.last_update
        git(root, "pull", "-q", "--ff-only")
        wait_for(lambda: status()["baseCommit"] == c2, "the base of c2")
        index_after(app, live, before)
        assert found("shop.pricing.pulled_rate")
        # the buffer goes back into the index, over the new base (before: dropped until its next
        # edit); the disk's cart.py never had it
        wait_for(lambda: found("shop.cart.unsaved_coupon"), "the unsaved buffer over the new base", timeout=60)
        assert "unsaved_coupon" not in cart.read_text()
        st = status()
        assert (st["baseCommit"], st["overlayFiles"], st["openBuffers"]) == (c2, 1, ["shop/cart.py"])
        assert c1 != c2
    finally:
        if live is not None:
            live.stop(join=10)
        app.close()
