"""minimalContext's cut of weak candidates (issue 16): the fused scores are reciprocal ranks, so
library code one hop from the best hit (the helpers it calls, found by the graph stage only)
scores under a quarter of that hit; it is shown while the card limit has room. Code the task
did not ask about (a test the role prior set back) is still counted, not shown, when that weak."""

from __future__ import annotations

from codesynapse.context.budget import Deadline
from codesynapse.context.minimal import WEAK_FRACTION
from codesynapse.context.retrieval import Retriever
from codesynapse.methods import call_method
from infra.apps import indexed_app

STEPS = "abcde"
FILES = {
    "steps.py": "".join(f"def step_{c}(rows):\n    return rows\n\n\n" for c in STEPS),
    "ledger.py": ("from steps import step_a, step_b, step_c, step_d, step_e\n\n\n"
                  "def archive_old_entries(rows):\n"
                  '    """Archive old ledger entries."""\n'
                  + "".join(f"    rows = step_{c}(rows)\n" for c in STEPS)
                  + "    keep = 'tombstone'\n    return rows\n"),
    "tests/test_ledger.py": ("from ledger import archive_old_entries\n\n\n"
                             "def test_archive():\n    assert archive_old_entries([]) == []\n"),
}
TASK = "archive old ledger entries with a tombstone"


def test_library_code_under_a_quarter_of_the_best_is_shown_a_weak_test_is_not(tmp_path):
    a = indexed_app(tmp_path, FILES)
    try:
        got = Retriever(a, a.store).rank(TASK, Deadline())
        score = {got.rows[i].qname: got.score[i] for i in got.order}
        best = score["ledger.archive_old_entries"]
        assert max(score.values()) == best
        steps = [f"steps.step_{c}" for c in STEPS]
        # the premise: the helpers, reached by the graph stage only, and the test are weak
        for q in [*steps, "test_ledger.test_archive"]:
            assert score[q] < best * WEAK_FRACTION, q
        ans = call_method(a, "codesynapse/minimalContext", {"task": TASK})
        cards = [c["qualifiedName"] for c in ans["cards"]]
        assert cards[0] == "ledger.archive_old_entries"
        assert sorted(cards[1:]) == steps  # library code: shown, the card limit (8) has room
        assert all(c["legs"] == ["graph"] for c in ans["cards"][1:])
        weaker = {c["qualifiedName"] for n in ans["omitted"] if n["what"] == "weaker candidates"
                  for c in n.get("candidates", [])}
        assert "test_ledger.test_archive" in weaker and "test_ledger.test_archive" not in cards
    finally:
        a.close()
