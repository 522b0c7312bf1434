"""Files larger than the engine's CHUNK_BYTES are parsed a piece at a time (pieces cut between
top-level statements, one piece's tree held at once) and give what a whole parse gives; the
per-file limits (definitions, call sites, one top-level statement too large to parse) leave
the file ``partial`` with a reason that says what was left out, in the extraction and in the
store. The limits are lowered here so that the files stay small."""

from __future__ import annotations

import sqlite3

import pytest
from codesynapse.extract import docs, engine, extract_source
from codesynapse.index.indexer import Indexer
from codesynapse.store.sqlite.graph import SqliteGraphStore


def _functions(n: int) -> bytes:
    """``n`` blocks of four lines: a comment, a def, a call, a blank line (block i starts on line 4i+1)."""
    return "".join(f"# f{i} says hi.\ndef f{i}(a):\n    return g{i}(a)\n\n" for i in range(n)).encode()


def _pieces(monkeypatch, size: int, largest: int | None = None) -> None:
    """Files over ``size`` bytes are parsed in pieces of about ``size`` bytes."""
    monkeypatch.setattr(engine, "CHUNK_BYTES", size)
    monkeypatch.setattr(engine, "PIECE_BYTES", size)
    if largest is not None:
        monkeypatch.setattr(engine, "MAX_PIECE_BYTES", largest)


def _rows(fx):
    return [(s.qname, s.kind, s.start_line, s.end_line, s.summary) for s in fx.symbols]


def test_a_file_over_the_chunk_size_is_extracted_piece_by_piece(monkeypatch):
    src = _functions(300) + b"class C(Base):\n    def m(self):\n        self.h()\n"  # 12,100 bytes
    _pieces(monkeypatch, 2048)
    fx = extract_source("/nonexistent", "m.py", src, "python")
    assert fx.lines == 1203 and not fx.partial and fx.error == ""
    assert _rows(fx)[0] == ("m", "module", 1, 1203, "")
    assert _rows(fx)[1:] == [(f"m.f{i}", "function", 4 * i + 2, 4 * i + 3, f"f{i} says hi.") for i in range(300)] + [
        ("m.C", "class", 1201, 1203, ""), ("m.C.m", "method", 1202, 1203, "")]
    assert [(c.caller, c.callee, c.line) for c in fx.calls] == [
        (f"m.f{i}", f"g{i}", 4 * i + 3) for i in range(300)] + [("m.C.m", "self.h", 1203)]
    assert [(i.child, i.base, i.line) for i in fx.inherits] == [("m.C", "Base", 1201)]
    monkeypatch.setattr(engine, "CHUNK_BYTES", 1 << 20)
    assert extract_source("/nonexistent", "m.py", src, "python") == fx  # the same as one whole parse


def test_definitions_over_the_limit_are_left_out_and_named(monkeypatch):
    monkeypatch.setattr(engine, "MAX_DEFS", 10)
    fx = extract_source("/nonexistent", "m.py", _functions(15) + b"class D(Base):\n    pass\n", "python")
    assert [s.qname for s in fx.symbols] == ["m"] + [f"m.f{i}" for i in range(10)]
    assert [c.callee for c in fx.calls] == [f"g{i}" for i in range(10)]
    assert fx.inherits == []
    assert fx.partial
    assert fx.error == ("definitions limit (10 a file): 6 definitions from line 42 on left out, "
                        "and the 5 call sites and 1 base types after them")


def test_call_sites_over_the_limit_are_counted(monkeypatch):
    monkeypatch.setattr(engine, "MAX_CALLS", 3)
    fx = extract_source("/nonexistent", "m.py", b"def f():\n    a()\n    b()\n    c()\n    d()\n    e()\n", "python")
    assert [c.callee for c in fx.calls] == ["a", "b", "c"]
    assert [s.qname for s in fx.symbols] == ["m", "m.f"]
    assert fx.partial and fx.error == "call sites limit (3 a file): 2 call sites left out"


def test_a_statement_too_large_to_parse_ends_the_file_with_a_reason(monkeypatch):
    _pieces(monkeypatch, 1024, 2048)
    body = "".join(f"    def m{i}(self):\n        pass\n" for i in range(200))  # 6,000+ bytes, one statement
    src = f"def a():\n    pass\n\n\nclass Big:\n{body}\n\ndef z():\n    pass\n".encode()
    fx = extract_source("/nonexistent", "m.py", src, "python")
    assert [s.qname for s in fx.symbols] == ["m", "m.a"]
    assert fx.partial and fx.error == "a top-level statement over 2,048 bytes at line 5: lines 5-409 left out"
    assert fx.lines == 409


def test_the_store_records_what_was_left_out(tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "MAX_DEFS", 10)
    root = tmp_path / "repo"
    root.mkdir()
    (root / "many.py").write_bytes(_functions(12))
    (root / "few.py").write_bytes(_functions(2))
    store = SqliteGraphStore(tmp_path / "g.db", "g")
    Indexer(root, store, None, workers=1).index_tree()
    store.close()
    with sqlite3.connect(tmp_path / "g.db") as db:
        files = sorted(db.execute("SELECT path, status, reason FROM files"))
        symbols = db.execute("SELECT count(*) FROM symbols WHERE path = 'many.py'").fetchone()[0]
    assert files == [
        ("few.py", "indexed", ""),
        ("many.py", "partial", "definitions limit (10 a file): 2 definitions from line 42 on left out, "
                               "and the 2 call sites after them"),
    ]
    assert symbols == 11  # the module and ten functions


@pytest.mark.parametrize("language,src", [
    ("javascript", "".join(f"// f{i}\nfunction f{i}(a) {{\n  return g{i}(a);\n}}\n\n" for i in range(200))),
    ("go", "package p\n\n" + "".join(f"// F{i} says hi.\nfunc F{i}(a int) int {{\n\treturn g{i}(a)\n}}\n\n"
                                      for i in range(200))),
])
def test_pieces_in_other_languages(monkeypatch, language, src):
    """The same cut rule (between top-level statements, at a blank line) in C-like grammars."""
    whole = extract_source("/nonexistent", f"m.{language}", src.encode(), language)
    _pieces(monkeypatch, 1500)
    pieces = extract_source("/nonexistent", f"m.{language}", src.encode(), language)
    assert len(whole.symbols) == 201 and len(whole.calls) == 200 and not whole.partial
    assert pieces == whole


def test_a_cut_inside_a_string_at_column_0_is_parsed_again(monkeypatch):
    """Lines at column 0 inside a docstring look like top-level statements; a piece cut there
    breaks the class around it, and error recovery reshapes what came before (the class
    header alone, its methods as module functions): that part is parsed again, and the result
    is the whole parse's (with 1 KiB pieces the first engine with pieces kept 39 of 63 symbols)."""
    methods = "".join(f'    def m{i}(self):\n        """Doc {i}.\n\nMore text at column 0.\n"""\n        return g{i}()\n\n'
                      for i in range(60))
    src = f'"""The widgets."""\n# The widget class.\nclass Widget(Base):\n    """A widget."""\n{methods}\n\ndef after():\n    pass\n'
    _pieces(monkeypatch, 1024)
    fx = extract_source("/nonexistent", "w.py", src.encode(), "python")
    assert _rows(fx)[:3] == [("w", "module", 1, 428, "The widgets."), ("w.Widget", "class", 3, 423, "A widget."),
                             ("w.Widget.m0", "method", 5, 10, "Doc 0.")]
    assert [s.qname for s in fx.symbols[2:]] == [f"w.Widget.m{i}" for i in range(60)] + ["w.after"]
    assert [(c.caller, c.callee, c.line) for c in fx.calls] == [(f"w.Widget.m{i}", f"g{i}", 10 + 7 * i) for i in range(60)]
    assert [(i.child, i.base) for i in fx.inherits] == [("w.Widget", "Base")]
    assert not fx.partial and fx.error == ""
    monkeypatch.setattr(engine, "CHUNK_BYTES", 1 << 20)
    assert extract_source("/nonexistent", "w.py", src.encode(), "python") == fx


def test_a_file_with_its_own_syntax_errors_keeps_them_and_the_rest(monkeypatch):
    src = _functions(50) + b"def broken(:\n    pass\n\n" + _functions(50).replace(b"def f", b"def h")
    _pieces(monkeypatch, 1024)
    fx = extract_source("/nonexistent", "b.py", src, "python")
    names = [s.name for s in fx.symbols[1:]]
    assert names[:50] == [f"f{i}" for i in range(50)] and names[-50:] == [f"h{i}" for i in range(50)]
    assert fx.partial and fx.error == ""  # the store says "syntax errors; partial extraction"
    monkeypatch.setattr(engine, "CHUNK_BYTES", 1 << 20)
    assert extract_source("/nonexistent", "b.py", src, "python") == fx


def test_markdown_over_the_chunk_size_is_parsed_piece_by_piece(monkeypatch):
    """Markdown pieces are cut before a heading (never one inside a code block)."""
    doc = "".join(f"# Part {i}\n\nIntro of part {i}. More.\n\n## Detail {i}\n\n```\n# not a heading {i}\n```\n\n"
                  for i in range(100)).encode()  # 7,760 bytes
    _pieces(monkeypatch, 1024)
    fx = extract_source("/nonexistent", "d.md", doc, "markdown")
    assert [(s.qname, s.start_line, s.end_line, s.summary, s.parent) for s in fx.symbols[:3]] == [
        ("d.md#Part 0", 1, 9, "Intro of part 0.", "d.md"), ("d.md#Part 0 > Detail 0", 5, 9, "", "d.md#Part 0"),
        ("d.md#Part 1", 11, 19, "Intro of part 1.", "d.md")]
    assert [(s.qname, s.start_line, s.end_line) for s in fx.symbols[-2:]] == [
        ("d.md#Part 99", 991, 999), ("d.md#Part 99 > Detail 99", 995, 999)]
    assert len(fx.symbols) == 200 and not fx.partial and fx.error == ""
    monkeypatch.setattr(engine, "CHUNK_BYTES", 1 << 20)
    assert extract_source("/nonexistent", "d.md", doc, "markdown") == fx


def test_markdown_stops_once_the_kept_sections_have_their_end(monkeypatch):
    monkeypatch.setattr(docs, "MAX_KEYS", 3)
    _pieces(monkeypatch, 64)
    doc = "".join(f"# H{i}\n\ntext {i}\n\n" for i in range(1000)).encode()
    fx = extract_source("/nonexistent", "d.md", doc, "markdown")
    assert [(s.qname, s.start_line, s.end_line) for s in fx.symbols] == [
        ("d.md#H0", 1, 3), ("d.md#H1", 5, 7), ("d.md#H2", 9, 11)]


def test_yaml_over_32767_lines_is_read_up_to_a_top_level_entry():
    """tree-sitter-yaml gives up after 32,767 lines (the whole file parsed as one ERROR gave no
    key at all): the keys now come from the lines before, and a file whose keys do not all fit
    there says which lines were not read."""
    flat = "".join(f"k{i}: {i}\n" for i in range(70_000)).encode()
    fx = extract_source("/nonexistent", "a.yaml", flat, "yaml")
    assert [s.qname for s in fx.symbols] == [f"a.yaml#k{i}" for i in range(2000)]
    assert fx.partial and fx.error == "keys limit (2,000 a file): keys after line 2,000 left out"
    deep = "".join(f"k{i}:\n" + "".join(f"  - x{j}\n" for j in range(39)) for i in range(1000)).encode()
    fx = extract_source("/nonexistent", "b.yaml", deep, "yaml")
    assert [s.qname for s in fx.symbols] == [f"b.yaml#k{i}" for i in range(799)]
    assert (fx.symbols[-1].start_line, fx.symbols[-1].end_line, fx.lines) == (31921, 31960, 40000)
    assert fx.partial and fx.error == "tree-sitter-yaml reads at most 32,767 lines: lines 31,961-40,000 not read"


def test_a_statement_too_large_after_others_keeps_them(monkeypatch):
    """A list literal cut by the piece's end parses as an ERROR node that tree-sitter marks as
    an extra (like a comment): it is still the statement that is too large, not a comment."""
    _pieces(monkeypatch, 1024, 2048)
    src = b"def before():\n    pass\n\n\nDATA = [\n" + b"    1,\n" * 1000 + b"]\n\n\ndef after():\n    pass\n"
    fx = extract_source("/nonexistent", "m.py", src, "python")
    assert [s.qname for s in fx.symbols] == ["m", "m.before"]
    assert fx.partial and fx.error == "a top-level statement over 2,048 bytes at line 5: lines 5-1,010 left out"


@pytest.mark.parametrize("language,name,src", [
    ("json", "big.json", b'{\n' + b''.join(b'  "k%d": [1, 2, 3],\n' % i for i in range(200)) + b'  "last": 0\n}\n'),
    ("toml", "big.toml", b''.join(b'[t%d]\nk = "v"\n\n' % i for i in range(400))),
])
def test_json_and_toml_over_the_largest_piece_are_left_out_with_a_reason(monkeypatch, language, name, src):
    """A JSON document is one statement and a key's range needs the whole tree (tens of times
    the file's bytes): a file over the largest piece is not parsed, and says so."""
    assert 4096 < len(src) < 8192
    monkeypatch.setattr(engine, "MAX_PIECE_BYTES", 8192)
    kept = extract_source("/nonexistent", name, src, language)
    assert len(kept.symbols) > 200 and not kept.partial and kept.error == ""
    monkeypatch.setattr(engine, "MAX_PIECE_BYTES", 4096)
    fx = extract_source("/nonexistent", name, src, language)
    assert fx.symbols == [] and fx.partial and fx.lines == src.count(b"\n")
    assert fx.error == f"a {language.upper()} file over 4,096 bytes is not parsed: its keys are left out"
