#!/usr/bin/env bash
# Install what the test servers need on a fresh machine; quick no-op when already done.
#
#   bash tests/infra/setup.sh [PYTHON]
#
# * a JDK 17+ and Maven (Debian packages, installed only when missing; needs root);
# * the embedded Neo4j launcher (tests/infra/neo4j), compiled by Maven; its jars
#   (~160 MB) go to the local Maven repository, never into the work tree;
# * the HugeGraph 1.5.0 server classpath (tests/infra/hugegraph), resolved by Maven (~260 MB);
# * a check that PYTHON (default: .venv/bin/python, else python3) has milvus-lite 3.x,
#   whose "milvus-lite server" mode the Milvus server tests use.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
py="${1:-}"
if [[ -z "$py" ]]; then
  if [[ -x "$repo/.venv/bin/python" ]]; then py="$repo/.venv/bin/python"; else py="python3"; fi
fi
started=$SECONDS

java_major() {
  # prints the major version of the java on PATH (or JAVA_HOME), or nothing
  local java="java"
  [[ -n "${JAVA_HOME:-}" ]] && java="$JAVA_HOME/bin/java"
  command -v "$java" >/dev/null 2>&1 || return 0
  "$java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\)\.\{0,1\}\([0-9]*\).*/\1 \2/p' | head -n1 |
    awk '{ print ($1 == 1 ? $2 : $1) }'
}

apt_updated=0
apt_install() {
  if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "setup.sh: missing $*; install it (needs root and apt-get)" >&2
    exit 1
  fi
  if [[ $apt_updated -eq 0 ]]; then
    apt-get update -qq
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

major="$(java_major)"
if [[ -z "$major" || "$major" -lt 17 ]] || ! command -v javac >/dev/null 2>&1; then
  echo "setup.sh: installing a JDK 17 (found: ${major:-none})"
  apt_install openjdk-17-jdk-headless
  major="$(java_major)"
  if [[ -z "$major" || "$major" -lt 17 ]]; then
    echo "setup.sh: java on PATH is still ${major:-missing}; set JAVA_HOME to a JDK 17+" >&2
    exit 1
  fi
fi

if ! command -v mvn >/dev/null 2>&1; then
  echo "setup.sh: installing Maven"
  apt_install maven
fi

# Compiles only when the launcher, its classpath file or a jar on it is missing or stale.
python3 "$here/servers.py" build

# HugeGraph 1.5.0's runtime classpath (tests/infra/hugegraph/pom.xml, ~260 MB of jars in the
# local Maven repository); resolved only when target/classpath.txt or a jar on it is missing.
python3 "$here/hugegraph.py" build

if ! "$py" - <<'EOF'
import sys
from importlib.metadata import version, PackageNotFoundError
try:
    v = version("milvus-lite")
except PackageNotFoundError:
    sys.exit("setup.sh: milvus-lite is not installed in " + sys.executable)
if int(v.split(".")[0]) < 3:
    sys.exit(f"setup.sh: milvus-lite {v} has no 'milvus-lite server' mode; 3.x is needed")
import milvus_lite.cmdline  # noqa: F401  the server entry point
EOF
then
  exit 1
fi

echo "setup.sh: test servers ready (java $major, $((SECONDS - started))s)"
