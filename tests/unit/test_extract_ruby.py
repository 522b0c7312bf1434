"""Ruby extraction on fixtures/ruby_repo: one global namespace (`Object`) for every file,
modules vs mixin traits, classes reopened across files, `def self.x`, private methods,
`Foo.new` as instantiation, instance-variable receiver hints, mixins as bases, requires,
Minitest methods and RSpec blocks."""

from __future__ import annotations

from pathlib import Path

from codesynapse.extract import extract_source

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "ruby_repo"


def fx(rel: str, data: bytes | None = None):
    return extract_source(str(ROOT), rel, data if data is not None else (ROOT / rel).read_bytes(), "ruby")


def symbols(f):
    return [(s.qname, s.kind, s.start_line, s.end_line) for s in f.symbols]


def test_namespace_module_and_requires():
    f = fx("lib/bank.rb")
    assert f.module == "Object"
    assert symbols(f) == [
        ("Object", "module", 1, 14),
        ("Object.Bank", "module", 5, 14),
        ("Object.Bank.open", "method", 9, 13),  # def self.open
    ]
    assert (f.symbols[2].signature, f.symbols[2].summary) == (
        "def self.open(owner, ledger)", "Open an account and record it in the ledger.")
    assert [(c.callee, c.kind) for c in f.calls] == [("Account", "new"), ("ledger.record", "call")]
    assert [(i.module, i.name, i.line) for i in f.imports] == [("lib/bank/account", "*", 2), ("lib/bank/ledger", "*", 3)]


def test_mixin_module_is_a_trait():
    f = fx("lib/bank/auditable.rb")
    assert symbols(f) == [
        ("Object", "module", 1, 12),
        ("Object.Bank", "module", 1, 12),
        ("Object.Bank.Auditable", "trait", 3, 11),
        ("Object.Bank.Auditable.audit", "method", 4, 6),
        ("Object.Bank.Auditable.audit_log", "method", 8, 10),
    ]
    assert f.symbols[2].summary == "Mixed into anything whose changes are audited."


def test_classes_bases_mixins_and_private_methods():
    f = fx("lib/bank/account.rb")
    assert symbols(f) == [
        ("Object", "module", 1, 38),
        ("Object.Bank", "module", 3, 38),
        ("Object.Bank.BaseAccount", "class", 5, 11),
        ("Object.Bank.BaseAccount.initialize", "method", 8, 10),
        ("Object.Bank.Account", "class", 14, 37),
        ("Object.Bank.Account.initialize", "method", 19, 22),
        ("Object.Bank.Account.deposit", "method", 25, 30),
        ("Object.Bank.Account.validate!", "method", 34, 36),
    ]
    by = {s.qname: s for s in f.symbols}
    assert (by["Object.Bank.Account"].signature, by["Object.Bank.Account"].summary) == (
        "class Account < BaseAccount", "A customer's account.")
    assert by["Object.Bank.Account.deposit"].summary == "Add money; negative amounts are refused."
    assert [s.qname for s in f.symbols if not s.exported] == ["Object.Bank.Account.validate!"]
    assert [(i.child, i.base, i.kind) for i in f.inherits] == [
        ("Object.Bank.Account", "BaseAccount", "inherits"), ("Object.Bank.Account", "Auditable", "inherits")]
    assert [(c.caller, c.callee, c.line) for c in f.calls] == [
        ("Object.Bank.BaseAccount", "attr_reader", 6),
        ("Object.Bank.Account", "attr_reader", 17),
        ("Object.Bank.Account.deposit", "validate!", 26),
        ("Object.Bank.Account.deposit", "audit", 28),
        ("Object.Bank.Account.validate!", "raise", 35),
        ("Object.Bank.Account.validate!", "amount.negative?", 35),
    ]


def test_instance_variable_hints():
    f = fx("lib/bank/ledger.rb")
    assert [(c.caller, c.callee, c.receiver_hint) for c in f.calls] == [
        ("Object.Bank.Ledger.initialize", "Clock", ""),
        ("Object.Bank.Ledger.record", "@clock.tick", "Clock"),  # @clock = Clock.new in initialize
        ("Object.Bank.Ledger.record", "self.size", ""),
        ("Object.Bank.Ledger.size", "@accounts.size", ""),
        ("Object.Bank.Ledger.total", "@accounts.sum", ""),
        ("Object.Bank.Clock.tick", "Time.now", ""),
    ]


def test_minitest_methods():
    f = fx("test/account_test.rb")
    assert symbols(f) == [
        ("Object", "module", 1, 18),
        ("Object.AccountTest", "class", 4, 18),
        ("Object.AccountTest.test_deposit_adds_to_balance", "test", 5, 11),
        ("Object.AccountTest.test_account_is_audited", "test", 13, 17),
    ]
    hints = [(c.callee, c.receiver_hint) for c in f.calls if c.receiver_hint]
    assert hints == [("ledger.size", "Bank.Ledger"), ("account.deposit", "Bank.Account"),
                     ("account.audit_log", "Bank.Account")]


def test_rspec_blocks_only_in_spec_files():
    src = b'describe Bank::Ledger do\n  it "records" do\n    Bank::Ledger.new.record(1)\n  end\nend\n'
    spec = fx("spec/ledger_spec.rb", src)
    assert symbols(spec) == [
        ("Object", "module", 1, 5),
        ("Object.Bank::Ledger", "test", 1, 5),
        ('Object.Bank::Ledger."records"', "test", 2, 4),
    ]
    assert [(c.caller, c.callee, c.kind) for c in spec.calls] == [
        ('Object.Bank::Ledger."records"', "Bank.Ledger", "new"),
        ('Object.Bank::Ledger."records"', "Bank.Ledger().record", "call"),
    ]
    plain = fx("lib/ledger_examples.rb", src)
    assert symbols(plain) == [("Object", "module", 1, 5)]


def test_yard_tags_and_rubocop_switches_are_not_the_summary(tmp_path):
    src = b"""# rubocop:disable Metrics/MethodLength
# Parses a retry policy from its text form
# @param text [String] the text
# @return [Policy]
def parse_policy(text)
end
"""
    f = extract_source(str(tmp_path), "policy.rb", src, "ruby")
    by = {s.name: s.summary for s in f.symbols}
    assert by["parse_policy"] == "Parses a retry policy from its text form"
