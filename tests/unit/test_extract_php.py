"""PHP extraction on fixtures/php_repo: namespaces as modules with `\\` separators, classes,
interfaces, traits, functions and namespace constants, promoted constructor parameters,
docblock summaries, grouped and aliased `use`, `$this->`/`self::` callees, PHPUnit tests."""

from __future__ import annotations

from pathlib import Path

from codesynapse.extract import extract_source

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "php_repo"


def fx(rel: str):
    return extract_source(str(ROOT), rel, (ROOT / rel).read_bytes(), "php")


def symbols(f):
    return [(s.qname, s.kind, s.start_line, s.end_line) for s in f.symbols]


def test_model_class():
    f = fx("src/Model/Invoice.php")
    assert f.module == "App\\Model"
    assert symbols(f) == [
        ("App\\Model", "module", 1, 20),
        ("App\\Model\\Invoice", "class", 10, 20),
        ("App\\Model\\Invoice\\__construct", "method", 12, 14),
        ("App\\Model\\Invoice\\isPaid", "method", 16, 19),
    ]
    assert (f.symbols[1].signature, f.symbols[1].summary) == ("final class Invoice", "An invoice with a total in cents.")


def test_interface_trait_and_implementation():
    f = fx("src/Repository/MemoryRepository.php")
    assert symbols(f) == [
        ("App\\Repository", "module", 1, 38),
        ("App\\Repository\\CountsWrites", "trait", 10, 18),
        ("App\\Repository\\CountsWrites\\touch", "method", 14, 17),
        ("App\\Repository\\MemoryRepository", "class", 21, 38),
        ("App\\Repository\\MemoryRepository\\save", "method", 28, 32),
        ("App\\Repository\\MemoryRepository\\find", "method", 34, 37),
    ]
    assert [(i.child, i.base, i.kind) for i in f.inherits] == [
        ("App\\Repository\\MemoryRepository", "InvoiceRepository", "implements"),
        ("App\\Repository\\MemoryRepository", "CountsWrites", "inherits"),  # `use CountsWrites;`
    ]
    assert [(c.caller, c.callee) for c in f.calls] == [("App\\Repository\\MemoryRepository\\save", "$this.touch")]
    i = fx("src/Repository/InvoiceRepository.php")
    assert [s.signature for s in i.symbols[2:]] == [
        "public function save(Invoice $invoice): void", "public function find(string $id): ?Invoice"]


def test_service_functions_constants_calls_and_use_groups():
    f = fx("src/Service/Billing.php")
    assert symbols(f) == [
        ("App\\Service", "module", 1, 44),
        ("App\\Service\\CURRENCY", "constant", 10, 10),
        ("App\\Service\\format_cents", "function", 13, 16),
        ("App\\Service\\Billing", "class", 19, 44),
        ("App\\Service\\Billing\\__construct", "method", 21, 23),
        ("App\\Service\\Billing\\inMemory", "method", 25, 28),
        ("App\\Service\\Billing\\issue", "method", 30, 36),
        ("App\\Service\\Billing\\check", "method", 38, 43),
    ]
    by = {s.qname: s for s in f.symbols}
    assert by["App\\Service\\CURRENCY"].signature == "const CURRENCY"  # never the value
    assert (by["App\\Service\\format_cents"].signature, by["App\\Service\\format_cents"].summary) == (
        "function format_cents(int $cents): string", "Formats cents as money.")
    assert [s.qname for s in f.symbols if not s.exported] == ["App\\Service\\Billing\\check"]
    assert [(i.module, i.name, i.alias) for i in f.imports] == [
        ("App\\Model", "Invoice", ""),
        ("App\\Repository", "InvoiceRepository", ""),
        ("App\\Repository", "MemoryRepository", "Memory"),
    ]
    assert [(c.caller.rsplit("\\", 1)[-1], c.callee, c.line, c.receiver_hint) for c in f.calls] == [
        ("format_cents", "sprintf", 15, ""),
        ("format_cents", "intdiv", 15, ""),
        ("inMemory", "Billing", 27, ""),  # new self(...)
        ("inMemory", "Memory", 27, ""),
        ("issue", "Invoice", 32, ""),
        ("issue", "$this.check", 33, ""),  # self::check
        ("issue", "$this.repository.save", 34, "InvoiceRepository"),  # promoted constructor parameter
        ("issue", "format_cents", 35, ""),
        ("check", "$invoice.isPaid", 40, "Invoice"),
        ("check", "InvalidArgumentException", 41, ""),
    ]


def test_phpunit_test_method():
    f = fx("tests/BillingTest.php")
    t = "App\\Tests\\BillingTest\\testIssueStoresTheInvoice"
    assert symbols(f) == [("App\\Tests", "module", 1, 20), ("App\\Tests\\BillingTest", "class", 11, 20), (t, "test", 13, 19)]
    assert [(c.callee, c.receiver_hint) for c in f.calls] == [
        ("MemoryRepository", ""), ("Billing", ""), ("$this.assertSame", ""), ("$billing.issue", "Billing"),
        ("$this.assertNotNull", ""), ("$repo.find", "MemoryRepository"),
    ]
