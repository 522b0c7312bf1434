"""Vertex ids of the HugeGraph stores: one module that the graph adapter, its dependency
mixin and the memory store all import (the mixin imported it from the adapter that mixes it
in, a cycle)."""

from __future__ import annotations

import hashlib


def vertex_id(kind: str, *parts: str) -> str:
    """A deterministic vertex id (HugeGraph ids are at most 128 bytes; keys are not)."""
    digest = hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:40]
    return f"{kind}:{digest}"
