"""The GraphStore port. SQLite (embedded default) and Neo4j implement it and pass one
contract suite (tests/contract/).

Rules every backend keeps:
- the shared code graph is addressed by ``graph_id``; a store instance is bound to one graph
  id at construction and every query binds it;
- values travel only as query parameters; labels and edge types are constants;
- ordering is stable: symbols by (qname, path, start_line), calls by (path, line, col, callee);
- driver errors become ``StoreError`` / ``StoreUnavailable`` (``raise … from e``);
- no source bodies are stored: only what ``FileExtraction`` carries;
- ``transaction()`` makes several writes one atomic update and is the index's one writer;
  ``snapshot()`` gives a request's reads one committed version of the graph. What a backend
  keeps of that promise it declares in ``capabilities`` (``StoreCapabilities``; docs/BACKENDS.md,
  "Transactions"); the contract suite selects its transaction tests by them;
- a request reads with a bounded number of store calls whatever the number of callers, files
  or nodes it names: the batch reads (``symbols_by_qnames``, ``files_by_paths``,
  ``callers_many``, ``callees_many``, ``subtypes_many``, ``relation_counts``) take many keys in
  one call, which a server backend answers in one round trip (or one per chunk of keys).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from codesynapse.extract.model import CallSite, FileExtraction
from codesynapse.graph.model import (
    CallRow,
    FileRow,
    GraphStats,
    ImportRow,
    InheritRow,
    Resolution,
    SymbolRow,
)

SCHEMA_VERSION = 8  # 3: import rows keep their module's first/last segment, inherit rows their base's
# 4: SQLite symbols carry stemmed lexical fields (context/lexical.py) in an FTS5 table
# 5: extraction changed what a graph holds (Go struct field types, TypeScript module-style
#    names, inferred results of unannotated Python functions in signatures): an index built
#    before holds none of it for files that did not change since, so it is rebuilt
# 6: call rows keep what each argument is (CallSite.args, for parameter hints; issue 18)
# 7: SQLite's code-graph rows carry a small graph key (table graphs) instead of the graph id,
#    with narrower and partial indexes (issue 24 #3: a smaller index)
# 8: SQLite: a call's head is stored only when it is not its name; calls_target leaves out
#    unresolved calls
# meta key: how many stored calls hand each name on as a value ({name: count} JSON), kept by
# the indexer's parameter pass (index/indexer.py) so that a restart need not count again
VALUE_REFS_META = "param_value_refs"
# meta key (index/indexer.py): a digest of the redaction patterns the stored text was
# extracted under; a composite view reads its base's until its overlay has its own
REDACTION_META = "redaction_patterns"


def module_keys(module: str) -> tuple[str, str]:
    """(first, last) dotted segment of an imported module: the names through which an
    import row's resolution can change (``imports_touching``)."""
    return module.split(".", 1)[0], module.rsplit(".", 1)[-1]


def base_keys(base: str) -> tuple[str, str]:
    """(last segment, first dotted segment) of a base-type expression without its generic
    arguments (``List[int]``, ``Foo<T>``): the names through which an inherit row's
    resolution can change (``inherits_touching``)."""
    b = base.split("[", 1)[0].split("<", 1)[0]
    name = b
    for sep in ("::", "."):
        if sep in name:
            name = name.rsplit(sep, 1)[-1]
    return name.rsplit("/", 1)[-1], b.split(".", 1)[0]


@dataclass(frozen=True)
class StoreCapabilities:
    """What a backend's ``transaction()`` and ``snapshot()`` keep of the port's promise."""

    # transaction(): every write inside commits together or none does (False: each write
    # call is its own server transaction; the block only serializes this process' writers)
    atomic_transactions: bool
    # snapshot(): reads inside see one committed version (False: each read sees the latest)
    read_snapshots: bool
    # transaction(): the writer lock holds across processes sharing the index
    cross_process_writer_lock: bool

    def names(self) -> list[str]:
        """The capabilities this backend has, by name."""
        return [k for k, v in self.__dict__.items() if v]


FULL_CAPABILITIES = StoreCapabilities(atomic_transactions=True, read_snapshots=True, cross_process_writer_lock=True)
# a server backend without multi-statement transactions held across protocol calls
SERVER_CAPABILITIES = StoreCapabilities(atomic_transactions=False, read_snapshots=False,
                                        cross_process_writer_lock=False)


@runtime_checkable
class GraphStore(Protocol):
    graph_id: str
    capabilities: StoreCapabilities

    # lifecycle / metadata
    def close(self) -> None: ...
    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, values: dict[str, str]) -> None: ...

    # transactions
    def transaction(self) -> AbstractContextManager[None]:
        """Every write made by this thread inside the block commits together when it ends, or
        none does when it raises. Nests (an inner block joins the outer one). Holds the index's
        writer lock for the whole block: one writer per index, across threads and, where the
        backend can, across processes sharing the index."""
        ...

    def snapshot(self) -> AbstractContextManager[None]:
        """Reads made by this thread inside the block see one committed version of the graph
        (inside a transaction: the transaction's own view). Nests. Never waits for a writer."""
        ...

    # writes (each call is one transaction, or part of the caller's ``transaction()``)
    def write_files(
        self,
        extractions: Sequence[tuple[FileExtraction, int]],
        skipped: Sequence[FileRow] = (),
        call_targets: dict[tuple[str, int], Resolution] | None = None,
        inherit_targets: dict[tuple[str, int], Resolution] | None = None,
        import_targets: dict[tuple[str, int], str] | None = None,
        with_calls: bool = True,
    ) -> None:
        """Replace everything stored for these paths (symbols, calls, imports, inherits).

        ``extractions`` pairs each FileExtraction with its mtime_ns. Resolutions are keyed
        by (path, index in the extraction's calls / inherits / imports list); missing keys
        are stored unresolved. ``with_calls=False`` leaves the calls out; the caller adds
        them with ``insert_calls`` once they are resolved (bulk indexing)."""
        ...

    def insert_calls(self, items: Sequence[tuple[str, CallSite, Resolution]]) -> None: ...

    def restamp_files(self, stamps: Sequence[tuple[str, str, int]]) -> None:
        """(path, hash, mtime_ns) of files whose bytes are as stored (a ``touch``, a checkout
        that wrote a file back as it was): each row that still holds that hash (indexed, or
        skipped for what its bytes are) takes the new mtime_ns, so the next catch-up finds the
        file unchanged by its stat alone. Nothing else changes; a row with another hash, a
        path not stored, or an empty hash (a row skipped by its stat alone) is left as it is."""
        ...

    def delete_files(self, paths: Iterable[str]) -> None: ...
    def update_call_targets(self, updates: Sequence[tuple[int, Resolution]]) -> None: ...
    def update_inherit_targets(self, updates: Sequence[tuple[int, Resolution]]) -> None: ...
    def update_import_targets(self, updates: Sequence[tuple[int, str]]) -> None: ...

    # reads
    def files(self) -> list[FileRow]: ...
    def file(self, path: str) -> FileRow | None: ...
    def symbols_in_file(self, path: str) -> list[SymbolRow]: ...
    def all_symbols(self) -> Iterable[SymbolRow]: ...
    def symbols_by_qname(self, qname: str) -> list[SymbolRow]: ...
    def symbols_by_name(self, name: str, limit: int = 50) -> list[SymbolRow]: ...
    def symbol_by_id(self, symbol_id: int) -> SymbolRow | None: ...
    def symbol_at(self, path: str, line: int) -> SymbolRow | None:
        """Innermost non-module symbol whose range holds ``line`` (1-based)."""
        ...
    # batch reads: one call for many keys; keys without rows are absent from the answer, each
    # key's rows are in the order of the one-key read (symbols by (qname, path, start_line),
    # calls by (path, line, col, callee)); ``limit`` bounds each key's list
    def symbols_by_qnames(self, qnames: Iterable[str]) -> dict[str, list[SymbolRow]]: ...
    def files_by_paths(self, paths: Iterable[str]) -> dict[str, FileRow]: ...
    def symbols_in_files(self, paths: Iterable[str]) -> dict[str, list[SymbolRow]]:
        """Each path's symbols in ``symbols_in_file`` order."""
        ...
    def callers_many(self, qnames: Iterable[str], limit: int = 1000) -> dict[str, list[CallRow]]: ...
    def callees_many(self, callers: Iterable[str], limit: int = 1000) -> dict[str, list[CallRow]]: ...
    def subtypes_many(self, qnames: Iterable[str], limit: int = 100) -> dict[str, list[InheritRow]]: ...
    def relation_counts(self, qnames: Iterable[str], names: Iterable[str] = ()
                        ) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
        """(count_callers by qname, count_callees by qname, count_unresolved_named by name)
        for every key, 0 included: the counts of many cards in one call."""
        ...

    def search(self, text: str, limit: int, offset: int = 0) -> list[tuple[SymbolRow, float]]:
        """BM25 over names, qualified names and name terms; best first, stable ties."""
        ...
    def count_search(self, text: str) -> int: ...
    def callers(self, qname: str, limit: int = 1000) -> list[CallRow]: ...
    def count_callers(self, qname: str) -> int: ...
    def callees(self, caller: str, limit: int = 1000) -> list[CallRow]: ...
    def count_callees(self, caller: str) -> int: ...
    def unresolved_named(self, name: str, limit: int = 100) -> list[CallRow]: ...
    def count_unresolved_named(self, name: str) -> int: ...
    def calls_in_files(self, paths: Iterable[str]) -> list[CallRow]: ...
    def calls_touching(self, names: Iterable[str]) -> list[CallRow]:
        """Calls whose last segment, first segment or receiver-hint name is in ``names``."""
        ...
    def calls_by_hint_name(self, names: Iterable[str]) -> list[CallRow]:
        """Calls whose receiver-hint name is in ``names`` (a parameter hint's: the function's
        short name), in id order — the part of :meth:`calls_touching` the parameter pass reads."""
        ...
    def all_calls(self) -> Iterable[CallRow]: ...
    def imports(self, path: str | None = None) -> list[ImportRow]: ...
    def all_imports(self) -> Iterable[tuple[int, ImportRow]]: ...
    def imports_touching(self, paths: Iterable[str], names: Iterable[str],
                         modules: Iterable[str] = ()) -> list[tuple[int, ImportRow]]:
        """Import rows with their row ids, in id order: those of files in ``paths``, those
        whose name, alias, or first or last module segment (``module_keys``) is in ``names``,
        and those whose module is in ``modules``."""
        ...
    def inherits(self, path: str | None = None) -> list[InheritRow]: ...
    def all_inherits(self) -> Iterable[tuple[int, InheritRow]]: ...
    def inherits_touching(self, paths: Iterable[str], names: Iterable[str]) -> list[tuple[int, InheritRow]]:
        """Inherit rows with their row ids, in id order: those of files in ``paths`` and
        those whose base has its last or first segment (``base_keys``) in ``names``."""
        ...
    def subtypes(self, qname: str, limit: int = 100) -> list[InheritRow]: ...
    def stats(self) -> GraphStats: ...
    def dump(self) -> dict[str, list[tuple]]:
        """The whole graph as sorted tuples without row ids or timestamps: two stores with
        equal dumps hold the same graph (the incremental-equals-full test uses it)."""
        ...
