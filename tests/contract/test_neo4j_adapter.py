"""What only the Neo4j adapters have: how they fail (driver errors become our errors) and
what they put in the database (constant labels and relationship types, named schema)."""

from __future__ import annotations

import time

import pytest
from codesynapse.errors import StoreError, StoreUnavailable
from codesynapse.store.neo4j.graph import Neo4jGraphStore, lucene_query, query_terms
from codesynapse.store.neo4j.memory import Neo4jMemoryStore

from tests.contract.graphdata import write_sample
from tests.contract.support import unique
from tests.contract.test_graph_store import HOSTILE

GRAPH_LABELS = {"CsFile", "CsSymbol", "CsCall", "CsImport", "CsInherit", "CsMeta", "CsCounter"}


@pytest.mark.parametrize("opener", [lambda uri: Neo4jGraphStore(uri, "g", connect_timeout=1.0),
                                    lambda uri: Neo4jMemoryStore(uri, connect_timeout=1.0)],
                         ids=["graph", "memory"])
def test_an_unreachable_server_is_store_unavailable_within_the_connect_timeout(opener):
    t = time.monotonic()
    with pytest.raises(StoreUnavailable, match="127.0.0.1:9") as err:
        opener("bolt://127.0.0.1:9")
    assert time.monotonic() - t < 20
    assert err.value.__cause__ is not None  # raise … from e


@pytest.mark.parametrize("uri", ["", "http://127.0.0.1:7687", "bolt://", "127.0.0.1:7687", "bolt://[::1"])
def test_a_bad_uri_is_a_store_error_not_unavailable(uri):
    for opener in (lambda: Neo4jGraphStore(uri, "g", connect_timeout=1.0), lambda: Neo4jMemoryStore(uri)):
        with pytest.raises(StoreError, match="URI") as err:
            opener()
        assert not isinstance(err.value, StoreUnavailable)


@pytest.fixture
def neo_store(neo4j_server, request):
    store = Neo4jGraphStore(neo4j_server.uri, unique(request, "graph"))
    yield store
    store.delete_graph()
    store.close()


@pytest.mark.neo4j
def test_only_constant_labels_and_relationship_types(neo4j_server, neo_store):
    store = neo_store
    write_sample(store)
    from codesynapse.extract.model import FileExtraction, Symbol

    for v in HOSTILE:
        store.write_files([(FileExtraction(path=v, language="python", hash="h", size=1, lines=1, module=v, symbols=[
            Symbol(qname=v, name=v, kind="function", signature=v, start_line=1, end_line=1, start_col=0, end_col=0,
                   hash=v)]), 1)])
    from neo4j import GraphDatabase

    with GraphDatabase.driver(neo4j_server.uri, auth=None) as d:
        labels = {tuple(r["l"]) for r in d.execute_query(
            "MATCH (n) WHERE n.graph_id = $g RETURN DISTINCT labels(n) AS l", g=store.graph_id).records}
        rels = {r["t"] for r in d.execute_query(
            "MATCH (n {graph_id: $g})-[r]-() RETURN DISTINCT type(r) AS t", g=store.graph_id).records}
        everything = {r["l"] for r in d.execute_query("CALL db.labels() YIELD label AS l").records}
    assert {lab for t in labels for lab in t} <= GRAPH_LABELS and all(len(t) == 1 for t in labels)
    assert rels == {"CONTAINS"}
    assert all(lab.startswith("Cs") for lab in everything), everything
    assert store.stats().symbols == 9 + len(HOSTILE)


def test_lucene_queries_are_built_from_word_tokens_only():
    assert query_terms("HTTPServer.serve_forever(self)") == [
        "httpserver", "http", "server", "serve_forever", "serve", "forever", "self"]
    assert lucene_query("a:b") == 'ft_name:"a"^4 OR ft_qname:"a"^2 OR ft_terms:"a" OR ft_name:"b"^4 OR ' \
                                  'ft_qname:"b"^2 OR ft_terms:"b"'
    assert lucene_query('"*) (*:* ~^\\') == ""
    # an operator word is just a word to look for
    assert lucene_query('"*) OR (*:*') == 'ft_name:"or"^4 OR ft_qname:"or"^2 OR ft_terms:"or"'
    assert query_terms("Café") == ["cafe"]
    words = [a + b for a in "abcdefghijklmnopqrst" for b in "abcdefghijklmnop"]  # 320 lower-case words
    assert query_terms(" ".join(words)) == words[:32]  # the first 32 word tokens, as in FTS5
