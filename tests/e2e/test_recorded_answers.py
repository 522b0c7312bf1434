"""The answers the extension's unit tests use as fakes (editor-client/test/unit/fixtures) are
the server's: scripts/record_answers.py records them again from a real server over LSP into a
temporary folder, and each checked-in answer must have the same shape (every key path with
the type of its value; list elements merged). A server change that adds, drops or retypes a
field fails here until the recordings are made again (`python scripts/record_answers.py`), so
the TypeScript tests never run on answers the server no longer sends."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
CHECKED_IN = REPO / "editor-client" / "test" / "unit" / "fixtures"


def _recorder():
    spec = importlib.util.spec_from_file_location("record_answers", REPO / "scripts" / "record_answers.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def shape(value: Any, path: str = "$") -> set[str]:
    """``{"a": [{"b": 1}, {"b": "x"}]}`` -> {'$: object', '$.a: list', '$.a[]: object',
    '$.a[].b: number', '$.a[].b: str'}."""
    if isinstance(value, dict):
        out = {f"{path}: object"}
        for k, v in value.items():
            out |= shape(v, f"{path}.{k}")
        return out
    if isinstance(value, list):
        out = {f"{path}: list"}
        for v in value:
            out |= shape(v, f"{path}[]")
        return out
    if isinstance(value, bool):
        return {f"{path}: bool"}
    if isinstance(value, (int, float)):
        return {f"{path}: number"}
    if value is None:
        return {f"{path}: null"}
    return {f"{path}: str"}


def test_shape_names_every_key_path_and_type():
    assert shape({"a": [{"b": 1}, {"b": "x", "c": None}], "d": True, "e": 0.5}) == {
        "$: object", "$.a: list", "$.a[]: object", "$.a[].b: number", "$.a[].b: str", "$.a[].c: null",
        "$.d: bool", "$.e: number"}


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("answers")
    _recorder().record(out)
    return out


def test_every_recorded_answer_is_checked_in(fresh: Path):
    made = sorted(p.name for p in fresh.iterdir())
    assert "symbolCard.json" in made and "recall.json" in made and "hover.md" in made
    missing = [n for n in made if not (CHECKED_IN / n).exists()]
    assert not missing, f"not checked in (run scripts/record_answers.py): {missing}"


@pytest.mark.parametrize("name", [m[0] for m in _recorder().REQUESTS] + ["prContext"])
def test_checked_in_answer_has_the_servers_shape(fresh: Path, name: str):
    server = json.loads((fresh / f"{name}.json").read_text(encoding="utf-8"))
    recorded = json.loads((CHECKED_IN / f"{name}.json").read_text(encoding="utf-8"))
    new, gone = sorted(shape(server) - shape(recorded)), sorted(shape(recorded) - shape(server))
    assert not new and not gone, (
        f"{name}.json is not the server's answer any more (run scripts/record_answers.py and update the "
        f"vitest expectations): the server sends {new}, the recording has {gone}")


def test_checked_in_hover_is_the_servers(fresh: Path):
    """Markdown has no keys to compare: the hover of Cart.total is the server's, line by line."""
    server = (fresh / "hover.md").read_text(encoding="utf-8")
    assert server.startswith("**shop.cart.Cart.total** · method")
    assert server == (CHECKED_IN / "hover.md").read_text(encoding="utf-8"), "run scripts/record_answers.py"
