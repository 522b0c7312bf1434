"""The exact leg's order, one function for the three memory stores (issue 23): the earliest
term matched first; at one term an id or name before an alias, the session's entity before a
durable one, then by id. Records are real EntityRecords; the expected order is written out."""

from __future__ import annotations

import inspect

from codesynapse.memory import exact
from codesynapse.store.hugegraph import memory as hugegraph_store
from codesynapse.store.memory import EntityRecord
from codesynapse.store.neo4j import memory as neo4j_store
from codesynapse.store.sqlite import memory as sqlite_store


def rec(id_: str, name: str, *, aliases: tuple[str, ...] = (), session: str = "") -> EntityRecord:
    return EntityRecord(id=id_, tenant="t", namespace="n", session=session, name=name, type="", aliases=aliases, version=1,
                        created_at="2026-01-01T00:00:00Z", updated_at="2026-01-01T00:00:00Z")


def test_terms_drop_blanks_and_repeats_and_keep_their_order():
    assert exact.exact_terms(["b", "", "a", "b"]) == ["b", "a"]


def test_rank_exact_orders_by_term_then_kind_of_match_then_session_then_id():
    records = [
        rec("mem_5", "other", aliases=("cart",)),  # alias of the first term
        rec("mem_4", "total"),  # name, second term
        rec("mem_3", "cart"),  # name of the first term, durable
        rec("mem_2", "cart", session="s1"),  # the same name in the session
        rec("mem_1", "nothing"),  # matches no term
        rec("mem_0", "x", aliases=("total",)),  # alias of the second term
    ]
    ranked = exact.rank_exact(records, ["cart", "total"], limit=10)
    assert [r.id for r in ranked] == ["mem_2", "mem_3", "mem_5", "mem_4", "mem_0", "mem_1"]
    assert [r.id for r in exact.rank_exact(records, ["cart", "total"], limit=2)] == ["mem_2", "mem_3"]
    # an id is matched as a name is
    assert [r.id for r in exact.rank_exact(records, ["mem_4", "cart"], limit=1)] == ["mem_4"]


def test_every_memory_store_ranks_through_it():
    for store in (sqlite_store.SqliteMemoryStore, neo4j_store.Neo4jMemoryStore, hugegraph_store.HugeGraphMemoryStore):
        src = inspect.getsource(store.find_exact)
        assert "rank_exact(" in src and "def key(" not in src, store.__name__
