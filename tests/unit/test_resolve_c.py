"""C call resolution on fixtures/c_repo through the real indexer: calls through an
#include of a header whose source shares its stem, static helpers in the same file, libc as
external, function pointers unresolved."""

from __future__ import annotations

from pathlib import Path

import pytest
from codesynapse.index.indexer import Indexer
from codesynapse.store.sqlite.graph import SqliteGraphStore

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "c_repo"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = SqliteGraphStore(tmp_path_factory.mktemp("c") / "g.db", "g")
    Indexer(ROOT, s, None, workers=1).index_tree()
    yield s
    s.close()


def test_every_call_edge(store):
    assert sorted((c.caller, c.callee, c.target, c.resolution) for c in store.all_calls()) == sorted([
        ("calc.calc_eval", "stack_init", "stack.stack_init", "import"),  # #include "stack.h" → src/stack.c
        ("calc.calc_eval", "isdigit", "", "external"),
        ("calc.calc_eval", "stack_push", "stack.stack_push", "import"),
        ("calc.calc_eval", "stack_pop", "stack.stack_pop", "import"),
        ("calc.calc_eval", "stack_pop", "stack.stack_pop", "import"),
        ("calc.calc_eval", "stack_push", "stack.stack_push", "import"),
        ("calc.calc_eval", "OPS[].apply", "", "unresolved"),  # a function pointer
        ("calc.calc_eval", "stack_pop", "stack.stack_pop", "import"),
        ("main.main", "fprintf", "", "external"),
        ("main.main", "printf", "", "external"),
        ("main.main", "calc_eval", "calc.calc_eval", "import"),
        ("stack.stack_push", "is_full", "stack.is_full", "local"),
        ("test_calc.test_eval_adds", "assert", "", "external"),
        ("test_calc.test_eval_adds", "calc_eval", "calc.calc_eval", "import"),
        ("test_calc.test_eval_multiplies", "assert", "", "external"),
        ("test_calc.test_eval_multiplies", "calc_eval", "calc.calc_eval", "import"),
        ("test_calc.main", "test_eval_adds", "test_calc.test_eval_adds", "local"),
        ("test_calc.main", "test_eval_multiplies", "test_calc.test_eval_multiplies", "local"),
    ])


def test_callers_and_include_targets(store):
    assert sorted(c.caller for c in store.callers("calc.calc_eval")) == [
        "main.main", "test_calc.test_eval_adds", "test_calc.test_eval_multiplies"]
    assert sorted((i.path, i.module, i.target) for i in store.imports()) == [
        ("src/calc.c", "calc", "calc"), ("src/calc.c", "ctype.h", ""), ("src/calc.c", "stack", "stack"),
        ("src/calc.c", "stdlib.h", ""), ("src/main.c", "calc", "calc"), ("src/main.c", "stdio.h", ""),
        ("src/stack.c", "stack", "stack"), ("tests/test_calc.c", "assert.h", ""), ("tests/test_calc.c", "calc", "calc"),
    ]
