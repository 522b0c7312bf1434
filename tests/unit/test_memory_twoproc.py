"""Two processes on one data folder: the first owns milvus-lite, the second joins it by
the recorded loopback endpoint; when the owner leaves or dies, the other takes over.
Nothing crashes and the dense leg keeps running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import msgspec
import pytest

from codesynapse.memory.factory import open_memory
from codesynapse.memory.models import decode_recall, decode_remember
from codesynapse.scope import make_scope

CHILD = textwrap.dedent("""
    import json, sys
    import msgspec
    from pathlib import Path
    from codesynapse.memory.factory import open_memory
    from codesynapse.memory.models import decode_recall, decode_remember
    from codesynapse.scope import make_scope

    svc = open_memory(Path(sys.argv[1]), make_scope("acme", "/repo/shared"))
    for line in sys.stdin:
        cmd = json.loads(line)
        op = cmd["op"]
        if op == "role":
            out = {"role": svc.vectors.role}
        elif op == "remember":
            out = msgspec.to_builtins(svc.remember(decode_remember(cmd["params"])))
        elif op == "recall":
            out = msgspec.to_builtins(svc.recall(decode_recall(cmd["params"])))
        elif op == "close":
            svc.close()
            out = {"closed": True}
        sys.stdout.write(json.dumps(out) + "\\n")
        sys.stdout.flush()
        if op == "close":
            break
""")


class Child:
    def __init__(self, data):
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD, str(data)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)

    def ask(self, op, params=None):
        self.proc.stdin.write(json.dumps({"op": op, "params": params}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the child process died"
        return json.loads(line)

    def kill(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.ask("close")
            except (AssertionError, BrokenPipeError, OSError):
                pass
        self.kill()


@pytest.fixture
def children():
    started: list[Child] = []
    yield started
    for c in started:
        c.stop()


def names(res):
    return [e["name"] for e in res["entries"]]


def test_second_process_joins_and_takes_over_when_the_owner_closes(tmp_path, children):
    data = tmp_path / "data"
    parent = open_memory(data, make_scope("acme", "/repo/shared"))
    closed = False
    try:
        assert parent.vectors.role == "owner"
        child = Child(data)
        children.append(child)
        assert child.ask("role") == {"role": "client"}
        out = child.ask("remember", {"entities": [
            {"name": "net.Backoff", "aliases": ["RetryPolicy"], "durable": True}]})
        assert out["embedded"] == 1
        res = msgspec.to_builtins(parent.recall(decode_recall({"query": "retry policy"})))
        assert names(res) == ["net.Backoff"]
        assert res["entries"][0]["foundBy"] == ["lexical", "dense"]
        parent.remember(decode_remember({"entities": [{"name": "ticket 412", "durable": True}]}))
        parent.close()
        closed = True
        res = child.ask("recall", {"query": "ticket 412"})
        assert names(res) == ["ticket 412"]
        assert res["legs"]["dense"] == {"ran": True, "hits": 1}
        assert child.ask("role") == {"role": "owner"}
    finally:
        if not closed:
            parent.close()


def test_the_owner_dying_does_not_break_the_other_process(tmp_path, children):
    data = tmp_path / "data"
    child = Child(data)
    children.append(child)
    assert child.ask("role") == {"role": "owner"}
    child.ask("remember", {"entities": [{"name": "schema change", "durable": True}]})
    parent = open_memory(data, make_scope("acme", "/repo/shared"))
    try:
        assert parent.vectors.role == "client"
        child.kill()  # SIGKILL: no clean-up, the endpoint file stays behind
        assert (data / "milvus-endpoint.json").exists()
        res = msgspec.to_builtins(parent.recall(decode_recall({"query": "schema change"})))
        assert names(res) == ["schema change"]
        assert res["legs"]["dense"]["ran"] is True
        assert parent.vectors.role == "owner"
    finally:
        parent.close()
