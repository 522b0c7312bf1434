"""One confidence table (issue 23): the resolver assigns the values of graph/confidence.py,
the context answers leave out exactly those values, and the extension's copy
(editor-client/src/protocol.ts DEFAULT_CONFIDENCE, which fills them back in) and
docs/PROTOCOL.md say the same numbers. The expected table is written out here, not read."""

from __future__ import annotations

import re
from pathlib import Path

from codesynapse.context import service
from codesynapse.graph import confidence
from codesynapse.index import resolve

REPO = Path(__file__).resolve().parents[2]
TABLE = {"local": 1.0, "import": 0.95, "module": 0.95, "self": 0.95, "super": 0.9, "inferred": 0.85,
         "external": 0.0, "unresolved": 0.0}


def test_the_table():
    assert dict(confidence.CONFIDENCE) == TABLE
    assert confidence.INFERRED_FROM_RESULT == 0.8


def test_the_context_answers_leave_out_the_resolvers_values():
    assert service.DEFAULT_CONFIDENCE is confidence.CONFIDENCE
    assert service.with_confidence({}, "self", 0.95) == {}
    assert service.with_confidence({}, "inferred", 0.8) == {"confidence": 0.8}
    assert service.with_confidence({}, "local", 0.95) == {"confidence": 0.95}
    assert (resolve.UNRESOLVED.confidence, resolve.EXTERNAL.confidence) == (0.0, 0.0)


def test_the_extension_fills_in_the_same_values():
    ts = (REPO / "editor-client" / "src" / "protocol.ts").read_text(encoding="utf-8")
    body = re.search(r"export const DEFAULT_CONFIDENCE[^=]*=\s*\{(.*?)\};", ts, re.DOTALL)
    assert body, "DEFAULT_CONFIDENCE not found in editor-client/src/protocol.ts"
    copy = {k: float(v) for k, v in re.findall(r"(\w+):\s*([0-9.]+)", body.group(1))}
    assert copy == TABLE


def test_the_protocol_document_says_the_same_values():
    doc = " ".join((REPO / "docs" / "PROTOCOL.md").read_text(encoding="utf-8").split())
    assert ("`local` 1.0, `import`/`module`/`self` 0.95, `super` 0.9, `inferred` 0.85, "
            "`external`/`unresolved` 0.0") in doc
