"""Crash safety: ``kill -9`` at random points of a full index, of incremental updates and of
memory writes. After each kill:

* the files on disk pass the integrity check (``codesynapse.graph.integrity``) as they are,
  before anything reopens them (only ``resolution_pending`` may be left set);
* a restart catches up: the integrity check passes with the flag cleared, and the graph
  equals a fresh full index of the same tree (``GraphStore.dump()``);
* no remembered fact that was acknowledged is lost, and none is stored twice;
* the killed process leaves no extraction worker behind.

Kill points are drawn from a seeded RNG (the seed is in the test id, so a failure replays).
CI kills a few times per scenario; ``CODESYNAPSE_SOAK=1`` many more.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from codesynapse.graph.integrity import check_graph, check_memory, diff_dumps
from tests.reliability.conftest import scale
from tests.reliability.corpus import fresh_dump, mutate, python_tree, stored_dump
from tests.reliability.rawlsp import RawLsp, RpcError, ServerGone, group_members

KILLS = scale(4, 25)
SEED = int(os.environ.get("CODESYNAPSE_CRASH_SEED") or 9)
RESULTS: list[dict] = []


def _record(**row) -> None:
    RESULTS.append(row)
    out = os.environ.get("CODESYNAPSE_RELIABILITY_TALLY")
    if out:
        with open(out, "a", encoding="utf-8") as f:
            f.write(json.dumps({"module": "crash", **row}) + "\n")


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("crash") / "repo"
    python_tree(root, packages=scale(8, 12), modules=scale(40, 60), funcs=8, seed=SEED)
    return root


def wait_no_orphans(pgid: int, timeout: float = 15.0) -> list[int]:
    """Processes of a killed process' group that are still alive after ``timeout``."""
    end = time.monotonic() + timeout
    while True:
        left = group_members(pgid)
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.1)


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def assert_consistent_on_disk(db: Path) -> None:
    if db.exists():
        rep = check_graph(db, loaded=False)
        assert rep.ok, str(rep)


def index_duration(tree: Path, tmp: Path) -> float:
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "codesynapse", "index", str(tree), "--data-dir", str(tmp / "timing")],
                   check=True, stdout=subprocess.DEVNULL, timeout=900)
    return time.monotonic() - t0


# ---- full index: the CLI ------------------------------------------------------------------------


def test_kill9_cli_index_at_random_points(tree, tmp_path):
    """``codesynapse index`` killed at random moments; the next run catches up exactly."""
    fresh = fresh_dump(tree, tmp_path / "fresh")
    duration = index_duration(tree, tmp_path)
    rng = random.Random(SEED)
    orphans_seen: list[int] = []
    for k in range(KILLS):
        data = tmp_path / f"cli{k}"
        at = rng.uniform(0.05, 1.0) * duration
        proc = subprocess.Popen([sys.executable, "-m", "codesynapse", "index", str(tree), "--data-dir", str(data)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            proc.wait(at)
            finished = True
        except subprocess.TimeoutExpired:
            finished = False
            os.kill(proc.pid, signal.SIGKILL)  # the process only, as an OOM killer or a user would
            proc.wait(30)
        left = wait_no_orphans(proc.pid)
        orphans_seen += left
        kill_group(proc.pid)
        assert_consistent_on_disk(data / "graph.db")
        out = subprocess.run([sys.executable, "-m", "codesynapse", "index", str(tree), "--data-dir", str(data)],
                             capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, out.stderr[-2000:]
        rep = check_graph(data / "graph.db")
        assert rep.ok, str(rep)
        diff = diff_dumps(fresh, stored_dump(data, tree))
        _record(scenario="cli full index", kill_at_s=round(at, 2), finished_before_kill=finished,
                orphans=len(left), catch_up_equal=not diff)
        assert not diff, f"kill at {at:.2f} s: the catch-up differs from a fresh index:\n" + "\n".join(diff)
    assert not orphans_seen, f"extraction workers outlived the killed index process: {orphans_seen}"


def _reader_view(db: Path) -> tuple:
    """What a reader of the index file sees in one read transaction, as the daemon's request
    threads read it (their own connection, WAL): the files with their hashes, how many
    symbols, calls and resolved calls."""
    conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True, timeout=30)
    try:
        conn.execute("BEGIN")
        files = hash(tuple(conn.execute("SELECT path, hash FROM files ORDER BY path").fetchall()))
        counts = conn.execute("SELECT (SELECT count(*) FROM symbols), (SELECT count(*) FROM calls), "
                              "(SELECT count(*) FROM calls WHERE target != '')").fetchone()
        conn.execute("COMMIT")
    finally:
        conn.close()
    return (files, *counts)


def _watch_wal(proc: subprocess.Popen, db: Path, kill_at: int = 0, committed=None) -> int:
    """Follow the growth of ``db``'s write-ahead log while ``proc`` runs. With ``kill_at``,
    SIGKILL ``proc`` (the process only, as an OOM killer or a user would) once the log has
    grown that many bytes; returns the growth then, or -1 when the process ended first.
    Without it, returns the growth at which ``committed()`` (read between samples) first
    said yes: where the update's transaction commits."""
    def size() -> int:
        try:
            return os.path.getsize(str(db) + "-wal")
        except OSError:
            return 0

    start = grown = size()
    while proc.poll() is None:
        grown = max(grown, size())
        if kill_at and grown - start >= kill_at:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)
            return grown - start
        if committed is not None and committed():
            proc.wait(900)
            break
        time.sleep(0.002)
    assert proc.returncode == 0 or kill_at, f"the index failed ({proc.returncode})"
    return -1 if kill_at else grown - start


def test_kill9_cli_reindex_serves_and_keeps_the_previous_index(tree, tmp_path):
    """A re-index of a tree whose every module changed (a bulk update of the whole tree,
    as after a branch switch) killed at random points while another connection reads the
    file: the reader only ever sees the previous graph or the new one, never a half-built
    one; after a kill the file holds the previous graph exactly (or the new one whole, when
    the kill came after the commit), and the next run catches up to the new one."""
    root = tmp_path / "repo"
    shutil.copytree(tree, root)
    base = tmp_path / "base"
    cli = [sys.executable, "-m", "codesynapse", "index", str(root), "--data-dir"]
    subprocess.run([*cli, str(base)], check=True, stdout=subprocess.DEVNULL, timeout=900)
    before = stored_dump(base, root)
    view_before = _reader_view(base / "graph.db")
    for p in sorted(root.rglob("mod*.py")):  # every module changes: f3 becomes g3, its calls too
        p.write_text(p.read_text().replace("f3(", "g3("))
    after = fresh_dump(root, tmp_path / "fresh")
    view_after = _reader_view(tmp_path / "fresh" / "graph.db")
    assert view_after != view_before
    # the re-index writes after extracting: kills are placed by how far its write has got,
    # from the write-ahead log's growth up to the commit in a timing run (a few past it)
    timing = tmp_path / "timing" / "graph.db"
    shutil.copytree(base, timing.parent)
    wal_total = _watch_wal(subprocess.Popen([*cli, str(timing.parent)], stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL), timing,
                           committed=lambda: _reader_view(timing) == view_after)
    assert wal_total > 0
    rng = random.Random(SEED + 4)
    for k in range(KILLS):
        data = tmp_path / f"re{k}"
        shutil.copytree(base, data)
        frac = rng.uniform(0.0, 1.1)
        seen: list[tuple] = []
        errors: list[BaseException] = []
        stop = threading.Event()

        def read(db: Path, seen: list, errors: list, stop: threading.Event) -> None:
            while not stop.is_set():
                try:
                    seen.append(_reader_view(db))
                except sqlite3.Error as e:  # a reader may wait for a lock; it may never fail
                    errors.append(e)
                    return

        reader = threading.Thread(target=read, args=(data / "graph.db", seen, errors, stop))
        proc = subprocess.Popen([*cli, str(data)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        reader.start()
        try:
            finished = _watch_wal(proc, data / "graph.db", kill_at=max(1, int(frac * wal_total))) < 0
        finally:
            stop.set()
            reader.join(60)
        kill_group(proc.pid)
        assert not errors, errors
        half = [v for v in seen if v not in (view_before, view_after)]
        _record(scenario="cli re-index", kill_at_wal_fraction=round(frac, 3), finished_before_kill=finished,
                reads=len(seen), half_built_reads=len(half))
        assert seen and not half, f"kill at {frac:.0%} of the write: a reader saw {len(half)} half-built graphs: {half[:3]}"
        assert_consistent_on_disk(data / "graph.db")
        stored = stored_dump(data, root)
        diff = diff_dumps(before, stored)
        if diff and not diff_dumps(after, stored):  # killed after the commit: the new graph, whole
            diff = []
        else:
            assert not finished, "the index ended, yet the file does not hold its graph"
        assert not diff, f"kill at {frac:.0%} of the write: the file holds neither the previous graph nor the " \
                         "new one:\n" + "\n".join(diff)
        subprocess.run([*cli, str(data)], check=True, stdout=subprocess.DEVNULL, timeout=900)
        diff = diff_dumps(after, stored_dump(data, root))
        assert not diff, f"kill at {frac:.0%} of the write: the catch-up differs from a fresh index:\n" + "\n".join(diff)


# the opener, killed (SIGKILL, by itself) as SQLite starts the second DROP TABLE of a rebuild
_KILL_AT_SECOND_DROP = """
import os, signal, sqlite3, sys
real, drops = sqlite3.connect, []
def connect(*a, **kw):
    conn = real(*a, **kw)
    def trace(sql):
        if sql.lstrip().upper().startswith("DROP TABLE"):
            drops.append(sql)
            if len(drops) == 2:
                os.kill(os.getpid(), signal.SIGKILL)
    conn.set_trace_callback(trace)
    return conn
sqlite3.connect = connect
from codesynapse.store.sqlite.graph import SqliteGraphStore
SqliteGraphStore(sys.argv[1], sys.argv[2])
"""


def test_kill9_while_an_older_schema_is_dropped(tmp_path):
    """An index of an older schema version is rebuilt when opened (it is derived data): its
    tables are dropped and created again. A kill -9 between two of the drops leaves the old
    tables whole with their version, and the next open rebuilds them: no old row is ever
    taken for the current schema (before, the version row went with the first drop and the
    rest of the old tables stayed, read as current)."""
    root = tmp_path / "repo"
    python_tree(root, packages=1, modules=4, funcs=2)
    data = tmp_path / "data"
    cli = [sys.executable, "-m", "codesynapse", "index", str(root), "--data-dir", str(data)]
    subprocess.run(cli, check=True, stdout=subprocess.DEVNULL, timeout=900)
    db = data / "graph.db"
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE meta SET value='1' WHERE key='schema_version'")  # as an older release wrote it
    graph_id, = conn.execute("SELECT graph_id FROM meta WHERE key='schema_version'").fetchone()
    files, = conn.execute("SELECT count(*) FROM files").fetchone()
    conn.close()
    assert files > 4
    killed = subprocess.run([sys.executable, "-c", _KILL_AT_SECOND_DROP, str(db), graph_id], check=False,
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"meta", "files", "symbols", "calls"} <= tables, tables
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchall() == [("1",)]
        assert conn.execute("SELECT count(*) FROM files").fetchone()[0] == files
    finally:
        conn.close()
    # the next start rebuilds: nothing of the old index is left, then a full index as fresh
    from codesynapse.store.graph import SCHEMA_VERSION
    from codesynapse.store.sqlite.graph import SqliteGraphStore

    store = SqliteGraphStore(db, graph_id)
    try:
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
        assert store.files() == [] and store.stats().symbols == 0
    finally:
        store.close()
    subprocess.run(cli, check=True, stdout=subprocess.DEVNULL, timeout=900)
    diff = diff_dumps(fresh_dump(root, tmp_path / "fresh"), stored_dump(data, root))
    assert not diff, "\n".join(diff)


# ---- full index and incremental updates: the daemon --------------------------------------------


def test_kill9_daemon_during_first_index(tree, tmp_path):
    fresh = fresh_dump(tree, tmp_path / "fresh")
    duration = index_duration(tree, tmp_path)
    rng = random.Random(SEED + 1)
    for k in range(KILLS):
        data = tmp_path / f"d{k}"
        at = rng.uniform(0.1, 1.2) * duration
        lsp = RawLsp(data, env={"CODESYNAPSE_WATCH": "0"}, log=tmp_path / f"d{k}.log")
        try:
            lsp.initialize(tree)
            time.sleep(at)
            lsp.kill9(group=False)
            left = wait_no_orphans(lsp.pid)
        finally:
            lsp.reap_group()
        assert_consistent_on_disk(data / "graph.db")
        with RawLsp(data, env={"CODESYNAPSE_WATCH": "0"}, log=tmp_path / f"d{k}-restart.log") as again:
            again.initialize(tree)
            st = again.wait_ready()
            assert st["files"] > 0
        rep = check_graph(data / "graph.db")
        assert rep.ok, str(rep)
        diff = diff_dumps(fresh, stored_dump(data, tree))
        _record(scenario="daemon first index", kill_at_s=round(at, 2), orphans=len(left), catch_up_equal=not diff)
        assert not diff, f"kill at {at:.2f} s: the restarted daemon's graph differs:\n" + "\n".join(diff)
        assert not left, f"extraction workers outlived the killed daemon: {left}"


def test_kill9_daemon_during_incremental_updates(tree, tmp_path):
    """A storm of edits on disk (the watcher feeds the live updater); kill -9 while it is
    being applied; the restarted daemon's graph equals a fresh index of the tree as it is."""
    root = tmp_path / "repo"
    shutil.copytree(tree, root)
    data = tmp_path / "inc"
    rng = random.Random(SEED + 2)
    files = sorted(root.rglob("mod*.py"))
    with RawLsp(data, log=tmp_path / "inc-first.log") as lsp:
        lsp.initialize(root)
        lsp.wait_ready()
    for k in range(KILLS):
        lsp = RawLsp(data, log=tmp_path / f"inc{k}.log")
        try:
            lsp.initialize(root)
            lsp.wait_ready()
            edits = rng.randrange(20, 120)
            for path in rng.sample(files, edits):
                mutate(path, rng)
            new = root / f"pkg0/new{k}.py"
            new.write_text("from pkg1.mod1 import f0\n\n\ndef fresh(x):\n    return f0(x)\n")
            victim = rng.choice([f for f in files if f.exists()])
            victim.unlink()
            files.remove(victim)
            files.append(new)
            time.sleep(rng.uniform(0.05, 1.5))
            lsp.kill9(group=False)
            left = wait_no_orphans(lsp.pid)
        finally:
            lsp.reap_group()
        assert_consistent_on_disk(data / "graph.db")
        with RawLsp(data, log=tmp_path / f"inc{k}-restart.log") as again:
            again.initialize(root)
            again.wait_ready()
        rep = check_graph(data / "graph.db")
        assert rep.ok, str(rep)
        diff = diff_dumps(fresh_dump(root, tmp_path / "inc-fresh"), stored_dump(data, root))
        _record(scenario="daemon incremental", edits=edits, orphans=len(left), catch_up_equal=not diff)
        assert not diff, f"round {k}: the restarted daemon's graph differs from a fresh index:\n" + "\n".join(diff)
        assert not left, f"extraction workers outlived the killed daemon: {left}"


# ---- memory writes -------------------------------------------------------------------------------


def _live_facts(db: Path) -> dict[tuple[str, str, str], int]:
    """(subject name, predicate, object name) → how many live durable facts say it."""
    conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT s.name, f.predicate, o.name, count(*) FROM memory_facts f "
            "JOIN memory_entities s ON s.id=f.subject_id JOIN memory_entities o ON o.id=f.object_id "
            "WHERE f.valid_to IS NULL AND f.session='' GROUP BY s.name, f.predicate, o.name").fetchall()
    finally:
        conn.close()
    return {(a, b, c): n for a, b, c, n in rows}


def _remember_loop(lsp: RawLsp, start: int, acked: list[int], stop: threading.Event) -> None:
    i = start
    while not stop.is_set():
        batch = list(range(i, i + 3))
        params = {"entities": [{"name": f"svc-{n}", "aliases": [f"alias-{n}"], "durable": True} for n in batch],
                  "facts": [{"subject": f"svc-{n}", "predicate": "owned_by", "object": f"team-{n % 7}",
                             "durable": True, "confidence": 0.9} for n in batch]}
        try:
            lsp.request("codesynapse/memory/remember", params, timeout=60)
        except (ServerGone, RpcError, TimeoutError, OSError):
            return
        acked.extend(batch)
        i += 3


def test_kill9_during_memory_writes(tmp_path):
    """Remember durable facts in a loop; kill -9 at a random moment; restart: every
    acknowledged fact is there exactly once, recall finds it, nothing is duplicated; the
    unacknowledged batch may be there or not, but once at most; re-sending it is idempotent."""
    root = tmp_path / "repo"
    python_tree(root, packages=1, modules=3, funcs=2)
    data = tmp_path / "mem"
    rng = random.Random(SEED + 3)
    acked: list[int] = []
    next_id = 0
    for k in range(KILLS):
        lsp = RawLsp(data, log=tmp_path / f"mem{k}.log")
        stop = threading.Event()
        t = threading.Thread(target=_remember_loop, args=(lsp, next_id, acked, stop))
        try:
            lsp.initialize(root)
            lsp.wait_ready()
            before = len(acked)
            t.start()
            end = time.monotonic() + 120  # the first write loads the embedder and the vector store
            while len(acked) == before and t.is_alive() and time.monotonic() < end:
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 1.5))  # then kill at a random moment of steady writing
            lsp.kill9(group=False)
        finally:
            lsp.reap_group()
            stop.set()
            if t.is_alive():
                t.join(60)
        next_id = max(acked, default=next_id) + 10  # the batch in flight may or may not have landed
        rep = check_memory(data / "memory" / "memory.sqlite3")
        assert rep.ok, str(rep)
        facts = _live_facts(data / "memory" / "memory.sqlite3")
        dup = {k_: n for k_, n in facts.items() if n > 1}
        lost = [n for n in acked if facts.get((f"svc-{n}", "owned_by", f"team-{n % 7}"), 0) != 1]
        _record(scenario="memory writes", acked_this_round=len(acked) - before, acked_total=len(acked),
                lost=len(lost), duplicated=len(dup))
        assert not dup, f"facts stored twice: {list(dup.items())[:5]}"
        assert not lost, f"acknowledged facts lost after kill -9: {lost[:10]}"
        assert len(acked) > before, "no write was acknowledged before the kill; raise the kill window"
    # a restarted daemon answers from what survived: recall and list see the facts once each
    with RawLsp(data, log=tmp_path / "mem-final.log") as lsp:
        lsp.initialize(root)
        lsp.wait_ready()
        for n in rng.sample(acked, min(10, len(acked))):
            r = lsp.request("codesynapse/memory/recall", {"query": f"svc-{n}", "hops": 1})
            own = [f for f in r["facts"] if f["subject"] == f"svc-{n}"]
            assert [(f["predicate"], f["object"]) for f in own] == [("owned_by", f"team-{n % 7}")], r
        # re-sending an acknowledged batch (a client retry after the crash) changes nothing
        n = acked[0]
        again = lsp.request("codesynapse/memory/remember", {
            "entities": [{"name": f"svc-{n}", "aliases": [f"alias-{n}"], "durable": True}],
            "facts": [{"subject": f"svc-{n}", "predicate": "owned_by", "object": f"team-{n % 7}", "durable": True,
                       "confidence": 0.9}]})
        assert again["factsCreated"] == 0 and again["entities"][0]["status"] == "unchanged", again
        names, cursor = [], ""
        while True:
            page = lsp.request("codesynapse/memory/list", {"durable": True, "limit": 200, "cursor": cursor})
            names += [e["name"] for e in page["entries"]]
            cursor = page["nextCursor"]
            if not cursor:
                break
        assert len(names) == len(set(names))
        assert {f"svc-{n}" for n in acked} <= set(names)
    facts = _live_facts(data / "memory" / "memory.sqlite3")
    assert all(v == 1 for v in facts.values())
    assert check_memory(data / "memory" / "memory.sqlite3").ok
