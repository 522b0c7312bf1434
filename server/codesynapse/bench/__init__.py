"""Benchmarks: index throughput, live-update latency, request latency, token reduction.

``codesynapse bench KIND`` runs them (see :mod:`codesynapse.bench.cli`). Benchmarks
measure; tests assert only the harness's arithmetic (:mod:`codesynapse.bench.stats`).
"""
