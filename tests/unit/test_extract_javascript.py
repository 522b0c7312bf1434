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
    assert f.module == "notes/util"
    assert symbols(f) == [
        ("notes/util", "module", 1, 14),
        ("notes/util.MAX_SLUG", "constant", 2, 2),
        ("notes/util.slugify", "function", 7, 9),
        ("notes/util.clamp", "function", 12, 14),
    ]
    by = {s.qname: s for s in f.symbols}
    assert (by["notes/util.MAX_SLUG"].signature, by["notes/util.MAX_SLUG"].summary) == ("const MAX_SLUG", "Longest slug we keep.")
    assert (by["notes/util.slugify"].signature, by["notes/util.slugify"].summary) == (
        "function slugify(title)", "Turn a title into a URL slug.")
    assert by["notes/util.clamp"].summary == "Cut a slug to MAX_SLUG characters."
    assert [s.qname for s in f.symbols if not s.exported] == ["notes/util.clamp"]
    assert calls(f) == [
        ("notes/util.slugify", "clamp", 8, ""),
        ("notes/util.slugify", "title.toLowerCase().replace", 8, ""),
        ("notes/util.slugify", "title.toLowerCase", 8, ""),
        ("notes/util.clamp", "slug.slice", 13, ""),
    ]


def test_classes_methods_this_hints_super_and_default_export():
    f = fx("src/store.js")
    assert symbols(f) == [
        ("notes/store", "module", 1, 31),
        ("notes/store.Store", "class", 4, 23),
        ("notes/store.Store.constructor", "method", 5, 7),
        ("notes/store.Store.get", "method", 9, 11),
        ("notes/store.Store.put", "method", 13, 16),
        ("notes/store.Store.validate", "method", 18, 22),
        ("notes/store.LoggedStore", "class", 26, 31),
        ("notes/store.LoggedStore.put", "method", 27, 30),
    ]
    by = {s.qname: s for s in f.symbols}
    assert (by["notes/store.Store"].signature, by["notes/store.Store"].summary) == ("class Store", "Keeps notes by id in memory.")
    assert by["notes/store.LoggedStore"].signature == "class LoggedStore extends Store"
    assert by["notes/store.Store.put"].parent == "notes/store.Store"
    assert calls(f) == [
        ("notes/store.Store.constructor", "Map", 6, ""),
        ("notes/store.Store.get", "this.items.get", 10, "Map"),  # this.items = new Map() in the constructor
        ("notes/store.Store.put", "this.validate", 14, ""),
        ("notes/store.Store.put", "this.items.set", 15, "Map"),
        ("notes/store.Store.validate", "slugify", 19, ""),
        ("notes/store.Store.validate", "Error", 20, ""),
        ("notes/store.LoggedStore.put", "super().put", 28, ""),
        ("notes/store.LoggedStore.put", "this.log.push", 29, ""),
    ]
    assert [c.kind for c in f.calls if c.callee in ("Map", "Error")] == ["new", "new"]
    # `export default class Store` binds `default` in the module itself
    assert imports(f) == [("notes/util", "slugify", "", 1), ("notes/store", "Store", "default", 4)]
    assert [(i.child, i.base, i.kind) for i in f.inherits] == [("notes/store.LoggedStore", "Store", "inherits")]


def test_index_module_re_exports():
    f = fx("src/index.js")
    assert f.module == "notes"  # package.json's name; src/ is the source root, an index file names its folder
    assert symbols(f) == [("notes", "module", 1, 3)]
    assert imports(f) == [
        ("notes/store", "default", "Store", 2),
        ("notes/store", "LoggedStore", "", 2),
        ("notes/util", "slugify", "", 3),
    ]


def test_es_imports_namespace_alias_default_and_index():
    f = fx("src/service.js")
    assert imports(f) == [
        ("notes/store", "default", "Store", 1),
        ("notes/util", "", "util", 2),
        ("notes", "slugify", "slug", 3),  # './index.js' is the package's index module
        ("notes", "LoggedStore", "", 3),
    ]
    assert symbols(f) == [
        ("notes/service", "module", 1, 36),
        ("notes/service.NoteService", "class", 6, 26),
        ("notes/service.NoteService.constructor", "method", 7, 9),
        ("notes/service.NoteService.add", "method", 11, 16),
        ("notes/service.NoteService.find", "method", 18, 20),
        ("notes/service.NoteService.touch", "method", 22, 25),
        ("notes/service.audited", "function", 28, 36),
    ]
    assert calls(f) == [
        ("notes/service.NoteService.constructor", "Store", 8, ""),
        ("notes/service.NoteService.add", "slug", 12, ""),
        ("notes/service.NoteService.add", "this.store.put", 13, "Store"),
        ("notes/service.NoteService.add", "this.touch", 14, ""),
        ("notes/service.NoteService.find", "this.store.get", 19, "Store"),
        ("notes/service.NoteService.find", "util.slugify", 19, ""),
        ("notes/service.NoteService.touch", "console.log", 23, ""),
        ("notes/service.NoteService.touch", "notify", 24, ""),
        ("notes/service.audited", "LoggedStore", 29, ""),
        ("notes/service.audited", "store.put", 31, "LoggedStore"),
        ("notes/service.audited", "store.validate", 32, "LoggedStore"),
        ("notes/service.audited", "note.toString", 33, ""),
    ]


def test_commonjs_require_and_module_exports():
    f = fx("src/legacy.js")
    assert symbols(f) == [("notes/legacy", "module", 1, 8), ("notes/legacy.legacyAdd", "function", 4, 6)]
    assert imports(f) == [("notes/util", "", "util", 2), ("notes/legacy", "legacyAdd", "default", 8)]
    assert calls(f) == [("notes/legacy.legacyAdd", "util.slugify", 5, "")]  # require(...) is an import, not a call
    assert [s.exported for s in f.symbols] == [True, True]  # module.exports = legacyAdd


def test_test_blocks_own_their_calls():
    f = fx("test/service.test.js")
    assert symbols(f) == [
        ("notes/test/service.test", "module", 1, 15),
        ('notes/test/service.test."NoteService"', "test", 4, 15),
        ('notes/test/service.test."NoteService"."adds and finds a note"', "test", 5, 9),
        ('notes/test/service.test."NoteService"."keeps legacy ids"', "test", 11, 14),
    ]
    assert all(s.is_test for s in f.symbols[1:])
    assert f.symbols[2].signature == 'it("adds and finds a note")'
    t1 = 'notes/test/service.test."NoteService"."adds and finds a note"'
    t2 = 'notes/test/service.test."NoteService"."keeps legacy ids"'
    assert calls(f) == [
        (t1, "NoteService", 6, ""),
        (t1, "svc.add", 7, "NoteService"),
        (t1, "expect().toBe", 8, "=>=>0.expect"),  # the result of expect(): a return hint
        (t1, "expect", 8, ""),
        (t1, "svc.find", 8, "NoteService"),
        (t2, "expect().toBe", 12, "=>=>0.expect"),
        (t2, "expect", 12, ""),
        (t2, "legacyAdd", 12, ""),
        (t2, "audited", 13, ""),
    ]
    assert imports(f) == [
        ("notes/service", "NoteService", "", 1),
        ("notes/service", "audited", "", 1),
        ("notes/legacy", "", "legacyAdd", 2),
    ]


def test_test_blocks_outside_test_files_are_not_symbols():
    # the block's own call (describe/it with a callback) is not recorded either; its body is
    src = b'describe("x", () => { it("y", () => { run(); }); });\n'
    f = extract_source(str(ROOT), "src/not_a_test.js", src, "javascript")
    assert symbols(f) == [("notes/not_a_test", "module", 1, 1)]
    assert [(c.caller, c.callee) for c in f.calls] == [("notes/not_a_test", "run")]


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
        ("notes/objects", "module", 1, 5, ""),
        ("notes/objects.API", "constant", 1, 1, "const API"),
        ("notes/objects.API.get", "method", 1, 1, "get()"),
        ("notes/objects.helpers", "constant", 2, 2, "const helpers"),
        ("notes/objects.helpers.trim", "method", 2, 2, "trim(s)"),
        ("notes/objects.reset", "method", 3, 3, "reset()"),
        ("notes/objects.LIMITS", "constant", 5, 5, "const LIMITS"),
    ]
    assert calls(f) == [
        ("notes/objects.API.get", "load", 1, ""),
        ("notes/objects.helpers.trim", "s.trim", 2, ""),
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


def test_jsdoc_description_tag_and_returns_describe_an_undescribed_function(tmp_path):
    src = b"""/**
 * @name combine
 * @description Builds the full URL from a base and a relative path.
 * @param {string} base
 */
export function combine(base, rel) { return base + rel; }

/**
 * @function
 * @returns {boolean} true if the payload is an error thrown by the client
 */
export function isClientError(payload) { return true; }
"""
    f = extract_source(str(tmp_path), "url.js", src, "javascript")
    by = {s.name: s.summary for s in f.symbols}
    assert by["combine"] == "Builds the full URL from a base and a relative path."
    assert by["isClientError"] == "Returns true if the payload is an error thrown by the client"
