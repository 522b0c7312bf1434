"""minimalContext's card selection says each thing once (issue 16): a type is not shown beside a
card of one of its own members (the member's card names the type and the file, as a symbol's
card names its module's); the type passed over is named among the omitted candidates and its
place goes to the next candidate. A type the task names, or one of a file the request names
(``paths``), keeps its card."""

from __future__ import annotations

from codesynapse.context.budget import Deadline
from codesynapse.context.minimal import MINIMAL_CARDS
from codesynapse.context.retrieval import TYPE_KINDS, Retriever
from codesynapse.methods import call_method
from infra.apps import indexed_app

STEPS = ["open", "read", "check", "close"]
FILES = {
    "ledger.py": (
        "class LedgerArchive:\n"
        '    """The archive of old ledger entries."""\n\n'
        + "".join(f"    def {s}_archived_entries(self, rows):\n"
                  f'        """{s.capitalize()} the archived old ledger entries."""\n'
                  "        return rows\n\n"
                  for s in STEPS)
    ),
    "tools.py": "".join(f"def {s}_old_ledger_entries(rows):\n"
                        f'    """{s.capitalize()} old ledger entries."""\n'
                        "    return rows\n\n\n"
                        for s in ("trim", "count", "print", "sort", "merge", "split", "copy")),
}
TASK = "how are old ledger entries archived"


def cards_of(a, task: str, paths: tuple[str, ...] = ()) -> tuple[list[str], set[str]]:
    ans = call_method(a, "codesynapse/minimalContext", {"task": task, "paths": list(paths)})
    listed = {c["qualifiedName"] for n in ans.get("omitted", []) for c in n.get("candidates", [])}
    return [c["qualifiedName"] for c in ans["cards"]], listed


def test_a_type_is_not_shown_beside_a_card_of_its_member(tmp_path):
    a = indexed_app(tmp_path, FILES)
    try:
        got = Retriever(a, a.store).rank(TASK, Deadline())
        order = [got.rows[i] for i in got.order]
        first = order[:MINIMAL_CARDS]
        # the premise: the ranking alone puts the type and members of it in the card places,
        # and more candidates follow
        assert "ledger.LedgerArchive" in [r.qname for r in first]
        assert any(r.parent == "ledger.LedgerArchive" for r in first)
        assert len(order) > MINIMAL_CARDS
        cards, listed = cards_of(a, TASK)
        kinds = {r.qname: r for r in order}
        assert "ledger.LedgerArchive" not in cards and "ledger.LedgerArchive" in listed
        for q in cards:
            if kinds[q].kind in TYPE_KINDS:
                assert not any(kinds[x].parent == q for x in cards), q
        assert len(cards) == MINIMAL_CARDS  # its place went to the next candidate
        assert order[MINIMAL_CARDS].qname in cards
        # a type the task names is an answer, not a repetition: it keeps its card
        named, _listed = cards_of(a, "what does LedgerArchive do with old ledger entries")
        assert "ledger.LedgerArchive" in named
        # so does a type of a file the request names (its scope: all its symbols)
        scoped, _listed = cards_of(a, TASK, ("ledger.py",))
        assert "ledger.LedgerArchive" in scoped
    finally:
        a.close()


TWICE = {
    "paths.py": "import os\n\n" + "".join(
        f"if os.name == {osname!r}:\n"
        "    def normalize_ledger_path(path):\n"
        f'        """Normalize a ledger path for {osname}."""\n'
        "        return path\n"
        for osname in ("nt", "posix", "java")),
    "tools.py": "".join(f"def {s}_ledger_path(path):\n"
                        f'    """{s.capitalize()} a ledger path."""\n'
                        "    return path\n\n\n"
                        for s in ("trim", "count", "print", "sort", "merge", "split", "copy", "check")),
}


def test_a_qualified_name_shared_by_several_symbols_takes_one_card(tmp_path):
    task = "how is a ledger path normalized"
    a = indexed_app(tmp_path, TWICE)
    try:
        got = Retriever(a, a.store).rank(task, Deadline())
        first = [got.rows[i].qname for i in got.order[:MINIMAL_CARDS]]
        # the premise: the three definitions of one name rank among the card places
        assert first.count("paths.normalize_ledger_path") == 3
        ans = call_method(a, "codesynapse/minimalContext", {"task": task})
        cards = [c["qualifiedName"] for c in ans["cards"]]
        assert cards.count("paths.normalize_ledger_path") == 1
        assert len(cards) == MINIMAL_CARDS  # the places went to the next candidates
        lines = {(c["qualifiedName"], c["line"]) for n in ans.get("omitted", []) for c in n.get("candidates", [])}
        shown_line = next(c["range"][0] for c in ans["cards"] if c["qualifiedName"] == "paths.normalize_ledger_path")
        passed = {got.rows[i].start_line for i in got.order if got.rows[i].qname == "paths.normalize_ledger_path"}
        assert {("paths.normalize_ledger_path", ln) for ln in passed - {shown_line}} <= lines
        # a name the task writes is shown for every symbol of that name
        named = call_method(a, "codesynapse/minimalContext", {"task": "what does normalize_ledger_path do"})
        assert [c["qualifiedName"] for c in named["cards"]].count("paths.normalize_ledger_path") == 3
    finally:
        a.close()


DECODERS = ["Gzip", "Deflate", "Brotli", "Zstd"]
CODECS = {
    "codecs.py": (
        "class ContentDecoder:\n"
        "    def decompress_body_chunk(self, data):\n"
        '        """Decompress a chunk of the response body."""\n'
        "        return data\n\n\n"
        + "".join(f"class {d}Decoder(ContentDecoder):\n"
                  "    def decompress_body_chunk(self, data):\n"
                  f'        """Decompress a {d.lower()} chunk of the response body."""\n'
                  "        return data\n\n\n"
                  for d in DECODERS)
        + "class FastGzipDecoder(GzipDecoder):\n"
        "    def decompress_body_chunk(self, data):\n"
        '        """Decompress a gzip chunk of the response body faster."""\n'
        "        return data\n\n\n"
    ),
    "body.py": "".join(f"def {s}_body_chunk(data):\n"
                       f'    """{s.capitalize()} a chunk of the response body."""\n'
                       "    return data\n\n\n"
                       for s in ("read", "count", "print", "sort", "merge", "split", "copy", "check")),
}


def test_one_method_of_sibling_types_takes_one_card_an_override_keeps_its_own(tmp_path):
    task = "how is a chunk of the response body decompressed"
    a = indexed_app(tmp_path, CODECS)
    try:
        got = Retriever(a, a.store).rank(task, Deadline())
        order = [got.rows[i].qname for i in got.order]
        impls = [f"codecs.{d}Decoder.decompress_body_chunk" for d in DECODERS]
        # the premise: several sibling implementations rank among the card places
        assert sum(q in impls for q in order[:MINIMAL_CARDS]) >= 2
        ans = call_method(a, "codesynapse/minimalContext", {"task": task})
        cards = [c["qualifiedName"] for c in ans["cards"]]
        listed = {c["qualifiedName"] for n in ans.get("omitted", []) for c in n.get("candidates", [])}
        shown = [q for q in cards if q in impls]
        assert len(shown) == 1  # the best-ranked sibling, for all of them
        assert shown[0] == next(q for q in order if q in impls)
        assert all(q in listed for q in impls if q not in cards and q in order[:MINIMAL_CARDS + 3])
        # the base's method and an override of the shown sibling are no repeats of it
        for q in ("codecs.ContentDecoder.decompress_body_chunk", "codecs.FastGzipDecoder.decompress_body_chunk"):
            if q in order[:MINIMAL_CARDS] and shown[0] == "codecs.GzipDecoder.decompress_body_chunk":
                assert q in cards, q
        assert "codecs.ContentDecoder.decompress_body_chunk" in cards
        assert any(q in cards for q in order[MINIMAL_CARDS:])  # the places went to the next candidates
    finally:
        a.close()


ENTRIES = ["plain", "json", "color"]
GO_ENTRIES = {
    "go.mod": "module example.com/logx\n\ngo 1.21\n",
    "entry.go": (
        "package logx\n\n"
        "// LogEntry records one panic of a request.\n"
        "type LogEntry interface {\n"
        "\t// RecordPanic records a panic value and its stack trace.\n"
        "\tRecordPanic(v interface{}, stack []byte)\n"
        "}\n\n"
        + "".join(f"type {e}Entry struct{{}}\n\n"
                  f"// RecordPanic records a panic value and its stack trace as {e} text.\n"
                  f"func (e *{e}Entry) RecordPanic(v interface{{}}, stack []byte) {{}}\n\n"
                  for e in ENTRIES)),
}


def test_an_interface_method_is_the_base_of_its_implementations(tmp_path):
    # Go implements an interface without naming it (the index has no inheritance edge): the
    # interface's method is still no sibling of an implementation, which keeps its card beside it
    task = "how is the stack trace of a panic value recorded"
    a = indexed_app(tmp_path, GO_ENTRIES)
    try:
        got = Retriever(a, a.store).rank(task, Deadline())
        order = [got.rows[i].qname for i in got.order]
        impls = [f"example.com/logx.{e}Entry.RecordPanic" for e in ENTRIES]
        assert all(q in order[:MINIMAL_CARDS] for q in impls)  # the premise
        cards = [c["qualifiedName"] for c in call_method(a, "codesynapse/minimalContext", {"task": task})["cards"]]
        assert "example.com/logx.LogEntry.RecordPanic" in cards
        assert [q for q in cards if q in impls] == [next(q for q in order if q in impls)]
    finally:
        a.close()


UNRELATED = {
    "builder.py": (
        "class SerializerBuilder:\n"
        "    def exclude_hidden_fields(self):\n"
        '        """Exclude the hidden fields from the serialized output."""\n'
        "        return self\n\n\n"
        "class FieldExcluder:\n"
        "    def exclude_hidden_fields(self):\n"
        '        """Exclude the hidden fields from the serialized output."""\n'
        "        return self\n"
    ),
}


def test_the_same_method_of_unrelated_types_is_no_repeat(tmp_path):
    # a builder's setter and the one of the object it configures (which does the work) share
    # a name and parameters, but no base: both keep their cards
    task = "how are hidden fields excluded from the serialized output"
    a = indexed_app(tmp_path, UNRELATED)
    try:
        cards = [c["qualifiedName"] for c in call_method(a, "codesynapse/minimalContext", {"task": task})["cards"]]
        assert {"builder.SerializerBuilder.exclude_hidden_fields", "builder.FieldExcluder.exclude_hidden_fields"} <= set(cards)
    finally:
        a.close()
