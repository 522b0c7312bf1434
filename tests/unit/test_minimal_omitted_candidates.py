"""minimalContext names the candidates it leaves out (issue 22 #2): in their ``omitted`` notes
under ``candidates``, best first, at most OMITTED_LISTED over all notes, only as many as the
budget holds, each note keeping its full count; the answer stays within the budget."""

from __future__ import annotations

from codesynapse.context.budget import Packer
from codesynapse.context.service import OMITTED_LISTED, _list_candidates
from codesynapse.graph.model import SymbolRow


def _rows(n: int) -> list[SymbolRow]:
    return [SymbolRow(id=i, path=f"pkg/m{i}.py", qname=f"pkg.m{i}.handler_{i}", name=f"handler_{i}", kind="function",
                      signature="", start_line=10 + i, end_line=12 + i, start_col=0, end_col=1, hash="", summary="",
                      parent="", is_test=False, exported=True, language="python") for i in range(n)]


def _answer(max_tokens: int, rows: list[SymbolRow]) -> dict:
    p = Packer(answer={"cards": []}, max_tokens=max_tokens)
    p.omit("candidate symbols", 4, "narrow the task or pass paths")
    p.omit("weaker candidates", 11, "name an identifier, or search the words")
    _list_candidates(p, rows, {0: {"lexical", "dense"}}, [
        ("candidate symbols", [0, 1, 2, 3]), ("weaker candidates", list(range(4, 15)))])
    return p.done()


def test_names_left_out_candidates_best_first_up_to_the_cap():
    rows = _rows(15)
    a = _answer(20_000, rows)
    notes = {n["what"]: n for n in a["omitted"]}
    assert notes["candidate symbols"]["count"] == 4 and notes["weaker candidates"]["count"] == 11
    assert notes["candidate symbols"]["candidates"][0] == {
        "qualifiedName": "pkg.m0.handler_0", "kind": "function", "path": "pkg/m0.py", "line": 10,
        "legs": ["dense", "lexical"]}
    named = [c["qualifiedName"] for n in a["omitted"] for c in n.get("candidates", [])]
    assert OMITTED_LISTED == 10
    assert named == [f"pkg.m{i}.handler_{i}" for i in range(10)]  # the 4 cut cards, then 6 weaker ones
    assert "legs" not in notes["weaker candidates"]["candidates"][0]  # no leg known: none written


def test_a_small_budget_names_fewer_and_keeps_the_counts():
    rows = _rows(15)
    a = _answer(256, rows)
    assert a["tokens"] <= 256
    notes = {n["what"]: n for n in a["omitted"]}
    assert notes["candidate symbols"]["count"] == 4 and notes["weaker candidates"]["count"] == 11
    named = [c["qualifiedName"] for n in a["omitted"] for c in n.get("candidates", [])]
    assert 0 < len(named) < OMITTED_LISTED
    assert named == [f"pkg.m{i}.handler_{i}" for i in range(len(named))]  # still best first


def test_an_omission_lists_under_its_own_name_unless_a_key_is_given():
    p = Packer(answer={}, max_tokens=2000)
    p.omit("alternatives", 2, "name the symbol", items=[{"qualifiedName": "a.b"}, {"qualifiedName": "c.d"}])
    p.omit("weaker candidates", 0, items=[{"qualifiedName": "x"}])  # no note to add to: nothing
    a = p.done()
    assert a["omitted"] == [{"what": "alternatives", "count": 2, "hint": "name the symbol",
                             "alternatives": [{"qualifiedName": "a.b"}, {"qualifiedName": "c.d"}]}]
