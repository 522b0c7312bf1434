"""The shallow envelope scan that lets the daemon answer a frame json cannot decode by its id,
and the InvalidParams field named for an LSP params type that does not fit."""

from __future__ import annotations

import pytest
from cattrs.errors import BaseValidationError
from codesynapse.lsp.rpc import invalid_field, shallow_envelope
from codesynapse.lsp.server import keep_dicts_converter
from lsprotocol import types


@pytest.mark.parametrize("body,expected", [
    (b'{"jsonrpc":"2.0","id":7,"method":"m","params":' + b"[" * 50_000 + b"]" * 50_000 + b"}",
     {"jsonrpc": "2.0", "id": 7, "method": "m"}),
    (b'{"params":' + b'{"a":' * 20_000 + b"1" + b"}" * 20_000 + b',"id":"late","method":"m"}',
     {"id": "late", "method": "m"}),
    # brackets and escaped quotes inside strings do not count
    (b'{"params":{"q":"]}\\"[{"},"id":"s"}', {"id": "s"}),
    # broken after the id: what came before it is read
    (b'{"jsonrpc":"2.0","id":"b","method":"m","params":{"q":', {"jsonrpc": "2.0", "id": "b", "method": "m"}),
    (b"not json", {}),
    (b"[1,2]", {}),
    (b"", {}),
    (b"\xff\xfe{", {}),
    (b'  {  "id" : 3 , "x" : [1, [2]] }', {"id": 3}),
])
def test_shallow_envelope_reads_the_scalar_members_without_recursion(body, expected):
    got = shallow_envelope(body)
    assert {k: v for k, v in got.items() if k in expected} == expected
    assert "params" not in got  # nested values are skipped, never decoded


def _fields(params):
    conv = keep_dicts_converter()
    try:
        conv.structure({"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover", "params": params},
                       types.HoverRequest)
    except BaseValidationError as e:
        return invalid_field(e)
    raise AssertionError("structured")


@pytest.mark.parametrize("params,field", [
    ({"textDocument": {"uri": "file:///a.py"}, "position": {"line": -1, "character": 0}}, "position.line"),
    ({"textDocument": {"uri": "file:///a.py"}, "position": {"line": 0, "character": 2**31}}, "position.character"),
    ({"textDocument": {"uri": "file:///a.py"}}, "position"),
    ({"textDocument": {}, "position": {"line": 0, "character": 0}}, "textDocument.uri"),
    (None, "params"),
    (7, "params"),
])
def test_invalid_field_names_the_field_as_the_client_spells_it(params, field):
    got, message = _fields(params)
    assert got == field
    assert message.startswith(field + ": ") and len(message) < 400


def test_invalid_field_never_quotes_a_huge_value():
    got, message = _fields({"textDocument": {"uri": "file:///a.py"},
                            "position": {"line": 10**400, "character": 0}})
    assert got == "position.line" and len(message) < 400
