"""Start a real HugeGraph 1.5.0 server (RocksDB backend) for tests, from Maven Central jars.

The server distribution (bin/, lib/) is not published on Maven Central, but its code and
its default configuration are: ``org.apache.hugegraph:hugegraph-dist`` holds the main
classes *and* ``conf/`` and ``scripts/``. ``tests/infra/hugegraph/pom.xml`` rebuilds the
runtime classpath (with the dependency-tree fixes listed there and in docs/HUGEGRAPH.md);
this module unpacks the configuration into a fresh home directory, points it at two
loopback ports, runs ``InitStore`` once and then ``HugeGraphServer``.

The server is a :class:`~infra.servers.Server` (own process group, atexit cleanup,
parent-death signal): ``server.uri`` is the Gremlin server's HTTP endpoint
(``http://127.0.0.1:PORT``, what ``HugeGraphStore`` talks to) and ``server.rest_uri``
the REST API (``/versions``, ``/graphs/hugegraph/schema/...``).

    .venv/bin/python tests/infra/hugegraph.py build          # resolve the classpath only
    .venv/bin/python tests/infra/hugegraph.py run [DIR]      # run until Ctrl-C
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``infra`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from infra.servers import (  # noqa: E402
    _REGISTRY,
    BUILD_TIMEOUT,
    Server,
    ServerStartError,
    _port_accepts,
    _spawn,
    _tail,
    free_port,
    java_executable,
)

logger = logging.getLogger(__name__)

HUGEGRAPH_VERSION = "1.5.0"
PROJECT = Path(__file__).resolve().parent / "hugegraph"
POM = PROJECT / "pom.xml"
TARGET = PROJECT / "target"
CLASSPATH_FILE = TARGET / "classpath.txt"
GRAPH = "hugegraph"  # the graph's name in conf/graphs/hugegraph.properties
DEFAULT_TIMEOUT = 240.0
# JVM flags of bin/hugegraph-server.sh (Java 11+ branch).
JVM_OPTIONS = (
    "-XX:+ExitOnOutOfMemoryError",
    "--add-exports=java.base/jdk.internal.reflect=ALL-UNNAMED",
    "--add-modules=jdk.unsupported",
    "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
    "-Dlog4j2.disable.jmx=true",
)
# Gremlin server settings that differ from the dist's defaults: loopback only, requests
# of up to 64 MiB (the default 64 KiB is too small for batched writes with bindings) and
# a 5-minute evaluation timeout (the default 30 s is short for a big batch on a loaded
# machine). HugeGraphStore needs the first two on any server it talks to.
GREMLIN_MAX_CONTENT = 64 * 1024 * 1024
GREMLIN_EVALUATION_TIMEOUT_MS = 300_000


# --------------------------------------------------------------------------- classpath


def _read_classpath() -> list[str]:
    return [e for e in CLASSPATH_FILE.read_text("utf-8").strip().split(os.pathsep) if e]


def _classpath_is_current() -> bool:
    if not CLASSPATH_FILE.exists() or CLASSPATH_FILE.stat().st_mtime < POM.stat().st_mtime:
        return False
    jars = _read_classpath()
    return bool(jars) and all(Path(j).exists() for j in jars)  # a wiped ~/.m2 means resolve again


def build_hugegraph_classpath(force: bool = False) -> list[str]:
    """Resolve the server's runtime classpath with Maven (once; later calls only check that
    the jars are still there). Safe across processes (file lock). Returns it in the order
    ``bin/hugegraph-server.sh`` uses: log4j-slf4j-impl first, then hugegraph*, then the rest."""
    TARGET.mkdir(exist_ok=True)
    with open(TARGET / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if force or not _classpath_is_current():
            mvn = shutil.which("mvn")
            if mvn is None:
                raise ServerStartError("Maven (mvn) is not installed; run tests/infra/setup.sh")
            log_path = TARGET / "build.log"
            started = time.monotonic()
            logger.info("resolving the HugeGraph %s classpath with Maven (first time: ~260 MB of jars)",
                        HUGEGRAPH_VERSION)
            with open(log_path, "wb") as log:
                try:
                    result = subprocess.run([mvn, "-q", "-B", "-f", str(POM), "validate"], stdout=log,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            timeout=BUILD_TIMEOUT)
                except subprocess.TimeoutExpired as e:
                    raise ServerStartError(f"resolving the HugeGraph classpath took over {BUILD_TIMEOUT:.0f}s") from e
            if result.returncode == 0 and CLASSPATH_FILE.exists():
                CLASSPATH_FILE.touch()  # Maven leaves an unchanged file untouched
            if result.returncode != 0 or not _classpath_is_current():
                raise ServerStartError(f"Maven could not resolve the HugeGraph classpath (exit {result.returncode}); "
                                       f"{log_path}:\n{_tail(log_path, 30)}")
            logger.info("HugeGraph classpath resolved in %.1fs", time.monotonic() - started)
        jars = _read_classpath()

    def rank(jar: str) -> int:
        name = Path(jar).name
        return 0 if name.startswith("log4j-slf4j-impl") else 1 if name.startswith("hugegraph") else 2

    return sorted(jars, key=rank)  # stable: Maven's order within each group


def _dist_jar(classpath: list[str]) -> Path:
    for jar in classpath:
        if Path(jar).name == f"hugegraph-dist-{HUGEGRAPH_VERSION}.jar":
            return Path(jar)
    raise ServerStartError(f"hugegraph-dist-{HUGEGRAPH_VERSION}.jar is not on the resolved classpath")


# --------------------------------------------------------------------------- configuration


def _set_property(text: str, key: str, value: str) -> str:
    """Set ``key=value`` in a .properties text (replacing an active or commented-out line)."""
    pattern = re.compile(rf"^#?\s*{re.escape(key)}\s*=.*$", re.M)
    if pattern.search(text):
        return pattern.sub(lambda _: f"{key}={value}", text, count=1)
    return text.rstrip("\n") + f"\n{key}={value}\n"


def write_home(home: Path, classpath: list[str], rest_port: int, gremlin_port: int) -> None:
    """A fresh server home: conf/ and scripts/ from the dist jar, with our settings."""
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    with zipfile.ZipFile(_dist_jar(classpath)) as jar:
        for name in jar.namelist():
            if (name.startswith("conf/") or name.startswith("scripts/")) and not name.endswith("/"):
                jar.extract(name, home)
    conf = home / "conf"
    rest = (conf / "rest-server.properties").read_text("utf-8")
    rest = _set_property(rest, "restserver.url", f"http://127.0.0.1:{rest_port}")
    rest = _set_property(rest, "gremlinserver.url", f"http://127.0.0.1:{gremlin_port}")
    (conf / "rest-server.properties").write_text(rest, "utf-8")

    yaml = (conf / "gremlin-server.yaml").read_text("utf-8")
    yaml = re.sub(r"^(host|port|maxContentLength|evaluationTimeout):.*\n", "", yaml, flags=re.M)
    yaml = (f"host: 127.0.0.1\nport: {gremlin_port}\nmaxContentLength: {GREMLIN_MAX_CONTENT}\n"
            f"evaluationTimeout: {GREMLIN_EVALUATION_TIMEOUT_MS}\n" + yaml)
    (conf / "gremlin-server.yaml").write_text(yaml, "utf-8")

    graph = (conf / "graphs" / f"{GRAPH}.properties").read_text("utf-8")
    for key, value in (("backend", "rocksdb"), ("serializer", "binary"), ("store", GRAPH),
                       ("rocksdb.data_path", "./data/rocksdb"), ("rocksdb.wal_path", "./data/rocksdb")):
        graph = _set_property(graph, key, value)
    (conf / "graphs" / f"{GRAPH}.properties").write_text(graph, "utf-8")

    # RegisterUtil reads the classpath resource backend.properties, and the dist jar's
    # lists all eight backends (their option classes are not on our classpath).
    overrides = home / "classpath-overrides"
    overrides.mkdir()
    (overrides / "backend.properties").write_text("backends=[rocksdb]\n", "utf-8")


# --------------------------------------------------------------------------- start


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status == 200
    except (OSError, urllib.error.URLError):
        return False


def _gremlin_ok(url: str) -> bool:
    body = json.dumps({"gremlin": "1+1"}).encode()
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status == 200 and b"2" in resp.read()
    except (OSError, urllib.error.URLError):
        return False


def start_hugegraph(
    tmpdir: os.PathLike | str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    heap: str = "768m",
    attempts: int = 3,
) -> Server:
    """Start HugeGraph 1.5.0 (RocksDB, auth off) on two free loopback ports.

    ``tmpdir`` receives the server home (``hugegraph-home``: conf, data, logs) and the
    process log ``hugegraph.log``. HugeGraph cannot report ports it picked itself, so free
    ports are chosen here and a lost race is retried. Returns once the REST API answers
    ``/versions`` and the Gremlin server evaluates a script; raises ServerStartError otherwise.
    """
    java = java_executable()
    classpath = build_hugegraph_classpath()
    base = Path(tmpdir)
    errors: list[str] = []
    for _ in range(attempts):
        rest_port, gremlin_port = free_port(), free_port()
        if rest_port == gremlin_port:
            continue
        try:
            return _start_once(java, classpath, base, rest_port, gremlin_port, timeout, heap)
        except ServerStartError as e:
            errors.append(str(e))
            text = str(e).lower()
            if "address already in use" not in text and "bindexception" not in text:
                break
    raise ServerStartError("HugeGraph did not start:\n" + "\n---\n".join(errors))


def _start_once(java: str, classpath: list[str], base: Path, rest_port: int, gremlin_port: int,
                timeout: float, heap: str) -> Server:
    home = base / "hugegraph-home"
    log_path = base / "hugegraph.log"
    write_home(home, classpath, rest_port, gremlin_port)
    cp = os.pathsep.join([str(home / "classpath-overrides"), *classpath])
    jvm = [java, f"-Xms{heap}", f"-Xmx{heap}", *JVM_OPTIONS, "-cp", cp]
    started = time.monotonic()

    # InitStore: create the RocksDB tables (a few seconds); runs in the home directory
    # because every path in the configuration is relative to it.
    init_log = base / "hugegraph-init.log"
    with open(init_log, "wb") as log:
        try:
            init = subprocess.run([*jvm, "org.apache.hugegraph.cmd.InitStore", "conf/rest-server.properties"],
                                  cwd=home, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  timeout=timeout, start_new_session=True)
        except subprocess.TimeoutExpired as e:
            raise ServerStartError(f"HugeGraph InitStore took over {timeout:.0f}s; {init_log}") from e
    if init.returncode != 0:
        raise ServerStartError(f"HugeGraph InitStore failed (exit {init.returncode}); {init_log}:\n"
                               f"{_tail(init_log, 30)}")

    offset = log_path.stat().st_size if log_path.exists() else 0
    # ``sh -c 'cd HOME && exec java …'``: the JVM replaces the shell (same pid, same group)
    proc = _spawn(["/bin/sh", "-c", 'cd "$0" && exec "$@"', str(home), *jvm,
                   "org.apache.hugegraph.dist.HugeGraphServer", "conf/gremlin-server.yaml",
                   "conf/rest-server.properties"], log_path)
    server = Server(name="hugegraph", uri=f"http://127.0.0.1:{gremlin_port}", process=proc, data_dir=home,
                    log_path=log_path, start_seconds=0.0, _stop_signal=signal.SIGTERM, _stdin=proc.stdin)
    server.rest_uri = f"http://127.0.0.1:{rest_port}"  # type: ignore[attr-defined]
    _REGISTRY.add(server)
    try:
        deadline = time.monotonic() + timeout
        rest_ready = gremlin_ready = False
        while not (rest_ready and gremlin_ready):
            if proc.poll() is not None:
                raise ServerStartError(f"HugeGraph exited with code {proc.returncode} before it was ready; "
                                       f"log {log_path}:\n{_tail(log_path, 40)}")
            if time.monotonic() > deadline:
                raise ServerStartError(f"HugeGraph was not ready within {timeout:.0f}s (REST {rest_ready}, "
                                       f"Gremlin {gremlin_ready}); log {log_path}:\n{_tail(log_path, 40)}")
            rest_ready = rest_ready or _http_ok(f"{server.rest_uri}/versions")  # type: ignore[attr-defined]
            gremlin_ready = gremlin_ready or (_port_accepts("127.0.0.1", gremlin_port) and _gremlin_ok(server.uri))
            if not (rest_ready and gremlin_ready):
                time.sleep(0.25)
    except BaseException:
        server.stop(grace=15)
        raise
    server.start_seconds = time.monotonic() - started
    logger.info("hugegraph ready at %s (REST %s) after %.1fs (pid %d)", server.uri,
                server.rest_uri, server.start_seconds, proc.pid)  # type: ignore[attr-defined]
    return server


# --------------------------------------------------------------------------- CLI


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def _main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    if not argv or argv[0] not in {"build", "run"}:
        sys.stderr.write("usage: hugegraph.py build [--force] | run [DIR]\n")
        return 2
    try:
        if argv[0] == "build":
            started = time.monotonic()
            cp = build_hugegraph_classpath(force="--force" in argv)
            sys.stdout.write(f"hugegraph {HUGEGRAPH_VERSION} classpath ready: {len(cp)} jars, "
                             f"{time.monotonic() - started:.1f}s\n")
            return 0
        base = Path(argv[1]) if len(argv) > 1 else Path(tempfile.mkdtemp(prefix="codesynapse-hugegraph-"))
        # SIGTERM (and SIGINT even where a background shell ignores it) stop the server cleanly
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, _interrupt)
        server = start_hugegraph(base)
    except ServerStartError as e:
        sys.stderr.write(f"{e}\n")
        return 1
    sys.stdout.write(f"{server.uri} (REST {server.rest_uri}, {server.start_seconds:.1f}s)\n")  # type: ignore[attr-defined]
    sys.stdout.flush()
    try:
        while server.alive():
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
