"""TypeScript/TSX extraction on fixtures/ts_repo: interfaces and their method signatures,
enums, type aliases, abstract classes, implements/extends, type annotations as receiver hints
(parameters, fields, constructor parameter properties), TSX components and spec files."""

from __future__ import annotations

from pathlib import Path

from codesynapse.extract import extract_source

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "ts_repo"


def fx(rel: str, language: str = "typescript"):
    return extract_source(str(ROOT), rel, (ROOT / rel).read_bytes(), language)


def symbols(f):
    return [(s.qname, s.kind, s.start_line, s.end_line) for s in f.symbols]


def calls(f):
    return [(c.caller, c.callee, c.line, c.receiver_hint) for c in f.calls]


def test_interface_enum_and_type_alias():
    f = fx("src/models.ts")
    assert symbols(f) == [
        ("src/models", "module", 1, 12),
        ("src/models.Shape", "interface", 2, 5),
        ("src/models.Shape.area", "method", 3, 3),
        ("src/models.Shape.name", "method", 4, 4),
        ("src/models.Unit", "enum", 7, 10),
        ("src/models.ShapeList", "type", 12, 12),
    ]
    by = {s.qname: s for s in f.symbols}
    assert (by["src/models.Shape"].signature, by["src/models.Shape"].summary) == ("interface Shape", "Anything with an area.")
    assert by["src/models.Shape.area"].signature == "area(): number"
    assert by["src/models.ShapeList"].signature == "type ShapeList = Shape[]"


def test_abstract_class_implements_and_extends():
    f = fx("src/shapes.ts")
    assert symbols(f) == [
        ("src/shapes", "module", 1, 28),
        ("src/shapes.round", "function", 4, 6),
        ("src/shapes.Base", "class", 8, 18),
        ("src/shapes.Base.area", "method", 9, 9),
        ("src/shapes.Base.name", "method", 11, 13),
        ("src/shapes.Base.describe", "method", 15, 17),
        ("src/shapes.Circle", "class", 20, 28),
        ("src/shapes.Circle.constructor", "method", 21, 23),
        ("src/shapes.Circle.area", "method", 25, 27),
    ]
    by = {s.qname: s for s in f.symbols}
    assert (by["src/shapes.round"].signature, by["src/shapes.round"].summary) == (
        "function round(x: number): number", "Round to two decimal places.")
    assert by["src/shapes.Base"].signature == "abstract class Base implements Shape"
    assert by["src/shapes.Base.area"].signature == "abstract area(): number"
    assert [(i.child, i.base, i.kind) for i in f.inherits] == [
        ("src/shapes.Base", "Shape", "implements"), ("src/shapes.Circle", "Base", "inherits")]
    assert calls(f) == [
        ("src/shapes.round", "Math.round", 5, ""),
        ("src/shapes.Base.describe", "this.name", 16, ""),
        ("src/shapes.Base.describe", "round", 16, ""),
        ("src/shapes.Base.describe", "this.area", 16, ""),
    ]
    assert [(i.module, i.name) for i in f.imports] == [("src/models", "Shape")]


def test_type_annotations_become_receiver_hints():
    f = fx("src/registry.ts")
    assert symbols(f) == [
        ("src/registry", "module", 1, 40),
        ("src/registry.Logger", "class", 4, 8),
        ("src/registry.Logger.info", "method", 5, 7),
        ("src/registry.Counter", "class", 10, 14),
        ("src/registry.Counter.bump", "method", 11, 13),
        ("src/registry.Registry", "class", 17, 40),
        ("src/registry.Registry.constructor", "method", 21, 23),
        ("src/registry.Registry.add", "method", 25, 29),
        ("src/registry.Registry.total", "method", 31, 33),
        ("src/registry.Registry.demo", "method", 35, 39),
    ]
    by = {s.qname: s for s in f.symbols}
    assert by["src/registry.Registry.constructor"].signature == "constructor(private readonly log: Logger)"
    assert by["src/registry.Registry.demo"].signature == "static demo(): Registry"
    assert by["src/registry.Registry"].summary == "Holds shapes and sums their areas."
    assert [s.qname for s in f.symbols if not s.exported] == ["src/registry.Counter"]
    assert calls(f) == [
        ("src/registry.Logger.info", "console.log", 6, ""),
        ("src/registry.Registry.constructor", "Counter", 22, ""),
        ("src/registry.Registry.add", "this.items.push", 26, ""),  # Shape[]: no nominal type
        ("src/registry.Registry.add", "this.log.info", 27, "Logger"),  # constructor parameter property
        ("src/registry.Registry.add", "s.name", 27, "Shape"),  # typed parameter
        ("src/registry.Registry.add", "this.counter.bump", 28, "Counter"),  # field annotation
        ("src/registry.Registry.total", "this.items.reduce", 32, ""),
        ("src/registry.Registry.total", "s.area", 32, ""),  # untyped arrow parameter
        ("src/registry.Registry.demo", "Registry", 36, ""),
        ("src/registry.Registry.demo", "Logger", 36, ""),
        ("src/registry.Registry.demo", "r.add", 37, "Registry"),
        ("src/registry.Registry.demo", "shapes.Circle", 37, ""),
    ]
    assert [(i.module, i.name, i.alias) for i in f.imports] == [("src/models", "Shape", ""), ("src/shapes", "", "shapes")]


def test_tsx_component_and_arrow_function():
    f = fx("src/view.tsx", "tsx")
    assert symbols(f) == [
        ("src/view", "module", 1, 9),
        ("src/view.formatTotal", "function", 3, 3),
        ("src/view.Summary", "function", 6, 9),
    ]
    by = {s.qname: s for s in f.symbols}
    assert by["src/view.formatTotal"].signature == "const formatTotal = (n: number): string"
    assert (by["src/view.Summary"].signature, by["src/view.Summary"].summary) == (
        "function Summary(registry: Registry)", "Renders the total area of a registry.")
    assert calls(f) == [
        ("src/view.formatTotal", "n.toFixed", 3, ""),
        ("src/view.Summary", "registry.total", 7, "Registry"),
        ("src/view.Summary", "formatTotal", 8, ""),
    ]


def test_spec_file_blocks():
    f = fx("test/registry.spec.ts")
    t = 'test/registry.spec."Registry"."sums areas"'
    assert symbols(f) == [
        ("test/registry.spec", "module", 1, 10),
        ('test/registry.spec."Registry"', "test", 4, 10),
        (t, "test", 5, 9),
    ]
    assert calls(f) == [
        (t, "Registry", 6, ""),
        (t, "Logger", 6, ""),
        (t, "reg.add", 7, "Registry"),  # const reg: Registry
        (t, "Circle", 7, ""),
        (t, "expect().toBeCloseTo", 8, "=>=>0.expect"),  # the result of expect(): a return hint
        (t, "expect", 8, ""),
        (t, "reg.total", 8, "Registry"),
    ]


EXPORTED_CONSTS = b"""export const flatMap = mergeMap;
export const asyncScheduler: AsyncScheduler = new AsyncScheduler(AsyncAction);
export const EmptyError: EmptyErrorCtor = createErrorClass(
  (_super) =>
    function EmptyErrorImpl(this: any) {
      _super(this);
    }
);
export const toArray = <T>(xs: T[]) => xs.slice();
export const config = { onError: null };
export let counter = 0;
const hidden = new Map();
"""


def test_exported_consts_are_symbols_by_name_and_type():
    """An exported module-level ``const`` is a constant whatever its value (an alias, an
    instance, a factory's result), named with its type and never its value; an exported arrow
    function stays a function; ``let`` and unexported consts are no symbols."""
    f = extract_source(str(ROOT), "src/exported.ts", EXPORTED_CONSTS, "typescript")
    assert [(s.qname, s.kind, s.start_line, s.end_line, s.signature) for s in f.symbols] == [
        ("src/exported", "module", 1, 12, ""),
        ("src/exported.flatMap", "constant", 1, 1, "const flatMap"),
        ("src/exported.asyncScheduler", "constant", 2, 2, "const asyncScheduler: AsyncScheduler"),
        ("src/exported.EmptyError", "constant", 3, 8, "const EmptyError: EmptyErrorCtor"),
        ("src/exported.toArray", "function", 9, 9, "const toArray = <T>(xs: T[])"),
        ("src/exported.config", "constant", 10, 10, "const config"),
    ]


ANNOTATED = b"""import { Subject } from './Subject';

export function window<T>(src: any) {
  return operate((source: any, subscriber: any) => {
    let windowSubject: Subject<T> = new Subject<T>();
    let plain = new Subject<T>();
    windowSubject.next(1);
    plain.next(1);
    return () => {
      windowSubject?.unsubscribe();
      windowSubject = null!;
      plain = make();
    };
  });
}
"""


def test_a_declared_type_survives_assignments_of_unknown_values(tmp_path):
    # issue 18 #4: `let s: Subject<T>` keeps its type through `s = null!` (TypeScript checks
    # every assignment against the annotation); an unannotated local assigned an unknown
    # value is unbound as before
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "w.ts").write_bytes(ANNOTATED)
    f = extract_source(str(tmp_path), "src/w.ts", ANNOTATED, "typescript")
    assert [(c.callee, c.line, c.receiver_hint) for c in f.calls if "." in c.callee] == [
        ("windowSubject.next", 7, "Subject"), ("plain.next", 8, ""), ("windowSubject.unsubscribe", 10, "Subject")]


def test_doc_comment_seen_through_overloads_and_decorators(tmp_path):
    # the doc comment is written once, above the first overload signature; a decorator stands
    # between a class member and its doc comment
    src = b"""/**
 * Checks if key `b` partially matches with key `a`.
 */
export function partialMatch(a: string, b: string): boolean
export function partialMatch(a: any, b: any): boolean {
  return a === b
}

export class Cache {
  /** Looks an entry up by its key. */
  find(key: string): number;
  find(key: number): number;
  find(key: any): number { return 0 }

  /** Drops every entry. */
  @Log()
  clear(): void {}

  size(): number;
  /** Not the size. */
  other(): void {}
}
"""
    (tmp_path / "cache.ts").write_bytes(src)
    f = extract_source(str(tmp_path), "cache.ts", src, "typescript")
    by = {s.qname: s.summary for s in f.symbols}
    assert by["cache.partialMatch"] == "Checks if key `b` partially matches with key `a`."
    assert by["cache.Cache.find"] == "Looks an entry up by its key."
    assert by["cache.Cache.clear"] == "Drops every entry."
    assert by["cache.Cache.other"] == "Not the size."


def test_linter_directives_are_not_the_doc_comment(tmp_path):
    src = b"""// Copied from: the plain-object check of is-plain-object.
// eslint-disable-next-line @typescript-eslint/ban-types
export function isPlainObject(o: any): o is Object {
  return true
}

// @ts-expect-error untyped global
// Reads the global configuration.
export function readConfig(): void {}
"""
    f = extract_source(str(tmp_path), "plain.ts", src, "typescript")
    by = {s.name: s.summary for s in f.symbols}
    assert by["isPlainObject"] == "Copied from: the plain-object check of is-plain-object."
    assert by["readConfig"] == "Reads the global configuration."
