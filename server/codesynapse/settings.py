"""Typed, fully defaulted settings. Sources, later ones winning: defaults → environment
(``CODESYNAPSE_*``) → LSP initializationOptions / CLI flags. Bad values warn and fall back."""

from __future__ import annotations

import logging
import os
from typing import Any

import msgspec

log = logging.getLogger(__name__)


class Settings(msgspec.Struct, kw_only=True):
    tenant: str = "local"
    data_dir: str = ""  # "" → per-checkout folder under the user cache
    backend: str = "sqlite"  # sqlite | neo4j | hugegraph
    neo4j_uri: str = ""
    neo4j_user: str = "neo4j"
    neo4j_password: str = ""
    hugegraph_url: str = ""  # the Gremlin server's HTTP endpoint, http://host:8182
    hugegraph_graph: str = "hugegraph"
    hugegraph_user: str = ""
    hugegraph_password: str = ""
    milvus_uri: str = ""  # "" → embedded milvus-lite in the data folder
    workers: int = 2
    watch: bool = True  # watchfiles watcher for changes outside the editor
    debounce_ms: int = 50
    session_label: str = ""
    embedder: str = "minilm-int8"  # "none" disables the dense leg
    native_hybrid: bool = False
    symbol_vectors: bool = True  # dense leg over symbol metadata (context/dense.py); needs the embedder
    findings_diagnostics: bool = True  # SARIF findings published as diagnostics on open documents
    # unresolved call sites named like a symbol are listed (callGraph, cards, incoming calls, references)
    unresolved_candidates: bool = True


_ENV = {
    "tenant": "CODESYNAPSE_TENANT",
    "data_dir": "CODESYNAPSE_DATA_DIR",
    "backend": "CODESYNAPSE_BACKEND",
    "neo4j_uri": "CODESYNAPSE_NEO4J_URI",
    "neo4j_user": "CODESYNAPSE_NEO4J_USER",
    "neo4j_password": "CODESYNAPSE_NEO4J_PASSWORD",
    "hugegraph_url": "CODESYNAPSE_HUGEGRAPH_URL",
    "hugegraph_graph": "CODESYNAPSE_HUGEGRAPH_GRAPH",
    "hugegraph_user": "CODESYNAPSE_HUGEGRAPH_USER",
    "hugegraph_password": "CODESYNAPSE_HUGEGRAPH_PASSWORD",
    "milvus_uri": "CODESYNAPSE_MILVUS_URI",
    "workers": "CODESYNAPSE_WORKERS",
    "watch": "CODESYNAPSE_WATCH",
    "embedder": "CODESYNAPSE_EMBEDDER",
    "symbol_vectors": "CODESYNAPSE_SYMBOL_VECTORS",
}

_CHOICES = {"backend": ("sqlite", "neo4j", "hugegraph")}
_CAMEL = {"dataDir": "data_dir", "neo4jUri": "neo4j_uri", "neo4jUser": "neo4j_user", "milvusUri": "milvus_uri",
          "hugegraphUrl": "hugegraph_url", "hugegraphGraph": "hugegraph_graph", "hugegraphUser": "hugegraph_user",
          "debounceMs": "debounce_ms", "sessionLabel": "session_label", "nativeHybrid": "native_hybrid",
          "symbolVectors": "symbol_vectors", "findingsDiagnostics": "findings_diagnostics",
          "unresolvedCandidates": "unresolved_candidates"}


def _coerce(name: str, raw: Any, default: Any) -> Any:
    if isinstance(default, bool):
        if isinstance(raw, bool):
            return raw
        s = str(raw).strip().lower()
        if s in ("1", "true", "yes", "on"):
            return True
        if s in ("0", "false", "no", "off"):
            return False
        raise ValueError("expected a boolean")
    if isinstance(default, int):
        v = int(raw)
        if name == "workers" and not 1 <= v <= 64:
            raise ValueError("expected 1..64")
        if name == "debounce_ms" and not 0 <= v <= 10_000:
            raise ValueError("expected 0..10000")
        return v
    v = str(raw)
    if name in _CHOICES and v not in _CHOICES[name]:
        raise ValueError(f"expected one of {', '.join(_CHOICES[name])}")
    if name == "tenant" and not (0 < len(v) <= 128):
        raise ValueError("expected 1..128 characters")
    return v


def load_settings(overrides: dict[str, Any] | None = None, env: dict[str, str] | None = None) -> Settings:
    env = os.environ if env is None else env
    s = Settings()
    values: dict[str, Any] = {}
    for field, var in _ENV.items():
        if var in env and env[var] != "":
            values[field] = env[var]
    for k, v in (overrides or {}).items():
        values[_CAMEL.get(k, k)] = v
    for k, raw in values.items():
        if raw is None:
            continue
        if not hasattr(s, k):
            log.warning("setting %r is unknown; ignored", k)
            continue
        default = getattr(Settings(), k)
        try:
            setattr(s, k, _coerce(k, raw, default))
        except (ValueError, TypeError) as e:
            log.warning("setting %s=%r is invalid (%s); using %r", k, raw, e, default)
    return s
