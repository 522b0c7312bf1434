"""Capped caller lists keep production callers before test callers."""

from codesynapse.context.service import production_first
from codesynapse.graph.model import CallRow


def _call(path: str, i: int) -> CallRow:
    return CallRow(id=i, path=path, caller=f"c{i}", callee="f", name="f", line=1, col=0, kind="call", hint="",
                   target="m.f", resolution="import", confidence=0.95)


def test_tests_go_last_and_order_is_otherwise_kept():
    paths = ["Lib/test/test_email.py", "email/utils.py", "tests/unit/test_a.py", "pkg/a_test.go", "src/x.spec.ts",
             "smtplib.py", "testing/helpers.py", "app/contest.py", "web/AccountTests.cs"]
    got = [c.path for c in production_first([_call(p, i) for i, p in enumerate(paths)])]
    assert got == ["email/utils.py", "smtplib.py", "app/contest.py", "Lib/test/test_email.py", "tests/unit/test_a.py",
                   "pkg/a_test.go", "src/x.spec.ts", "testing/helpers.py", "web/AccountTests.cs"]
