"""The freshness stamp of an answer on the shared daemon names only the asking connection's
unsaved buffers (issue 19 #2): while another connection's edit waits out the debounce the
index still reflects the asker's view, yet the daemon already counts the other connection's
file among its open buffers — that path must not reach the asker."""

from __future__ import annotations

from tests.reliability.test_daemon import (  # noqa: F401  (fixtures)
    _a_buffer,
    _open_pricing,
    client,
    data,
    init,
    repo,
)

PRICING = "shop/pricing.py"


def test_open_buffers_in_answers_are_the_askers_own(repo, data, tmp_path):
    a, b = client(data, tmp_path, "a"), client(data, tmp_path, "b")
    try:
        init(a, repo, "a", debounceMs=8000)  # the first client's index options: a long debounce
        init(b, repo, "b")
        a.wait_ready()
        b.wait_ready()
        uri, text = _open_pricing(a, repo)
        a.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                            "contentChanges": [{"text": _a_buffer(text)}]})
        # B has no buffers: its answers name none, though A's edit is queued in the daemon
        status_b = b.request("codesynapse/indexStatus", {})
        assert status_b.get("openBuffers", []) == []
        card_b = b.request("codesynapse/symbolCard", {"selector": "with_tax"})
        assert "openBuffers" not in card_b["provenance"]["freshness"]
        # A's own answers name its buffer
        status_a = a.request("codesynapse/indexStatus", {})
        assert status_a.get("openBuffers") == [PRICING]
        card_a = a.request("codesynapse/symbolCard", {"selector": "only_in_a"})
        assert card_a["found"] is True
        assert card_a["provenance"]["freshness"].get("openBuffers") == [PRICING]
        # and B again, after A's view was in the index
        assert b.request("codesynapse/indexStatus", {}).get("openBuffers", []) == []
    finally:
        a.close()
        b.close()
