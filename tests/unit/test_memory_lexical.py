"""Identifier tokenizer, in-process BM25 and reciprocal-rank fusion."""

from __future__ import annotations

import pytest

from codesynapse.memory.lexical import LexicalIndex, entity_texts, tokenize
from codesynapse.memory.rrf import rrf
from codesynapse.memory.service import exact_terms


@pytest.mark.parametrize(("text", "tokens"), [
    ("net.Backoff", ["net.backoff", "net", "backoff"]),
    ("HTTPServerError", ["httpservererror", "http", "server", "error"]),
    ("retry_policy", ["retry_policy", "retry", "policy"]),
    ("`ticket-412`?", ["ticket-412", "ticket", "412"]),
    ("parseJSON2Yaml", ["parsejson2yaml", "parse", "json", "2", "yaml"]),
    ("Rückversicherung", ["rückversicherung"]),
    ("plain", ["plain"]),
    ("where is net.Backoff.", ["where", "is", "net.backoff", "net", "backoff"]),
    ("", []),
])
def test_tokenize(text, tokens):
    assert tokenize(text) == tokens


def test_bm25_score_matches_the_formula():
    idx = LexicalIndex()
    idx.upsert("a", 1, ["alpha"])
    idx.upsert("b", 1, ["beta"])
    (hit,) = idx.search("alpha")
    # N=2, df=1: idf = ln(1 + 1.5/1.5) = ln 2; tf=1, dl=avgdl=1: tf part = 2.2/2.2 = 1
    assert hit.doc_id == "a"
    assert hit.score == pytest.approx(0.693147, abs=1e-6)
    assert hit.version == 1


def test_exact_identifier_outranks_shared_parts():
    idx = LexicalIndex()
    idx.upsert("backoff", 1, entity_texts("net.Backoff", ["RetryPolicy"], "class"))
    idx.upsert("netconf", 1, entity_texts("net.Config", [], "class"))
    idx.upsert("other", 1, entity_texts("Backoff", [], ""))
    ids = [h.doc_id for h in idx.search("net.Backoff")]
    assert ids == ["backoff", "other", "netconf"]
    assert [h.doc_id for h in idx.search("retry policy")] == ["backoff"]


def test_remove_and_upsert_replace_postings():
    idx = LexicalIndex()
    idx.upsert("e1", 1, ["RetryPolicy"])
    assert [h.doc_id for h in idx.search("RetryPolicy")] == ["e1"]
    idx.upsert("e1", 2, ["Other"])
    assert idx.search("RetryPolicy") == []
    assert idx.version_of("e1") == 2
    idx.remove("e1")
    assert idx.search("Other") == []
    assert len(idx) == 0


def test_ties_are_ordered_by_id_and_limit_applies():
    idx = LexicalIndex()
    for i in (3, 1, 2):
        idx.upsert(f"d{i}", 1, ["same"])
    assert [h.doc_id for h in idx.search("same", limit=2)] == ["d1", "d2"]


def test_rrf_k60_scores():
    fused = rrf([["a", "b", "c"], ["c", "a"]])
    assert [d for d, _ in fused] == ["a", "c", "b"]
    scores = dict(fused)
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["b"] == pytest.approx(1 / 62)


def test_rrf_ties_keep_leg_order_and_ignore_duplicates():
    assert rrf([["x"], ["y"]]) == [("x", 1 / 61), ("y", 1 / 61)]
    assert rrf([["x", "x", "z"]]) == [("x", 1 / 61), ("z", 1 / 63)]
    assert rrf([[], []]) == []


def test_exact_terms_keep_punctuation_inside_identifiers():
    assert exact_terms("where does `net.Backoff` live?") == [
        "where does `net.Backoff` live?", "where", "does", "net.Backoff", "`net.Backoff`",
        "live", "live?"]
