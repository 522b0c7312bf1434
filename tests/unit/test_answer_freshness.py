"""The freshness stamp of context answers (context/service.py answer_freshness): the state
always, every other fact only when it is not its default; the time of the last change only
while the answer may lag the workspace; the policy fingerprint only in indexStatus."""

from __future__ import annotations

from codesynapse.context.service import answer_freshness

FULL = {"state": "ready", "indexedCommit": "", "dirty": False, "openBuffers": [], "pending": 0,
        "lastUpdate": "2026-11-30T06:50:37.123456+00:00", "policyFingerprint": "8decfd200d80da44" + "0" * 48}


def test_a_ready_index_with_nothing_pending_is_the_state_alone():
    assert answer_freshness(FULL) == {"state": "ready"}


def test_facts_that_differ_from_their_default_are_given():
    f = {**FULL, "indexedCommit": "4c49909", "dirty": True, "openBuffers": ["shop/pricing.py"]}
    assert answer_freshness(f) == {"state": "ready", "indexedCommit": "4c49909", "dirty": True,
                                   "openBuffers": ["shop/pricing.py"]}


def test_an_answer_that_may_lag_says_since_when():
    assert answer_freshness({**FULL, "pending": 1500}) == {
        "state": "ready", "pending": 1500, "lastUpdate": "2026-11-30T06:50:37Z"}
    assert answer_freshness({**FULL, "state": "indexing"}) == {
        "state": "indexing", "lastUpdate": "2026-11-30T06:50:37Z"}


def test_a_failed_index_says_why_and_since_when():
    f = {**FULL, "state": "failed", "error": "graph commit failed: database or disk is full", "failedAttempts": 3}
    assert answer_freshness(f) == {"state": "failed", "error": "graph commit failed: database or disk is full",
                                   "lastUpdate": "2026-11-30T06:50:37Z"}
