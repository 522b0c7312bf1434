"""Parameter hints (issue 18 #4): an untyped Python parameter whose every in-project call site
passes an instance of one class is typed by it, so ``def transfer(source, target, amount):
source.withdraw(amount)`` binds ``Account.withdraw`` (resolution ``inferred``, the confidence
graph/confidence.py gives a type read from the callers). Each rule is shown binding and,
beside it, the cases that must stay unbound: two classes passed, an argument of unknown type,
``*args`` at a call, a parameter bound again in the body, no call at all, only ``None``
passed, a decorator that may call the function some other way, a method called through its
class (the arguments move by one), a method that overrides a base's, and a function whose
name is also called on an unknown receiver somewhere.

Every tree is written here and indexed by the real indexer into SQLite; expectations are
written out as (caller, callee text) → (target, resolution)."""

from __future__ import annotations

from pathlib import Path

import pytest
from codesynapse.extract import extract_source
from codesynapse.extract.model import parse_call_args, parse_param_hint
from codesynapse.graph.confidence import INFERRED_FROM_CALLERS
from codesynapse.index.indexer import Indexer
from codesynapse.store.sqlite.graph import SqliteGraphStore

BANK = '''
class Account:
    def withdraw(self, amount):
        pass

    def deposit(self, amount):
        pass


class Savings:
    def withdraw(self, amount):
        pass


def register(fn):
    return fn


def transfer(source, target, amount):
    source.withdraw(amount)
    target.deposit(amount)


def audit(acct, note=None):
    acct.withdraw(1)
    note.deposit(2)


def mixed(a):
    a.withdraw(1)


def unknown_arg(a):
    a.withdraw(1)


def splat(a):
    a.withdraw(1)


def rebound(a):
    a = make()
    a.withdraw(1)


def kwonly(*, acct):
    acct.withdraw(1)


def uncalled(a):
    a.withdraw(1)


def nones(a=None):
    a.withdraw(1)


@register
def decorated(a):
    a.withdraw(1)


def lonely(a):
    a.withdraw(1)


def make():
    return 1


def via_result(a):
    a.withdraw(1)


def handed_on(a):
    a.withdraw(1)


def run_later(fn, *args):
    return fn


class Teller:
    def pay(self, acct):
        acct.withdraw(1)

    def pay_via_class(self, acct):
        acct.withdraw(1)

    @staticmethod
    def stat(acct):
        acct.deposit(1)

    def keep(self, acct):
        self.kept = acct

    def use_kept(self):
        self.kept.deposit(1)

    def run(self):
        self.pay(Account())
        Teller.pay_via_class(self, Account())
        self.pay_via_class(Account())
        self.stat(Account())
        self.keep(Account())


class Holder:
    def __init__(self, acct):
        acct.withdraw(1)


class SubHolder(Holder):
    def __init__(self):
        super().__init__(Account())


def hold():
    return Holder(Savings())


class Base:
    def handle(self, req):
        pass


class Sub(Base):
    def handle(self, req):
        req.withdraw(1)

    def go(self):
        self.handle(Account())
'''

USE = '''
from pkg import bank
from pkg.bank import (Account, Savings, audit, decorated, kwonly, lonely, mixed, nones, rebound, splat,
                      transfer, unknown_arg)


def main(x, xs):
    a = Account()
    transfer(a, Account(), 1)
    transfer(source=Account(), target=a, amount=2)
    bank.transfer(a, a, 3)
    audit(a)
    audit(Account(), None)
    mixed(Account())
    mixed(Savings())
    unknown_arg(x)
    unknown_arg(Account())
    splat(*xs)
    rebound(Account())
    kwonly(acct=Account())
    nones()
    nones(None)
    decorated(Account())
    lonely(Account())
    x.lonely(2)
    r = bank.make()
    bank.via_result(r)
    bank.via_result(Account())
    bank.handed_on(Account())
    bank.run_later(bank.handed_on, Savings())
'''


def _calls(root: Path, db: Path) -> dict[tuple[str, str], tuple[str, str, float]]:
    store = SqliteGraphStore(db, "g")
    try:
        Indexer(root, store, None, workers=1).index_tree()
        out: dict[tuple[str, str], tuple[str, str, float]] = {}
        for c in store.all_calls():
            key = (c.caller, c.callee)
            out[key] = (c.target, c.resolution, c.confidence) if key not in out else ("<twice>", "", 0.0)
        return out
    finally:
        store.close()


def test_extraction_writes_parameter_hints_and_call_arguments():
    fx = extract_source("/tmp", "m.py", USE.encode() + BANK.encode(), "python")
    by = {(c.caller, c.callee): c for c in fx.calls}
    # the receiver: position 0 as a bound call passes it, a plain function, named transfer
    assert parse_param_hint(by[("m.transfer", "source.withdraw")].receiver_hint) == (0, "source", "f", "transfer")
    # a method's self is not counted; a keyword-only parameter has no position
    assert parse_param_hint(by[("m.Teller.pay", "acct.withdraw")].receiver_hint) == (0, "acct", "m", "pay")
    assert parse_param_hint(by[("m.Teller.stat", "acct.deposit")].receiver_hint) == (0, "acct", "f", "stat")
    assert parse_param_hint(by[("m.kwonly", "acct.withdraw")].receiver_hint) == (-1, "acct", "f", "kwonly")
    # no parameter hint: bound again in the body, a decorator that may wrap it
    assert by[("m.rebound", "a.withdraw")].receiver_hint.startswith("=>")
    assert by[("m.decorated", "a.withdraw")].receiver_hint == ""
    # what each argument is: a constructor, a hinted local, None, unknown, unpacked
    seen = {c.args for c in fx.calls if c.callee == "transfer"}
    assert seen == {"Account;Account;?", "source=Account;target=Account;amount=?"}
    assert {c.args for c in fx.calls if c.callee == "audit"} == {"Account", "Account;-"}
    assert [c.args for c in fx.calls if c.callee == "splat"] == ["*"]
    assert next(c.args for c in fx.calls if c.callee == "unknown_arg") == "?"
    assert [c.args for c in fx.calls if c.callee == "self.keep"] == ["Account"]
    # a name of no known class that is no local: perhaps a function handed on as a value
    assert [c.args for c in fx.calls if c.callee == "bank.run_later"] == ["&handed_on;Savings"]
    assert parse_call_args("Account;k=?") == (["Account"], {"k": "?"})
    assert parse_call_args("*") is None
    assert [c.args for c in fx.calls if c.callee == "nones"] == ["()", "-"]
    assert parse_call_args("()") == ([], {})
    assert parse_call_args("=>=>0.pkg.make;k==>=>0.make") == (["=>=>0.pkg.make"], {"k": "=>=>0.make"})
    assert parse_call_args("") is None  # a language (or row) that does not say


def test_parameters_typed_by_every_call_site(tmp_path):
    src = tmp_path / "src"
    for rel, body in {"pkg/__init__.py": "", "pkg/bank.py": BANK, "pkg/use.py": USE}.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(body)
    calls = _calls(src, tmp_path / "g.db")
    acc = "pkg.bank.Account"
    bound = {
        ("pkg.bank.transfer", "source.withdraw"): f"{acc}.withdraw",  # positional, keyword, via the module
        ("pkg.bank.transfer", "target.deposit"): f"{acc}.deposit",
        ("pkg.bank.audit", "acct.withdraw"): f"{acc}.withdraw",
        ("pkg.bank.kwonly", "acct.withdraw"): f"{acc}.withdraw",
        ("pkg.bank.Teller.pay", "acct.withdraw"): f"{acc}.withdraw",  # self.pay(Account())
        ("pkg.bank.Teller.stat", "acct.deposit"): f"{acc}.deposit",  # a staticmethod through self
        ("pkg.bank.Teller.use_kept", "self.kept.deposit"): f"{acc}.deposit",  # self.kept = acct elsewhere
    }
    for key, target in bound.items():
        assert calls[key] == (target, "inferred", INFERRED_FROM_CALLERS), key
    unbound = [
        ("pkg.bank.audit", "note.deposit"),  # only None or the default passed
        ("pkg.bank.mixed", "a.withdraw"),  # Account and Savings
        ("pkg.bank.unknown_arg", "a.withdraw"),  # one site passes a parameter of unknown type
        ("pkg.bank.splat", "a.withdraw"),  # splat(*xs)
        ("pkg.bank.uncalled", "a.withdraw"),  # no call site
        ("pkg.bank.nones", "a.withdraw"),
        ("pkg.bank.decorated", "a.withdraw"),  # @register may hand it to anyone
        ("pkg.bank.lonely", "a.withdraw"),  # x.lonely(2) may be it, with anything
        ("pkg.bank.via_result", "a.withdraw"),  # r = bank.make(): a result of no known class
        ("pkg.bank.handed_on", "a.withdraw"),  # run_later(bank.handed_on, ...) may call it with anything
        ("pkg.bank.Teller.pay_via_class", "acct.withdraw"),  # Teller.pay_via_class(self, Account())
        ("pkg.bank.Sub.handle", "req.withdraw"),  # Base.handle's callers reach it too
        ("pkg.bank.Holder.__init__", "acct.withdraw"),  # Holder(Savings()) is no call of __init__
    ]
    for key in unbound:
        assert calls[key][:2] == ("", "unresolved"), key
    # a parameter bound again in the body keeps what the body binds (here nothing)
    assert calls[("pkg.bank.rebound", "a.withdraw")][:2] == ("", "unresolved")


@pytest.mark.parametrize("by_statement", [False, True])
@pytest.mark.parametrize("saved_before", [False, True])
def test_live_updates_follow_the_call_sites(tmp_path, saved_before, by_statement, monkeypatch):
    """One long-lived indexer (the language server's): unsaved buffers of another file hand
    the function on as a value, then pass another class, then go back; each update moves the
    parameter's binding as a full index of the same text would. ``saved_before``: the file
    was written live once before (its resolutions are re-used); the value handed on was then
    counted twice, and taking it back left the parameter unbound. ``by_statement``: every
    file is re-extracted a statement at a time and written by its delta (as large files are),
    and the parameter pass counts the delta's calls instead of reading the file's."""
    from codesynapse.extract import incremental
    from codesynapse.index.indexer import Candidate

    if by_statement:
        monkeypatch.setattr(incremental, "MIN_BYTES", 0)
        incremental.forget()

    src = tmp_path / "src"
    files = {"pkg/__init__.py": "", "pkg/bank.py": BANK, "pkg/use.py": USE,
             "pkg/other.py": "from pkg.bank import Account, transfer\n\n\ndef other():\n    transfer(Account(), 1, 2)\n"}
    for rel, body in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(body)
    store = SqliteGraphStore(tmp_path / "g.db", "g")
    try:
        ix = Indexer(src, store, None, workers=1)
        ix.index_tree()

        def target() -> str:
            return next(c.target for c in store.all_calls() if c.caller == "pkg.bank.transfer"
                        and c.callee == "source.withdraw")

        def edit(body: str) -> None:
            ix.update([Candidate("pkg/other.py", "python", len(body), 0)], [], overlays={"pkg/other.py": body.encode()})

        assert target() == "pkg.bank.Account.withdraw"
        base = files["pkg/other.py"]
        if saved_before:
            edit(base + "\n# first\n")
        edit(base + "\n\ndef later(fn):\n    return fn\n\n\ndef hand():\n    later(transfer)\n")
        assert target() == ""  # handed on: it may be called with anything
        edit(base + "\n# a comment\n")
        assert target() == "pkg.bank.Account.withdraw"
        edit(base.replace("transfer(Account(), 1, 2)", "transfer(Savings(), 1, 2)").replace(
            "import Account,", "import Account, Savings,"))
        assert target() == ""  # another class
        edit(base)
        assert target() == "pkg.bank.Account.withdraw"
        # a function with a parameter-hinted call comes into bank.py, then a caller of it
        bank = files["pkg/bank.py"] + "\n\ndef extra(acct):\n    acct.deposit(2)\n"
        ix.update([Candidate("pkg/bank.py", "python", len(bank), 0)], [], overlays={"pkg/bank.py": bank.encode()})

        def extra() -> tuple[str, str]:
            return next((c.target, c.resolution) for c in store.all_calls() if c.caller == "pkg.bank.extra")

        assert extra() == ("", "unresolved")  # no caller yet
        edit(base.replace("import Account,", "import Account, extra,") + "\n\ndef more():\n    extra(Account())\n")
        assert extra() == ("pkg.bank.Account.deposit", "inferred")
        assert target() == "pkg.bank.Account.withdraw"
        bank2 = bank.replace("acct.deposit(2)", "acct.deposit(3)")  # the call's line rewritten
        ix.update([Candidate("pkg/bank.py", "python", len(bank2), 0)], [], overlays={"pkg/bank.py": bank2.encode()})
        assert extra() == ("pkg.bank.Account.deposit", "inferred")
        edit(base)
        assert extra() == ("", "unresolved")
    finally:
        store.close()


def test_a_file_saved_unchanged_keeps_the_values_it_hands_on(tmp_path):
    """A live update of a file whose bytes did not change (saved as it was, touched) writes
    nothing, so the calls it holds stay as they are: the values they hand on stay counted.
    (They were once counted as gone: ``transfer``, handed on there, then looked passed
    nowhere else, and a later caller typed its parameter.)"""
    from codesynapse.index.indexer import Candidate

    src = tmp_path / "src"
    files = {"pkg/__init__.py": "", "pkg/bank.py": BANK,
             "pkg/hands.py": "from pkg.bank import transfer\n\n\ndef later(fn):\n    return fn\n\n\n"
                             "def hand():\n    later(transfer)\n",
             "pkg/other.py": "from pkg.bank import Account, transfer\n\n\ndef other():\n    pass\n"}
    for rel, body in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(body)
    store = SqliteGraphStore(tmp_path / "g.db", "g")
    try:
        ix = Indexer(src, store, None, workers=1)
        ix.index_tree()
        hands = src / "pkg" / "hands.py"
        ix.update([Candidate("pkg/hands.py", "python", hands.stat().st_size, hands.stat().st_mtime_ns + 10**9)], [])
        body = files["pkg/other.py"].replace("    pass", "    transfer(Account(), 1, 2)")
        (src / "pkg" / "other.py").write_text(body)
        ix.update([Candidate("pkg/other.py", "python", len(body), 0)], [])

        def withdraw(s: SqliteGraphStore) -> tuple[str, str]:
            return next((c.target, c.resolution) for c in s.all_calls()
                        if c.caller == "pkg.bank.transfer" and c.callee == "source.withdraw")

        full = SqliteGraphStore(tmp_path / "full.db", "g")
        try:
            Indexer(src, full, None, workers=1).index_tree()
            assert withdraw(full) == ("", "unresolved")  # handed on: it may be called with anything
            assert withdraw(store) == withdraw(full)
            assert store.dump() == full.dump()
        finally:
            full.close()
    finally:
        store.close()


class _CountingStore(SqliteGraphStore):
    """The real SQLite store, counting the reads of every stored call."""

    full_reads = 0

    def all_calls(self):
        type(self).full_reads += 1
        return super().all_calls()


def test_a_bulk_live_update_moves_parameters_without_reading_every_call(tmp_path):
    """A live update of more files than LIVE_BATCH is written in bulk (its calls held back and
    resolved after the write). Its parameter pass reads the stored calls of its own files and
    of the names they moved, as a small update's does, not every call of the tree (a 1,000-file
    branch switch on the kernel: 4.5 M rows per batch); the bindings it leaves are a full
    index's of the same text."""
    from codesynapse.index.indexer import LIVE_BATCH, Candidate

    src = tmp_path / "src"
    files = {"pkg/__init__.py": "", "pkg/bank.py": BANK, "pkg/use.py": USE,
             "pkg/other.py": "from pkg.bank import Account, transfer\n\n\ndef other():\n    transfer(Account(), 1, 2)\n"}
    for k in range(LIVE_BATCH + 6):  # the rest of a branch switch: files of their own
        files[f"pkg/extra{k}.py"] = f"def extra{k}(x):\n    return x.strip()\n"
    for rel, body in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(body)

    def target(store) -> str:
        return next(c.target for c in store.all_calls() if c.caller == "pkg.bank.transfer"
                    and c.callee == "source.withdraw")

    store = _CountingStore(tmp_path / "g.db", "g")
    try:
        ix = Indexer(src, store, None, workers=1)
        ix.index_tree()
        assert target(store) == "pkg.bank.Account.withdraw"
        # the switch: every extra file changes, and other.py now passes a second class
        changed = {rel: body + "\n# switched\n" for rel, body in files.items() if rel.startswith("pkg/extra")}
        changed["pkg/other.py"] = files["pkg/other.py"] + "\n\ndef more():\n    transfer(Savings(), 1, 2)\n"
        changed["pkg/other.py"] = changed["pkg/other.py"].replace("import Account,", "import Account, Savings,")
        for rel, body in changed.items():
            (src / rel).write_text(body)
        _CountingStore.full_reads = 0
        ix.update([Candidate(rel, "python", len(body), 0) for rel, body in sorted(changed.items())], [])
        assert _CountingStore.full_reads == 0
        assert target(store) == ""  # Account and Savings: unbound, as a full index says
        # and back: the binding returns
        for rel in changed:
            (src / rel).write_text(files[rel])
        _CountingStore.full_reads = 0
        ix.update([Candidate(rel, "python", len(files[rel]), 0) for rel in sorted(changed)], [])
        assert _CountingStore.full_reads == 0
        assert target(store) == "pkg.bank.Account.withdraw"
    finally:
        store.close()
    # a full index of the switched text binds as the live updates did
    for rel, body in changed.items():
        (src / rel).write_text(body)
    fresh = SqliteGraphStore(tmp_path / "full.db", "g")
    try:
        Indexer(src, fresh, None, workers=1).index_tree()
        assert target(fresh) == ""
    finally:
        fresh.close()
