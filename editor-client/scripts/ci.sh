#!/usr/bin/env bash
# Build, lint and test the VS Code extension on a fresh Debian machine, including the
# end-to-end test in a real VS Code (code-server 4.100.3 + headless Debian Chromium).
# Idempotent: installs only what is missing; code-server is cached outside the repository.
#
# Environment:
#   CODESYNAPSE_PYTHON      interpreter with the codesynapse package (default: <repo>/.venv/bin/python)
#   CODESYNAPSE_E2E_CACHE   where code-server is cached (default: ${XDG_CACHE_HOME:-~/.cache}/codesynapse-e2e)
#   CODESYNAPSE_SKIP_E2E=1  skip the end-to-end test (it is never skipped silently: the summary says so)
#   CODESYNAPSE_E2E_UPDATE_DOCS=1  the e2e run writes the user guide's screenshots to docs/images/
set -uo pipefail

CLIENT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPO_DIR="$(cd "$CLIENT_DIR/.." && pwd)"
cd "$REPO_DIR" || exit 2

CODE_SERVER_VERSION=4.100.3
# @vscode/ripgrep as pinned by code-server 4.100.3's lib/vscode/npm-shrinkwrap.json, and the
# ripgrep release its postinstall downloads; we seed that download from Debian's ripgrep.
VSCODE_RIPGREP_VERSION=1.15.11
RIPGREP_TAG=v13.0.0-10
CACHE_DIR="${CODESYNAPSE_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/codesynapse-e2e}"
CODE_SERVER_DIR="$CACHE_DIR/code-server-$CODE_SERVER_VERSION"
CODE_SERVER_BIN="$CODE_SERVER_DIR/node_modules/.bin/code-server"
PYTHON="${CODESYNAPSE_PYTHON:-$REPO_DIR/.venv/bin/python}"
OUT_DIR="$CLIENT_DIR/.test-output"
mkdir -p "$OUT_DIR"

failed=()
timings=()
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# run_stage NAME COMMAND...: run, time and record one stage; never exits early.
run_stage() {
  local name="$1"; shift
  local t0; t0=$(now)
  echo "=== editor-client: $name"
  if "$@"; then
    timings+=("$(printf '%-22s %6ss  ok' "$name" "$(elapsed "$t0")")")
    return 0
  fi
  timings+=("$(printf '%-22s %6ss  FAILED' "$name" "$(elapsed "$t0")")")
  failed+=("$name")
  return 1
}

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "need root (or sudo) for: $*" >&2; return 1; fi
}

install_system_packages() {
  # chromium: the browser of the e2e test; ripgrep: seeds @vscode/ripgrep; the rest builds
  # code-server's native modules (kerberos needs libkrb5-dev, node-pty a C++ toolchain).
  local want=(chromium ripgrep git python3 make g++ pkg-config libkrb5-dev)
  local missing=()
  for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "system packages present: ${want[*]}"
    return 0
  fi
  echo "installing: ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null &&
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

npm_install() {
  # npm ci, skipped when node_modules was installed from this exact lock file.
  local stamp="node_modules/.codesynapse-lock.sha256"
  local want; want=$(sha256sum package-lock.json | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d node_modules/vscode-languageclient ]; then
    echo "node_modules is current"
    return 0
  fi
  npm ci --no-audit --no-fund --loglevel=error && echo "$want" > "$stamp"
}

ripgrep_target() {
  case "$(uname -m)" in
    x86_64) echo x86_64-unknown-linux-musl ;;
    aarch64 | arm64) echo aarch64-unknown-linux-musl ;;
    *) echo "unsupported machine $(uname -m)" >&2; return 1 ;;
  esac
}

install_code_server() {
  if [ -x "$CODE_SERVER_BIN" ] && [ -f "$CODE_SERVER_DIR/.complete" ]; then
    echo "code-server $CODE_SERVER_VERSION cached in $CODE_SERVER_DIR"
    return 0
  fi
  local target tmp rgcache
  target=$(ripgrep_target) || return 1
  tmp=$(node -p "require('os').tmpdir()")
  rgcache="$tmp/vscode-ripgrep-cache-$VSCODE_RIPGREP_VERSION"
  mkdir -p "$rgcache"
  # The postinstall of @vscode/ripgrep downloads a release archive; it uses this cached copy.
  tar -czf "$rgcache/ripgrep-$RIPGREP_TAG-$target.tar.gz" -C "$(dirname "$(command -v rg)")" rg || return 1
  rm -rf "$CODE_SERVER_DIR.partial"
  mkdir -p "$CODE_SERVER_DIR.partial"
  echo '{"private": true}' > "$CODE_SERVER_DIR.partial/package.json"
  # npm_config_yes: node-pty's install asks; unsafe_perm: code-server's postinstall refuses root without it.
  if ! (cd "$CODE_SERVER_DIR.partial" &&
    npm_config_yes=true npm_config_unsafe_perm=true \
      npm install --no-audit --no-fund --no-save --loglevel=error "code-server@$CODE_SERVER_VERSION"); then
    echo "code-server install failed" >&2
    return 1
  fi
  "$CODE_SERVER_DIR.partial/node_modules/.bin/code-server" --version | grep -q "^$CODE_SERVER_VERSION " || return 1
  rm -rf "$CODE_SERVER_DIR"
  mv "$CODE_SERVER_DIR.partial" "$CODE_SERVER_DIR"
  touch "$CODE_SERVER_DIR/.complete"
}

check_python() {
  if ! "$PYTHON" -c 'import codesynapse' 2>/dev/null; then
    echo "$PYTHON cannot import codesynapse; run scripts/setup.sh (or set CODESYNAPSE_PYTHON)" >&2
    return 1
  fi
  echo "server interpreter: $PYTHON"
}

unit_tests() {
  npm run test -w editor-client -- --reporter=default --reporter=json --outputFile.json="$OUT_DIR/unit.json"
}

e2e_tests() {
  CODE_SERVER_BIN="$CODE_SERVER_BIN" CODESYNAPSE_PYTHON="$PYTHON" \
    node --test --test-concurrency=1 \
    --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$OUT_DIR/e2e.tap" \
    "$CLIENT_DIR/test/e2e/extension.e2e.test.mjs"
}

t_all=$(now)
run_stage "system packages" install_system_packages
run_stage "npm ci" npm_install || { echo "npm ci failed; cannot go on" >&2; exit 1; }

# code-server installs in the background (about a minute on a fresh machine) while the
# extension is checked and packaged.
cs_log="$OUT_DIR/code-server-install.log"
cs_time="$OUT_DIR/code-server-install.seconds"
( t0=$(now); install_code_server; rc=$?; elapsed "$t0" > "$cs_time"; exit $rc ) > "$cs_log" 2>&1 &
cs_pid=$!

run_stage "typecheck" npm run typecheck -w editor-client
run_stage "lint" npm run lint -w editor-client
run_stage "unit tests" unit_tests
run_stage "package (.vsix)" npm run package -w editor-client

if wait "$cs_pid"; then
  timings+=("$(printf '%-22s %6ss  ok (in the background)' "code-server install" "$(cat "$cs_time")")")
  cat "$cs_log"
  cs_ok=1
else
  timings+=("$(printf '%-22s %6ss  FAILED' "code-server install" "$(cat "$cs_time" 2>/dev/null)")")
  failed+=("code-server install")
  tail -n 40 "$cs_log"
  cs_ok=0
fi

e2e_ran=0
if [ "${CODESYNAPSE_SKIP_E2E:-0}" = 1 ]; then
  timings+=("e2e (real VS Code)     skipped by CODESYNAPSE_SKIP_E2E=1")
elif [ "$cs_ok" = 1 ] && [ -f "$CLIENT_DIR/codesynapse.vsix" ]; then
  if run_stage "server interpreter" check_python; then
    e2e_ran=1
    run_stage "e2e (real VS Code)" e2e_tests
  fi
else
  failed+=("e2e (not run: code-server or .vsix missing)")
fi

# Counts for the closing line.
unit_pass=0 unit_fail=0 e2e_pass=0 e2e_fail=0
if [ -f "$OUT_DIR/unit.json" ]; then
  read -r unit_pass unit_fail < <(node -e 'const r=require(process.argv[1]);console.log(r.numPassedTests,r.numFailedTests)' "$OUT_DIR/unit.json" 2>/dev/null || echo "0 0")
fi
if [ "$e2e_ran" = 1 ] && [ -f "$OUT_DIR/e2e.tap" ]; then
  e2e_pass=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$OUT_DIR/e2e.tap" | tail -1)
  e2e_fail=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$OUT_DIR/e2e.tap" | tail -1)
fi

echo
echo "=== editor-client summary (total $(elapsed "$t_all")s)"
printf '  %s\n' "${timings[@]}"
echo "  unit: ${unit_pass:-0} passed, ${unit_fail:-0} failed; e2e: ${e2e_pass:-0} passed, ${e2e_fail:-0} failed"
if [ -f "$OUT_DIR/e2e/extension-panel.png" ]; then echo "  screenshots: $OUT_DIR/e2e/extension-*.png (CODESYNAPSE_E2E_UPDATE_DOCS=1 copies them to docs/images/)"; fi
total_pass=$(( ${unit_pass:-0} + ${e2e_pass:-0} ))
total_fail=$(( ${unit_fail:-0} + ${e2e_fail:-0} ))
if [ ${#failed[@]} -gt 0 ]; then
  echo "  failed stages: ${failed[*]}"
  [ "$total_fail" -eq 0 ] && total_fail=1
fi
echo "editor-client: $total_pass passed, $total_fail failed"
[ ${#failed[@]} -eq 0 ]
