"""Java extraction on fixtures/java_repo: the package is the module, classes/interfaces,
constructors and methods, Javadoc summaries, annotations left out of signatures, bases,
imports (single, star, static), receiver hints from fields/parameters/locals, @Test."""

from __future__ import annotations

from pathlib import Path

from codesynapse.extract import extract_source

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "java_repo"
MAIN = "src/main/java/com/acme/orders"
SVC = "com.acme.orders.service"
REPO = "com.acme.orders.repo"


def fx(rel: str):
    return extract_source(str(ROOT), rel, (ROOT / rel).read_bytes(), "java")


def symbols(f):
    return [(s.qname, s.kind, s.start_line, s.end_line) for s in f.symbols]


def calls(f):
    return [(c.caller, c.callee, c.line, c.receiver_hint) for c in f.calls]


def test_service_class_methods_and_hints():
    f = fx(f"{MAIN}/service/OrderService.java")
    assert f.module == SVC
    assert symbols(f) == [
        (SVC, "module", 1, 39),
        (f"{SVC}.OrderService", "class", 7, 33),
        (f"{SVC}.OrderService.OrderService", "method", 11, 13),  # the constructor
        (f"{SVC}.OrderService.place", "method", 16, 22),
        (f"{SVC}.OrderService.validate", "method", 24, 28),
        (f"{SVC}.OrderService.inMemory", "method", 30, 32),
        (f"{SVC}.Audit", "class", 35, 39),
        (f"{SVC}.Audit.record", "method", 36, 38),
    ]
    by = {s.qname: s for s in f.symbols}
    assert (by[f"{SVC}.OrderService"].signature, by[f"{SVC}.OrderService"].summary) == (
        "public class OrderService", "Places orders.")
    assert (by[f"{SVC}.OrderService.place"].signature, by[f"{SVC}.OrderService.place"].summary) == (
        "public String place(String id, long cents)", "Store a new order and return its formatted total.")
    assert by[f"{SVC}.OrderService.inMemory"].signature == "public static OrderService inMemory()"
    assert [s.qname for s in f.symbols if not s.exported] == [
        f"{SVC}.OrderService.validate", f"{SVC}.Audit", f"{SVC}.Audit.record"]
    assert calls(f) == [
        (f"{SVC}.OrderService", "Audit", 9, ""),  # field initializer
        (f"{SVC}.OrderService.place", "Order", 17, ""),
        (f"{SVC}.OrderService.place", "validate", 18, ""),
        (f"{SVC}.OrderService.place", "repository.save", 19, "OrderRepository"),  # field type
        (f"{SVC}.OrderService.place", "this.audit.record", 20, "Audit"),
        (f"{SVC}.OrderService.place", "order.getId", 20, "Order"),  # local type
        (f"{SVC}.OrderService.place", "Money.format", 21, ""),
        (f"{SVC}.OrderService.place", "order.getCents", 21, "Order"),
        (f"{SVC}.OrderService.validate", "order.getCents", 25, "Order"),  # parameter type
        (f"{SVC}.OrderService.validate", "IllegalArgumentException", 26, ""),
        (f"{SVC}.OrderService.inMemory", "OrderService", 31, ""),
        (f"{SVC}.OrderService.inMemory", "InMemoryOrderRepository", 31, ""),
        (f"{SVC}.Audit.record", "System.out.println", 37, ""),
    ]
    assert [c.kind for c in f.calls if c.callee == "Order"] == ["new"]
    assert [(i.module, i.name) for i in f.imports] == [("com.acme.orders.model", "Order"), (REPO, "*")]


def test_bases_generic_fields_and_annotated_methods():
    f = fx(f"{MAIN}/repo/InMemoryOrderRepository.java")
    assert symbols(f) == [
        (REPO, "module", 1, 22),
        (f"{REPO}.InMemoryOrderRepository", "class", 9, 22),
        (f"{REPO}.InMemoryOrderRepository.save", "method", 12, 16),  # from @Override
        (f"{REPO}.InMemoryOrderRepository.find", "method", 18, 21),
    ]
    assert f.symbols[1].summary == "Keeps orders in a map; good for tests."
    assert f.symbols[2].signature == "public void save(Order order)"
    assert [(i.child, i.base, i.kind) for i in f.inherits] == [
        (f"{REPO}.InMemoryOrderRepository", "AbstractRepository", "inherits"),
        (f"{REPO}.InMemoryOrderRepository", "OrderRepository", "implements"),
    ]
    assert calls(f) == [
        (f"{REPO}.InMemoryOrderRepository", "HashMap", 10, ""),
        (f"{REPO}.InMemoryOrderRepository.save", "touch", 14, ""),
        (f"{REPO}.InMemoryOrderRepository.save", "orders.put", 15, "Map"),  # Map<String, Order>
        (f"{REPO}.InMemoryOrderRepository.save", "order.getId", 15, "Order"),
        (f"{REPO}.InMemoryOrderRepository.find", "orders.get", 20, "Map"),
    ]


def test_interface_methods():
    f = fx(f"{MAIN}/repo/OrderRepository.java")
    assert symbols(f) == [
        (REPO, "module", 1, 10),
        (f"{REPO}.OrderRepository", "interface", 6, 10),
        (f"{REPO}.OrderRepository.save", "method", 7, 7),
        (f"{REPO}.OrderRepository.find", "method", 9, 9),
    ]
    assert [s.signature for s in f.symbols[2:]] == ["void save(Order order)", "Order find(String id)"]
    assert all(s.exported for s in f.symbols)


def test_junit_test_and_static_import():
    f = fx("src/test/java/com/acme/orders/service/OrderServiceTest.java")
    assert f.module == SVC  # same package as the code it tests
    t = f"{SVC}.OrderServiceTest.placesAnOrder"
    assert symbols(f) == [(SVC, "module", 1, 17), (f"{SVC}.OrderServiceTest", "class", 9, 17), (t, "test", 10, 16)]
    assert [s.qname for s in f.symbols if s.is_test] == [t]
    assert [(i.module, i.name) for i in f.imports] == [
        ("org.junit.jupiter.api.Assertions", "assertEquals"), ("org.junit.jupiter.api", "Test"),
        (REPO, "InMemoryOrderRepository")]
    assert calls(f) == [
        (t, "InMemoryOrderRepository", 12, ""),
        (t, "OrderService", 13, ""),
        (t, "assertEquals", 14, ""),
        (t, "service.place", 14, "OrderService"),
        (t, "assertEquals", 15, ""),
        (t, "repo.find", 15, "InMemoryOrderRepository"),
        (t, "repo.find().getCents", 15, ""),
    ]


def test_javadoc_summary_is_the_text_it_shows(tmp_path):
    # inline tags and HTML are markup, not words of the description; a comment that only
    # says what the method returns is described by that; {@inheritDoc} describes nothing
    src = b"""package org.example;

public class Policy {
  /**
   * Returns the delay before attempt {@code n}, see {@link Backoff#next(int)} and
   * {@link Backoff#cap the cap}.
   *
   * @param n the attempt
   */
  public int next(int n) { return n; }

  /** @return whether another attempt is <em>allowed</em> */
  public boolean canRetry() { return true; }

  /** {@inheritDoc} */
  public String toString() { return ""; }

  /**
   * Parses a policy like {@code 3x&lt;2s&gt;}
   *
   * <p>More detail that is not the summary.
   */
  public static Policy parse(String s) { return null; }

  /**
   * Reads the policy
   * <p>from the environment.
   */
  public static Policy fromEnv() { return null; }
}
"""
    f = extract_source(str(tmp_path), "org/example/Policy.java", src, "java")
    by = {s.name: s.summary for s in f.symbols}
    assert by["next"] == "Returns the delay before attempt n, see Backoff.next and the cap."
    assert by["canRetry"] == "Returns whether another attempt is allowed"
    assert by["toString"] == ""
    assert by["parse"] == "Parses a policy like 3x<2s>"
    assert by["fromEnv"] == "Reads the policy"
