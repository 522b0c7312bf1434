"""PHP call resolution on fixtures/php_repo through the real indexer: `use` imports with
aliases and groups, namespace functions, `$this->` through traits, `self::`, `new self`,
interface methods through promoted properties, locals, PHP builtins as external."""

from __future__ import annotations

from pathlib import Path

import pytest
from codesynapse.index.indexer import Indexer
from codesynapse.store.sqlite.graph import SqliteGraphStore

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "php_repo"
SVC = "App\\Service"
REPO = "App\\Repository"
T = "App\\Tests\\BillingTest\\testIssueStoresTheInvoice"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = SqliteGraphStore(tmp_path_factory.mktemp("php") / "g.db", "g")
    Indexer(ROOT, s, None, workers=1).index_tree()
    yield s
    s.close()


def test_every_call_edge(store):
    assert sorted((c.caller, c.callee, c.target, c.resolution) for c in store.all_calls()) == sorted([
        (f"{REPO}\\MemoryRepository\\save", "$this.touch", f"{REPO}\\CountsWrites\\touch", "self"),  # trait
        (f"{SVC}\\format_cents", "sprintf", "", "external"),
        (f"{SVC}\\format_cents", "intdiv", "", "external"),
        (f"{SVC}\\Billing\\inMemory", "Billing", f"{SVC}\\Billing", "local"),  # new self()
        (f"{SVC}\\Billing\\inMemory", "Memory", f"{REPO}\\MemoryRepository", "import"),  # `as Memory`
        (f"{SVC}\\Billing\\issue", "Invoice", "App\\Model\\Invoice", "import"),
        (f"{SVC}\\Billing\\issue", "$this.check", f"{SVC}\\Billing\\check", "self"),
        (f"{SVC}\\Billing\\issue", "$this.repository.save", f"{REPO}\\InvoiceRepository\\save", "inferred"),
        (f"{SVC}\\Billing\\issue", "format_cents", f"{SVC}\\format_cents", "local"),
        (f"{SVC}\\Billing\\check", "$invoice.isPaid", "App\\Model\\Invoice\\isPaid", "inferred"),
        (f"{SVC}\\Billing\\check", "InvalidArgumentException", "", "external"),
        (T, "MemoryRepository", f"{REPO}\\MemoryRepository", "import"),
        (T, "Billing", f"{SVC}\\Billing", "import"),
        (T, "$this.assertSame", "", "unresolved"),  # PHPUnit's TestCase is not in the graph
        (T, "$billing.issue", f"{SVC}\\Billing\\issue", "inferred"),
        (T, "$this.assertNotNull", "", "unresolved"),
        (T, "$repo.find", f"{REPO}\\MemoryRepository\\find", "inferred"),
    ])


def test_bases_and_composer_keys(store):
    assert sorted((i.child, i.base, i.target) for i in store.inherits()) == [
        (f"{REPO}\\MemoryRepository", "CountsWrites", f"{REPO}\\CountsWrites"),
        (f"{REPO}\\MemoryRepository", "InvoiceRepository", f"{REPO}\\InvoiceRepository"),
        ("App\\Tests\\BillingTest", "TestCase", ""),
    ]
    assert [s.qname for s in store.symbols_in_file("composer.json")] == [
        "composer.json#name", "composer.json#autoload", "composer.json#autoload.psr-4",
        "composer.json#autoload.psr-4.App\\", "composer.json#require-dev", "composer.json#require-dev.phpunit/phpunit",
    ]
