"""A team on one graph server (docs/TEAM.md): one shared, immutable base graph per
(repository identity, commit), and each checkout's own changes in a local overlay.

- ``base_graph_id(graph_id, commit)``: the base's graph id, ``<identity graph id>@<commit>``.
- ``publish_base``: build the base of a commit from the committed tree (``git archive``,
  never the working tree) under a server-side lock (``BaseLock``: one lock per base with an
  owner and a lease, created if absent by the server backend (``TeamServer``); the builder
  renews the lease while it works). The ``base_complete`` meta is written last: readers ignore a base
  without it, and a builder that takes over an expired lock first removes what a dead
  builder left. A complete base is never written again.
- ``TeamGraphStore``: the checkout's CompositeGraphStore (store/composite.py) over a base and
  its overlay (``overlay.db`` in the checkout's data folder). The base is that of HEAD's
  newest first-parent ancestor that a remote-tracking ref contains (``pushed_point``): a
  daemon never publishes an unpushed commit; those stay in its overlay. Before each index
  (``prepare_index``) it moves to that base, building it when no one has, or waiting while
  another builder does.

The server side (repository entries, the lock, the list of bases) is the ``TeamServer``
port, one per graph server backend beside its graph store: ``store/neo4j/team.py`` (MERGE on
uniqueness constraints) and ``store/hugegraph/team.py`` (deterministic vertex ids under the
Gremlin server's lock). Everything else here is backend-neutral. SQLite keeps one graph per
identity.
"""

from __future__ import annotations

import importlib
import io
import logging
import os
import socket
import subprocess
import tarfile
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from codesynapse.errors import StoreError
from codesynapse.store.composite import BASE_COMMIT, BASE_STATS, CompositeGraphStore
from codesynapse.store.graph import SCHEMA_VERSION, GraphStore
from codesynapse.store.symtable import write_table

log = logging.getLogger(__name__)

COMPLETE = "base_complete"  # meta key of a base graph, "1" once every row is written
TEAM_BACKENDS = ("neo4j", "hugegraph")  # graph server backends with a TeamServer (store/<backend>/team.py)
WAIT_POLL_S = 0.5
PARENT = "base_parent"  # meta of a delta base: the commit whose base it shadows ("" or absent: a full base)
DEPTH = "base_depth"  # how many delta bases lie between this one and a full base, itself included
MAX_CHAIN = 8  # a new base whose chain would be longer is built in full
PARENT_SEARCH = 50  # first-parent ancestors searched for a published base to build a delta on


def base_graph_id(graph_id: str, commit: str) -> str:
    return f"{graph_id}@{commit}"


def supports_team(settings) -> bool:
    return settings.backend in TEAM_BACKENDS and getattr(settings, "team_graphs", True)


class TeamServer(Protocol):
    """A graph server backend's side of team graphs: repository entries, the bases of a
    repository and one build lock per base. Every create-if-absent is atomic on the server
    (two processes racing make one entry / one lock holder)."""

    def grant(self, tenant: str, graph_id: str, identity: str) -> dict[str, Any]:
        """Create or renew (revision + 1) the entry: {id, tenant_id, graph_id, identity, revision}."""

    def revoke(self, tenant: str, graph_id: str) -> int:
        """Remove the entry; how many were removed (0 or 1)."""

    def authorized(self, tenant: str, graph_id: str) -> bool: ...

    def bases(self, graph_id: str, complete_key: str) -> list[tuple[str, bool, float | None]]:
        """The repository's bases on the server: (base graph id, complete, lease end or None
        when no builder holds it), by graph id."""

    def acquire_lock(self, base_id: str, owner: str, lease_s: float) -> bool:
        """Take the base's lock when it is free, ``owner``'s, or its lease has ended."""

    def renew_lock(self, base_id: str, owner: str, lease_s: float) -> bool:
        """Extend ``owner``'s lease; False when the lock is no longer ``owner``'s."""

    def release_lock(self, base_id: str, owner: str) -> None: ...

    def drop_lock(self, base_id: str) -> None:
        """Forget the base's lock whoever holds it (``repo gc`` removing the base)."""


def team_server(store) -> TeamServer:
    """The TeamServer of the server a store (from ``open_base``) talks to: the ``team``
    module beside the store's own (store/<backend>/team.py)."""
    module = type(store).__module__.rpartition(".")[0] + ".team"
    try:
        return importlib.import_module(module).TeamServer(store)
    except (ImportError, AttributeError) as e:
        raise StoreError(f"team graphs are not available on the {type(store).__name__} backend "
                         f"(only on {' and '.join(TEAM_BACKENDS)})") from e


def _git_bytes(root: Path, *args: str, timeout: float = 120.0) -> bytes | None:
    try:
        out = subprocess.run(["git", "-C", str(root), *args], check=False, capture_output=True, timeout=timeout,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def export_commit(root: Path, commit: str, dest: Path) -> None:
    """Write the tree of ``commit`` (its committed content, not the working tree) to ``dest``."""
    data = _git_bytes(root, "archive", "--format=tar", commit)
    if data is None:
        raise StoreError(f"git archive {commit} failed in {root}")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")


def changed_since(root: Path, commit: str) -> set[str] | None:
    """Tracked paths whose working-tree content differs from ``commit`` (None: git failed)."""
    out = _git_bytes(root, "diff", "--name-only", "--no-renames", "-z", commit, "--")
    if out is None:
        return None
    return {p for p in out.decode("utf-8", "surrogateescape").split("\0") if p}


def pushed_point(root: Path, head: str) -> tuple[list[str], str]:
    """What of ``head``'s history the checkout has shared: (its first-parent commits that no
    remote-tracking ref contains, newest first: the unpushed ones; the newest first-parent
    ancestor that one does, "" when none does). A repository without remote-tracking refs has
    shared nothing: its unpushed commits are then the last ``PARENT_SEARCH`` of the chain. When
    git cannot say, nothing counts as pushed."""
    refs = _git_bytes(root, "for-each-ref", "--count=1", "--format=%(objectname)", "refs/remotes")
    if not (refs or b"").strip():
        chain = _git_bytes(root, "rev-list", "--first-parent", f"--max-count={PARENT_SEARCH}", head)
        return (chain or b"").decode().split() or [head], ""
    # the chain's commits that a remote ref contains are a suffix of it (their ancestors are too)
    out = _git_bytes(root, "rev-list", "--first-parent", head, "--not", "--remotes")
    if out is None:
        return [head], ""
    unpushed = out.decode().split()
    pushed = _git_bytes(root, "rev-list", "--first-parent", "--max-count=1", f"--skip={len(unpushed)}", head)
    return unpushed, (pushed or b"").decode().strip()


def clean_paths(root: Path, commit: str, base: GraphStore) -> dict[str, tuple[int, int]]:
    """Base paths the checkout holds exactly as committed: path -> (size, mtime_ns) of the
    local file. Nothing is clean when git cannot say."""
    changed = changed_since(root, commit)
    if changed is None:
        return {}
    out = {}
    for f in base.files():
        if f.path in changed:
            continue
        try:
            st = os.stat(root / f.path)
        except OSError:
            continue
        out[f.path] = (st.st_size, st.st_mtime_ns)
    return out


# -- the server side ------------------------------------------------------------------------------
def open_base(settings, graph_id: str):
    """The graph store of ``graph_id`` on the team's graph server, with the team labels in
    place (store/<backend>/team.py ``open_graph``)."""
    if settings.backend not in TEAM_BACKENDS:
        raise StoreError(f"team graphs need a graph server backend ({' or '.join(TEAM_BACKENDS)}), "
                         f"not {settings.backend!r}")
    return importlib.import_module(f"codesynapse.store.{settings.backend}.team").open_graph(settings, graph_id)


def is_complete(store: GraphStore) -> bool:
    return store.get_meta(COMPLETE) == "1"


def open_readable_base(settings, graph_id: str, commit: str) -> GraphStore | None:
    """The complete base of ``commit`` as one read-only store: a full base itself, a delta
    base as a frozen composite over its parent's (recursively); None when there is none."""
    store = open_base(settings, base_graph_id(graph_id, commit))
    try:
        if not is_complete(store):
            store.close()
            return None
        parent = store.get_meta(PARENT) or ""
        if not parent:
            return store
        below = open_readable_base(settings, graph_id, parent)
    except BaseException:
        store.close()
        raise
    if below is None:  # the parent was removed by hand (gc keeps the parents of what it keeps)
        log.warning("base %s: its parent base %s is gone", commit[:12], parent[:12])
        store.close()
        return None
    return CompositeGraphStore(below, store, base_commit=commit, frozen=True)


def _nearest_parent(settings, root: Path, graph_id: str, commit: str, store) -> tuple[str, int] | None:
    """(ancestor commit with a complete base, depth of the new delta) to build ``commit``'s
    base on, or None: build in full."""
    revs = (_git_bytes(root, "rev-list", "--first-parent", f"--max-count={PARENT_SEARCH}", f"{commit}^") or b"")
    complete = {b["commit"] for b in list_bases(store, graph_id) if b["complete"]}
    for rev in revs.decode().split():
        if rev in complete:
            parent = open_base(settings, base_graph_id(graph_id, rev))
            try:
                depth = int(parent.get_meta(DEPTH) or 0) + 1
            finally:
                parent.close()
            return (rev, depth) if depth <= MAX_CHAIN else None
    return None


def build_base_into(store: GraphStore, tree: Path, policy, workers: int, below: GraphStore | None = None,
                    changed: set[str] | None = None, progress=None):
    """Index the exported ``tree`` into ``store``: in full, or, over the readable base
    ``below`` of an ancestor, only the files ``changed`` since it (a delta: unchanged files'
    rows are the ancestor's, not copied). Returns the IndexReport."""
    from codesynapse.index.indexer import Indexer

    target: GraphStore = store
    if below is not None:
        clean = {}
        for f in below.files():
            if changed is not None and f.path in changed:
                continue
            try:
                st = os.stat(tree / f.path)
            except OSError:
                continue
            clean[f.path] = (st.st_size, st.st_mtime_ns)
        target = CompositeGraphStore(below, store, clean=clean)
    return Indexer(tree, target, policy, workers=workers).index_tree(progress)


# -- repository entries: which tenant may read a repository's bases ---------------------------------
def grant(store, tenant: str, graph_id: str, identity: str) -> dict[str, Any]:
    """Create (or renew: a new access-policy revision) the repository entry that authorizes
    ``tenant`` to read the bases of the repository ``graph_id``. The entry is the tenant's; the
    shared graph has no owner."""
    return team_server(store).grant(tenant, graph_id, identity)


def revoke(store, tenant: str, graph_id: str) -> int:
    return team_server(store).revoke(tenant, graph_id)


def authorized(store, tenant: str, graph_id: str) -> bool:
    """True when a repository entry authorizes ``tenant`` for the repository ``graph_id``."""
    return team_server(store).authorized(tenant, graph_id)


def list_bases(store, graph_id: str) -> list[dict[str, Any]]:
    """The repository's bases on the server: {graphId, commit, complete, leaseUntil}."""
    return [{"graphId": g, "commit": g.split("@", 1)[1], "complete": complete, "leaseUntil": lease}
            for g, complete, lease in team_server(store).bases(graph_id, COMPLETE)]


# overlay meta: the checkout folder an overlay belongs to (an overlay whose folder is gone expires)
CHECKOUT_ROOT = "checkout_root"


def expire_overlays(data_roots: Iterable[Path], graph_id: str) -> list[str]:
    """Remove the overlays of this repository's departed checkouts: an ``overlay.db`` in a
    data folder below one of ``data_roots`` whose recorded checkout folder no longer exists.
    Overlays of other repositories, and those that record no folder, are left alone. Returns
    the data folders whose overlay was removed."""
    import sqlite3

    removed: list[str] = []
    for data_root in dict.fromkeys(Path(r) for r in data_roots):
        if not data_root.is_dir():
            continue
        for db in sorted(data_root.glob("*/overlay.db")):
            try:
                conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
                try:
                    row = conn.execute("SELECT value FROM meta WHERE graph_id=? AND key=?",
                                       (graph_id, CHECKOUT_ROOT)).fetchone()
                finally:
                    conn.close()
            except sqlite3.Error:
                continue  # not readable as an overlay: not ours to remove
            if not row or not row[0] or Path(row[0]).exists():
                continue
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
            removed.append(str(db.parent))
    return removed


def gc_bases(settings, root: Path, graph_id: str, keep: int) -> dict[str, list[str]]:
    """Remove the repository's bases that no branch needs: kept are the last ``keep`` commits
    of every branch the checkout at ``root`` knows (local and remote-tracking) and bases a
    live builder holds; incomplete bases whose builder is gone are removed too."""
    out = _git_bytes(root, "for-each-ref", "--format=%(refname)", "refs/heads", "refs/remotes") or b""
    needed: set[str] = set()
    for ref in out.decode().split():
        if ref.endswith("/HEAD"):
            continue
        revs = _git_bytes(root, "rev-list", f"--max-count={keep}", ref)
        needed.update((revs or b"").decode().split())
    head = _git_bytes(root, "rev-parse", "HEAD")
    if head:
        needed.add(head.decode().strip())
    removed, kept = [], []
    store = open_base(settings, graph_id)
    try:
        now = time.time()
        bases = list_bases(store, graph_id)
        keep = {b["commit"] for b in bases
                if b["commit"] in needed or (b["leaseUntil"] is not None and b["leaseUntil"] > now)}
        todo = list(keep)
        while todo:  # a kept delta base needs its parent's
            c = todo.pop()
            base = open_base(settings, base_graph_id(graph_id, c))
            try:
                parent = base.get_meta(PARENT) or ""
            finally:
                base.close()
            if parent and parent not in keep:
                keep.add(parent)
                todo.append(parent)
        for b in bases:
            if b["commit"] in keep:
                kept.append(b["commit"])
                continue
            base = open_base(settings, b["graphId"])
            try:
                base.delete_graph()
                team_server(base).drop_lock(b["graphId"])
            finally:
                base.close()
            removed.append(b["commit"])
    finally:
        store.close()
    return {"removed": removed, "kept": kept}


class BaseLock:
    """One builder per base: the server's lock of the base (TeamServer) naming its owner and
    the time its lease ends. A lock whose lease ended (its builder died) may be taken over."""

    def __init__(self, store, lease_s: float):
        self.server = team_server(store)
        self.graph_id = store.graph_id
        self.lease_s = lease_s
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

    def acquire(self) -> bool:
        return self.server.acquire_lock(self.graph_id, self.owner, self.lease_s)

    def renew(self) -> bool:
        return self.server.renew_lock(self.graph_id, self.owner, self.lease_s)

    def release(self) -> None:
        self.server.release_lock(self.graph_id, self.owner)


def publish_base(settings, root: Path, identity: str, graph_id: str, commit: str, *, wait_s: float = 600.0,
                 progress=None) -> str:
    """Make the base of ``commit`` exist: ``"exists"`` (complete already, or completed by
    another builder while this one waited), ``"built"`` (by this call), or ``"busy"``
    (another builder still holds the lock after ``wait_s``)."""
    import msgspec

    from codesynapse.policy import load_policy

    gid = base_graph_id(graph_id, commit)
    store = open_base(settings, gid)
    lock = BaseLock(store, float(getattr(settings, "team_lease_s", 120.0)))
    try:
        deadline = time.monotonic() + wait_s
        while not lock.acquire():
            if is_complete(store):
                return "exists"
            if time.monotonic() > deadline:
                return "busy"
            time.sleep(WAIT_POLL_S)
        stop = threading.Event()
        renewer = None
        try:
            if is_complete(store):
                return "exists"
            # what a dead builder left (never visible: not complete) goes first
            store.delete_graph()
            store.set_meta({"schema_version": str(SCHEMA_VERSION)})

            def renew() -> None:
                while not stop.wait(lock.lease_s / 3):
                    try:
                        if not lock.renew():
                            log.warning("base %s: the build lock was taken over", gid)
                    except StoreError:
                        log.warning("base %s: renewing the build lock failed", gid, exc_info=True)

            renewer = threading.Thread(target=renew, name="base-lock-renew", daemon=True)
            renewer.start()
            t0 = time.perf_counter()
            found = _nearest_parent(settings, root, graph_id, commit, store)
            below = open_readable_base(settings, graph_id, found[0]) if found else None
            parent, depth = (found if below is not None else ("", 0))
            changed = None
            if below is not None:
                diff = _git_bytes(root, "diff", "--name-only", "--no-renames", "-z", parent, commit, "--")
                if diff is None:
                    below.close()
                    below, parent, depth = None, "", 0
                else:
                    changed = {p for p in diff.decode("utf-8", "surrogateescape").split("\0") if p}
            try:
                with tempfile.TemporaryDirectory(prefix="codesynapse-base-") as tmp:
                    tree = Path(tmp) / "tree"
                    tree.mkdir()
                    export_commit(root, commit, tree)
                    policy, _ = load_policy(tree)
                    report = build_base_into(store, tree, policy, settings.workers, below, changed, progress)
                    # the counts of the base as readers see it (a delta: over its parent's), kept
                    # with it: a checkout reads them once instead of counting the base's nodes
                    readable = CompositeGraphStore(below, store, frozen=True) if below is not None else store
                    counts = msgspec.json.encode(readable.stats()).decode()
            finally:
                if below is not None:
                    below.close()
            store.set_meta({"identity": identity, "commit": commit, "built_at": str(time.time()),
                            "policy_fingerprint": getattr(policy, "fingerprint", ""), PARENT: parent,
                            DEPTH: str(depth)})
            # the resolver's table of the base's own rows, kept with it: a checkout loads it in
            # one read instead of every row (store/symtable.py)
            table_chars = write_table(store)
            store.set_meta({BASE_STATS: counts})
            store.set_meta({COMPLETE: "1"})  # last: the base is visible from here on
            log.info("base %s built: %d files (%d parsed%s; symbol table %d KB) in %.1f s", gid, report.files,
                     report.parsed, f", a delta over {parent[:12]}" if parent else "", table_chars // 1024,
                     time.perf_counter() - t0)
            return "built"
        finally:
            stop.set()
            if renewer is not None:
                renewer.join(timeout=5)
            lock.release()
    finally:
        store.close()


# -- the checkout side ------------------------------------------------------------------------------
class TeamGraphStore(CompositeGraphStore):
    """The checkout's composite store, following its HEAD from base to base."""

    def __init__(self, settings, ws, overlay: GraphStore):
        self.settings = settings
        self.workspace = ws
        self._empty_path = ws.data_dir / "team-empty-base.db"
        head = ws.git_head() or ""
        base, attached = self._empty(), ""
        if head and self._authorized():
            target, _ = self._target(head)
            if target:
                base, attached = self._base_of(target)
        super().__init__(base, overlay, base_commit=attached,
                         clean=clean_paths(ws.root, attached, base) if attached else {})
        if overlay.get_meta(BASE_COMMIT) != attached:
            self.reset_overlay(self.base, attached, self.clean)

    def _empty(self) -> GraphStore:
        from codesynapse.store.sqlite.graph import SqliteGraphStore

        return SqliteGraphStore(self._empty_path, self.workspace.graph_id)

    def _authorized(self) -> bool:
        """A repository entry authorizes this daemon's tenant (settings, never a request) for
        the repository; without one no base is read or built and the overlay holds everything."""
        store = open_base(self.settings, self.workspace.graph_id)
        try:
            return authorized(store, self.settings.tenant, self.workspace.graph_id)
        finally:
            store.close()

    def _base_of(self, commit: str) -> tuple[GraphStore, str]:
        """(the complete base of ``commit``, commit) or (an empty store, "") when there is none.
        The caller has checked the tenant's repository entry."""
        store = open_readable_base(self.settings, self.workspace.graph_id, commit)
        if store is not None:
            return store, commit
        return self._empty(), ""

    def _target(self, head: str) -> tuple[str, bool]:
        """(the commit whose base this checkout stands on, whether this daemon may build it).

        Only what the checkout has pushed is ever published by a daemon: its unpushed commits
        stay in its overlay, like its uncommitted changes, so that no other checkout can read
        them. So the base is that of the newest first-parent ancestor of HEAD that a
        remote-tracking ref contains (built when no one has), unless a newer, unpushed one
        of HEAD's first-parent commits already has a complete base (published on purpose by
        ``index --publish``): reading that leaks nothing (a reader has the commit), and it
        is read, never built. ("", False): nothing pushed and nothing published."""
        unpushed, pushed = pushed_point(self.workspace.root, head)
        if unpushed:
            store = open_base(self.settings, self.workspace.graph_id)
            try:
                complete = {b["commit"] for b in list_bases(store, self.workspace.graph_id) if b["complete"]}
            finally:
                store.close()
            for commit in unpushed:
                if commit in complete:
                    return commit, False
        return pushed, bool(pushed)

    def prepare_index(self, progress=None, wait_s: float = 600.0) -> dict[str, Any]:
        """Before an index: stand on the base of the current HEAD's newest pushed first-parent
        ancestor (``_target``; built now when no one has; while another builder holds it past
        ``wait_s``, the overlay answers alone). The overlay then holds everything that differs
        from it: unpushed commits, uncommitted and new files, unsaved buffers."""
        ws = self.workspace
        head = ws.git_head() or ""
        if not head:
            return {"base": self.base_commit, "status": "current"}
        unpushed, pushed = pushed_point(ws.root, head)
        if not unpushed and pushed == self.base_commit:
            return {"base": self.base_commit, "status": "current"}
        if not self._authorized():
            if self.base_commit:  # the entry was revoked: the base is no longer read
                self.reset_overlay(self._empty(), "", {})
            log.info("no repository entry authorizes tenant %r for %s: indexing this checkout on its own "
                     "(codesynapse repo grant)", self.settings.tenant, ws.identity)
            return {"base": "", "status": "unauthorized"}
        target, may_build = self._target(head)
        if target == self.base_commit:
            return {"base": self.base_commit, "status": "current"}
        if not target:  # nothing of HEAD's history is pushed or published: the overlay holds the tree
            log.info("no commit of HEAD's history is pushed (no remote-tracking ref contains one): this "
                     "checkout publishes nothing and indexes on its own")
            self.reset_overlay(self._empty(), "", {})
            return {"base": "", "status": "unpushed"}
        status = "exists"
        if may_build:
            status = publish_base(self.settings, ws.root, ws.identity, ws.graph_id, target, wait_s=wait_s,
                                  progress=progress)
            if status == "busy":
                log.warning("base %s is being built by another process; this checkout indexes on its own "
                            "meanwhile", target[:12])
                return {"base": self.base_commit, "status": status}
        base, attached = self._base_of(target)
        self.reset_overlay(base, attached, clean_paths(ws.root, attached, base) if attached else {})
        return {"base": attached, "status": status}


def open_team_store(settings, ws, notices: list[str] | None = None) -> GraphStore | None:
    """The checkout's TeamGraphStore, or None when the workspace has no commit (no git, or an
    empty repository): such a checkout keeps the one graph per identity."""
    from codesynapse.store.sqlite.graph import open_sqlite_graph

    if not ws.git_head():
        return None
    overlay, notice = open_sqlite_graph(ws.data_dir / "overlay.db", ws.graph_id, settings.memory_budget_mb)
    if notice and notices is not None:
        notices.append(notice)
    if overlay.get_meta(CHECKOUT_ROOT) != str(ws.root):  # for expire_overlays
        overlay.set_meta({CHECKOUT_ROOT: str(ws.root)})
    try:
        return TeamGraphStore(settings, ws, overlay)
    except BaseException:
        overlay.close()
        raise
