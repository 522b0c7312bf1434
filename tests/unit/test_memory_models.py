"""Memory request decoding and limits: every rejection names the field and the limit."""

from __future__ import annotations

import msgspec
import pytest

from codesynapse.errors import InvalidParams
from codesynapse.memory.models import (
    Entry,
    FactOut,
    LegReport,
    Legs,
    Omitted,
    RecallParams,
    RecallResult,
    decode_forget,
    decode_list,
    decode_recall,
    decode_remember,
)


def _reject(fn, params) -> InvalidParams:
    with pytest.raises(InvalidParams) as info:
        fn(params)
    return info.value


def test_remember_decodes_camel_case_with_defaults():
    p = decode_remember({
        "entities": [{"name": "net.Backoff", "aliases": ["RetryPolicy"], "type": "class"}],
        "facts": [{"subject": "ticket 412", "predicate": "blocked_by", "object": "schema",
                   "confidence": 0.5, "sourceClient": "claude-code"}],
    })
    assert p.entities[0].name == "net.Backoff"
    assert p.entities[0].aliases == ["RetryPolicy"]
    assert p.entities[0].durable is False
    assert p.facts[0].source_client == "claude-code"
    assert p.facts[0].confidence == 0.5
    assert p.facts[0].durable is False


def test_name_longer_than_256_characters_is_rejected_naming_field_and_limit():
    err = _reject(decode_remember, {"entities": [{"name": "n" * 257}]})
    assert err.field == "entities[0].name"
    assert "256" in str(err)


def test_seventeen_aliases_are_rejected():
    err = _reject(decode_remember,
                  {"entities": [{"name": "x", "aliases": [f"a{i}" for i in range(17)]}]})
    assert err.field == "entities[0].aliases"
    assert "16" in str(err)


def test_predicate_charset_is_enforced():
    err = _reject(decode_remember,
                  {"facts": [{"subject": "a", "predicate": "blocked by", "object": "b"}]})
    assert err.field == "facts[0].predicate"
    assert "[A-Za-z][A-Za-z0-9_]*" in str(err)
    err = _reject(decode_remember,
                  {"facts": [{"subject": "a", "predicate": "x" * 65, "object": "b"}]})
    assert err.field == "facts[0].predicate"
    assert "64" in str(err)


@pytest.mark.parametrize("value", [1.5, -0.1, float("nan"), float("inf")])
def test_confidence_outside_0_to_1_is_rejected(value):
    err = _reject(decode_remember, {"facts": [
        {"subject": "a", "predicate": "p", "object": "b", "confidence": value}]})
    assert err.field == "facts[0].confidence"


def test_query_limit_is_4096_utf8_bytes():
    assert decode_recall({"query": "é" * 2048}).query == "é" * 2048  # 4096 bytes
    err = _reject(decode_recall, {"query": "é" * 2049})  # 4098 bytes
    assert err.field == "query"
    assert str(err) == "query: query is 4098 bytes; the limit is 4096 bytes"


def test_recall_defaults():
    p = decode_recall({"query": "retry"})
    assert (p.limit, p.hops, p.max_facts, p.include_ids) == (8, 1, 80, False)


@pytest.mark.parametrize("field", ["tenant", "namespace", "session", "graphId", "sessionId"])
def test_scope_fields_at_top_level_are_rejected(field):
    err = _reject(decode_recall, {"query": "x", field: "other"})
    assert err.field == field


def test_scope_field_nested_in_an_entity_is_rejected():
    err = _reject(decode_remember, {"entities": [{"name": "x", "namespace": "other"}]})
    assert err.field == "entities[0]"
    assert "namespace" in str(err)


def test_control_characters_and_blank_names_are_rejected():
    assert _reject(decode_remember, {"entities": [{"name": "a\x00b"}]}).field == \
        "entities[0].name"
    assert _reject(decode_remember, {"entities": [{"name": "   "}]}).field == "entities[0].name"
    assert _reject(decode_remember, {"entities": [{"name": "a", "aliases": ["\n"]}]}).field == \
        "entities[0].aliases[0]"


def test_empty_remember_and_forget_are_rejected():
    assert _reject(decode_remember, {}).field == "entities"
    assert _reject(decode_forget, {}).field == "ids"


def test_forget_ids_must_be_server_ids():
    assert decode_forget({"ids": ["mem_" + "0" * 24, "fact_" + "a" * 24]}).ids
    err = _reject(decode_forget, {"ids": ["x' or 1=1"]})
    assert err.field == "ids[0]"


def test_list_limit_range():
    assert decode_list({}).limit == 50
    assert _reject(decode_list, {"limit": 201}).field == "limit"
    assert _reject(decode_list, {"limit": 0}).field == "limit"


def test_recall_result_json_shape_is_camel_case():
    res = RecallResult(
        entries=[Entry(name="net.Backoff", type="class", durable=True,
                       found_by=["exact", "lexical"], created_at="t0", updated_at="t1",
                       aliases=["RetryPolicy"])],
        facts=[FactOut(subject="net.Backoff", predicate="configured_in", object="cfg",
                       durable=True, hop=1, created_at="t0", updated_at="t0")],
        truncated=False,
        legs=Legs(exact=LegReport(ran=True, hits=1), lexical=LegReport(ran=True, hits=1),
                  dense=LegReport(ran=False, hits=0, reason="no embedder")),
        notice="n", tokens=5, result_bytes=20)
    assert msgspec.to_builtins(res) == {
        "entries": [{"name": "net.Backoff", "type": "class", "durable": True,
                     "foundBy": ["exact", "lexical"], "createdAt": "t0", "updatedAt": "t1",
                     "aliases": ["RetryPolicy"]}],
        # the service leaves updatedAt out when it equals createdAt (None) and confidence
        # when it is 1.0 (None); hop 1 is the default and left out
        "facts": [{"subject": "net.Backoff", "predicate": "configured_in", "object": "cfg",
                   "durable": True, "createdAt": "t0", "updatedAt": "t0"}],
        "truncated": False,
        "legs": {"exact": {"ran": True, "hits": 1},
                 "lexical": {"ran": True, "hits": 1},
                 "dense": {"ran": False, "hits": 0, "reason": "no embedder"}},
        "notice": "n", "tokens": 5, "resultBytes": 20,
    }


def test_recall_result_defaults_are_left_out():
    res = RecallResult(
        entries=[Entry(name="switchMap", found_by=["exact"], created_at="t0")],
        facts=[FactOut(subject="switchMap", predicate="cancels", object="inner", created_at="t0",
                       confidence=0.5, hop=2)],
        truncated=True, omitted=Omitted(entries=0, facts=3, how_to_get_more="lower hops"),
        legs=Legs(exact=LegReport(ran=True, hits=1), lexical=LegReport(ran=True, hits=0),
                  dense=LegReport(ran=True, hits=2, reason="milvus dense (native hybrid)"),
                  fusion="milvus-rrf-k60"),
        notice="n", hint="no memory matched", tokens=5, result_bytes=20)
    assert msgspec.to_builtins(res) == {
        "entries": [{"name": "switchMap", "foundBy": ["exact"], "createdAt": "t0"}],
        "facts": [{"subject": "switchMap", "predicate": "cancels", "object": "inner",
                   "createdAt": "t0", "confidence": 0.5, "hop": 2}],
        "truncated": True,
        "legs": {"exact": {"ran": True, "hits": 1}, "lexical": {"ran": True, "hits": 0},
                 "dense": {"ran": True, "hits": 2, "reason": "milvus dense (native hybrid)"},
                 "fusion": "milvus-rrf-k60"},
        "notice": "n",
        "omitted": {"entries": 0, "facts": 3, "anchors": 0, "howToGetMore": "lower hops"},
        "hint": "no memory matched", "tokens": 5, "resultBytes": 20,
    }


def test_recall_params_are_frozen():
    p = RecallParams(query="x")
    with pytest.raises(AttributeError):
        p.query = "y"  # type: ignore[misc]
