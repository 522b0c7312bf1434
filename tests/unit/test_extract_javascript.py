"""JavaScript extraction on fixtures/js_repo: symbols, ranges, signatures, summaries, calls,
ES-module and CommonJS imports, re-exports, default exports, bases and test blocks."""

from __future__ import annotations

from pathlib import Path

from codesynapse.extract import extract_source

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "js_repo"


def fx(rel: str, language: str = "javascript"):
    return extract_source(str(ROOT), rel, (ROOT / rel).read_bytes(), language)


def symbols(f):
    return [(s.qname, s.kind, s.start_line, s.end_line) for s in f.symbols]


def calls(f):
    return [(c.caller, c.callee, c.line, c.receiver_hint) for c in f.calls]


def imports(f):
    return [(i.module, i.name, i.alias, i.line) for i in f.imports]


def test_module_functions_constants_and_doc_comments():
    f = fx("src/util.js")
    assert f.module == "src/util"
    assert symbols(f) == [
        ("src/util", "module", 1, 14),
        ("src/util.MAX_SLUG", "constant", 2, 2),
        ("src/util.slugify", "function", 7, 9),
        ("src/util.clamp", "function", 12, 14),
    ]
    by = {s.qname: s for s in f.symbols}
    assert (by["src/util.MAX_SLUG"].signature, by["src/util.MAX_SLUG"].summary) == ("const MAX_SLUG", "Longest slug we keep.")
    assert (by["src/util.slugify"].signature, by["src/util.slugify"].summary) == (
        "function slugify(title)", "Turn a title into a URL slug.")
    assert by["src/util.clamp"].summary == "Cut a slug to MAX_SLUG characters."
    assert [s.qname for s in f.symbols if not s.exported] == ["src/util.clamp"]
    assert calls(f) == [
        ("src/util.slugify", "clamp", 8, ""),
        ("src/util.slugify", "title.toLowerCase().replace", 8, ""),
        ("src/util.slugify", "title.toLowerCase", 8, ""),
        ("src/util.clamp", "slug.slice", 13, ""),
    ]


def test_classes_methods_this_hints_super_and_default_export():
    f = fx("src/store.js")
    assert symbols(f) == [
        ("src/store", "module", 1, 31),
        ("src/store.Store", "class", 4, 23),
        ("src/store.Store.constructor", "method", 5, 7),
        ("src/store.Store.get", "method", 9, 11),
        ("src/store.Store.put", "method", 13, 16),
        ("src/store.Store.validate", "method", 18, 22),
        ("src/store.LoggedStore", "class", 26, 31),
        ("src/store.LoggedStore.put", "method", 27, 30),
    ]
    by = {s.qname: s for s in f.symbols}
    assert (by["src/store.Store"].signature, by["src/store.Store"].summary) == ("class Store", "Keeps notes by id in memory.")
    assert by["src/store.LoggedStore"].signature == "class LoggedStore extends Store"
    assert by["src/store.Store.put"].parent == "src/store.Store"
    assert calls(f) == [
        ("src/store.Store.constructor", "Map", 6, ""),
        ("src/store.Store.get", "this.items.get", 10, "Map"),  # this.items = new Map() in the constructor
        ("src/store.Store.put", "this.validate", 14, ""),
        ("src/store.Store.put", "this.items.set", 15, "Map"),
        ("src/store.Store.validate", "slugify", 19, ""),
        ("src/store.Store.validate", "Error", 20, ""),
        ("src/store.LoggedStore.put", "super().put", 28, ""),
        ("src/store.LoggedStore.put", "this.log.push", 29, ""),
    ]
    assert [c.kind for c in f.calls if c.callee in ("Map", "Error")] == ["new", "new"]
    # `export default class Store` binds `default` in the module itself
    assert imports(f) == [("src/util", "slugify", "", 1), ("src/store", "Store", "default", 4)]
    assert [(i.child, i.base, i.kind) for i in f.inherits] == [("src/store.LoggedStore", "Store", "inherits")]


def test_index_module_re_exports():
    f = fx("src/index.js")
    assert f.module == "src"  # an index file names its directory
    assert symbols(f) == [("src", "module", 1, 3)]
    assert imports(f) == [
        ("src/store", "default", "Store", 2),
        ("src/store", "LoggedStore", "", 2),
        ("src/util", "slugify", "", 3),
    ]


def test_es_imports_namespace_alias_default_and_index():
    f = fx("src/service.js")
    assert imports(f) == [
        ("src/store", "default", "Store", 1),
        ("src/util", "", "util", 2),
        ("src", "slugify", "slug", 3),
        ("src", "LoggedStore", "", 3),
    ]
    assert symbols(f) == [
        ("src/service", "module", 1, 36),
        ("src/service.NoteService", "class", 6, 26),
        ("src/service.NoteService.constructor", "method", 7, 9),
        ("src/service.NoteService.add", "method", 11, 16),
        ("src/service.NoteService.find", "method", 18, 20),
        ("src/service.NoteService.touch", "method", 22, 25),
        ("src/service.audited", "function", 28, 36),
    ]
    assert calls(f) == [
        ("src/service.NoteService.constructor", "Store", 8, ""),
        ("src/service.NoteService.add", "slug", 12, ""),
        ("src/service.NoteService.add", "this.store.put", 13, "Store"),
        ("src/service.NoteService.add", "this.touch", 14, ""),
        ("src/service.NoteService.find", "this.store.get", 19, "Store"),
        ("src/service.NoteService.find", "util.slugify", 19, ""),
        ("src/service.NoteService.touch", "console.log", 23, ""),
        ("src/service.NoteService.touch", "notify", 24, ""),
        ("src/service.audited", "LoggedStore", 29, ""),
        ("src/service.audited", "store.put", 31, "LoggedStore"),
        ("src/service.audited", "store.validate", 32, "LoggedStore"),
        ("src/service.audited", "note.toString", 33, ""),
    ]


def test_commonjs_require_and_module_exports():
    f = fx("src/legacy.js")
    assert symbols(f) == [("src/legacy", "module", 1, 8), ("src/legacy.legacyAdd", "function", 4, 6)]
    assert imports(f) == [("src/util", "", "util", 2), ("src/legacy", "legacyAdd", "default", 8)]
    assert calls(f) == [("src/legacy.legacyAdd", "util.slugify", 5, "")]  # require(...) is an import, not a call
    assert [s.exported for s in f.symbols] == [True, True]  # module.exports = legacyAdd


def test_test_blocks_own_their_calls():
    f = fx("test/service.test.js")
    assert symbols(f) == [
        ("test/service.test", "module", 1, 15),
        ('test/service.test."NoteService"', "test", 4, 15),
        ('test/service.test."NoteService"."adds and finds a note"', "test", 5, 9),
        ('test/service.test."NoteService"."keeps legacy ids"', "test", 11, 14),
    ]
    assert all(s.is_test for s in f.symbols[1:])
    assert f.symbols[2].signature == 'it("adds and finds a note")'
    t1 = 'test/service.test."NoteService"."adds and finds a note"'
    t2 = 'test/service.test."NoteService"."keeps legacy ids"'
    assert calls(f) == [
        (t1, "NoteService", 6, ""),
        (t1, "svc.add", 7, "NoteService"),
        (t1, "expect().toBe", 8, ""),
        (t1, "expect", 8, ""),
        (t1, "svc.find", 8, "NoteService"),
        (t2, "expect().toBe", 12, ""),
        (t2, "expect", 12, ""),
        (t2, "legacyAdd", 12, ""),
        (t2, "audited", 13, ""),
    ]
    assert imports(f) == [
        ("src/service", "NoteService", "", 1),
        ("src/service", "audited", "", 1),
        ("src/legacy", "", "legacyAdd", 2),
    ]


def test_test_blocks_outside_test_files_are_not_symbols():
    # the block's own call (describe/it with a callback) is not recorded either; its body is
    src = b'describe("x", () => { it("y", () => { run(); }); });\n'
    f = extract_source(str(ROOT), "src/not_a_test.js", src, "javascript")
    assert symbols(f) == [("src/not_a_test", "module", 1, 1)]
    assert [(c.caller, c.callee) for c in f.calls] == [("src/not_a_test", "run")]


OBJECTS = b"""const API = { get() { return load(); } };
export const helpers = { trim(s) { return s.trim(); }, size: 1 };
let mutable = { reset() {} };
const plain = { x: 1 };
const LIMITS = { max: 3 };
"""


def test_const_objects_with_methods_qualify_them():
    """A module-level ``const`` holding an object literal with methods is a constant (name
    only, never the value) and its methods are qualified by it; a ``let`` or an object
    without methods is no symbol (UPPER_CASE constants are, as before)."""
    f = extract_source(str(ROOT), "src/objects.js", OBJECTS, "javascript")
    assert [(s.qname, s.kind, s.start_line, s.end_line, s.signature) for s in f.symbols] == [
        ("src/objects", "module", 1, 5, ""),
        ("src/objects.API", "constant", 1, 1, "const API"),
        ("src/objects.API.get", "method", 1, 1, "get()"),
        ("src/objects.helpers", "constant", 2, 2, "const helpers"),
        ("src/objects.helpers.trim", "method", 2, 2, "trim(s)"),
        ("src/objects.reset", "method", 3, 3, "reset()"),
        ("src/objects.LIMITS", "constant", 5, 5, "const LIMITS"),
    ]
    assert calls(f) == [
        ("src/objects.API.get", "load", 1, ""),
        ("src/objects.helpers.trim", "s.trim", 2, ""),
    ]


def test_a_doc_comment_summary_stops_at_its_block_tags():
    """``/** @internal */`` is no summary; ``@param`` lines are not part of one."""
    src = (b"/** @internal */\nexport function hidden(fns) { return fns; }\n\n"
           b"/**\n * Joins the parts.\n * @param parts the parts\n * @returns the whole\n */\n"
           b"export function join(parts) { return parts.join(''); }\n")
    f = extract_source("/nonexistent", "src/tags.ts", src, "typescript")
    by = {s.qname: s.summary for s in f.symbols}
    assert by["src/tags.hidden"] == ""
    assert by["src/tags.join"] == "Joins the parts."
