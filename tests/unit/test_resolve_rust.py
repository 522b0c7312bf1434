"""Rust call resolution on fixtures/rust_repo through the real indexer: `Type::assoc()`
through imports and module paths, `self.m()` through impls and default trait methods,
`crate::`/`super::` paths, struct-field and let-bound receivers, re-exports from the crate
root, std types as external."""

from __future__ import annotations

from pathlib import Path

import pytest
from codesynapse.index.indexer import Indexer
from codesynapse.store.sqlite.graph import SqliteGraphStore

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "rust_repo"
ACC = "ledger::account"
ST = "ledger::store"
IT = "ledger::tests::ledger_test::opens_with_owner"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = SqliteGraphStore(tmp_path_factory.mktemp("rs") / "g.db", "g")
    Indexer(ROOT, s, None, workers=1).index_tree()
    yield s
    s.close()


def test_every_call_edge(store):
    assert sorted((c.caller, c.callee, c.target, c.resolution) for c in store.all_calls()) == sorted([
        (f"{ACC}::Balance::is_empty", "self.balance", f"{ACC}::Balance::balance", "self"),
        (f"{ACC}::Account::new", "owner.to_string", "", "unresolved"),
        (f"{ACC}::Account::deposit", "clamp", f"{ACC}::clamp", "local"),
        (f"{ACC}::clamp", "cents.max", "", "unresolved"),
        (f"{ACC}::tests::deposit_adds", "Account::new", f"{ACC}::Account::new", "local"),
        (f"{ACC}::tests::deposit_adds", "a.deposit", f"{ACC}::Account::deposit", "inferred"),
        (f"{ACC}::tests::deposit_adds", "super::clamp", f"{ACC}::clamp", "module"),  # super of the inline mod
        (f"{ACC}::tests::deposit_adds", "a.balance", f"{ACC}::Account::balance", "inferred"),
        ("ledger::open", "store::Ledger::new", f"{ST}::Ledger::new", "module"),
        ("ledger::open", "ledger.insert", f"{ST}::Ledger::insert", "inferred"),
        ("ledger::open", "Account::new", f"{ACC}::Account::new", "import"),
        ("ledger::open", "crate::store::audit::stamp", "ledger::store::audit::stamp", "module"),
        ("ledger::store::audit::AuditLog::record", "self.entries.len", "", "unresolved"),
        ("ledger::store::audit::AuditLog::record", "self.entries.push", "", "unresolved"),
        ("ledger::store::audit::AuditLog::record", "who.to_owned", "", "unresolved"),
        (f"{ST}::Ledger::new", "HashMap::new", "", "external"),
        (f"{ST}::Ledger::new", "audit::AuditLog::default", "", "unresolved"),  # #[derive(Default)]
        (f"{ST}::Ledger::insert", "self.log.record", "ledger::store::audit::AuditLog::record", "inferred"),
        (f"{ST}::Ledger::insert", "self.accounts.insert", "", "external"),
        (f"{ST}::Ledger::insert", "account.owner.clone", "", "unresolved"),
        (f"{ST}::Ledger::total", "self.accounts.values().map().sum", "", "unresolved"),
        (f"{ST}::Ledger::total", "self.accounts.values().map", "", "unresolved"),
        (f"{ST}::Ledger::total", "self.accounts.values", "", "external"),
        (f"{ST}::Ledger::total", "a.balance", "", "unresolved"),
        (IT, "open", "ledger::open", "import"),
        (IT, "l.total", f"{ST}::Ledger::total", "inferred"),  # let l: Ledger
        (IT, "Account::new", f"{ACC}::Account::new", "import"),  # re-exported by lib.rs
    ])


def test_trait_implementation_and_imports(store):
    assert [(i.child, i.base, i.kind, i.target) for i in store.inherits()] == [
        (f"{ACC}::Account", "Balance", "implements", f"{ACC}::Balance")]
    assert sorted((i.path, i.module, i.name, i.target) for i in store.imports()) == [
        ("src/account.rs", ACC, "*", ACC),
        ("src/lib.rs", ACC, "Account", f"{ACC}::Account"),
        ("src/store/mod.rs", ACC, "Account", f"{ACC}::Account"),
        ("src/store/mod.rs", ACC, "Balance", f"{ACC}::Balance"),
        ("src/store/mod.rs", "std::collections", "HashMap", ""),
        ("tests/ledger_test.rs", "ledger", "Account", f"{ACC}::Account"),
        ("tests/ledger_test.rs", "ledger", "open", "ledger::open"),
        ("tests/ledger_test.rs", ACC, "Balance", f"{ACC}::Balance"),
        ("tests/ledger_test.rs", ST, "Ledger", f"{ST}::Ledger"),
    ]


def test_cargo_toml_is_a_config_document(store):
    assert [s.qname for s in store.symbols_in_file("Cargo.toml")] == [
        "Cargo.toml#package", "Cargo.toml#package.name", "Cargo.toml#package.version",
        "Cargo.toml#package.edition", "Cargo.toml#dependencies"]
