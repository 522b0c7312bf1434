#!/usr/bin/env bash
# The whole test suite: Python unit, contract (SQLite, Neo4j, milvus-lite file + server) and
# end-to-end LSP tests, then the VS Code extension (build, lint, unit, real VS Code e2e).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export CODESYNAPSE_REQUIRE_SERVERS=${CODESYNAPSE_REQUIRE_SERVERS:-1}
if [ -f tests/infra/setup.sh ]; then
  bash tests/infra/setup.sh
fi
status=0
.venv/bin/python -m pytest -q -p no:cacheprovider tests || status=$?
if [ -f editor-client/scripts/ci.sh ]; then
  CODESYNAPSE_PYTHON="$PWD/.venv/bin/python" bash editor-client/scripts/ci.sh || status=$?
fi
exit $status
