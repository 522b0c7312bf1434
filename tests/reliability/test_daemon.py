"""The shared workspace daemon (issue 19): real ``codesynapse serve`` proxies, a real daemon
process, real sockets; the process table, the lock file and indexStatus tell what runs.

Every test sets CODESYNAPSE_SHARE=1 (the suite's default is one process per client, see
tests/conftest.py) and a short grace period, and stops what is left of its daemon.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.reliability.rawlsp import RawLsp, RpcError
from tests.reliability.test_security import FIXTURES, _everything, _ids, _remember_all

ENV = {"CODESYNAPSE_SHARE": "1", "CODESYNAPSE_DAEMON_GRACE": "3", "CODESYNAPSE_EMBEDDER": "none",
       "CODESYNAPSE_WATCH": "1"}


def daemon_pids(data: Path) -> list[int]:
    """Live (not zombie) `serve --daemon` processes of ``data``, from the process table."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if state == "Z" or b"--daemon" not in argv or b"serve" not in argv:
            continue
        try:
            if Path(argv[argv.index(b"--data-dir") + 1].decode()).resolve() == data.resolve():
                out.append(int(entry.name))
        except (ValueError, IndexError):
            continue
    return out


def is_pump(pid: int) -> bool:
    """The serve process became a pump: the native codesynapse-pump or pump.py (same pid, same pipes)."""
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return argv[0].endswith(b"codesynapse-pump") or any(a.endswith(b"pump.py") for a in argv)


def thread_names(pid: int) -> list[str]:
    names = []
    for t in Path(f"/proc/{pid}/task").iterdir():
        try:
            names.append((t / "comm").read_text().strip())
        except OSError:
            pass
    return names


def lock_info(data: Path) -> dict:
    text = (data / "daemon.lock").read_text()
    return json.loads(text) if text.strip() else {}


def wait_until(probe, timeout: float = 60.0, what: str = "condition"):
    end = time.monotonic() + timeout
    while True:
        v = probe()
        if v:
            return v
        if time.monotonic() > end:
            raise AssertionError(f"{what} not reached within {timeout:.0f} s")
        time.sleep(0.1)


def stop_daemons(data: Path) -> None:
    for pid in daemon_pids(data):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    try:
        wait_until(lambda: not daemon_pids(data), 20, "daemon exit")
    except AssertionError:
        for pid in daemon_pids(data):
            os.kill(pid, signal.SIGKILL)


def init(lsp: RawLsp, root: Path, name: str, **options) -> dict:
    res = lsp.request("initialize", {
        "processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {},
        "clientInfo": {"name": name, "version": "9.1"},
        "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
        "initializationOptions": options or None}, timeout=120)
    lsp.notify("initialized", {})
    return res


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    return root


@pytest.fixture
def data(tmp_path):
    d = tmp_path / "data"
    yield d
    stop_daemons(d)


def client(data: Path, tmp_path: Path, name: str, **env) -> RawLsp:
    return RawLsp(data, env={**ENV, **env}, log=tmp_path / f"{name}.log")


def session_rows(data: Path) -> int:
    db = sqlite3.connect(data / "memory" / "memory.sqlite3")
    try:
        return db.execute("SELECT count(*) FROM memory_entities WHERE session != ''").fetchone()[0]
    finally:
        db.close()


def test_three_clients_one_daemon_one_watcher_isolated_sessions(repo, data, tmp_path):
    """Two editor clients and an agent on one workspace: one daemon process (one App, one
    watcher thread), indexStatus lists all three by name; session memory stays with its
    connection (and is deleted when it closes), durable memory is shared; scope fields in
    params are refused through the proxy; a foreign session's ids forget nothing."""
    a, b, c = (client(data, tmp_path, n) for n in ("a", "b", "c"))
    try:
        init(a, repo, "editor-one")
        a.wait_ready()
        init(b, repo, "editor-two")
        init(c, repo, "agent")
        b.wait_ready()
        c.wait_ready()
        pids = daemon_pids(data)
        assert len(pids) == 1, pids
        assert lock_info(data)["pid"] == pids[0]
        assert pids[0] not in (a.pid, b.pid, c.pid)
        for x in (a, b, c):  # each serve became the slim pump (same pid, same pipes)
            assert is_pump(x.pid)
        assert thread_names(pids[0]).count("notify-rs inoti") == 1  # watchfiles' inotify thread: one watcher
        st = c.request("codesynapse/indexStatus", {})
        assert sorted(x["name"] for x in st["clients"]) == ["agent", "editor-one", "editor-two"]
        assert [x["name"] for x in st["clients"] if x["self"]] == ["agent"]
        assert all(x["version"] == "9.1" and x["sessionAgeSeconds"] >= 0 for x in st["clients"])
        assert all(set(x) == {"name", "version", "sessionAgeSeconds", "self"} for x in st["clients"])
        assert not re.search(r"[0-9a-f]{32}", json.dumps(st["clients"]))  # no session ids

        # one index behind every connection
        sa, sb = a.request("codesynapse/indexStatus", {}), b.request("codesynapse/indexStatus", {})
        assert sa["files"] == sb["files"] == st["files"] > 0 and sa["symbols"] == sb["symbols"] > 0

        _remember_all(a, "acme")
        seen_a, seen_b = _everything(a), _everything(b)
        assert "acme team" in seen_a and "acme session" in seen_a
        assert "acme team" in seen_b and "acme session" not in seen_b  # durable shared, session not
        a_ids = _ids(seen_a)
        out = c.request("codesynapse/memory/forget", {"ids": sorted(a_ids - _ids(seen_b))})
        assert out["entities"] == 0 and out["facts"] == 0
        assert "acme session" in _everything(a)
        for params in ({"query": "Alice", "tenant": "evil"}, {"query": "Alice", "session": "s"},
                       {"query": "Alice", "scope": {"namespace": "x"}}):
            with pytest.raises(RpcError) as e:
                b.request("codesynapse/memory/recall", params)
            assert e.value.code == -32602

        assert session_rows(data) > 0
        a.close()
        wait_until(lambda: len(c.request("codesynapse/indexStatus", {})["clients"]) == 2, 30, "a's session closed")
        assert session_rows(data) == 0  # a's session memory went with its connection
        assert "acme team" in _everything(c)  # its durable memory stays
        assert daemon_pids(data) == pids  # the daemon serves the others on
        b.request("codesynapse/memory/remember", {"entities": [{"name": "b's own note", "durable": False}]})
        assert session_rows(data) > 0
        b.kill9(group=False)  # an editor killed: its connection ends all the same
        wait_until(lambda: len(c.request("codesynapse/indexStatus", {})["clients"]) == 1, 30, "b's session closed")
        assert session_rows(data) == 0
    finally:
        for x in (a, b, c):
            x.close()


def _connect_as_nobody(sock: Path) -> int:
    """7 when user nobody is refused the socket, 0 when it connects."""
    probe = ("import socket, sys\n"
             "s = socket.socket(socket.AF_UNIX)\n"
             "try:\n    s.connect(sys.argv[1])\nexcept PermissionError:\n    sys.exit(7)\n")
    return subprocess.run(["/usr/bin/python3", "-I", "-S", "-c", probe, str(sock)], timeout=60,
                          preexec_fn=lambda: (os.setgid(65534), os.setuid(65534))).returncode


def test_socket_and_lock_are_owner_only(repo, tmp_path):
    base = Path(tempfile.mkdtemp(prefix="codesynapse-daemon-perm-"))
    base.chmod(0o755)  # reachable by other users: only the socket's own mode keeps them out
    data = base / "data"
    a = client(data, tmp_path, "a")
    try:
        init(a, repo, "one")
        info = lock_info(data)
        sock = Path(info["socket"])
        assert sock.parent == data
        st = os.stat(sock)
        assert stat.S_ISSOCK(st.st_mode)
        assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.getuid()
        lst = os.stat(data / "daemon.lock")
        assert stat.S_IMODE(lst.st_mode) == 0o600 and lst.st_uid == os.getuid()
        if os.getuid() == 0 and Path("/usr/bin/python3").exists():  # root passes any mode: ask as nobody
            assert _connect_as_nobody(sock) == 7
            os.chmod(sock, 0o666)  # the control: with the mode opened, nobody gets in
            try:
                assert _connect_as_nobody(sock) == 0
            finally:
                os.chmod(sock, 0o600)
    finally:
        a.close()
        stop_daemons(data)
        shutil.rmtree(base, ignore_errors=True)


def test_a_hello_from_another_tenant_is_refused_and_served_alone(repo, data, tmp_path):
    """A client configured for another tenant never joins this tenant's daemon: it is served
    in its own process, and sees nothing of the other tenant."""
    acme = client(data, tmp_path, "acme", CODESYNAPSE_TENANT="acme")
    evil = client(data, tmp_path, "evil", CODESYNAPSE_TENANT="evil")
    try:
        init(acme, repo, "acme")
        acme.wait_ready()
        init(evil, repo, "evil")
        evil.wait_ready()
        assert len(daemon_pids(data)) == 1
        assert [x["name"] for x in acme.request("codesynapse/indexStatus", {})["clients"]] == ["acme"]
        assert [x["name"] for x in evil.request("codesynapse/indexStatus", {})["clients"]] == ["evil"]
        _remember_all(acme, "acme")
        assert "acme" not in _everything(evil).replace('"query":"acme"', "").replace('"query": "acme"', "")
    finally:
        acme.close()
        evil.close()


def test_a_stale_lock_is_taken_over(repo, data, tmp_path):
    """A daemon killed long ago left its lock file (a dead pid) and its socket file: the next
    serve starts a new daemon anyway."""
    data.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    path = data / "daemon.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.close()  # the file stays, nobody listens
    (data / "daemon.lock").write_text(json.dumps({"pid": dead.pid, "socket": str(path)}))
    a = client(data, tmp_path, "a")
    try:
        init(a, repo, "one")
        a.wait_ready()
        pids = daemon_pids(data)
        assert len(pids) == 1 and lock_info(data)["pid"] == pids[0] != dead.pid
    finally:
        a.close()


def test_simultaneous_starts_elect_one_daemon(repo, data, tmp_path):
    clients = [client(data, tmp_path, f"c{i}") for i in range(3)]
    try:
        threads = [threading.Thread(target=init, args=(c, repo, f"c{i}")) for i, c in enumerate(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(180)
        clients[0].wait_ready()
        assert len(daemon_pids(data)) == 1
        st = clients[1].request("codesynapse/indexStatus", {})
        assert sorted(x["name"] for x in st["clients"]) == ["c0", "c1", "c2"]
    finally:
        for c in clients:
            c.close()


def test_daemon_kill9_is_reported_and_the_next_serve_starts_a_new_one(repo, data, tmp_path):
    a, b = client(data, tmp_path, "a"), client(data, tmp_path, "b")
    try:
        init(a, repo, "a")
        init(b, repo, "b")
        a.wait_ready()
        a.request("codesynapse/memory/remember", {"entities": [{"name": "kept across the crash", "durable": True}]})
        (old,) = daemon_pids(data)
        os.kill(old, signal.SIGSTOP)  # a request that the daemon will never answer
        waiting = a.request_async("codesynapse/indexStatus", {})
        time.sleep(1.0)  # for the proxy to pass it on
        os.kill(old, signal.SIGKILL)
        with pytest.raises(RpcError) as e:
            waiting.result(30)
        assert e.value.code == -32803 and "stopped before answering" in e.value.message
        for x in (a, b):
            assert x.proc.wait(30) == 1  # the proxy exits after telling its client
            shown = wait_until(lambda x=x: [n for n in x.notifications if n["method"] == "window/showMessage"], 10,
                               "the showMessage read")  # the reader thread may still be reading it
            assert shown[-1]["params"]["type"] == 1, x.notifications
            assert "stopped unexpectedly" in shown[-1]["params"]["message"]
            assert "Restart" in shown[-1]["params"]["message"]
        c = client(data, tmp_path, "c")
        try:
            init(c, repo, "c")
            c.wait_ready()
            (new,) = daemon_pids(data)
            assert new != old
            r = c.request("codesynapse/memory/recall", {"query": "kept across the crash"})
            assert "kept across the crash" in json.dumps(r)
        finally:
            c.close()
    finally:
        a.close()
        b.close()


def test_the_daemon_exits_after_the_grace_period(repo, data, tmp_path):
    a = client(data, tmp_path, "a", CODESYNAPSE_DAEMON_GRACE="1")
    init(a, repo, "a")
    a.wait_ready()
    (pid,) = daemon_pids(data)
    sock = lock_info(data)["socket"]
    assert a.close() == 0
    wait_until(lambda: not daemon_pids(data), 60, "daemon exit after its grace period")
    assert not os.path.exists(sock) and lock_info(data) == {}


def test_daemon_log_is_rotated_by_size(repo, data, tmp_path):
    """daemon.log grows to CODESYNAPSE_DAEMON_LOG_BYTES, then becomes daemon.log.1 (.1 →
    .2 …, at most CODESYNAPSE_DAEMON_LOG_BACKUPS older files) and a new daemon.log starts;
    the daemon's stderr follows the new file. Before, it grew without bound."""
    limit, backups = 16384, 2
    a = client(data, tmp_path, "a", CODESYNAPSE_LOG="1", CODESYNAPSE_DAEMON_LOG_BYTES=str(limit),
               CODESYNAPSE_DAEMON_LOG_BACKUPS=str(backups))
    try:
        init(a, repo, "a")
        a.wait_ready()
        (pid,) = daemon_pids(data)
        log = data / "daemon.log"
        for _ in range(200):  # each answer is logged at INFO (about 1 KB): far over 3 files' worth
            a.request("codesynapse/indexStatus", {})
        wait_until(lambda: (data / f"daemon.log.{backups}").exists(), 30, "a second rotation")
        a.request("codesynapse/indexStatus", {})
        files = sorted(p.name for p in data.iterdir() if p.name.startswith("daemon.log"))
        assert files == ["daemon.log", "daemon.log.1", "daemon.log.2"], files
        for name in files:  # a file passes the limit by one record (≤ 2 KiB) at most
            assert (data / name).stat().st_size <= limit + 2048, (name, (data / name).stat().st_size)
        assert b"Sending data" in (data / "daemon.log.1").read_bytes()
        fd2 = os.stat(f"/proc/{pid}/fd/2")
        assert (fd2.st_dev, fd2.st_ino) == (log.stat().st_dev, log.stat().st_ino)  # stderr is the new file
    finally:
        a.close()


def test_no_share_is_one_process(repo, data, tmp_path):
    a = RawLsp(data, env=ENV, log=tmp_path / "a.log", argv=[sys.executable, "-m", "codesynapse", "serve", "--no-share"])
    try:
        init(a, repo, "alone")
        a.wait_ready()
        assert daemon_pids(data) == [] and not (data / "daemon.lock").exists()
        st = a.request("codesynapse/indexStatus", {})
        assert st["clients"] == [{"name": "alone", "version": "9.1", "sessionAgeSeconds": st["clients"][0][
            "sessionAgeSeconds"], "self": True}]
    finally:
        a.close()


def test_tcp_fallback_needs_the_owner_only_token(repo, data, tmp_path):
    """Where there is no unix socket: 127.0.0.1 on a random port, and a hello without the
    token of the owner-only token file is refused."""
    a = client(data, tmp_path, "a", CODESYNAPSE_DAEMON_TRANSPORT="tcp")
    b = client(data, tmp_path, "b", CODESYNAPSE_DAEMON_TRANSPORT="tcp")
    try:
        init(a, repo, "a")
        init(b, repo, "b")
        a.wait_ready()
        info = lock_info(data)
        assert "socket" not in info and info["host"] == "127.0.0.1" and info["port"] > 0
        tst = os.stat(data / "daemon.token")
        assert stat.S_IMODE(tst.st_mode) == 0o600 and tst.st_uid == os.getuid()
        assert len(daemon_pids(data)) == 1
        assert len(b.request("codesynapse/indexStatus", {})["clients"]) == 2
        from codesynapse.daemon.host import PROTOCOL, settings_fingerprint
        from codesynapse.settings import load_settings

        for token in (None, "0" * 64):
            with socket.create_connection(("127.0.0.1", info["port"]), timeout=10) as s:
                hello = {"codesynapse": PROTOCOL, "root": str(repo), "token": token,
                         "settings": settings_fingerprint(load_settings())}
                s.sendall(json.dumps(hello).encode() + b"\n")
                reply = json.loads(s.makefile("rb").readline())
            assert reply["ok"] is False and "token" in reply["reason"]
    finally:
        a.close()
        b.close()


def _search_has(lsp: RawLsp, name: str) -> bool:
    return name in json.dumps(lsp.request("codesynapse/search", {"query": name}))


def _card(lsp: RawLsp, name: str) -> dict:
    return lsp.request("codesynapse/symbolCard", {"selector": name})


DISK_SIGNATURE = "def with_tax(amount)"
A_SIGNATURE = "def with_tax(amount, rate=0.2)"


def _open_pricing(lsp: RawLsp, repo: Path) -> tuple[str, str]:
    path = repo / "shop" / "pricing.py"
    uri, text = path.as_uri(), path.read_text()
    lsp.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                       "text": text}})
    return uri, text


def _a_buffer(text: str, extra: str = "only_in_a") -> str:
    assert DISK_SIGNATURE in text
    return (text.replace(DISK_SIGNATURE, A_SIGNATURE)
            + f"\n\ndef {extra}():\n    return with_tax(1, rate=0.1)\n")


def test_unsaved_buffers_are_per_connection(repo, data, tmp_path):
    """An answer reflects the asking connection's own unsaved buffers and the disk for
    everything else: B never sees A's unsaved function or A's unsaved signature, A always
    does (no waiting: the index is brought to the asker's view before it answers); after A
    saves, both see the saved file; A's unsaved edits leave with A's connection."""
    a, b = client(data, tmp_path, "a"), client(data, tmp_path, "b")
    try:
        init(a, repo, "a")
        init(b, repo, "b")
        a.wait_ready()
        b.wait_ready()
        uri, text = _open_pricing(a, repo)
        a.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                            "contentChanges": [{"text": _a_buffer(text)}]})
        for _ in range(2):  # the view switches back and forth, each answer its asker's
            assert _card(a, "only_in_a")["found"] is True
            assert _card(a, "with_tax")["card"]["signature"] == A_SIGNATURE
            assert _card(b, "only_in_a")["found"] is False
            assert not _search_has(b, "only_in_a")
            assert _card(b, "with_tax")["card"]["signature"] == DISK_SIGNATURE
        # B opens the same file unchanged and edits another function of it: its own view
        _open_pricing(b, repo)
        b.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
            {"text": text + "\n\ndef only_in_b():\n    return 2\n"}]})
        assert _card(b, "only_in_b")["found"] is True and _card(b, "only_in_a")["found"] is False
        assert _card(b, "with_tax")["card"]["signature"] == DISK_SIGNATURE
        assert _card(a, "only_in_b")["found"] is False and _card(a, "only_in_a")["found"] is True
        b.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        assert _card(b, "only_in_b")["found"] is False and _card(b, "only_in_a")["found"] is False

        # A saves: the disk is A's text, both see it
        (repo / "shop" / "pricing.py").write_text(_a_buffer(text))
        a.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        wait_until(lambda: _card(b, "only_in_a")["found"], 60, "a's saved file seen by b")
        assert _card(b, "with_tax")["card"]["signature"] == A_SIGNATURE
        assert _card(a, "with_tax")["card"]["signature"] == A_SIGNATURE

        # A edits again and disconnects without saving: B sees the disk
        a.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [
            {"text": _a_buffer(text, "a_unsaved_then_gone")}]})
        assert _card(a, "a_unsaved_then_gone")["found"] is True
        assert _card(b, "a_unsaved_then_gone")["found"] is False
        assert _card(a, "a_unsaved_then_gone")["found"] is True  # the index reflects A again
        a.close()
        wait_until(lambda: len(b.request("codesynapse/indexStatus", {})["clients"]) == 1, 30, "a's session closed")
        assert _card(b, "a_unsaved_then_gone")["found"] is False
        assert _card(b, "only_in_a")["found"] is True  # the saved file
    finally:
        a.close()
        b.close()


def test_a_burst_of_edits_never_leaks_into_another_connections_answers(repo, data, tmp_path):
    """A types (a burst of didChange, each adding a function) while B asks about the same
    file from another thread: every answer of B is the disk (no crash, no answer mixing A's
    buffer in), and A's answer afterwards has A's last edit."""
    a, b = client(data, tmp_path, "a"), client(data, tmp_path, "b")
    try:
        init(a, repo, "a")
        init(b, repo, "b")
        a.wait_ready()
        b.wait_ready()
        uri, text = _open_pricing(a, repo)
        answers: list[dict] = []
        errors: list[BaseException] = []
        done = threading.Event()

        def ask() -> None:
            try:
                while not done.is_set():
                    answers.append(_card(b, "with_tax"))
                    answers.append(b.request("codesynapse/search", {"query": "burst_fn"}))
            except Exception as e:  # reported below
                errors.append(e)

        t = threading.Thread(target=ask)
        t.start()
        try:
            for i in range(60):
                body = _a_buffer(text, "only_in_a") + "".join(
                    f"\n\ndef burst_fn_{k}():\n    return {k}\n" for k in range(i + 1))
                a.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": i + 2},
                                                    "contentChanges": [{"text": body}]})
                if i % 10 == 9:  # A asks too: the index switches to A's view and back
                    assert _card(a, f"burst_fn_{i}")["found"] is True
                time.sleep(0.01)
        finally:
            done.set()
            t.join(120)
        assert not errors, errors
        cards = [x for x in answers if "card" in x or "found" in x]
        assert len(cards) >= 2
        for x in cards:
            assert x["found"] is True and x["card"]["signature"] == DISK_SIGNATURE
        searches = [x for x in answers if x not in cards]
        assert searches and all("burst_fn" not in json.dumps(x) for x in searches)
        assert _card(a, "burst_fn_59")["found"] is True
        assert _card(a, "with_tax")["card"]["signature"] == A_SIGNATURE
        assert _card(b, "burst_fn_59")["found"] is False
    finally:
        a.close()
        b.close()


def test_a_later_client_is_told_which_of_its_options_the_shared_daemon_keeps(repo, data, tmp_path):
    a, b = client(data, tmp_path, "a"), client(data, tmp_path, "b")
    try:
        init(a, repo, "a", debounceMs=50)
        a.wait_ready()
        init(b, repo, "b", debounceMs=700, sessionLabel="mine")
        b.wait_ready()
        shown = wait_until(lambda: [n["params"]["message"] for n in b.notifications
                                    if n["method"] == "window/showMessage"], 20, "b's warning")
        assert any("debounceMs=700" in m and "debounceMs=50" in m for m in shown), shown
        assert not any("sessionLabel" in m for m in shown)  # per connection: applied
        assert not [n for n in a.notifications if n["method"] == "window/showMessage"]
    finally:
        a.close()
        b.close()


def test_another_folder_on_the_same_data_folder_is_served_alone(repo, data, tmp_path):
    """The daemon serves the folder of its first client: a client of another folder that
    names the same data folder is refused at hello and served in its own process, never
    answered from the other folder's index."""
    other = tmp_path / "other"
    (other / "pkg").mkdir(parents=True)
    (other / "pkg" / "lonely.py").write_text("def only_in_the_other_folder():\n    return 3\n")
    a, b = client(data, tmp_path, "a"), client(data, tmp_path, "b")
    try:
        init(a, repo, "a")
        a.wait_ready()
        init(b, other, "b")
        b.wait_ready()
        assert [x["name"] for x in a.request("codesynapse/indexStatus", {})["clients"]] == ["a"]
        assert [x["name"] for x in b.request("codesynapse/indexStatus", {})["clients"]] == ["b"]
        assert not is_pump(b.pid)  # its own server
        assert len(daemon_pids(data)) == 1
    finally:
        a.close()
        b.close()
