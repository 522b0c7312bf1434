"""C++ extraction on fixtures/cpp_repo: namespaces, classes with declared, pure virtual and
defaulted members, out-of-line definitions (`double Circle::area() const`) qualified like
their declarations, bases, receiver hints from declarations and `auto x = T(...)`, and a
GoogleTest TEST named Suite.Name."""

from __future__ import annotations

from pathlib import Path

from codesynapse.extract import extract_source

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "cpp_repo"
G = "(global)::geo"


def fx(rel: str):
    return extract_source(str(ROOT), rel, (ROOT / rel).read_bytes(), "cpp")


def symbols(f):
    return [(s.qname, s.kind, s.start_line, s.end_line) for s in f.symbols]


def test_header_declarations():
    f = fx("include/shape.hpp")
    assert f.module == "(global)"
    assert symbols(f) == [
        ("(global)", "module", 1, 27),
        (G, "module", 5, 27),
        (f"{G}::Shape", "class", 8, 13),
        (f"{G}::Shape::~Shape", "method", 10, 10),
        (f"{G}::Shape::area", "method", 11, 11),
        (f"{G}::Shape::describe", "method", 12, 12),
        (f"{G}::Circle", "class", 16, 23),
        (f"{G}::Circle::Circle", "method", 18, 18),
        (f"{G}::Circle::area", "method", 19, 19),
    ]
    by = {s.qname: s for s in f.symbols}
    assert (by[f"{G}::Shape"].signature, by[f"{G}::Shape"].summary) == ("class Shape", "Anything with an area.")
    assert by[f"{G}::Shape::area"].signature == "virtual double area() const = 0"
    assert by[f"{G}::Circle"].signature == "class Circle : public Shape"
    assert [(i.child, i.base, i.kind) for i in f.inherits] == [(f"{G}::Circle", "Shape", "inherits")]
    assert [(i.module, i.name) for i in f.imports] == [("string", "*")]


def test_out_of_line_definitions_match_their_declarations():
    f = fx("src/shape.cpp")
    assert symbols(f) == [
        ("(global)", "module", 1, 20),
        (G, "module", 3, 20),
        (f"{G}::square", "function", 5, 7),
        (f"{G}::Circle::Circle", "method", 9, 9),
        (f"{G}::Circle::area", "method", 12, 14),
        (f"{G}::Shape::describe", "method", 16, 18),
    ]
    by = {s.qname: s for s in f.symbols}
    assert (by[f"{G}::Circle::area"].signature, by[f"{G}::Circle::area"].summary, by[f"{G}::Circle::area"].parent) == (
        "double Circle::area() const", "Area from the radius.", f"{G}::Circle")
    assert [(c.caller, c.callee, c.line) for c in f.calls] == [
        (f"{G}::Circle::area", "square", 13),
        (f"{G}::Shape::describe", "std::to_string", 17),
        (f"{G}::Shape::describe", "this.area", 17),
    ]


def test_receiver_hints_in_main():
    f = fx("src/main.cpp")
    assert symbols(f) == [("(global)", "module", 1, 11), ("(global)::main", "function", 5, 11)]
    assert [(c.callee, c.line, c.receiver_hint) for c in f.calls] == [
        ("registry.add", 7, "geo::Registry"),  # geo::Registry registry;
        ("std::make_unique", 7, ""),
        ("geo::Circle", 8, ""),
        ("big.describe", 9, "geo::Circle"),  # auto big = geo::Circle(2.0);
        ("registry.total", 9, "geo::Registry"),
    ]


def test_googletest_case():
    f = fx("tests/registry_test.cpp")
    assert symbols(f) == [("(global)", "module", 1, 10), ("(global)::RegistryTest.SumsAreas", "test", 5, 10)]
    assert f.symbols[1].is_test
    assert f.symbols[1].signature == "TEST(RegistryTest, SumsAreas)"
