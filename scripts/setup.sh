#!/usr/bin/env bash
# Idempotent setup on a fresh machine: a virtualenv with the package and its test tools.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
.venv/bin/python -m pip install -q -e '.[dev]'
# ESLint with a SARIF formatter: real SARIF for the findings tests (tests/infra/jslint)
if command -v npm >/dev/null 2>&1; then
  npm ci --prefix tests/infra/jslint --no-audit --no-fund --silent \
    || echo "setup: ESLint for the findings tests not installed (those tests are skipped)" >&2
fi
