"""C extraction on fixtures/c_repo: a header and its source share a module (the stem),
include guards do not hide definitions, typedef'd structs are named by the typedef,
#define constants keep their name and never their value, static functions are private,
function-pointer calls are kept as written, tests by name and location."""

from __future__ import annotations

from pathlib import Path

from codesynapse.extract import extract_source

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "c_repo"


def fx(rel: str):
    return extract_source(str(ROOT), rel, (ROOT / rel).read_bytes(), "c")


def symbols(f):
    return [(s.qname, s.kind, s.start_line, s.end_line) for s in f.symbols]


def test_header_inside_include_guard():
    f = fx("include/stack.h")
    assert symbols(f) == [
        ("stack", "module", 1, 16),
        ("stack.STACK_MAX", "constant", 4, 4),  # STACK_H (no value) is a guard, not a constant
        ("stack.stack_t", "struct", 7, 10),
    ]
    by = {s.qname: s for s in f.symbols}
    assert by["stack.STACK_MAX"].signature == "#define STACK_MAX"
    assert (by["stack.stack_t"].signature, by["stack.stack_t"].summary) == (
        "typedef struct stack_t", "A fixed-size stack of ints.")


def test_source_functions_and_static_helpers():
    f = fx("src/stack.c")
    assert f.module == "stack"  # the same module as include/stack.h
    assert symbols(f) == [
        ("stack", "module", 1, 23),
        ("stack.is_full", "function", 3, 5),
        ("stack.stack_init", "function", 8, 10),
        ("stack.stack_push", "function", 13, 19),
        ("stack.stack_pop", "function", 21, 23),
    ]
    by = {s.qname: s for s in f.symbols}
    assert (by["stack.stack_push"].signature, by["stack.stack_push"].summary) == (
        "int stack_push(stack_t *s, int value)", "Push a value; -1 when the stack is full.")
    assert [s.qname for s in f.symbols if not s.exported] == ["stack.is_full"]
    assert [(c.caller, c.callee, c.line) for c in f.calls] == [("stack.stack_push", "is_full", 14)]
    assert [(i.module, i.name) for i in f.imports] == [("stack", "*")]


def test_structs_constants_calls_and_includes():
    f = fx("src/calc.c")
    assert symbols(f) == [
        ("calc", "module", 1, 33),
        ("calc.op", "struct", 7, 10),
        ("calc.add", "function", 12, 12),
        ("calc.mul", "function", 13, 13),
        ("calc.OPS", "constant", 15, 15),
        ("calc.calc_eval", "function", 17, 33),
    ]
    assert {s.qname: s.signature for s in f.symbols}["calc.OPS"] == "static const struct op OPS[]"
    assert [(c.callee, c.line) for c in f.calls] == [
        ("stack_init", 19), ("isdigit", 21), ("stack_push", 22), ("stack_pop", 26), ("stack_pop", 27),
        ("stack_push", 28), ("OPS[].apply", 28), ("stack_pop", 32),
    ]
    assert {c.caller for c in f.calls} == {"calc.calc_eval"}
    assert [(i.module, i.name, i.line) for i in f.imports] == [
        ("ctype.h", "*", 1), ("stdlib.h", "*", 2), ("calc", "*", 4), ("stack", "*", 5)]


def test_test_functions():
    f = fx("tests/test_calc.c")
    assert symbols(f) == [
        ("test_calc", "module", 1, 17),
        ("test_calc.test_eval_adds", "test", 5, 7),
        ("test_calc.test_eval_multiplies", "test", 9, 11),
        ("test_calc.main", "function", 13, 17),
    ]
    assert [(c.caller, c.callee) for c in f.calls] == [
        ("test_calc.test_eval_adds", "assert"),
        ("test_calc.test_eval_adds", "calc_eval"),
        ("test_calc.test_eval_multiplies", "assert"),
        ("test_calc.test_eval_multiplies", "calc_eval"),
        ("test_calc.main", "test_eval_adds"),
        ("test_calc.main", "test_eval_multiplies"),
    ]
