"""index.memoryBudget (issue 24 #1): a full index and a catch-up hold a bounded amount beside
the symbol table. The stored calls, imports and symbols are read a few files at a time, the
call sites held back for resolution and the resolver's name cache are capped by the budget,
and none of that changes a single stored edge."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from codesynapse.index import indexer as indexer_mod
from codesynapse.index.indexer import Indexer, MemoryLimits
from codesynapse.settings import load_settings
from codesynapse.store.sqlite.graph import SqliteGraphStore

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REPOS = ("python_repo", "c_repo", "go_repo", "ts_repo", "java_repo", "rust_repo")


class CountingStore(SqliteGraphStore):
    """The real SQLite store, noting how many paths each bulk read asked for."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.reads: list[tuple[str, int]] = []

    def calls_in_files(self, paths):
        paths = list(paths)
        self.reads.append(("calls_in_files", len(paths)))
        return super().calls_in_files(paths)

    def symbols_in_files(self, paths):
        paths = list(paths)
        self.reads.append(("symbols_in_files", len(paths)))
        return super().symbols_in_files(paths)

    def imports_touching(self, paths, names, modules=()):
        paths = list(paths)
        self.reads.append(("imports_touching", len(paths)))
        return super().imports_touching(paths, names, modules)

    def all_symbols(self):
        self.reads.append(("all_symbols", -1))
        return super().all_symbols()

    def symbol_table_rows(self):
        n = 0
        for row in super().symbol_table_rows():  # counts the files as they stream by
            n += 1
            yield row
        self.reads.append(("symbol_table_rows", n))

    def all_imports(self):
        self.reads.append(("all_imports", -1))
        return super().all_imports()

    def imports(self, path=None):
        if path is None:
            self.reads.append(("imports", -1))
        return super().imports(path)


def _index(root: Path, db: Path, store_cls=SqliteGraphStore, limits: MemoryLimits | None = None, **kw):
    store = store_cls(db, "g")
    ix = Indexer(root, store, None, workers=1, **kw)
    if limits is not None:
        ix.limits = limits
        ix.index.cache_limit = limits.qname_cache
    ix.index_tree()
    return store, ix


def test_budget_setting_and_limits():
    assert load_settings({}).memory_budget_mb == 1024
    assert load_settings({"index.memoryBudget": 256}).memory_budget_mb == 256
    assert load_settings({}, env={"CODESYNAPSE_MEMORY_BUDGET_MB": "2048"}).memory_budget_mb == 2048
    assert load_settings({"memoryBudget": 10}).memory_budget_mb == 1024  # below 64 MB: the default
    small, default = MemoryLimits.of(128), MemoryLimits.of(1024)
    # 15% of 128 MB at 300 B a call site, 15% at 200 B a cache entry
    assert small.deferred_calls == 64_000 and small.qname_cache == 96_000
    assert default.deferred_calls == 512_000 and default.qname_cache == 768_000
    assert Indexer(Path("."), None, memory_budget_mb=128).limits == small  # type: ignore[arg-type]


@pytest.mark.parametrize("repo", REPOS)
def test_tiny_limits_store_the_same_graph(tmp_path: Path, repo: str, monkeypatch: pytest.MonkeyPatch):
    """No call held back (all written unresolved, then resolved from the store a file at a
    time) and a name cache of 2 entries: every row as with the default budget."""
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / repo, root)
    ref, _ = _index(root, tmp_path / "ref.db")
    monkeypatch.setattr(indexer_mod, "STREAM_FILES", 1)
    tiny, ix = _index(root, tmp_path / "tiny.db", CountingStore, MemoryLimits(deferred_calls=0, qname_cache=2))
    assert tiny.dump() == ref.dump()
    assert len(ix.index._cache) <= 2 + 16  # the cap plus one lookup's recursion
    assert ref.stats().resolved_calls > 0


def test_full_index_and_reload_read_a_few_files_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "python_repo", root)
    monkeypatch.setattr(indexer_mod, "STREAM_FILES", 2)
    store, first = _index(root, tmp_path / "g.db", CountingStore, MemoryLimits(deferred_calls=0, qname_cache=100))
    files = len([f for f in store.files() if f.status != "skipped"])
    assert files > 4
    reads = store.reads
    # every stored call was resolved from reads of at most 2 files; no whole-table import read
    assert [n for name, n in reads if name == "calls_in_files"] and \
        max(n for name, n in reads if name == "calls_in_files") <= 2
    assert max(n for name, n in reads if name == "imports_touching") <= 2
    assert not [name for name, _ in reads if name in ("all_imports", "all_symbols", "imports")]
    # a reopened index (catch-up, daemon start) builds its symbol table from one streamed,
    # path-ordered read (symbol_table_rows: a file's rows at a time), no whole-table list
    store.reads.clear()
    again = Indexer(root, store, None, workers=1)
    again.load()
    assert [name for name, _ in store.reads if name in ("all_symbols", "imports", "symbols_in_files")] == []
    assert [n for name, n in store.reads if name == "symbol_table_rows"] == [files]
    # and resolves exactly as the index that wrote it
    assert set(again.index.files) == set(first.index.files)
    report = again.index_tree()
    assert report.parsed == 0


@pytest.mark.parametrize("repo", REPOS)
def test_the_streamed_symbol_table_equals_the_one_read_file_by_file(tmp_path: Path, repo: str):
    """symbol_table_rows (a catch-up's and a daemon start's read) gives every indexed file
    with the symbols and imports the per-file reads give, in the order the table is built
    in; the symbol tables built from it and from the per-file reads are the same."""
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / repo, root)
    store, ix = _index(root, tmp_path / "g.db")
    streamed = list(store.symbol_table_rows())
    indexed = [f for f in store.files() if f.status != "skipped"]
    assert [f.path for f, _, _ in streamed] == [f.path for f in indexed] and streamed
    per_file = store.symbols_in_files([f.path for f in indexed])
    for f, syms, refs in streamed:
        want = sorted(per_file.get(f.path, ()), key=lambda s: (s.qname, s.start_line, s.start_col))
        assert syms == [(s.qname, s.kind, s.parent, s.signature) for s in want]
        assert [(r.module, r.name, r.alias, r.line) for r in refs] == \
            [(im.module, im.name, im.alias, im.line) for im in store.imports(f.path)]
    again = Indexer(root, store, None, workers=1)
    again.load()
    assert again.index.kinds == ix.index.kinds and again.index.parents == ix.index.parents
    # (a file's symbols in any order: the indexer adds them in source order, a load by name)
    assert {p: (fi.module, fi.bindings, fi.alternatives, fi.stars, set(fi.symbols), fi.results, fi.fields)
            for p, fi in again.index.files.items()} == \
        {p: (fi.module, fi.bindings, fi.alternatives, fi.stars, set(fi.symbols), fi.results, fi.fields)
         for p, fi in ix.index.files.items()}
