"""The savings ledger (codesynapse/ledger.py): every answer of a session is counted with its
tokens, the raw-context estimates (a) and (b) and its cache-hit tokens; codesynapse/ledger
returns the session's figures; `codesynapse stats` prints the workspace totals (issue 20 #1)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codesynapse.app import App
from codesynapse.errors import InvalidParams
from codesynapse.methods import call_method
from codesynapse.scope import make_scope
from codesynapse.settings import Settings

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.fixture()
def repo(tmp_path):
    root = tmp_path / "python_repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    return root


def _app(root, data):
    app = App(root, Settings(data_dir=str(data), watch=False, embedder="none"))
    app.index()
    return app


def _est(n: int) -> int:
    return math.ceil(n / 4)


def _response_tokens(answer) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": answer}, ensure_ascii=False, separators=(",", ":"))
    return _est(len(body.encode("utf-8")))


def test_every_answer_is_counted_with_both_raw_estimates(repo, tmp_path):
    app = _app(repo, tmp_path / "data")
    try:
        card = call_method(app, "codesynapse/symbolCard", {"selector": "shop.cart.Cart.total"})
        led = call_method(app, "codesynapse/ledger", {"last": 5})
    finally:
        app.close()
    row = led["last"][0]
    assert row["method"] == "codesynapse/symbolCard"
    assert row["tokens"] == _response_tokens(card)
    # (a): the definition's file, its callers' (Cart.checkout, test_total) and callees' (pricing) files
    files_a = ["shop/cart.py", "shop/pricing.py", "tests/test_cart.py"]
    assert row["filesA"] == 3
    assert row["rawA"] == _est(sum((repo / p).stat().st_size for p in files_a))
    # (b): `grep -rnw total` output plus the file whose hit defines it (shop/cart.py)
    grep = "".join(f"{p}:{n}:{line}\n" for p in ["shop/cart.py", "tests/test_cart.py"]
                   for n, line in enumerate((repo / p).read_text().splitlines(), 1)
                   if __import__("re").search(r"(?<![\w$])total(?![\w$])", line))
    assert row["filesB"] == 1
    assert row["rawB"] == _est(len(grep.encode()) + (repo / "shop/cart.py").stat().st_size)
    assert row["avoidedA"] == row["rawA"] - row["tokens"]
    s = led["session"]
    assert (s["answers"], s["tokens"], s["rawA"], s["rawB"], s["pending"]) == (1, row["tokens"], row["rawA"],
                                                                               row["rawB"], 0)
    assert led["methods"]["codesynapse/symbolCard"]["answers"] == 1
    assert "codesynapse/ledger" not in led["methods"]  # the ledger does not count itself


def test_a_repeated_card_is_cache_hit_tokens(repo, tmp_path):
    app = _app(repo, tmp_path / "data")
    try:
        call_method(app, "codesynapse/symbolCard", {"selector": "shop.pricing.with_tax"})
        again = call_method(app, "codesynapse/symbolCard", {"selector": "shop.pricing.with_tax"})
        other = call_method(app, "codesynapse/symbolCard", {"selector": "shop.cart.Cart.total"})
        led = call_method(app, "codesynapse/ledger", {"last": 3})
    finally:
        app.close()
    other_row, again_row, first_row = led["last"]
    assert first_row["cacheHitTokens"] == 0
    # the whole card was sent before: its bytes (keys sorted, compact) are the repeat
    card = json.dumps(again["card"], ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    assert again_row["cacheHitTokens"] == _est(len(card.encode()))
    assert 0 < again_row["cacheHitTokens"] < again_row["tokens"]
    # Cart.total's card is new; only entries it shares with with_tax's card could repeat, and none do
    assert other_row["cacheHitTokens"] == 0
    assert other["found"]
    assert led["session"]["cacheHitTokens"] == again_row["cacheHitTokens"]


def test_sessions_have_their_own_ledgers_and_errors_are_counted(repo, tmp_path):
    app = _app(repo, tmp_path / "data")
    try:
        s1 = make_scope("local", app.workspace.identity)
        s2 = make_scope("local", app.workspace.identity)
        call_method(app, "codesynapse/search", {"query": "total"}, s1)
        with pytest.raises(InvalidParams):
            call_method(app, "codesynapse/search", {"query": ""}, s1)
        l1 = call_method(app, "codesynapse/ledger", {}, s1)
        l2 = call_method(app, "codesynapse/ledger", {}, s2)
    finally:
        app.close()
    assert l1["session"]["answers"] == 1 and l1["session"]["errors"] == 1
    assert l2["session"]["answers"] == 0 and l2["last"] == []


@pytest.mark.parametrize("params,field", [({"session": "x"}, "session"), ({"tenant": "t"}, "tenant"),
                                          ({"last": 101}, "last"), ({"last": -1}, "last"),
                                          ({"lastN": 3}, "params")])
def test_bad_ledger_params_are_invalid_params(repo, tmp_path, params, field):
    app = _app(repo, tmp_path / "data")
    try:
        with pytest.raises(InvalidParams) as e:
            call_method(app, "codesynapse/ledger", params)
    finally:
        app.close()
    assert e.value.field == field


def test_workspace_totals_add_up_across_sessions_without_session_ids(repo, tmp_path):
    data = tmp_path / "data"
    scopes = []
    for _ in range(2):
        app = _app(repo, data)
        try:
            call_method(app, "codesynapse/symbolCard", {"selector": "shop.pricing.with_tax"})
            call_method(app, "codesynapse/callGraph", {"selector": "shop.pricing.with_tax"})
            led = call_method(app, "codesynapse/ledger", {})
            scopes.append(app.services.own_scope)
        finally:
            app.close()
    out = subprocess.run([sys.executable, "-m", "codesynapse", "stats", "--root", str(repo), "--data-dir", str(data),
                          "--json"], capture_output=True, text=True, timeout=120, check=True)
    t = json.loads(out.stdout)
    assert t["sessions"] == 2
    assert t["total"]["answers"] == 4
    assert t["methods"]["codesynapse/symbolCard"]["answers"] == 2
    assert t["total"]["rawA"] == 2 * led["session"]["rawA"]
    assert t["total"]["tokens"] == 2 * led["session"]["tokens"]
    text = (data / "ledger-totals.json").read_text()
    for s in scopes:
        assert s.session not in text and s.session_digest not in text
    human = subprocess.run([sys.executable, "-m", "codesynapse", "stats", "--root", str(repo), "--data-dir",
                            str(data)], capture_output=True, text=True, timeout=120, check=True).stdout
    assert "sessions: 2" in human and "codesynapse/callGraph" in human


def test_counting_switch_off_records_nothing_and_on_records_the_answer(repo, tmp_path):
    """The switch `bench requests --ledger-compare` flips (LedgerBook.counting): off, an answer
    and an error leave no ledger entry; back on, the next answer is counted."""
    app = _app(repo, tmp_path / "data")
    try:
        app.services.ledger.counting = False
        call_method(app, "codesynapse/symbolCard", {"selector": "shop.cart.Cart.total"})
        with pytest.raises(InvalidParams):
            call_method(app, "codesynapse/symbolCard", {"selector": "shop.cart.Cart.total", "bogus": 1})
        off = call_method(app, "codesynapse/ledger", {"last": 5})
        app.services.ledger.counting = True
        call_method(app, "codesynapse/callGraph", {"selector": "shop.cart.Cart.total", "direction": "callers"})
        on = call_method(app, "codesynapse/ledger", {"last": 5})
    finally:
        app.close()
    assert off["last"] == [] and off["methods"] == {}
    assert off["session"]["answers"] == 0 and off["session"]["errors"] == 0
    assert [r["method"] for r in on["last"]] == ["codesynapse/callGraph"]
    assert on["session"]["answers"] == 1


def test_raw_estimates_wait_while_the_index_has_changes_to_apply(repo, tmp_path):
    """A raw estimate greps the whole tree; while an update is queued or running (the index
    state's ``pending``) the worker leaves the estimates waiting, and a grep that has begun
    gives up between files and is estimated again later, from the start."""
    from codesynapse.bench.baselines import CorpusText, Yielded

    app = _app(repo, tmp_path / "data")
    try:
        book = app.services.ledger
        app.index_state.pending = 1  # an edit is queued (before the answer: the worker waits too)
        call_method(app, "codesynapse/symbolCard", {"selector": "shop.cart.Cart.total"})
        led = next(iter(book._sessions.values()))
        assert len(led.waiting) == 1
        assert book._busy()
        book._settle(led, time.monotonic() + 5.0, yield_to_requests=True)
        assert len(led.waiting) == 1  # not estimated meanwhile
        app.index_state.pending = 0
        book._settle(led, time.monotonic() + 5.0, yield_to_requests=True)
        assert len(led.waiting) == 0
        row = call_method(app, "codesynapse/ledger", {"last": 1})["last"][0]
        assert row["rawA"] > 0 and row["rawB"] > 0
        corpus = CorpusText(str(repo), [("shop/cart.py", "python"), ("tests/test_cart.py", "python")])
        corpus.stop = lambda: True
        with pytest.raises(Yielded):
            corpus.grep("total")
        corpus.stop = None
        assert corpus.grep("total").files == ["shop/cart.py", "tests/test_cart.py"]
    finally:
        app.close()


def test_the_file_text_cache_holds_at_most_its_share_of_the_memory_budget(tmp_path):
    """The raw estimates keep file texts between answers within 1/32 of index.memoryBudget
    (2 MB of a 64 MB budget), counted as the memory the texts take: a mostly ASCII file with
    one emoji is a str of 4 bytes a character, four times its UTF-8 size. The corpus of one
    estimate keeps no more than the cache (a grep reads every file)."""
    root = tmp_path / "repo"
    root.mkdir()
    line = "# " + "x" * 76 + "\n"
    for i in range(12):  # 200 kB each in UTF-8, ~800 kB as str
        (root / f"m{i:02}.py").write_text(f"def f{i}():\n    return '\N{GRINNING FACE}'\n" + line * 2500
                                          + ("needle = 1\n" if i % 2 else ""), encoding="utf-8")
    app = App(root, Settings(data_dir=str(tmp_path / "data"), watch=False, embedder="none", memory_budget_mb=64))
    try:
        app.index()
        book = app.services.ledger
        bound = 2 << 20
        assert book.text_cache_max == bound
        for _ in range(2):
            corpus = book._corpus()
            assert corpus.grep("needle").files == [f"m{i:02}.py" for i in range(1, 12, 2)]
            cached = [entry[1] for entry in book._texts.values()]
            assert 0 < len(cached) < 12
            assert sum(sys.getsizeof(t) for t in cached) <= bound
            assert sum(sys.getsizeof(t) for t in corpus._text.values()) <= bound
            assert corpus.nbytes("m01.py") == (root / "m01.py").stat().st_size
    finally:
        app.close()
