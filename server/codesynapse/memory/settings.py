"""Memory settings: the typed ``MemorySettings`` and ``settings_from_dict``, which fills them
from user settings, warning on and replacing bad values."""

from __future__ import annotations

import functools
import logging
import re
from typing import Any

import msgspec

log = logging.getLogger(__name__)


class MemorySettings(msgspec.Struct, frozen=True, kw_only=True):
    """Memory settings; ``settings_from_dict`` fills them from user settings, warning on
    and replacing bad values."""

    vectors: str = "lite"  # "lite" | "server" | "off"
    milvus_uri: str = ""
    milvus_token: str = ""
    embedder: str = "default"  # "default" | "custom" | "off"
    model_name: str = "custom-model"
    model_file: str = ""
    tokenizer_dir: str = ""
    model_dim: int = 384
    model_pooling: str = "mean"
    model_normalize: bool = True
    embed_threads: int = 1
    native_hybrid: bool = False
    vector_timeout_s: float = 2.0
    recall_deadline_s: float = 10.0
    dense_min_score: float = 0.25  # cosine; weaker dense hits are not evidence
    index_type: str = "FLAT"
    redact_patterns: tuple[str, ...] = ()
    graph_store: str = "sqlite"  # where entities and facts live: "sqlite" | "neo4j" | "hugegraph"
    neo4j_uri: str = ""
    neo4j_user: str = "neo4j"
    neo4j_password: str = ""
    hugegraph_url: str = ""
    hugegraph_graph: str = "hugegraph"
    hugegraph_user: str = ""
    hugegraph_password: str = ""


_CHOICES = {"graph_store": {"sqlite", "neo4j", "hugegraph"}, "vectors": {"lite", "server", "off"}, "embedder": {"default", "custom", "off"},
            "model_pooling": {"mean", "cls"}, "index_type": {"FLAT", "HNSW", "AUTOINDEX"}}
_RANGES = {"vector_timeout_s": (0.0, 10.0), "recall_deadline_s": (0.1, 60.0),
           "dense_min_score": (-1.0, 1.0),
           "model_dim": (1, 8192), "embed_threads": (1, 64)}


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


@functools.cache
def _field_names() -> frozenset[str]:
    """MemorySettings' field names (msgspec evaluates the class's annotations each time it is
    asked: ~1 ms, paid by every request that looks for the memory store)."""
    return frozenset(f.name for f in msgspec.structs.fields(MemorySettings))


def settings_from_dict(raw: dict[str, Any] | None) -> MemorySettings:
    """Typed settings from a plain dict (snake_case or camelCase keys, optionally under a
    ``memory`` key). Unknown keys and invalid values are logged and ignored."""
    if not raw:
        return MemorySettings()
    if isinstance(raw.get("memory"), dict):
        raw = raw["memory"]
    defaults = MemorySettings()
    fields = _field_names()
    values: dict[str, Any] = {}
    for key, value in raw.items():
        name = _snake(str(key))
        if name not in fields:
            log.warning("memory setting %r is unknown; ignored", key)
            continue
        if name == "redact_patterns" and isinstance(value, (list, tuple)):
            value = [getattr(x, "pattern", x) for x in value]  # compiled (a policy's) or written out
        try:
            conv = msgspec.convert({name: value}, MemorySettings)
            v = getattr(conv, name)
        except msgspec.ValidationError as e:
            log.warning("memory setting %r: %s; using %r", key, e, getattr(defaults, name))
            continue
        if name in _CHOICES and v not in _CHOICES[name]:
            log.warning("memory setting %r must be one of %s; using %r", key,
                        sorted(_CHOICES[name]), getattr(defaults, name))
            continue
        if name in _RANGES:
            lo, hi = _RANGES[name]
            if not (lo <= v <= hi):
                log.warning("memory setting %r must be within %s..%s; using %r", key, lo, hi,
                            getattr(defaults, name))
                continue
        values[name] = v
    return msgspec.structs.replace(defaults, **values)
