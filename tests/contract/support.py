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
