"""Kotlin extraction on fixtures/kotlin_repo: the package is the module, interfaces / data
classes / open classes, companion members qualified by their class, `const val`, KDoc
summaries, supertypes (constructor call → inherits, bare → implements), aliased imports,
property and local receiver hints, @Test."""

from __future__ import annotations

from pathlib import Path

from codesynapse.extract import extract_source

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "kotlin_repo"
SRC = "src/main/kotlin/com/acme/tasks"
P = "com.acme.tasks"


def fx(rel: str):
    return extract_source(str(ROOT), rel, (ROOT / rel).read_bytes(), "kotlin")


def symbols(f):
    return [(s.qname, s.kind, s.start_line, s.end_line) for s in f.symbols]


def test_types_constants_and_supertypes():
    f = fx(f"{SRC}/Task.kt")
    assert f.module == P
    assert symbols(f) == [
        (P, "module", 1, 27),
        (f"{P}.MAX_TITLE", "constant", 4, 4),
        (f"{P}.Doable", "interface", 7, 9),
        (f"{P}.Doable.done", "method", 8, 8),
        (f"{P}.Task", "class", 12, 20),
        (f"{P}.Task.done", "method", 15, 15),
        (f"{P}.Task.finish", "method", 17, 19),
        (f"{P}.RecurringTask", "class", 23, 25),
        (f"{P}.RecurringTask.done", "method", 24, 24),
        (f"{P}.Base", "class", 27, 27),
    ]
    by = {s.qname: s for s in f.symbols}
    assert (by[f"{P}.MAX_TITLE"].signature, by[f"{P}.MAX_TITLE"].summary) == (
        "const val MAX_TITLE", "Longest title a task may have.")  # never the value
    assert (by[f"{P}.Task"].signature, by[f"{P}.Task"].summary) == (
        "data class Task(val id: Int, val title: String) : Doable", "One task on a board.")
    assert by[f"{P}.Task.done"].signature == "override fun done(): Boolean"
    assert [(i.child, i.base, i.kind) for i in f.inherits] == [
        (f"{P}.Task", "Doable", "implements"),
        (f"{P}.RecurringTask", "Base", "inherits"),
        (f"{P}.RecurringTask", "Doable", "implements"),
    ]


def test_companion_members_hints_and_aliased_import():
    f = fx(f"{SRC}/Board.kt")
    assert symbols(f) == [
        (P, "module", 1, 33),
        (f"{P}.Board", "class", 6, 26),
        (f"{P}.Board.add", "method", 9, 14),
        (f"{P}.Board.finish", "method", 16, 19),
        (f"{P}.Board.nextId", "method", 21, 21),
        (f"{P}.Board.inMemory", "method", 24, 24),  # in the companion object
        (f"{P}.Log", "class", 28, 30),
        (f"{P}.Log.write", "method", 29, 29),
        (f"{P}.clip", "function", 33, 33),
    ]
    by = {s.qname: s for s in f.symbols}
    assert by[f"{P}.clip"].summary == "Cut a title to MAX_TITLE characters."
    assert [s.qname for s in f.symbols if not s.exported] == [f"{P}.Board.nextId"]
    assert [(i.module, i.name, i.alias) for i in f.imports] == [(f"{P}.store", "Store", "TaskStore")]
    assert [(c.caller.rsplit(".", 1)[-1], c.callee, c.line, c.receiver_hint) for c in f.calls] == [
        ("Board", "Log", 7, ""),
        ("add", "Task", 10, ""),
        ("add", "nextId", 10, ""),
        ("add", "clip", 10, ""),
        ("add", "store.save", 11, "TaskStore"),  # private val store: TaskStore
        ("add", "this.log.write", 12, "Log"),  # private val log = Log()
        ("finish", "store.load", 17, "TaskStore"),
        ("finish", "task.finish", 18, "Task"),  # val task: Task
        ("nextId", "store.count", 21, "TaskStore"),
        ("inMemory", "Board", 24, ""),
        ("inMemory", "TaskStore", 24, ""),
        ("write", "println", 29, ""),
        ("clip", "title.take", 33, "String"),
    ]


def test_junit_tests():
    f = fx("src/test/kotlin/com/acme/tasks/BoardTest.kt")
    assert symbols(f) == [
        (P, "module", 1, 21),
        (f"{P}.BoardTest", "class", 7, 21),
        (f"{P}.BoardTest.finishesATask", "test", 8, 14),
        (f"{P}.BoardTest.startsEmpty", "test", 16, 20),
    ]
    assert f.symbols[2].signature == "fun finishesATask()"  # the annotation is left out


def test_kdoc_summary_leaves_block_tags_and_inline_tags_out(tmp_path):
    src = b"""package org.example

/**
 * Returns the delay before attempt {@code n}
 * @param n the attempt number
 * @return the delay
 */
fun backoff(n: Int): Int = n
"""
    f = extract_source(str(tmp_path), "Retry.kt", src, "kotlin")
    by = {s.name: s.summary for s in f.symbols}
    assert by["backoff"] == "Returns the delay before attempt n"
