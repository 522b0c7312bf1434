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
# The native per-client pump of the shared daemon (docs/DAEMON.md): ~1 MiB per connected client
# instead of ~11 for pump.py. Without a C compiler the proxy uses pump.py (same behaviour).
CC_BIN=${CC:-cc}
if command -v "$CC_BIN" >/dev/null 2>&1; then
  "$CC_BIN" -O2 -Wall -o .venv/bin/codesynapse-pump.tmp server/codesynapse/daemon/pump.c \
    && mv -f .venv/bin/codesynapse-pump.tmp .venv/bin/codesynapse-pump \
    || { rm -f .venv/bin/codesynapse-pump.tmp .venv/bin/codesynapse-pump
         echo "setup: the native pump did not build; the shared daemon's proxies use pump.py" >&2; }
else
  echo "setup: no C compiler ($CC_BIN); the shared daemon's proxies use pump.py (about 11 MiB per client)" >&2
fi
# ESLint with a SARIF formatter: real SARIF for the findings tests (tests/infra/jslint)
if command -v npm >/dev/null 2>&1; then
  npm ci --prefix tests/infra/jslint --no-audit --no-fund --silent \
    || echo "setup: ESLint for the findings tests not installed (those tests are skipped)" >&2
fi
