"""Protocol faults over the real LSP transport (issue 17, items 8–11a): every request gets
exactly one answer, whatever its frame looks like; the lifecycle follows LSP (one
``initialize``; nothing but ``exit`` after ``shutdown``); a file that cannot be read is a
clear RequestFailed; log records stay bounded and logging never stops the event loop.

Each test talks to a real ``codesynapse serve`` through ``RawLsp``, which writes any bytes
and matches replies by id. A reply that does not come within ``REPLY_TIMEOUT`` is a hang
(the request deadline is 10 s).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.lspclient import FIXTURES
from tests.reliability.rawlsp import RawLsp, RpcError

REPLY_TIMEOUT = 30.0
INVALID_REQUEST, PARSE_ERROR, INVALID_PARAMS, REQUEST_FAILED = -32600, -32700, -32602, -32803
ENV = {"CODESYNAPSE_WATCH": "0"}


def frame(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def error_of(fut) -> RpcError:
    """The JSON-RPC error a request was answered with (a result or no reply fails)."""
    try:
        result = fut.result(REPLY_TIMEOUT)
    except RpcError as e:
        return e
    raise AssertionError(f"expected an error, got the result {result!r:.300}")


def make_repo(base: Path) -> Path:
    root = base / "repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    (root / "loop.py").symlink_to("loop.py")  # a symlink loop: opening it fails with ELOOP
    (root / "a_dir.py").mkdir()  # a "file" that is a directory
    (root / "latin1.py").write_bytes("def caf\xe9_total():\n    return 1\n".encode("latin-1"))  # not UTF-8
    return root


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return make_repo(tmp_path_factory.mktemp("protocol"))


@pytest.fixture(scope="module")
def lsp(repo, tmp_path_factory):
    c = RawLsp(tmp_path_factory.mktemp("protocol-data") / "data", env=ENV)
    try:
        c.initialize(repo)
        c.wait_ready()
        yield c
    finally:
        c.close()


def alive(c: RawLsp) -> None:
    st = c.request("codesynapse/indexStatus", {}, timeout=REPLY_TIMEOUT)
    assert st["state"] == "ready", st
    assert c.proc.poll() is None


def pos_params(uri: str, line: Any, character: Any, method: str) -> dict[str, Any]:
    p: dict[str, Any] = {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}
    if method == "textDocument/references":
        p["context"] = {"includeDeclaration": True}
    return p


POSITION_METHODS = ["textDocument/hover", "textDocument/definition", "textDocument/references",
                    "textDocument/prepareCallHierarchy"]


# ---- item 8: every request gets exactly one answer ---------------------------------------


def test_a_request_without_params_is_answered_as_if_params_were_empty(lsp):
    """JSON-RPC lets a request leave ``params`` out; indexStatus documents none."""
    fut = lsp.request_bytes(frame({"jsonrpc": "2.0", "id": "np-1", "method": "codesynapse/indexStatus"}), "np-1")
    st = fut.result(REPLY_TIMEOUT)
    assert st["state"] == "ready" and st["files"] > 0
    # a request that needs a field says which one
    fut = lsp.request_bytes(frame({"jsonrpc": "2.0", "id": "np-2", "method": "codesynapse/symbolCard"}), "np-2")
    e = error_of(fut)
    assert e.code == INVALID_PARAMS and e.data["field"] == "selector", e
    fut = lsp.request_bytes(frame({"jsonrpc": "2.0", "id": "np-3", "method": "codesynapse/memory/list"}), "np-3")
    assert isinstance(fut.result(REPLY_TIMEOUT), dict)
    alive(lsp)


@pytest.mark.parametrize("method", POSITION_METHODS)
@pytest.mark.parametrize("line,character,field", [
    (-1, 0, "position.line"), (0, 2**31, "position.character"), (2**31, 0, "position.line"),
    (0, -7, "position.character"), (10**30, 0, "position.line"), (None, 0, "position.line"),
])
def test_an_out_of_range_position_is_invalid_params_naming_the_field(lsp, repo, method, line, character, field):
    uri = (repo / "shop" / "cart.py").as_uri()
    e = error_of(lsp.request_async(method, pos_params(uri, line, character, method)))
    assert e.code == INVALID_PARAMS, e
    assert e.data["field"] == field, e
    assert len(e.message) < 400
    alive(lsp)


@pytest.mark.parametrize("method", POSITION_METHODS)
def test_a_position_past_the_end_of_the_document_is_an_empty_answer(lsp, repo, method):
    """Within the LSP range (0..2^31-1) but past the last line or character: no symbol there."""
    uri = (repo / "shop" / "cart.py").as_uri()
    for line, character in [(10**6, 0), (0, 2**31 - 1), (2**31 - 1, 2**31 - 1)]:
        res = lsp.request(method, pos_params(uri, line, character, method), timeout=REPLY_TIMEOUT)
        assert res in (None, []), (line, character, res)


@pytest.mark.parametrize("method", ["codesynapse/symbolCard", "codesynapse/symbolContext", "codesynapse/callGraph",
                                    "codesynapse/snippet"])
def test_a_position_selector_out_of_range_or_past_the_end(lsp, repo, method):
    """The custom requests' ``{uri, line, character}`` selector: negative or over the limit is
    InvalidParams naming the member; past the end of the file is answered for the file's
    module (a position outside every symbol means the module, as inside the file)."""
    uri = (repo / "shop" / "cart.py").as_uri()
    for sel, field in [({"uri": uri, "line": -1}, "selector.line"),
                       ({"uri": uri, "line": 0, "character": 2**31}, "selector.character"),
                       ({"uri": uri, "line": 2**31}, "selector.line")]:
        e = error_of(lsp.request_async(method, {"selector": sel}))
        assert e.code == INVALID_PARAMS and e.data["field"] == field, (sel, e)
    res = lsp.request(method, {"selector": {"uri": uri, "line": 1_000_000, "character": 5}}, timeout=REPLY_TIMEOUT)
    assert isinstance(res, dict) and '"shop.cart"' in json.dumps(res), res


def test_a_typed_request_without_its_params_is_invalid_params(lsp):
    fut = lsp.request_bytes(frame({"jsonrpc": "2.0", "id": "h-np", "method": "textDocument/hover"}), "h-np")
    e = error_of(fut)
    assert e.code == INVALID_PARAMS and e.data["field"] == "params", e
    e = error_of(lsp.request_async("textDocument/hover", {"textDocument": {"uri": "file:///x.py"}}))
    assert e.code == INVALID_PARAMS and e.data["field"] == "position", e
    alive(lsp)


def _deep(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


@pytest.mark.parametrize("depth", [10_000, 100_000])
@pytest.mark.parametrize("id_first", [True, False], ids=["id-first", "id-last"])
def test_a_request_nested_too_deeply_is_answered_by_its_id(lsp, depth, id_first):
    """Too deep for Python's json (RecursionError): the id is read by a shallow scan and
    the request answered with an error; requests sent after it are answered too."""
    msg_id = f"deep-{depth}-{id_first}"
    head, tail = f'"id":{json.dumps(msg_id)}', f'"method":"codesynapse/search","params":{{"query":{_deep(depth)}}}'
    body = ("{" + '"jsonrpc":"2.0",' + (head + "," + tail if id_first else tail + "," + head) + "}").encode()
    fut = lsp.request_bytes(body, msg_id)
    after = lsp.request_async("codesynapse/indexStatus", {})
    e = error_of(fut)
    assert e.code in (INVALID_REQUEST, PARSE_ERROR, INVALID_PARAMS), e
    assert after.result(REPLY_TIMEOUT)["state"] == "ready"
    alive(lsp)


def test_a_broken_frame_is_answered_by_its_id_or_with_id_null(lsp):
    """Not JSON: a ParseError, with the request's id when it can be read before the break
    (JSON-RPC: id null when it cannot)."""
    fut = lsp.request_bytes(b'{"jsonrpc":"2.0","id":"broken-1","method":"codesynapse/search","params":{"query":',
                            "broken-1")
    e = error_of(fut)
    assert e.code == PARSE_ERROR, e
    before = len(lsp.unmatched)
    lsp.send_raw(b"not json at all")
    lsp.send_raw(b"[1, 2]")  # a batch: not supported by LSP
    alive(lsp)
    got = [m for m in lsp.unmatched[before:] if "error" in m]
    assert [(m["id"], m["error"]["code"]) for m in got] == [(None, PARSE_ERROR), (None, INVALID_REQUEST)], got


@pytest.mark.parametrize("msg", [
    {"jsonrpc": "1.0", "id": "env-1", "method": "codesynapse/indexStatus", "params": {}},
    {"jsonrpc": "2.0", "id": "env-2", "method": 42, "params": {}},
    {"id": "env-3", "method": "codesynapse/indexStatus", "params": {}},
    {"jsonrpc": "2.0", "id": "env-4", "method": "initialized", "params": {}},  # a notification sent as a request
], ids=["jsonrpc-1.0", "method-not-a-string", "no-jsonrpc", "notification-with-id"])
def test_a_request_that_is_not_json_rpc_2_is_answered_invalid_request(lsp, msg):
    e = error_of(lsp.request_bytes(frame(msg), msg["id"]))
    assert e.code == INVALID_REQUEST, e
    alive(lsp)


def test_members_outside_the_envelope_are_ignored(lsp):
    msg = {"jsonrpc": "2.0", "id": "extra-1", "method": "codesynapse/indexStatus", "params": {}, "extra": 1}
    assert lsp.request_bytes(frame(msg), "extra-1").result(REPLY_TIMEOUT)["state"] == "ready"


# ---- item 10: a file that cannot be read -------------------------------------------------


@pytest.mark.parametrize("method", POSITION_METHODS)
@pytest.mark.parametrize("name,reason", [("loop.py", "symbolic link loop"), ("a_dir.py", "directory")])
def test_a_file_that_cannot_be_read_is_request_failed_naming_its_relative_path(lsp, repo, method, name, reason):
    e = error_of(lsp.request_async(method, pos_params((repo / name).as_uri(), 0, 0, method)))
    assert e.code == REQUEST_FAILED, e
    assert e.message.startswith(f"cannot read {name}") and reason in e.message, e.message
    assert str(repo) not in e.message and "Errno" not in e.message and "internal" not in e.message, e.message
    assert e.data.get("kind") != "internal" and e.data.get("path") == name, e.data
    alive(lsp)


@pytest.mark.parametrize("method", POSITION_METHODS)
def test_a_file_that_is_not_utf8_is_read_with_replacement(lsp, repo, method):
    """Bytes that are not UTF-8 are replaced (as the indexer reads them), not an error."""
    res = lsp.request(method, pos_params((repo / "latin1.py").as_uri(), 1, 5, method), timeout=REPLY_TIMEOUT)
    assert res in (None, []) or isinstance(res, (dict, list)), res


# ---- item 8 / 9: the lifecycle -------------------------------------------------------------


def test_every_request_after_shutdown_is_invalid_request_and_exit_still_ends_the_daemon(tmp_path):
    root = make_repo(tmp_path)
    c = RawLsp(tmp_path / "data", env=ENV)
    try:
        c.initialize(root)
        assert c.request("shutdown", None, timeout=REPLY_TIMEOUT) is None
        uri = (root / "shop" / "cart.py").as_uri()
        for method, params in [("codesynapse/indexStatus", {}), ("textDocument/hover", pos_params(uri, 0, 0, "")),
                               ("shutdown", None), ("initialize", {"processId": None, "capabilities": {}}),
                               ("codesynapse/nope", {})]:
            e = error_of(c.request_async(method, params))
            assert e.code == INVALID_REQUEST and "shutdown" in e.message, (method, e)
        c.notify("exit", None)
        assert c.proc.wait(REPLY_TIMEOUT) == 0  # exit after shutdown: code 0 (LSP)
    finally:
        c.close()


def test_a_second_initialize_is_refused_and_changes_nothing(tmp_path):
    root = make_repo(tmp_path)
    other = tmp_path / "other"
    (other / "pkg").mkdir(parents=True)
    (other / "pkg" / "mod.py").write_text("def elsewhere():\n    return 1\n")
    c = RawLsp(tmp_path / "data", env=ENV)
    try:
        c.initialize(root, sessionLabel="first")
        c.wait_ready()
        c.request("codesynapse/memory/remember", {"facts": [
            {"subject": "first session", "predicate": "remembers", "object": "this"}]}, timeout=REPLY_TIMEOUT)
        e = error_of(c.request_async("initialize", {
            "processId": None, "rootUri": other.as_uri(), "capabilities": {},
            "workspaceFolders": [{"uri": other.as_uri(), "name": "other"}],
            "initializationOptions": {"sessionLabel": "second"}}))
        assert e.code == INVALID_REQUEST and "already initialized" in e.message, e
        st = c.request("codesynapse/indexStatus", {}, timeout=REPLY_TIMEOUT)
        assert st["root"] == str(root) and st["state"] == "ready", st
        got = c.request("codesynapse/memory/recall", {"query": "first session"}, timeout=REPLY_TIMEOUT)
        assert any(f["subject"] == "first session" for f in got["facts"]), got
        card = c.request("codesynapse/symbolCard", {"selector": "shop.cart.Cart.total"}, timeout=REPLY_TIMEOUT)
        assert card["found"] is True
    finally:
        c.close()


SERVER_NOT_INITIALIZED = -32002  # LSP


def test_requests_before_initialize_are_server_not_initialized_and_initialize_still_works(tmp_path):
    """LSP: a request before ``initialize`` is answered with ServerNotInitialized (-32002),
    notifications other than ``exit`` are dropped; the connection stays usable."""
    root = make_repo(tmp_path)
    c = RawLsp(tmp_path / "data", env=ENV)
    try:
        uri = (root / "shop" / "cart.py").as_uri()
        c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                            "text": "def opened_too_early():\n    return 1\n"}})
        c.notify("initialized", {})
        for method, params in [("codesynapse/indexStatus", {}), ("codesynapse/symbolCard", {"selector": "x"}),
                               ("codesynapse/memory/recall", {"query": "x"}), ("codesynapse/nope", {}),
                               ("textDocument/hover", pos_params(uri, 0, 0, "")),
                               ("workspace/symbol", {"query": "Cart"}), ("shutdown", None)]:
            e = error_of(c.request_async(method, params))
            assert e.code == SERVER_NOT_INITIALIZED and "initialize" in e.message, (method, e)
        assert c.proc.poll() is None
        c.initialize(root)
        st = c.wait_ready()
        assert st["root"] == str(root), st
        assert c.request("codesynapse/symbolCard", {"selector": "shop.cart.Cart.total"},
                         timeout=REPLY_TIMEOUT)["found"] is True
        assert c.request("shutdown", None, timeout=REPLY_TIMEOUT) is None
        c.notify("exit", None)
        assert c.proc.wait(REPLY_TIMEOUT) == 0
    finally:
        c.close()


# ---- item 11 (logs): bounded records, and a loop that never waits for stderr ---------------

_RECORD_START = re.compile(rb"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ ", re.MULTILINE)
RECORD_MAX = 2048


def records(log: bytes) -> list[bytes]:
    starts = [m.start() for m in _RECORD_START.finditer(log)] + [len(log)]
    head = [log[:starts[0]]] if starts[0] > 0 else []
    return head + [log[a:b] for a, b in itertools.pairwise(starts)]


def test_bad_requests_with_a_10_mb_parameter_leave_bounded_log_records(tmp_path):
    """Each bad request carries 10 MB; the log (at INFO, which also logs every answer)
    grows by records of at most 2 KiB, not by the payload."""
    root = make_repo(tmp_path)
    big = "x" * (10 * 1024 * 1024)
    log_path = tmp_path / "serve.log"
    c = RawLsp(tmp_path / "data", env={**ENV, "CODESYNAPSE_LOG": "1"}, log=log_path)
    try:
        c.initialize(root)
        c.wait_ready()
        uri = (root / "shop" / "cart.py").as_uri()
        start = log_path.stat().st_size
        futs = [
            c.request_bytes(frame({"jsonrpc": "1.0", "id": "big-1", "method": "codesynapse/search",
                                   "params": {"query": big}}), "big-1"),
            c.request_async("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": big,
                                                                                           "character": 0}}),
            c.request_async("codesynapse/search", {"query": big}),
            c.request_async("codesynapse/nope/" + "m" * 100_000, {"q": big}),
            c.request_bytes(frame({"jsonrpc": "2.0", "id": "big-5", "method": "codesynapse/search",
                                   "params": {"query": big}})[:-2], "big-5"),  # cut short: not JSON
        ]
        c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "text": big}})  # missing members
        unanswered = []
        for i, f in enumerate(futs):
            try:
                error_of(f)
            except Exception as e:  # noqa: BLE001 - asserted after the log (the log is what this test is about)
                unanswered.append((i, repr(e)[:200]))
        alive(c)
        c.request("codesynapse/search", {"query": "cart"}, timeout=REPLY_TIMEOUT)  # an answer logged at INFO
        c.close()
        grown = log_path.read_bytes()[start:]
    finally:
        c.close()
    recs = records(grown)
    assert recs, "nothing was logged at INFO"
    assert len(grown) < 256 * 1024, f"{len(grown):,} bytes of log for 5 bad requests"
    assert max(len(r) for r in recs) <= RECORD_MAX, max(recs, key=len)[:300]
    assert not unanswered, unanswered


def test_a_client_that_never_reads_stderr_does_not_stop_the_daemon(tmp_path):
    """stderr is a pipe nobody reads: once 64 KiB of log fill it, a write to it blocks.
    Logging goes through a queue, so requests are still answered (before: the event loop
    blocked on the full pipe and every later request hung)."""
    root = make_repo(tmp_path)
    c = RawLsp(tmp_path / "data", env={**ENV, "CODESYNAPSE_LOG": "1"}, unread_stderr=True)
    try:
        c.initialize(root)
        noisy = frame({"jsonrpc": "1.0", "id": "noise", "method": "codesynapse/indexStatus",
                       "params": {"pad": "p" * 4000}})
        for i in range(300):  # ≥ 300 warnings and 300 answers logged: far more than 64 KiB
            c.send_raw(noisy)
            st = c.request("codesynapse/indexStatus", {}, timeout=REPLY_TIMEOUT)
            assert "state" in st
        assert c.proc.poll() is None
    finally:
        c.close(timeout=10)


def test_what_extraction_workers_write_reaches_the_log_as_records(tmp_path):
    """A worker process that writes to its stderr (here a real Python FutureWarning: each
    spawned worker compiles the policy's redact pattern ``[[:upper:]]…`` again) goes through
    the daemon's logging: the warning's lines are formatted records, and the protocol stream
    stays intact (the client reads only replies); the daemon's descriptor 1, which workers
    inherit, is not the protocol pipe. Before, the warning reached the daemon's stderr raw,
    around the log queue, and descriptor 1 was the protocol stream."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    for i in range(40):  # over the indexer's pool threshold: extracted by worker processes
        (root / "pkg" / f"m{i}.py").write_text(f"def f{i}(x):\n    return x + {i}\n")
    (root / ".codesynapse.yaml").write_text('version: 1\nredact: ["[[:upper:]]+_KEY=[0-9]+"]\n')
    log_path = tmp_path / "serve.log"
    c = RawLsp(tmp_path / "data", env={**ENV, "CODESYNAPSE_LOG": "1", "CODESYNAPSE_SHARE": "0"}, log=log_path)
    try:
        c.initialize(root, workers=2)
        c.wait_ready(files=40)
        found = c.request("codesynapse/search", {"query": "f7"}, timeout=REPLY_TIMEOUT)
        assert "pkg/m7.py" in json.dumps(found), found
        # descriptor 1, which every child inherits, is stderr (the log), not the protocol pipe
        fd1, log_file = os.stat(f"/proc/{c.proc.pid}/fd/1"), log_path.stat()
        assert (fd1.st_dev, fd1.st_ino) == (log_file.st_dev, log_file.st_ino)
    finally:
        c.close()
    lines = [ln for ln in log_path.read_bytes().splitlines() if b"Possible nested set" in ln]
    assert lines, "no worker wrote the warning"
    raw = [ln for ln in lines if not _RECORD_START.match(ln)]
    assert not raw, raw[:3]  # each is a record's own line: time, level, logger
    assert any(b"extraction worker" in ln for ln in lines), lines
