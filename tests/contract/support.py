"""Helpers shared by the contract tests (importable, unlike conftest)."""

from __future__ import annotations

import hashlib
import itertools

import pytest

BACKENDS = [pytest.param("sqlite", id="sqlite"), pytest.param("neo4j", id="neo4j", marks=pytest.mark.neo4j),
            pytest.param("hugegraph", id="hugegraph", marks=pytest.mark.hugegraph)]
VECTOR_BACKENDS = [pytest.param("lite", id="milvus-lite-file"), pytest.param("server", id="milvus-server")]

_seq = itertools.count(1)


def unique(request: pytest.FixtureRequest, label: str = "") -> str:
    """A short id unique to this test (and call), usable as graph id or namespace suffix."""
    h = hashlib.sha256(f"{request.node.nodeid}|{label}|{next(_seq)}".encode()).hexdigest()[:12]
    return f"t{h}"


def signature_differences(port: type, store: object) -> list[str]:
    """Every public method of the Protocol ``port`` that ``store`` lacks or declares with other
    parameters (names, kinds, defaults, in order): ``isinstance`` on a runtime-checkable
    Protocol only checks that the names exist."""
    import inspect

    out = []
    for name, want in vars(port).items():
        if name.startswith("_") or not inspect.isfunction(want):
            continue
        have = getattr(type(store), name, None)
        if have is None:
            out.append(f"{name}: missing")
            continue
        if isinstance(have, property) or not callable(have):
            continue
        p_want, p_have = _params(want), _params(have)
        if p_want != p_have:
            out.append(f"{name}: port ({', '.join(p_want)}) != store ({', '.join(p_have)})")
    return out


def _params(f) -> list[str]:
    """``(self, a, b=1, *, c)`` -> ['a', 'b=1', '*', 'c']: names, defaults and kinds."""
    import inspect

    out: list[str] = []
    for p in list(inspect.signature(f).parameters.values())[1:]:
        if p.kind is p.KEYWORD_ONLY and "*" not in out and not any(x.startswith("*") for x in out):
            out.append("*")
        prefix = "*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else ""
        out.append(prefix + p.name + ("" if p.default is p.empty else f"={p.default!r}"))
    return out
