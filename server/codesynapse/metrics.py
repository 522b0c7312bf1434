"""Opt-in Prometheus metrics of the daemon, on 127.0.0.1 (setting ``metrics.port``;
``metricsPort`` in initializationOptions, ``CODESYNAPSE_METRICS_PORT``; 0, the default, is off).

One endpoint per process (the shared daemon serves every workspace and session from one):
the text format of ``prometheus_client`` on its own registry. Labels are bounded and carry no
session id, tenant, path or query text: ``method`` is a name from the static method table
(anything else is ``other``), ``kind`` an error kind, ``outcome`` ok/error, ``baseline`` a/b.
Index and store figures are summed over the open workspaces (the oldest lag, the sum of the
rest), so no workspace is named either.

* ``codesynapse_requests_total{method,outcome}``, ``codesynapse_request_seconds{method}``
  (histogram), ``codesynapse_errors_total{method,kind}``, ``codesynapse_deadline_hits_total{method}``
* ``codesynapse_tokens_returned_total{method}``, ``codesynapse_tokens_raw_total{method,baseline}``,
  ``codesynapse_tokens_avoided_total{method,baseline}`` (per answer, raw − returned when above 0),
  ``codesynapse_cache_hit_tokens_total{method}`` (the ledger's counts)
* gauges read at scrape time: ``codesynapse_index_freshness_lag_seconds``,
  ``codesynapse_index_pending_files``, ``codesynapse_store_files``, ``codesynapse_store_symbols``,
  ``codesynapse_store_edges``, ``codesynapse_store_bytes``, ``codesynapse_embedding_backlog``
  (symbol vectors of the dense leg not computed yet), ``codesynapse_workspaces``.

A port that cannot be bound (in use, not allowed) is a warning for the user; the daemon
keeps running without metrics.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
import weakref
from typing import Any

log = logging.getLogger(__name__)

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
ERROR_KINDS = ("InvalidParams", "BudgetError", "DeadlineExceeded", "RequestFailed", "internal")

_lock = threading.Lock()
_metrics: _Metrics | None = None


_METHOD_NAME = re.compile(r"codesynapse/[A-Za-z]+(?:/[A-Za-z]+)?")


def _method_label(method: str) -> str:
    """The callers pass the name of a row of the static method table (an unknown name is
    refused before); anything else is ``other``, so no free text becomes a label."""
    return method if len(method) <= 64 and _METHOD_NAME.fullmatch(method) else "other"


def _kind_label(e: BaseException) -> str:
    from codesynapse.errors import (
        BudgetError,
        CodeSynapseError,
        DeadlineExceeded,
        InvalidParams,
    )

    if isinstance(e, InvalidParams):
        return "InvalidParams"
    if isinstance(e, BudgetError):
        return "BudgetError"
    if isinstance(e, DeadlineExceeded):
        return "DeadlineExceeded"
    if isinstance(e, CodeSynapseError):
        return "RequestFailed"
    return "internal"


class _Workspaces:
    """A collector of the gauges, read from the open Apps at scrape time."""

    def __init__(self) -> None:
        self.apps: weakref.WeakSet = weakref.WeakSet()

    def describe(self):
        return []

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        lag = pending = files = symbols = edges = size = backlog = 0.0
        n = 0
        now = time.time()
        for app in list(self.apps):
            try:
                if app._closing.is_set():
                    continue
                n += 1
                state, _err, _fail, p = app.index_state.snapshot()
                pending += p
                last = app.last_update
                if (p or state == "indexing") and last:
                    lag = max(lag, now - last)
                st = app._stats()
                files += st.files
                symbols += st.symbols
                edges += st.resolved_calls + st.imports + st.inherits
                db = app.workspace.db_path
                if app.settings.backend == "sqlite" and os.path.exists(db):
                    size += os.path.getsize(db) + sum(os.path.getsize(f"{db}{x}") for x in ("-wal",)
                                                      if os.path.exists(f"{db}{x}"))
                sv = app.symbol_vectors.status() if app.symbol_vectors is not None else None
                if sv:
                    backlog += max(0, int(sv.get("total", 0)) - int(sv.get("embedded", 0)))
            except Exception:  # a workspace that cannot be read now is left out of this scrape
                log.debug("metrics: a workspace could not be read", exc_info=True)
        for name, value, doc in (
            ("codesynapse_workspaces", n, "open workspaces"),
            ("codesynapse_index_freshness_lag_seconds", lag,
             "seconds since the index was last brought up to date, while changes are pending (0 when current)"),
            ("codesynapse_index_pending_files", pending, "changed files waiting to be indexed"),
            ("codesynapse_store_files", files, "files in the code graph"),
            ("codesynapse_store_symbols", symbols, "symbols in the code graph"),
            ("codesynapse_store_edges", edges, "resolved calls, imports and inheritance edges"),
            ("codesynapse_store_bytes", size, "bytes of the SQLite graph store on disk (0 for server backends)"),
            ("codesynapse_embedding_backlog", backlog, "symbol vectors of the dense leg not computed yet"),
        ):
            yield GaugeMetricFamily(name, doc, value=value)


class _Metrics:
    def __init__(self, port: int):
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.port = port
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter("codesynapse_requests", "custom requests answered", ["method", "outcome"], registry=r)
        self.latency = Histogram("codesynapse_request_seconds", "time to answer a custom request", ["method"],
                                 buckets=BUCKETS, registry=r)
        self.errors = Counter("codesynapse_errors", "custom requests answered with an error", ["method", "kind"],
                              registry=r)
        self.deadline = Counter("codesynapse_deadline_hits", "requests answered with the deadline error",
                                ["method"], registry=r)
        self.returned = Counter("codesynapse_tokens_returned", "tokens of the answers (bytes/4)", ["method"],
                                registry=r)
        self.avoided = Counter("codesynapse_tokens_avoided",
                               "raw-context tokens (baseline a or b) minus tokens returned, answers with a raw "
                               "estimate only", ["method", "baseline"], registry=r)
        self.raw = Counter("codesynapse_tokens_raw", "raw-context tokens of the answers (baseline a or b)",
                           ["method", "baseline"], registry=r)
        self.cache_hit = Counter("codesynapse_cache_hit_tokens",
                                 "tokens of cards and sites a session had already received", ["method"], registry=r)
        self.workspaces = _Workspaces()
        r.register(self.workspaces)
        self.server = None


def start(port: int, app: Any = None) -> str | None:
    """Serve the metrics on 127.0.0.1:``port`` (once a process) and read ``app``'s gauges.
    Returns a sentence for the user when the endpoint cannot be served, else None."""
    global _metrics
    if not port:
        return None
    with _lock:
        m = _metrics
        if m is None:
            from prometheus_client import start_http_server

            m = _Metrics(port)
            try:
                m.server = start_http_server(port, addr="127.0.0.1", registry=m.registry)
            except OSError as e:
                log.warning("metrics: port %d on 127.0.0.1 cannot be used (%s); running without metrics", port,
                            e.strerror or e)
                return (f"metrics.port {port}: the port cannot be used on 127.0.0.1 ({e.strerror or e}); "
                        "CodeSynapse runs without metrics")
            _metrics = m
            log.info("metrics: Prometheus text format on http://127.0.0.1:%d/metrics", port)
        if app is not None:
            m.workspaces.apps.add(app)
        if m.port != port:
            return f"metrics.port {port}: this daemon already serves metrics on port {m.port}"
    return None


def stop() -> None:
    """Close the endpoint (tests; the process' end closes it otherwise)."""
    global _metrics
    with _lock:
        m, _metrics = _metrics, None
    if m is not None and m.server is not None:
        server = m.server[0] if isinstance(m.server, tuple) else m.server
        server.shutdown()
        server.server_close()


# ---- hooks: cheap no-ops while metrics are off ---------------------------------------------------


def request_done(method: str, seconds: float, error: BaseException | None = None) -> None:
    m = _metrics
    if m is None:
        return
    label = _method_label(method)
    m.latency.labels(label).observe(seconds)
    m.requests.labels(label, "ok" if error is None else "error").inc()
    if error is not None:
        kind = _kind_label(error)
        m.errors.labels(label, kind).inc()
        if kind == "DeadlineExceeded":
            m.deadline.labels(label).inc()


def deadline_hit(method: str) -> None:
    """The LSP layer answered with the deadline error while the request still ran."""
    m = _metrics
    if m is None:
        return
    label = _method_label(method)
    m.deadline.labels(label).inc()
    m.errors.labels(label, "DeadlineExceeded").inc()


def answer_counted(method: str, returned: int, cache_hit: int) -> None:
    m = _metrics
    if m is None:
        return
    label = _method_label(method)
    m.returned.labels(label).inc(returned)
    if cache_hit:
        m.cache_hit.labels(label).inc(cache_hit)


def raw_estimated(method: str, returned: int, raw_a: int, raw_b: int) -> None:
    m = _metrics
    if m is None:
        return
    label = _method_label(method)
    # a counter only goes up: an answer larger than its raw estimate avoids 0 here (the ledger
    # keeps the signed figure)
    m.raw.labels(label, "a").inc(raw_a)
    m.raw.labels(label, "b").inc(raw_b)
    if raw_a:
        m.avoided.labels(label, "a").inc(max(0, raw_a - returned))
    if raw_b:
        m.avoided.labels(label, "b").inc(max(0, raw_b - returned))
