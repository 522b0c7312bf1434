"""Rust extraction on fixtures/rust_repo: crate paths from Cargo.toml (lib.rs, mod.rs, nested
modules, integration tests), traits and impl blocks (methods owned by the impl's type),
`impl Trait for T`, doc comments across attributes, constants without values, `use` trees
made absolute, receiver hints and #[test] functions in inline test modules."""

from __future__ import annotations

from pathlib import Path

from codesynapse.extract import extract_source

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "rust_repo"
ACC = "ledger::account"
ST = "ledger::store"


def fx(rel: str):
    return extract_source(str(ROOT), rel, (ROOT / rel).read_bytes(), "rust")


def symbols(f):
    return [(s.qname, s.kind, s.start_line, s.end_line) for s in f.symbols]


def calls(f):
    return [(c.caller, c.callee, c.line, c.receiver_hint) for c in f.calls]


def imports(f):
    return [(i.module, i.name, i.alias, i.line) for i in f.imports]


def test_module_paths_follow_the_crate():
    assert [fx(p).module for p in ("src/lib.rs", "src/account.rs", "src/store/mod.rs", "src/store/audit.rs",
                                   "tests/ledger_test.rs")] == [
        "ledger", ACC, ST, "ledger::store::audit", "ledger::tests::ledger_test"]


def test_traits_impls_and_inline_test_module():
    f = fx("src/account.rs")
    assert symbols(f) == [
        (ACC, "module", 1, 51),
        (f"{ACC}::Balance", "trait", 2, 9),
        (f"{ACC}::Balance::balance", "method", 3, 3),
        (f"{ACC}::Balance::is_empty", "method", 6, 8),
        (f"{ACC}::Account", "struct", 13, 16),
        (f"{ACC}::Account::new", "method", 20, 22),
        (f"{ACC}::Account::deposit", "method", 24, 26),
        (f"{ACC}::Account::balance", "method", 30, 32),  # from `impl Balance for Account`
        (f"{ACC}::clamp", "function", 36, 38),
        (f"{ACC}::tests", "module", 41, 51),
        (f"{ACC}::tests::deposit_adds", "test", 45, 50),
    ]
    by = {s.qname: s for s in f.symbols}
    assert (by[f"{ACC}::Account"].signature, by[f"{ACC}::Account"].summary) == (
        "pub struct Account", "One owner's account.")  # the doc comment sits above #[derive]
    assert (by[f"{ACC}::Account::new"].signature, by[f"{ACC}::Account::new"].summary) == (
        "pub fn new(owner: &str) -> Self", "An empty account for `owner`.")
    assert by[f"{ACC}::Account::new"].parent == f"{ACC}::Account"
    assert by[f"{ACC}::clamp"].summary == "Negative deposits count as nothing."
    assert by[f"{ACC}::Balance::balance"].signature == "fn balance(&self) -> i64"
    assert [s.qname for s in f.symbols if s.is_test] == [f"{ACC}::tests::deposit_adds"]
    assert [s.qname for s in f.symbols if not s.exported] == [
        f"{ACC}::clamp", f"{ACC}::tests", f"{ACC}::tests::deposit_adds"]
    assert [(i.child, i.base, i.kind) for i in f.inherits] == [(f"{ACC}::Account", "Balance", "implements")]
    assert imports(f) == [(ACC, "*", "", 42)]  # `use super::*` inside `mod tests`
    assert calls(f) == [
        (f"{ACC}::Balance::is_empty", "self.balance", 7, ""),
        (f"{ACC}::Account::new", "owner.to_string", 21, ""),
        (f"{ACC}::Account::deposit", "clamp", 25, ""),
        (f"{ACC}::clamp", "cents.max", 37, ""),
        (f"{ACC}::tests::deposit_adds", "Account::new", 46, ""),
        (f"{ACC}::tests::deposit_adds", "a.deposit", 47, "Account"),  # let mut a = Account::new(..)
        (f"{ACC}::tests::deposit_adds", "super::clamp", 47, ""),
        (f"{ACC}::tests::deposit_adds", "a.balance", 48, "Account"),
    ]


def test_mod_rs_constants_fields_and_use_lists():
    f = fx("src/store/mod.rs")
    assert f.symbols[0].summary == "Where accounts live."
    assert symbols(f) == [
        (ST, "module", 1, 31),
        (f"{ST}::MAX_ACCOUNTS", "constant", 9, 9),
        (f"{ST}::Ledger", "struct", 12, 15),
        (f"{ST}::Ledger::new", "method", 18, 20),
        (f"{ST}::Ledger::insert", "method", 22, 25),
        (f"{ST}::Ledger::total", "method", 28, 30),
    ]
    by = {s.qname: s for s in f.symbols}
    assert (by[f"{ST}::MAX_ACCOUNTS"].signature, by[f"{ST}::MAX_ACCOUNTS"].summary) == (
        "pub const MAX_ACCOUNTS: usize", "Most accounts one ledger holds.")
    assert imports(f) == [
        ("std::collections", "HashMap", "", 2),
        (ACC, "Account", "", 4),  # crate:: expanded
        (ACC, "Balance", "", 4),
    ]
    assert calls(f) == [
        (f"{ST}::Ledger::new", "HashMap::new", 19, ""),
        (f"{ST}::Ledger::new", "audit::AuditLog::default", 19, ""),
        (f"{ST}::Ledger::insert", "self.log.record", 23, "audit::AuditLog"),  # struct field type
        (f"{ST}::Ledger::insert", "self.accounts.insert", 24, "HashMap"),
        (f"{ST}::Ledger::insert", "account.owner.clone", 24, ""),
        (f"{ST}::Ledger::total", "self.accounts.values().map().sum", 29, ""),
        (f"{ST}::Ledger::total", "self.accounts.values().map", 29, ""),
        (f"{ST}::Ledger::total", "self.accounts.values", 29, "HashMap"),
        (f"{ST}::Ledger::total", "a.balance", 29, ""),  # closure parameter: type unknown
    ]


def test_crate_root_reexport_and_crate_paths():
    f = fx("src/lib.rs")
    assert symbols(f) == [("ledger", "module", 1, 13), ("ledger::open", "function", 8, 13)]
    assert f.symbols[0].summary == "A tiny ledger of accounts."
    assert imports(f) == [(ACC, "Account", "", 5)]  # `pub use account::Account` (a child module)
    assert calls(f) == [
        ("ledger::open", "store::Ledger::new", 9, ""),
        ("ledger::open", "ledger.insert", 10, "store::Ledger"),  # let mut ledger = store::Ledger::new()
        ("ledger::open", "Account::new", 10, ""),
        ("ledger::open", "crate::store::audit::stamp", 11, ""),
    ]


def test_integration_test_file():
    f = fx("tests/ledger_test.rs")
    assert symbols(f) == [
        ("ledger::tests::ledger_test", "module", 1, 11),
        ("ledger::tests::ledger_test::opens_with_owner", "test", 6, 11),
    ]
    assert imports(f) == [
        (ACC, "Balance", "", 1), (ST, "Ledger", "", 2), ("ledger", "open", "", 3), ("ledger", "Account", "", 3)]
    # a.balance() inside assert_eq! is a macro token tree: not seen
    assert [(c.callee, c.receiver_hint) for c in f.calls] == [("open", ""), ("l.total", "Ledger"), ("Account::new", "")]


def test_an_abbreviation_does_not_end_the_summary(tmp_path):
    # "i.e." and "e.g." end with a full stop but not the sentence; "etc." ends it unless the
    # sentence goes on in lower case
    src = b"""/// Attempt to detect proxy settings from the environment, i.e. HTTP_PROXY
/// and ALL_PROXY. Then more.
pub fn try_proxy_from_env() {}

/// Get the scheme, e.g. "https" or "http".
pub fn scheme() {}

/// Escapes quotes, brackets etc. and keeps the rest. Then more.
pub fn escape() {}

/// Escapes quotes, brackets etc. Then more.
pub fn escape_all() {}
"""
    f = extract_source(str(tmp_path), "src/lib.rs", src, "rust")
    by = {s.name: s.summary for s in f.symbols}
    assert by["try_proxy_from_env"] == "Attempt to detect proxy settings from the environment, i.e. HTTP_PROXY and ALL_PROXY."
    assert by["scheme"] == 'Get the scheme, e.g. "https" or "http".'
    assert by["escape"] == "Escapes quotes, brackets etc. and keeps the rest."
    assert by["escape_all"] == "Escapes quotes, brackets etc."
