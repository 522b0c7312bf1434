"""The budget arithmetic: tokens = ceil(bytes/4) of the whole answer, a fixed point."""

from __future__ import annotations

import json
import math

import pytest

from codesynapse.context.budget import Packer, finalize, normalize_max_tokens
from codesynapse.errors import BudgetError


def _bytes(a):
    return len(json.dumps(a, ensure_ascii=False, separators=(",", ":")).encode())


def test_finalize_counts_itself():
    a = finalize({"x": "é" * 10})
    # {"x":"éééééééééé","tokens":15,"resultBytes":57}: 6 + 20 (é is 2 bytes) + 31 = 57 bytes
    assert a == {"x": "é" * 10, "tokens": 15, "resultBytes": 57}
    assert a["tokens"] == math.ceil(_bytes(a) / 4)


def test_normalize():
    assert [normalize_max_tokens(v, 1500) for v in (None, -5, 0, 255, 256, 999, 20000, 10**9)] == \
        [1500, 256, 256, 256, 256, 999, 20000, 20000]


def test_packer_never_exceeds_and_lists_omissions():
    p = Packer(answer={"subject": "s"}, max_tokens=256)
    added = sum(p.add("items", {"n": i, "pad": "x" * 40}, "items", "raise maxTokens") for i in range(100))
    a = p.done()
    assert a["tokens"] <= 256
    assert a["truncated"] is True
    assert a["omitted"] == [{"what": "items", "count": 100 - added, "hint": "raise maxTokens"}]
    assert len(a["items"]) == added and 0 < added < 100


def test_subject_over_budget_is_a_budget_error():
    with pytest.raises(BudgetError) as e:
        Packer(answer={"subject": "y" * 2000}, max_tokens=256)
    assert "maxTokens is 256" in str(e.value)


def test_default_budget_and_empty_omissions_are_not_repeated():
    # the request left maxTokens to its default and nothing was cut: neither is said
    p = Packer(answer={"subject": "s", "maxTokens": 20000}, max_tokens=20000, echo_budget=False)
    p.add("items", {"n": 1}, "items", "raise maxTokens")
    assert p.done() == {"subject": "s", "truncated": False, "items": [{"n": 1}], "tokens": 20, "resultBytes": 80}
    # the request set it: it is echoed, normalized
    p = Packer(answer={"subject": "s", "maxTokens": 256}, max_tokens=256)
    assert p.done() == {"subject": "s", "maxTokens": 256, "truncated": False, "tokens": 20, "resultBytes": 78}
    # a cut answer says the budget that cut it, even the default one
    p = Packer(answer={"subject": "s", "maxTokens": 256}, max_tokens=256, echo_budget=False)
    p.omit("items", 3, "raise maxTokens")
    assert p.done() == {"subject": "s", "maxTokens": 256, "truncated": True,
                        "omitted": [{"what": "items", "count": 3, "hint": "raise maxTokens"}],
                        "tokens": 36, "resultBytes": 142}
