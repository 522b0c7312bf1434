"""The language-server accuracy report (bench/accuracy_lsp.py): one language's result is
recorded in accuracy-lsp.json and the ACCURACY.md section after the marker is re-rendered,
the hand-off part before it kept."""

from __future__ import annotations

import json

from codesynapse.bench.accuracy_lsp import SECTION, write_docs


def _result(lang, tp, fp, fn):
    return {"language": lang, "corpus": "/x", "corpusName": "corpus-" + lang, "oracle": "srv", "targets": 2,
            "errors": 0, "excludedDispatch": 3,
            "micro": {"tp": tp, "fp": fp, "fn": fn, "precision": tp / (tp + fp), "recall": tp / (tp + fn)},
            "rows": [{"symbol": "a.f", "tp": tp, "fp": fp, "fn": fn, "misses": ["b.go:3"],
                      "falsePositives": ["c.go:9"], "excludedDispatch": []}]}


def test_write_docs_keeps_the_python_part_and_one_row_per_language(tmp_path):
    (tmp_path / "ACCURACY.md").write_text("# Call-graph accuracy\n\npython part\n")
    write_docs(tmp_path, _result("go", 97, 3, 7))
    write_docs(tmp_path, _result("typescript", 9, 1, 1))
    write_docs(tmp_path, _result("go", 98, 2, 7))  # a re-run replaces its language's row
    md = (tmp_path / "ACCURACY.md").read_text()
    assert md.startswith("# Call-graph accuracy\n\npython part\n\n" + SECTION)
    assert md.count(SECTION) == 1
    assert "| go | corpus-go | gopls `callHierarchy/incomingCalls` | 2 (0 errors) | 98 | 2 | 7 | 0.980 | 0.933 | 3 |" in md
    assert "| typescript | corpus-typescript |" in md and "| 9 | 1 | 1 | 0.900 | 0.900 | 3 |" in md
    assert "- `a.f` ← `b.go:3`" in md and "- `a.f` ← `c.go:9`" in md
    assert sorted(json.loads((tmp_path / "accuracy-lsp.json").read_text())) == ["go", "typescript"]
