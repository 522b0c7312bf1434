"""C# extraction on fixtures/csharp_repo: block and file-scoped namespaces as modules,
records, enums, interfaces, constructors, XML doc summaries, bases split into inherits /
implements by the IName convention, field/property/local receiver hints, [Fact] tests."""

from __future__ import annotations

from pathlib import Path

from codesynapse.extract import extract_source

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "csharp_repo"
CORE = "Library.Core"


def fx(rel: str):
    return extract_source(str(ROOT), rel, (ROOT / rel).read_bytes(), "csharp")


def symbols(f):
    return [(s.qname, s.kind, s.start_line, s.end_line) for s in f.symbols]


def test_file_scoped_namespace_interface():
    f = fx("src/Library.Core/IBookRepository.cs")
    assert symbols(f) == [
        (CORE, "module", 1, 8),
        (f"{CORE}.IBookRepository", "interface", 4, 8),
        (f"{CORE}.IBookRepository.Add", "method", 6, 6),
        (f"{CORE}.IBookRepository.Find", "method", 7, 7),
    ]
    by = {s.qname: s for s in f.symbols}
    assert by[f"{CORE}.IBookRepository"].summary == "Storage for books."  # <summary> tags dropped
    assert by[f"{CORE}.IBookRepository.Find"].signature == "Book? Find(string isbn)"
    assert all(s.exported for s in f.symbols)


def test_block_namespace_record_and_enum():
    f = fx("src/Library.Core/Book.cs")
    assert symbols(f) == [
        (CORE, "module", 1, 14),
        (f"{CORE}.Book", "class", 4, 7),
        (f"{CORE}.Book.Label", "method", 6, 6),
        (f"{CORE}.Shelf", "enum", 9, 13),
    ]
    assert f.symbols[1].signature == "public record Book(string Isbn, string Title)"


def test_bases_and_inherited_helper():
    f = fx("src/Library.Core/InMemoryBookRepository.cs")
    assert [(i.child, i.base, i.kind) for i in f.inherits] == [
        (f"{CORE}.InMemoryBookRepository", "RepositoryBase", "inherits"),
        (f"{CORE}.InMemoryBookRepository", "IBookRepository", "implements"),
    ]
    assert [(c.caller, c.callee, c.receiver_hint) for c in f.calls] == [
        (f"{CORE}.InMemoryBookRepository.Add", "Touch", ""),
        (f"{CORE}.InMemoryBookRepository.Find", "_books.GetValueOrDefault", "Dictionary"),
    ]


def test_service_hints_and_summaries():
    f = fx("src/Library.Core/Catalogue.cs")
    assert symbols(f) == [
        (CORE, "module", 1, 37),
        (f"{CORE}.Catalogue", "class", 6, 32),
        (f"{CORE}.Catalogue.Catalogue", "method", 11, 14),
        (f"{CORE}.Catalogue.Register", "method", 16, 23),
        (f"{CORE}.Catalogue.Validate", "method", 25, 31),
        (f"{CORE}.AuditLog", "class", 34, 37),
        (f"{CORE}.AuditLog.Record", "method", 36, 36),
    ]
    by = {s.qname: s for s in f.symbols}
    assert (by[f"{CORE}.Catalogue"].signature, by[f"{CORE}.Catalogue"].summary) == (
        "public class Catalogue", "Adds and looks up books.")
    assert by[f"{CORE}.Catalogue.Validate"].signature == "private static void Validate(Book book)"
    assert [s.qname for s in f.symbols if not s.exported] == [f"{CORE}.Catalogue.Validate", f"{CORE}.AuditLog"]
    assert [(c.caller.rsplit(".", 1)[-1], c.callee, c.line, c.receiver_hint) for c in f.calls] == [
        ("Catalogue", "AuditLog", 9, ""),
        ("Register", "Book", 18, ""),
        ("Register", "Validate", 19, ""),
        ("Register", "_repository.Add", 20, "IBookRepository"),  # field
        ("Register", "this._audit.Record", 21, "AuditLog"),
        ("Register", "book.Label", 21, "Book"),  # var book = new Book(...)
        ("Register", "book.Label", 22, "Book"),
        ("Validate", "string.IsNullOrEmpty", 27, ""),
        ("Validate", "ArgumentException", 29, ""),
        ("Record", "Console.WriteLine", 36, ""),
    ]
    assert [(i.module, i.name) for i in f.imports] == [("System", "*")]


def test_xunit_fact():
    f = fx("tests/Library.Tests/CatalogueTests.cs")
    t = "Library.Tests.CatalogueTests.RegisterStoresTheBook"
    assert symbols(f) == [
        ("Library.Tests", "module", 1, 16),
        ("Library.Tests.CatalogueTests", "class", 6, 16),
        (t, "test", 8, 15),
    ]
    assert f.symbols[2].signature == "public void RegisterStoresTheBook()"  # attribute left out
    assert [(i.module, i.name) for i in f.imports] == [(CORE, "*"), ("Xunit", "*")]


def test_xml_doc_summary_is_its_summary_element(tmp_path):
    # <param>, <returns> and <remarks> are sections of their own; a reference is written as
    # the name it refers to
    src = b"""namespace Example.Retry
{
    /// <summary>
    /// Decides how long to wait between attempts, see <see cref="T:Example.Retry.Backoff"/>
    /// </summary>
    /// <remarks>Thread-safe.</remarks>
    public class Policy
    {
        /// <summary>Returns the delay before attempt <paramref name="n"/></summary>
        /// <param name="n">The attempt number.</param>
        /// <returns>The delay.</returns>
        public int Next(int n) { return n; }

        /// <returns>whether another attempt is allowed</returns>
        public bool CanRetry() { return true; }

        // Forgets the attempts made.
        public void Reset() { }
    }
}
"""
    f = extract_source(str(tmp_path), "Policy.cs", src, "csharp")
    by = {s.name: s.summary for s in f.symbols}
    assert by["Policy"] == "Decides how long to wait between attempts, see Example.Retry.Backoff"
    assert by["Next"] == "Returns the delay before attempt n"
    assert by["CanRetry"] == "Returns whether another attempt is allowed"
    assert by["Reset"] == "Forgets the attempts made."
