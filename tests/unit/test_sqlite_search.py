"""The SQLite graph's name search (``search``: workspace symbols, the suggestions of a name not
found) on a graph where its words are common: past ``SEARCH_POOL`` matches it ranks the
symbols holding every word first, then those of its rarest words, instead of every match
(on the kernel a missing name's suggestions ranked ~26,000 rows: 150 ms a request)."""

from __future__ import annotations

import pytest

from codesynapse.extract.model import FileExtraction, Symbol
from codesynapse.store.sqlite import graph as sqlite_graph
from codesynapse.store.sqlite.graph import SqliteGraphStore


def _fx(path: str, names: list[str]) -> FileExtraction:
    module = path.rsplit(".", 1)[0]
    syms = [Symbol(qname=f"{module}.{n}", name=n, kind="function", signature="", start_line=i + 1,
                   end_line=i + 1, start_col=0, end_col=1, hash=f"h{i}") for i, n in enumerate(names)]
    return FileExtraction(path=path, language="c", hash=path, size=10, lines=len(names), module=module,
                          symbols=syms)


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite_graph, "SEARCH_POOL", 40)  # the rule at a test's size
    s = SqliteGraphStore(tmp_path / "graph.db", "a" * 16)
    # 30 "usb" names, 30 "probe" names, 3 holding both, one "nocall"
    names = [f"usb_reset_{i}" for i in range(30)] + [f"pci_probe_{i}" for i in range(30)] + \
        ["usb_probe", "usb_probe_port", "probe_usb_hub", "schedule_nocall"]
    s.write_files([(_fx("drivers.c", names), 1)])
    yield s
    s.close()


def _names(rows):
    return [r.name for r, _ in rows]


def test_words_under_the_pool_rank_every_match_or_ed(store):
    got = _names(store.search("nocall probe", 50))  # 1 + 33 matches: under the pool
    assert got[0] == "schedule_nocall"
    assert len(got) == 34


def test_common_words_rank_the_symbols_holding_every_word_first(store):
    got = _names(store.search("usb probe", 5))  # 33 + 33 matches: over the pool
    assert sorted(got[:3]) == ["probe_usb_hub", "usb_probe", "usb_probe_port"]
    assert len(got) == 5  # then matches of the rarest word


def test_a_missing_name_is_suggested_through_its_rarest_words(store):
    got = _names(store.search("_cs_probe_usb_nocall_x", 5))
    assert "schedule_nocall" in got
    assert len(got) == 5
    # the pool: "nocall" (1), then "probe" (33); "usb" (33 more) is left out
    assert not any(n.startswith("usb_reset") for n in got)


def test_one_common_word_still_ranks_all_of_it(store):
    assert len(store.search("probe", 100)) == 33


def test_paging_over_the_bounded_search_is_consistent(store):
    whole = _names(store.search("usb probe", 10))
    assert _names(store.search("usb probe", 5, offset=5)) == whole[5:10]


def test_what_the_bounded_search_ranks(store):
    """The rows ranked stay within the pool: every word AND-ed, then the rarest words while
    their matches fit ("usb": 33), not "probe" (33 more) nor "pci" (40)."""
    for i in range(10):  # 40 "pci" names in all
        store.write_files([(_fx(f"pci{i}.c", [f"pci_enable_{i}"]), 1)])
    seen: list[str] = []
    real = store._q

    def spy(sql, params=()):
        if "MATCH" in sql and "fts_vocab" not in sql:
            seen.append(params[0])
        return real(sql, params)

    store._q = spy
    got = _names(store.search("pci usb probe", 8))
    assert seen == ['"pci" AND "usb" AND "probe"', '"usb"']
    assert len(got) == 8 and all("usb" in n for n in got)
