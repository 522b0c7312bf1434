"""Ruby call resolution on fixtures/ruby_repo through the real indexer: constants in the
global namespace from any file (no require needed), `Foo.new` to the class, implicit-self
calls to own and mixed-in methods, `self.`, instance-variable and local receivers, mixin
methods through a receiver, and what stays unresolved (untyped parameters, attr_reader)."""

from __future__ import annotations

from pathlib import Path

import pytest
from codesynapse.index.indexer import Indexer
from codesynapse.store.sqlite.graph import SqliteGraphStore

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "ruby_repo"
B = "Object.Bank"
T1 = "Object.AccountTest.test_deposit_adds_to_balance"
T2 = "Object.AccountTest.test_account_is_audited"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = SqliteGraphStore(tmp_path_factory.mktemp("rb") / "g.db", "g")
    Indexer(ROOT, s, None, workers=1).index_tree()
    yield s
    s.close()


def test_every_call_edge(store):
    assert sorted((c.caller, c.callee, c.target, c.resolution) for c in store.all_calls()) == sorted([
        (f"{B}.open", "Account", f"{B}.Account", "local"),  # Account.new
        (f"{B}.open", "ledger.record", "", "unresolved"),  # untyped parameter
        (f"{B}.BaseAccount", "attr_reader", "", "external"),
        (f"{B}.Account", "attr_reader", "", "external"),
        (f"{B}.Account.deposit", "validate!", f"{B}.Account.validate!", "self"),
        (f"{B}.Account.deposit", "audit", f"{B}.Auditable.audit", "self"),  # mixed in
        (f"{B}.Account.validate!", "raise", "", "external"),
        (f"{B}.Account.validate!", "amount.negative?", "", "unresolved"),
        (f"{B}.Ledger.initialize", "Clock", f"{B}.Clock", "local"),
        (f"{B}.Ledger.record", "@clock.tick", f"{B}.Clock.tick", "inferred"),
        (f"{B}.Ledger.record", "self.size", f"{B}.Ledger.size", "self"),
        (f"{B}.Ledger.size", "@accounts.size", "", "unresolved"),
        (f"{B}.Ledger.total", "@accounts.sum", "", "unresolved"),
        (f"{B}.Clock.tick", "Time.now", "", "unresolved"),
        (T1, "Bank.Ledger", f"{B}.Ledger", "local"),  # from test/, no require of ledger.rb needed
        (T1, "Bank.open", f"{B}.open", "local"),
        (T1, "account.deposit", "", "unresolved"),  # the result of Bank.open: type unknown
        (T1, "assert_equal", "", "external"),
        (T1, "account.balance", "", "unresolved"),
        (T1, "assert_equal", "", "external"),
        (T1, "ledger.size", f"{B}.Ledger.size", "inferred"),
        (T2, "Bank.Account", f"{B}.Account", "local"),
        (T2, "account.deposit", f"{B}.Account.deposit", "inferred"),
        (T2, "assert_equal", "", "external"),
        (T2, "account.audit_log", f"{B}.Auditable.audit_log", "inferred"),  # through the mixin
    ])


def test_bases(store):
    assert sorted((i.child, i.base, i.target) for i in store.inherits()) == [
        ("Object.AccountTest", "Minitest.Test", ""),
        (f"{B}.Account", "Auditable", f"{B}.Auditable"),
        (f"{B}.Account", "BaseAccount", f"{B}.BaseAccount"),
    ]
    assert sorted(c.caller for c in store.callers(f"{B}.Account.deposit")) == [T2]
    assert store.count_unresolved_named("deposit") == 1
