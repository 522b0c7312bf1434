"""Typed, fully defaulted settings. Sources, later ones winning: defaults → environment
(``CODESYNAPSE_*``) → CLI flags (``load_settings``) → the few LSP initializationOptions a
client may set (``with_client_options``, ``CLIENT_OPTIONS``). Bad values warn and fall back:
to the default in ``load_settings``, to the server's own value for a client's option."""

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
    metrics_port: int = 0  # Prometheus text on 127.0.0.1:<port>/metrics (codesynapse/metrics.py); 0: off
    # index.memoryBudget (MB): what a full index or catch-up may hold beside its symbol table
    # (call sites held for resolution, the resolver's name cache; index/indexer.py MemoryLimits)
    memory_budget_mb: int = 1024
    # on Neo4j, a git checkout answers from the shared base graph of its HEAD plus its own local
    # overlay (store/team.py, docs/TEAM.md); off: one graph per repository identity
    team_graphs: bool = True
    team_lease_s: int = 120  # seconds: a base builder's lock lease, renewed while it builds


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
    "unresolved_candidates": "CODESYNAPSE_UNRESOLVED_CANDIDATES",
    "metrics_port": "CODESYNAPSE_METRICS_PORT",
    "memory_budget_mb": "CODESYNAPSE_MEMORY_BUDGET_MB",
    "team_graphs": "CODESYNAPSE_TEAM_GRAPHS",
    "team_lease_s": "CODESYNAPSE_TEAM_LEASE_S",
}

_CHOICES = {"backend": ("sqlite", "neo4j", "hugegraph"), "embedder": ("minilm-int8", "none", "off", "")}
_CAMEL = {"dataDir": "data_dir", "neo4jUri": "neo4j_uri", "neo4jUser": "neo4j_user", "milvusUri": "milvus_uri",
          "neo4jPassword": "neo4j_password", "hugegraphPassword": "hugegraph_password",
          "hugegraphUrl": "hugegraph_url", "hugegraphGraph": "hugegraph_graph", "hugegraphUser": "hugegraph_user",
          "debounceMs": "debounce_ms", "sessionLabel": "session_label", "nativeHybrid": "native_hybrid",
          "symbolVectors": "symbol_vectors", "findingsDiagnostics": "findings_diagnostics",
          "unresolvedCandidates": "unresolved_candidates", "metricsPort": "metrics_port",
          "memoryBudget": "memory_budget_mb", "index.memoryBudget": "memory_budget_mb"}


# The initializationOptions a client may set (package.json: ``codesynapse.initializationOptions``),
# camelCase → field. Everything else (tenant, backend and its credentials, the Milvus URI,
# symbolVectors) is the server's: set by its environment or command line only.
CLIENT_OPTIONS = {"dataDir": "data_dir", "workers": "workers", "watch": "watch", "debounceMs": "debounce_ms",
                  "embedder": "embedder", "nativeHybrid": "native_hybrid",
                  "findingsDiagnostics": "findings_diagnostics", "sessionLabel": "session_label",
                  "unresolvedCandidates": "unresolved_candidates", "metricsPort": "metrics_port"}


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
        if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
            raise ValueError("expected an integer")
        try:
            v = int(raw)
        except (TypeError, ValueError, OverflowError):
            raise ValueError("expected an integer") from None
        if name == "workers" and not 1 <= v <= 64:
            raise ValueError("expected 1..64")
        if name == "debounce_ms" and not 0 <= v <= 10_000:
            raise ValueError("expected 0..10000")
        if name == "metrics_port" and not 0 <= v <= 65_535:
            raise ValueError("expected 0 (off) or a port 1..65535")
        if name == "memory_budget_mb" and not 64 <= v <= 1_048_576:
            raise ValueError("expected 64..1048576 (MB)")
        return v
    if not isinstance(raw, str):
        raise ValueError("expected a string")
    v = raw
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


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def with_client_options(base: Settings, options: Any) -> tuple[Settings, list[str]]:
    """``base`` (the server's settings) with a client's initializationOptions applied, and
    one sentence for each option that was not: a name the client may not set (unknown, or
    the server's own) is ignored; an invalid value leaves the server's value in place.
    ``null`` leaves an option unset."""
    if options is None:
        return base, []
    if not isinstance(options, dict):
        return base, [f"initializationOptions must be an object, not {type(options).__name__}; ignored"]
    s = msgspec.structs.replace(base)
    problems = []
    for key, raw in options.items():
        field = CLIENT_OPTIONS.get(key)
        if field is None:
            own = _CAMEL.get(key, key)
            if own in _ENV and own not in CLIENT_OPTIONS.values():
                problems.append(f"setting {_short(key)} is the server's own (environment {_ENV[own]}); ignored")
            else:
                problems.append(f"setting {_short(key)} is unknown; ignored (known: {', '.join(CLIENT_OPTIONS)})")
            continue
        if raw is None:
            continue
        try:
            setattr(s, field, _coerce(field, raw, getattr(Settings(), field)))
        except ValueError as e:
            problems.append(f"setting {key}={_short(raw)} is invalid ({e}); using {getattr(base, field)!r}")
    return s, problems
