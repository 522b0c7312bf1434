"""Context answers read the graph with a bounded number of store calls (issue 23, batch
reads): the same answer over 5 callers and over 50 makes the same number of store calls.
On a server backend every store call is a round trip, so a call per caller or per file
named (the N+1) made a card with many callers hundreds of milliseconds slower.

The store is the real SQLite store, wrapped by a counter that forwards every call."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from codesynapse.app import App
from codesynapse.methods import call_method
from codesynapse.settings import load_settings

FEW, MANY = 5, 50


class CountingStore:
    """Forwards everything to the real store; counts the calls by method name."""

    def __init__(self, inner: Any):
        self._inner = inner
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not callable(value) or name.startswith("_"):
            return value

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return value(*args, **kwargs)

        return counted


def _repo(root: Path, n: int) -> None:
    """``lib.target`` called by ``n`` functions, each in its own file and each called by a
    function of its own (a second level for callGraph), half of them tests; ``lib.hub``
    calls ``n`` functions (the related cards of its symbolContext)."""
    parts = [f"def part_{i}(x):\n    return x + {i}\n\n\n" for i in range(n)]
    hub = "def hub(x):\n" + "".join(f"    part_{i}(x)\n" for i in range(n)) + "    return x\n"
    (root / "lib.py").write_text("def target(x):\n    \"\"\"The subject.\"\"\"\n    return helper(x)\n\n\n"
                                 "def helper(x):\n    return x\n\n\n" + "".join(parts) + hub)
    (root / "callers").mkdir()
    (root / "tests").mkdir()
    for i in range(n):
        folder = "tests" if i % 2 else "callers"
        prefix = "test_" if i % 2 else "use_"
        (root / folder / f"{prefix}{i}.py").write_text(
            f"from lib import target\n\n\ndef {prefix}{i}():\n    return target({i})\n\n\n"
            f"def outer_{i}():\n    return {prefix}{i}()\n")


def _counts(tmp_path: Path, n: int) -> dict[str, Counter[str]]:
    root = tmp_path / f"repo{n}"
    root.mkdir()
    _repo(root, n)
    app = App(root, load_settings({"data_dir": str(tmp_path / f"data{n}"), "workers": 1, "symbol_vectors": False}))
    try:
        app.index()
        store = CountingStore(app.store)
        app.store = store  # the context service follows (Services.context is built again on it)
        diff = "".join(f"--- a/{f}\n+++ b/{f}\n@@ -1,3 +1,3 @@\n" for f in
                       ["lib.py"] + [f"{'tests' if i % 2 else 'callers'}/{'test_' if i % 2 else 'use_'}{i}.py"
                                     for i in range(n)])
        requests = {
            "symbolCard": {"selector": "lib.target"},
            "symbolContext": {"selector": "lib.target"},
            "symbolContext of a hub": {"selector": "lib.hub", "maxTokens": 200_000},
            "callGraph": {"selector": "lib.target", "direction": "both", "depth": 2},
            "prContext": {"diff": diff, "maxTokens": 200_000},
            "minimalContext": {"task": "what does lib.target do with target"},
        }
        out: dict[str, Counter[str]] = {}
        for kind, params in requests.items():
            store.calls.clear()
            answer = call_method(app, f"codesynapse/{kind.split()[0]}", params)
            assert "error" not in answer
            if kind == "symbolCard":
                assert answer["card"]["counts"]["callers"] == n  # the repository is what it says
            if kind == "symbolContext of a hub":
                assert sum(1 for r in answer["related"] if r["role"] == "callee") == n
            out[kind] = Counter(store.calls)
        # the standard LSP features' reads (lsp/navigation.py converts what these return)
        nav = app.services.navigation
        subject = nav.symbol("lib.target")
        for kind, read in (("incomingCalls", lambda: nav.incoming("lib.target")[0]),
                           ("outgoingCalls", lambda: nav.outgoing("lib.target")[0]),
                           ("references", lambda: nav.references(subject).rows)):
            store.calls.clear()
            got = read()
            assert len(got) == (n if kind != "outgoingCalls" else 1)  # each caller once; target calls helper
            out[kind] = Counter(store.calls)
        return out
    finally:
        app.close()


@pytest.fixture(scope="module")
def counted(tmp_path_factory) -> tuple[dict[str, Counter[str]], dict[str, Counter[str]]]:
    tmp = tmp_path_factory.mktemp("storecalls")
    return _counts(tmp, FEW), _counts(tmp, MANY)


@pytest.mark.parametrize("kind", ["symbolCard", "symbolContext", "symbolContext of a hub", "callGraph", "prContext",
                                  "minimalContext",
                                  "incomingCalls", "outgoingCalls", "references"])
def test_store_calls_do_not_grow_with_the_callers(counted, kind):
    few, many = counted[0][kind], counted[1][kind]
    assert sum(few.values()) > 0
    assert many == few, f"{kind}: store calls per method with {FEW} callers {dict(few)}, with {MANY} {dict(many)}"
