"""Parameter hints through incremental updates, on every backend (issue 18 #4): a parameter
typed by what every call site passes follows those call sites when only another file changes
— a new call passing another class unbinds it, the call going away binds it again, a call
moving to the function through an import does too — and the updated graph equals a full
re-index of the same tree on the same backend and what SQLite holds for it."""

from __future__ import annotations

from tests.contract.test_return_hints import (  # one full-index comparison for both
    _index,
    _same_as_full,
)

BANK = '''
class Account:
    def withdraw(self, amount):
        pass


class Savings:
    def withdraw(self, amount):
        pass


def transfer(source, amount):
    source.withdraw(amount)
'''

USE = '''
from pkg.bank import Account, transfer


def main():
    transfer(Account(), 1)
'''

OTHER = '''
from pkg.bank import Savings, transfer


def other():
    transfer(Savings(), 2)
'''

HANDS_ON = '''
from pkg import bank


def later(fn):
    return fn


def other():
    later(bank.transfer)
'''

OTHER_ELSEWHERE = '''
from pkg.bank import Savings


def transfer(source, amount):
    pass


def other():
    transfer(Savings(), 2)
'''


def _target(store) -> tuple[str, str]:
    rows = [(c.target, c.resolution) for c in store.all_calls() if c.callee == "source.withdraw"]
    assert len(rows) == 1
    return rows[0]


def test_a_call_site_elsewhere_moves_the_parameter(make_graph_store, tmp_path):
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "bank.py").write_text(BANK)
    (root / "pkg" / "use.py").write_text(USE)
    store = make_graph_store()
    _index(store, root)
    assert _target(store) == ("pkg.bank.Account.withdraw", "inferred")

    # 0. an edit of the calling file that changes no call keeps it
    (root / "pkg" / "use.py").write_text(USE + "\n# a comment\n")
    _index(store, root)
    assert _target(store) == ("pkg.bank.Account.withdraw", "inferred")

    # 1. a new file calls transfer with another class: bank.py is not re-extracted, its call unbinds
    (root / "pkg" / "other.py").write_text(OTHER)
    _index(store, root)
    assert _target(store) == ("", "unresolved")
    _same_as_full(store, make_graph_store, root, tmp_path, 1)

    # 2. that call now goes to a transfer of its own file: bound again
    (root / "pkg" / "other.py").write_text(OTHER_ELSEWHERE)
    _index(store, root)
    assert _target(store) == ("pkg.bank.Account.withdraw", "inferred")
    _same_as_full(store, make_graph_store, root, tmp_path, 2)

    # 3. back to bank.transfer, then the file goes away: unbound, bound again
    (root / "pkg" / "other.py").write_text(OTHER)
    _index(store, root)
    assert _target(store) == ("", "unresolved")
    (root / "pkg" / "other.py").unlink()
    _index(store, root)
    assert _target(store) == ("pkg.bank.Account.withdraw", "inferred")
    _same_as_full(store, make_graph_store, root, tmp_path, 3)

    # 3b. a new file hands transfer on as a value: it may be called with anything, unbound;
    # the file goes away: bound again
    (root / "pkg" / "other.py").write_text(HANDS_ON)
    _index(store, root)
    assert _target(store) == ("", "unresolved")
    _same_as_full(store, make_graph_store, root, tmp_path, 5)
    (root / "pkg" / "other.py").unlink()
    _index(store, root)
    assert _target(store) == ("pkg.bank.Account.withdraw", "inferred")

    # 4. the only call site changes its argument to an unknown value: unbound
    (root / "pkg" / "use.py").write_text(USE.replace("def main():", "def main(x):").replace("Account(), 1", "x, 1"))
    _index(store, root)
    assert _target(store) == ("", "unresolved")
    _same_as_full(store, make_graph_store, root, tmp_path, 4)
