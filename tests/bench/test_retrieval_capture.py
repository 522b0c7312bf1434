"""`codesynapse bench retrieval`'s capturing runner, end to end on fixtures/python_repo.

``run_corpus`` wraps the task runner (``bench.tokens.Runner``) in a subclass that keeps the
answer of each request, to read the cards for recall@8 and MRR. When ``Runner._send_deadline``
gained its ``scope`` argument (31de814) the wrapper's signature no longer matched and every task
failed to run with a TypeError (fixed in 89d8c63, lost and restored in 96f00a5). This test runs
the real capture path (index, check_units, the runner, the capturing wrapper, two retrieval
configurations) on a local directory: no network, no corpus fetch.

The expected verdicts are written by hand from the fixture's text:

* shop/pricing.py:6-8 is ``apply_discount``, docstring "Reduce an amount by a percentage.";
* shop/payment.py:12-14 is ``Gateway.charge`` in the class "Charges money ..." of the payment
  gateways module;
* shop/cart.py:17-18 is ``BaseCart.count`` (``return len(self.items)``): it shares no word with
  the discount question, and a 200-token answer holds only a couple of cards.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from codesynapse.bench import retrieval_eval as ev
from codesynapse.bench.workload import parse_workload

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "python_repo"

# every function and method of fixtures/python_repo/shop (read off the files)
FIXTURE_UNITS = {
    "shop.pricing.apply_discount", "shop.pricing.with_tax",
    "shop.cart.BaseCart", "shop.cart.BaseCart.__init__", "shop.cart.BaseCart.add", "shop.cart.BaseCart.count",
    "shop.cart.Cart", "shop.cart.Cart.total", "shop.cart.Cart.checkout",
    "shop.payment.Gateway", "shop.payment.Gateway.charge", "shop.payment.pay_for",
    "shop.pricing", "shop.cart", "shop.payment", "shop", "shop.pricing.TAX_RATE", "shop.payment.log",
}

DISCOUNT = "How is an amount reduced by a percentage?"
PAYMENT = "Which code charges money through a payment gateway?"


def _task(tid: str, units: list[str], evidence: list[str], params: dict) -> ev.EvalTask:
    wl = parse_workload({"tasks": [{"id": tid, "kind": "lookup", "evidence": evidence, "request": {
        "method": "codesynapse/minimalContext", "params": params}}]})
    return ev.EvalTask(task=wl.tasks[0], repo="python_repo", corpus="", split="tune", group="plain_english",
                       units=units, file="")


TASKS = [
    # complete: the discount question finds apply_discount
    _task("discount", ["shop.pricing.apply_discount"], ["shop/pricing.py:6-8"], {"task": DISCOUNT}),
    # complete: a different question, a different unit (a stale capture would show the first task's cards)
    _task("payment", ["shop.payment.Gateway.charge"], ["shop/payment.py:12-14"], {"task": PAYMENT}),
    # incomplete: BaseCart.count is not an answer to the discount question in 200 tokens
    _task("count", ["shop.cart.BaseCart.count"], ["shop/cart.py:17-18"], {"task": DISCOUNT, "maxTokens": 200}),
    # incomplete, one of two units found: the evidence is matched item by item
    _task("both", ["shop.pricing.apply_discount", "shop.cart.BaseCart.count"],
          ["shop/pricing.py:6-8", "shop/cart.py:17-18"], {"task": DISCOUNT, "maxTokens": 200}),
]

# id -> (complete, missing evidence, units found in the first 8 cards, units)
EXPECTED = {
    "discount": (True, [], 1, 1),
    "payment": (True, [], 1, 1),
    "count": (False, ["shop/cart.py:17-18"], 0, 1),
    "both": (False, ["shop/cart.py:17-18"], 1, 2),
}


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    # the run's index goes to a temporary cache; no embedder, so the ranking does not depend on
    # whether the dense vectors happen to be ready
    mp.setenv("CODESYNAPSE_BENCH_CACHE", str(tmp_path_factory.mktemp("bench-cache")))
    mp.setenv("CODESYNAPSE_EMBEDDER", "none")
    configs = [ev.CURRENT] + (["lexical only"] if ev._config_class() is not None else [])
    try:
        yield ev.run_corpus(str(FIXTURE), TASKS, configs, dense_wait=0)
    finally:
        mp.undo()


def test_every_task_ran_through_the_capturing_runner(result):
    assert result["indexedFiles"] >= 4
    for cname, rows in result["rows"].items():
        assert [r["id"] for r in rows] == [t.id for t in TASKS], cname
        for r in rows:
            # a broken wrapper (e.g. a signature that drops the scope argument) fails every task
            # with "TypeError: ..." here
            assert r["error"] is None, (cname, r["id"], r["error"])


def test_the_captured_answers_are_real_minimal_context_answers(result):
    for cname, rows in result["rows"].items():
        for r in rows:
            assert r["cards"], (cname, r["id"])  # cards read from the captured answer
            assert set(r["cards"]) <= FIXTURE_UNITS, (cname, r["id"], r["cards"])
            assert r["tokens"] > 0 and r["baselineA"] > 0, (cname, r["id"])  # the answer and the raw files counted
            assert r["latencyMs"] is not None
        by_id = {r["id"]: r for r in rows}
        # each task's own answer is captured, not an earlier one
        assert "shop.pricing.apply_discount" in by_id["discount"]["cards"][:ev.K]
        assert "shop.payment.Gateway.charge" in by_id["payment"]["cards"][:ev.K]
        assert by_id["discount"]["cards"] != by_id["payment"]["cards"]


def test_evidence_matching_gives_the_hand_written_verdicts(result):
    for cname, rows in result["rows"].items():
        for r in rows:
            ok, missing, found, units = EXPECTED[r["id"]]
            assert (r["ok"], r["missing"], r["unitsFound"], r["units"]) == (ok, missing, found, units), (cname, r)
            # the runner's evidence check and the recall read off the captured cards agree
            assert (r["rr"] > 0) == (found > 0), (cname, r)
    for cname in result["rows"]:
        s = ev.summarize(result["rows"][cname])
        assert (s["complete"], s["tasks"], s["unitsFound"], s["units"]) == (2, 4, 3, 5), cname
