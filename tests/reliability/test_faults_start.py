"""Faults of the embedded stores at start and during a full index (issue 17, items 6, 7 and 11):

* a full index that cannot commit (the disk is full): ``indexStatus`` and every answer's
  freshness stamp say ``failed`` with the reason, the last committed index keeps answering,
  and a retry in the background brings the index to ``ready`` once there is room again;
* a graph store that cannot be opened (garbage header, truncated file, a directory where the
  file should be): ``initialize`` succeeds, the damaged file is moved aside (kept, named with
  a timestamp), the index is rebuilt, memory is served from its intact store, and the user is
  told (window/showMessage and the log);
* a graph store that cannot be opened nor created (a read-only data folder): ``initialize``
  succeeds, code requests answer a RequestFailed naming the cause, memory works, and the
  daemon recovers when the folder is writable again;
* session memory of a daemon killed with ``kill -9`` is purged at the next start; durable
  memory and the sessions of running daemons stay.

Every fault is real: a full disk is a small tmpfs filled up (or, where this process may not
mount one, the daemon's file-size limit, RLIMIT_FSIZE, which fails writes the same way); a
read-only folder is ``chattr +i`` (root ignores permission bits) or mode 0555; the damaged
files are written as they are found after disk faults; the killed daemon is a real process.
A reply that never comes within a minute fails (rawlsp.REQUEST_TIMEOUT).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.reliability.rawlsp import RawLsp, RpcError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
FIXTURE_FILES = 6  # fixtures/python_repo: five Python files and README.md
CARD = {"selector": "shop.cart.Cart.total"}
NEW_MODULES = 120  # generated modules added before the index that cannot commit
ENV = {"CODESYNAPSE_WATCH": "0", "CODESYNAPSE_EMBEDDER": "off", "CODESYNAPSE_LOG": "1"}  # LOG: info records too


def eventually(probe, timeout: float = 120.0, every: float = 0.25):
    end = time.monotonic() + timeout
    while True:
        v = probe()
        if v:
            return v
        assert time.monotonic() < end, "the daemon did not get there"
        time.sleep(every)


def no_traceback(obj) -> None:
    text = json.dumps(obj)
    assert "Traceback" not in text and 'File "' not in text, text[:2000]


def status(d: RawLsp) -> dict:
    return d.request("codesynapse/indexStatus", {})


def status_in(d: RawLsp, state: str) -> dict | None:
    st = status(d)
    return st if st["state"] == state else None


def card(d: RawLsp, selector: str = CARD["selector"]) -> dict:
    return d.request("codesynapse/symbolCard", {"selector": selector})


def messages(d: RawLsp) -> list[dict]:
    return [n["params"] for n in list(d.notifications) if n.get("method") == "window/showMessage"]


def copy_fixture(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    return root


def add_modules(root: Path, n: int = NEW_MODULES) -> None:
    pkg = root / "gen"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for i in range(n):
        funcs = "\n\n".join(
            f"def generated_function_{i}_{j}(value_{j}, other_{j}=None):\n"
            f"    \"\"\"Generated function {j} of module {i}, with a summary long enough to be stored.\"\"\"\n"
            f"    return generated_function_{i}_{(j + 1) % 40}(value_{j}) if other_{j} else value_{j}"
            for j in range(40))
        (pkg / f"mod_{i}.py").write_text(f'"""Generated module {i}."""\n\n{funcs}\n')


# ---- a disk that fills up ---------------------------------------------------------------------------


class SmallDisk:
    """A data folder on which writes fail for want of room, and a way to make room.

    ``tmpfs``: the folder is a small tmpfs; ``fill()`` writes a ballast file that leaves
    ``left`` bytes free (SQLite then says "database or disk is full"), ``make_room()``
    deletes it. ``rlimit`` (when this process may not mount): the daemon runs with a soft
    file-size limit, writes past it fail (SQLite says "disk I/O error"), ``make_room()``
    lifts the limit of the running daemon."""

    def __init__(self, path: Path, size: int = 64 << 20):
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.mode = "rlimit"
        self.limit: int | None = None
        if sys.platform.startswith("linux") and shutil.which("mount"):
            r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                               check=False, capture_output=True, text=True)
            if r.returncode == 0:
                self.mode = "tmpfs"

    def fill(self, left: int = 256 << 10, limit: int | None = None) -> None:
        """Leave ``left`` bytes free (rlimit: writes past ``limit``, or past the largest
        file plus ``left``, fail)."""
        if self.mode == "tmpfs":
            st = os.statvfs(self.path)
            free = st.f_bavail * st.f_frsize
            with open(self.path / "ballast", "wb") as f:
                f.truncate(0)
                chunk = b"\0" * (1 << 20)
                todo = free - left
                while todo > 0:
                    f.write(chunk[:min(len(chunk), todo)])
                    todo -= len(chunk)
        else:
            # the graph grows by far more than this during the index of the new modules
            self.limit = limit or max(p.stat().st_size for p in self.path.rglob("*") if p.is_file()) + left

    def argv(self) -> list[str] | None:
        if self.mode == "tmpfs" or self.limit is None:
            return None
        code = ("import resource, runpy, sys; "
                f"resource.setrlimit(resource.RLIMIT_FSIZE, ({self.limit}, resource.RLIM_INFINITY)); "
                "sys.argv = ['codesynapse', 'serve']; runpy.run_module('codesynapse', run_name='__main__')")
        return [sys.executable, "-c", code]

    def make_room(self, d: RawLsp) -> None:
        if self.mode == "tmpfs":
            (self.path / "ballast").unlink()
        else:
            resource.prlimit(d.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    def close(self) -> None:
        if self.mode == "tmpfs":
            subprocess.run(["umount", "-l", str(self.path)], check=False, capture_output=True)


# ---- item 6: a full index that cannot commit --------------------------------------------------------


def test_a_full_index_that_cannot_commit_says_failed_keeps_answering_and_retries(tmp_path):
    root = copy_fixture(tmp_path)
    disk = SmallDisk(tmp_path / "data")
    try:
        with RawLsp(disk.path, env=ENV, log=tmp_path / "first.log") as d:
            d.initialize(root)
            assert d.wait_ready()["files"] == FIXTURE_FILES
        add_modules(root)
        disk.fill()
        log = tmp_path / "full.log"
        with RawLsp(disk.path, env=ENV, log=log, argv=disk.argv()) as d:
            d.initialize(root)
            st = eventually(lambda: status_in(d, "failed"))
            # the reason, short, no traceback; the counts are those of the last committed index
            assert st["error"] and len(st["error"]) <= 300, st
            if disk.mode == "tmpfs":
                assert "database or disk is full" in st["error"], st
            no_traceback(st)
            assert st["files"] == FIXTURE_FILES, st
            # the last committed index answers, and its stamp says the index failed and why
            c = card(d)
            assert c["found"], c
            stamp = c["provenance"]["freshness"]
            assert stamp["state"] == "failed" and stamp["error"] == st["error"], stamp
            for method, params in (("codesynapse/callGraph", {"selector": "shop.pricing.with_tax"}),
                                   ("codesynapse/search", {"query": "cart total"})):
                a = d.request(method, params)
                assert a["provenance"]["freshness"]["state"] == "failed", (method, a["provenance"])
            # nothing of the failed index is visible
            assert not card(d, "gen.mod_7.generated_function_7_3")["found"]
            # room again: the retry in the background brings the index to ready
            disk.make_room(d)
            st = eventually(lambda: status_in(d, "ready"), timeout=180)
            assert "error" not in st and st["files"] == FIXTURE_FILES + NEW_MODULES + 1, st
            c = card(d, "gen.mod_7.generated_function_7_3")
            assert c["found"] and c["provenance"]["freshness"]["state"] == "ready", c
            assert "error" not in c["provenance"]["freshness"]
        text = log.read_text("utf-8", "replace")
        assert "indexing failed" in text and "indexing succeeded at attempt" in text, text[-3000:]
    finally:
        disk.close()


# ---- item 7: a graph store that cannot be opened ----------------------------------------------------


def _garbage(db: Path) -> None:
    db.write_bytes(b"this is not an SQLite database\n" * 512)


def _truncated(db: Path) -> None:
    size = db.stat().st_size
    assert size > 8192, size
    with open(db, "r+b") as f:
        f.truncate(size // 2)


def _directory(db: Path) -> None:
    db.unlink()
    db.mkdir()
    (db / "stray").write_text("a directory where the index file should be\n")


DAMAGE = {"garbage header": _garbage, "truncated file": _truncated, "directory": _directory}


def _remember(d: RawLsp) -> None:
    d.request("codesynapse/memory/remember", {
        "entities": [{"name": "billing service", "aliases": ["payments backend"], "durable": True},
                     {"name": "Alice", "type": "person", "durable": True}],
        "facts": [{"subject": "Alice", "predicate": "owns", "object": "billing service", "durable": True}]})


def _memory_served(d: RawLsp) -> None:
    r = d.request("codesynapse/memory/recall", {"query": "payments backend", "hops": 1})
    assert [e["name"] for e in r["entries"]][:1] == ["billing service"], r
    assert [(f["subject"], f["predicate"], f["object"]) for f in r["facts"]] == [("Alice", "owns", "billing service")]


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_graph_store_is_moved_aside_and_rebuilt_while_memory_is_served(damage, tmp_path):
    root = copy_fixture(tmp_path)
    data = tmp_path / "data"
    with RawLsp(data, env=ENV, log=tmp_path / "first.log") as d:
        d.initialize(root)
        d.wait_ready()
        _remember(d)
    db = data / "graph.db"
    assert db.is_file() and not Path(str(db) + "-wal").exists()
    DAMAGE[damage](db)
    damaged = db.read_bytes() if db.is_file() else None
    log = tmp_path / "second.log"
    with RawLsp(data, env=ENV, log=log) as d:
        res = d.initialize(root)
        assert "capabilities" in res
        _memory_served(d)
        st = d.wait_ready(timeout=120)
        assert st["files"] == FIXTURE_FILES and "error" not in st, st
        assert card(d)["found"]
        aside = sorted(p.name for p in data.iterdir() if p.name.startswith("graph.db.corrupt-"))
        moved = [data / n for n in aside if not n.endswith(("-wal", "-shm"))]
        assert len(moved) == 1, aside
        # its -wal and -shm (SQLite makes them when it opens a file in WAL mode) went with it
        assert set(aside) <= {moved[0].name, moved[0].name + "-wal", moved[0].name + "-shm"}, aside
        assert moved[0].name[len("graph.db.corrupt-"):].endswith("Z")
        if damaged is None:
            assert (moved[0] / "stray").is_file()  # kept as it was
        else:
            assert moved[0].read_bytes() == damaged
        shown = eventually(lambda: messages(d), timeout=30)
        assert [m["type"] for m in shown] == [2], shown  # Warning
        assert moved[0].name in shown[0]["message"] and "moved aside" in shown[0]["message"], shown
        no_traceback(shown)
        _memory_served(d)
    text = log.read_text("utf-8", "replace")
    assert "moved aside" in text and moved[0].name in text, text[-3000:]


def test_a_full_disk_at_start_fails_clearly_then_the_index_is_built_when_there_is_room(tmp_path):
    root = copy_fixture(tmp_path)
    disk = SmallDisk(tmp_path / "data")
    try:
        disk.fill(left=0, limit=64 << 10)  # not even the new index's schema fits
        with RawLsp(disk.path, env=ENV, log=tmp_path / "full.log", argv=disk.argv()) as d:
            res = d.initialize(root)
            assert "capabilities" in res
            st = status(d)
            assert st["state"] == "failed" and "graph.db" in st["error"], st
            if disk.mode == "tmpfs":
                assert "database or disk is full" in st["error"], st
            no_traceback(st)
            with pytest.raises(RpcError) as e:
                card(d)
            assert e.value.code == -32803 and e.value.data.get("kind") == "StoreUnavailable", e.value
            assert st["error"].split(": ")[-1] in e.value.message, (st, e.value.message)
            no_traceback({"message": e.value.message, "data": e.value.data})
            shown = eventually(lambda: messages(d), timeout=30)
            assert [m["type"] for m in shown] == [1] and "free disk space" in shown[0]["message"], shown
            # memory needs room too: a clear answer either way, never an internal error
            try:
                d.request("codesynapse/memory/recall", {"query": "anything"})
            except RpcError as m:
                assert m.code == -32803 and m.data.get("kind") != "internal", m
            disk.make_room(d)
            eventually(lambda: status(d)["state"] == "ready", timeout=180)
            assert status(d)["files"] == FIXTURE_FILES
            assert card(d)["found"]
    finally:
        disk.close()


def _read_only(path: Path):
    """Make ``path`` read-only for this process' user, root included; returns the undo."""
    if os.geteuid() == 0:
        r = subprocess.run(["chattr", "+i", str(path)], check=False, capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"chattr +i is not supported here: {r.stderr.strip()}")
        return lambda: subprocess.run(["chattr", "-i", str(path)], check=True)
    mode = path.stat().st_mode
    path.chmod(0o555)
    return lambda: path.chmod(mode)


def test_a_graph_store_that_cannot_be_opened_nor_created_leaves_memory_working(tmp_path):
    root = copy_fixture(tmp_path)
    data = tmp_path / "data"
    with RawLsp(data, env=ENV, log=tmp_path / "first.log") as d:
        d.initialize(root)
        d.wait_ready()
        _remember(d)
    undo = _read_only(data)
    try:
        with RawLsp(data, env=ENV, log=tmp_path / "second.log") as d:
            res = d.initialize(root)
            assert "capabilities" in res
            st = status(d)
            assert st["state"] == "failed" and "unable to open database file" in st["error"], st
            no_traceback(st)
            with pytest.raises(RpcError) as e:
                card(d)
            assert e.value.code == -32803 and e.value.data.get("kind") == "StoreUnavailable", e.value
            assert "unable to open database file" in e.value.message and str(data) in e.value.message
            no_traceback({"message": e.value.message, "data": e.value.data})
            _memory_served(d)
            r = d.request("codesynapse/memory/remember", {"entities": [{"name": "written meanwhile",
                                                                        "durable": True}]})
            assert r["entities"][0]["status"] == "created", r
            shown = eventually(lambda: messages(d), timeout=30)
            assert [m["type"] for m in shown] == [1], shown  # Error
            assert "unable to open database file" in shown[0]["message"] and "memory requests do not need it" in shown[0]["message"]
            # writable again: the daemon opens the index and catches up by itself
            undo()
            undo = None
            eventually(lambda: status(d)["state"] == "ready", timeout=120)
            assert card(d)["found"]
    finally:
        if undo is not None:
            undo()


# ---- item 11: session memory of a daemon killed with -9 ----------------------------------------------


def _session_rows(db: Path, session: str) -> dict[str, int]:
    conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        return {t: conn.execute(f"SELECT count(*) FROM {t} WHERE session = ?", (session,)).fetchone()[0]
                for t in ("memory_entities", "memory_aliases", "memory_facts", "memory_embed_todo",
                          "memory_embedded")}
    finally:
        conn.close()


def _session_of(db: Path, name: str) -> str:
    conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT session FROM memory_entities WHERE name = ?", (name,)).fetchall()
    finally:
        conn.close()
    assert len(rows) == 1 and rows[0][0], rows
    return rows[0][0]


def test_session_memory_of_a_daemon_killed_with_kill9_is_purged_at_the_next_start(tmp_path):
    root = copy_fixture(tmp_path)
    data = tmp_path / "data"
    db = data / "memory" / "memory.sqlite3"
    env = {"CODESYNAPSE_WATCH": "0", "CODESYNAPSE_LOG": "1"}  # the embedder on: queue and embedded rows too
    # a daemon that keeps running all along keeps its session memory
    with RawLsp(data, env=env, log=tmp_path / "running.log") as running:
        running.initialize(root)
        running.wait_ready()
        running.request("codesynapse/memory/remember", {"entities": [{"name": "running note", "durable": False}]})
        live = _session_of(db, "running note")
        killed = RawLsp(data, env=env, log=tmp_path / "killed.log")
        try:
            killed.initialize(root)
            killed.wait_ready()
            killed.request("codesynapse/memory/remember", {
                "entities": [{"name": "kept for good", "durable": True},
                             {"name": "scratch note", "aliases": ["draft"], "durable": False},
                             {"name": "scratch owner", "durable": False}],
                "facts": [{"subject": "scratch owner", "predicate": "wrote", "object": "scratch note"},
                          {"subject": "scratch note", "predicate": "about", "object": "kept for good"}]})
            killed.kill9(group=False)
        finally:
            killed.reap_group()
        dead = _session_of(db, "scratch note")
        before = _session_rows(db, dead)
        assert (before["memory_entities"], before["memory_facts"], before["memory_aliases"]) == (2, 2, 1), before
        log = tmp_path / "next.log"
        with RawLsp(data, env=env, log=log) as nxt:
            nxt.initialize(root)
            nxt.wait_ready()
            assert _session_rows(db, dead) == {t: 0 for t in before}
            assert _session_rows(db, live)["memory_entities"] == 1
            r = nxt.request("codesynapse/memory/list", {"durable": True, "limit": 50})
            assert [e["name"] for e in r["entries"]] == ["kept for good"], r
        # the running daemon still sees its own session memory
        r = running.request("codesynapse/memory/recall", {"query": "running note"})
        assert [e["name"] for e in r["entries"]][:1] == ["running note"], r
    text = log.read_text("utf-8", "replace")
    assert "deleted 2 session entities of 1 ended session(s) whose process is gone" in text, text[-3000:]
