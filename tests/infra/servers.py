"""Start real store servers for tests: an embedded Neo4j 5.26 and a milvus-lite server.

Both run as child processes on 127.0.0.1 and are cleaned up however the test run ends:

* each child gets its own process group, and ``Server.stop()`` signals the whole group
  (graceful signal first, SIGKILL after a grace period);
* every started server is registered with ``atexit``, so a crashed or interrupted pytest
  run still stops it;
* the child asks the kernel for SIGTERM when its parent dies (``PR_SET_PDEATHSIG``), and the
  Neo4j launcher also exits when its stdin pipe closes, so even a SIGKILLed pytest leaves
  nothing running.

Usage from Python::

    server = start_neo4j(tmp_dir)      # Server(uri="bolt://127.0.0.1:PORT")
    server.stop()

From a shell (for benchmarks or manual poking)::

    .venv/bin/python tests/infra/servers.py build          # build the Neo4j launcher only
    .venv/bin/python tests/infra/servers.py neo4j [DIR]    # run until Ctrl-C
    .venv/bin/python tests/infra/servers.py milvus [DIR]
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import fcntl
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable

# This process forks its servers with a ``preexec_fn`` while milvus-lite's gRPC may be running
# threads in it. gRPC's fork handlers would restart its poller in the child, where
# ``close_fds`` then closes the poller's epoll descriptor and the child, now and then, aborts
# before exec. The children run no gRPC: turn the handlers off before anything loads it.
os.environ["GRPC_ENABLE_FORK_SUPPORT"] = "0"

logger = logging.getLogger(__name__)

INFRA_DIR = Path(__file__).resolve().parent
NEO4J_PROJECT = INFRA_DIR / "neo4j"
NEO4J_POM = NEO4J_PROJECT / "pom.xml"
NEO4J_SOURCES = NEO4J_PROJECT / "src" / "main" / "java"
NEO4J_TARGET = NEO4J_PROJECT / "target"
NEO4J_CLASSES = NEO4J_TARGET / "classes"
NEO4J_CLASSPATH_FILE = NEO4J_TARGET / "classpath.txt"
NEO4J_MAIN_CLASS = "codesynapse.testinfra.Launcher"

# JVM options Neo4j's own server scripts pass; without the add-opens the page cache falls
# back to a slower mode and says so in debug.log.
NEO4J_JVM_OPTIONS = (
    "-XX:+ExitOnOutOfMemoryError",
    "-XX:-OmitStackTraceInFastThrow",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dlog4j2.disable.jmx=true",
)

DEFAULT_NEO4J_TIMEOUT = 180.0
DEFAULT_MILVUS_TIMEOUT = 60.0
BUILD_TIMEOUT = 900.0


class ServerStartError(RuntimeError):
    """A server (or the build it needs) could not be started; the message says why."""


@dataclass(eq=False)
class Server:
    """A running child server process. ``uri`` is what a client connects to."""

    name: str
    uri: str
    process: subprocess.Popen
    data_dir: Path
    log_path: Path
    start_seconds: float
    _stop_signal: int = signal.SIGTERM
    _stdin: IO[bytes] | None = None
    _stops_on_stdin_eof: bool = False

    def _close_stdin(self) -> bool:
        if self._stdin is None or self._stdin.closed:
            return False
        with contextlib.suppress(OSError):
            self._stdin.close()
        return True

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, grace: float = 30.0) -> int | None:
        """Stop the server and every process in its group; return the leader's exit code.

        A server that stops on stdin EOF (the Neo4j launcher) gets that first and exits 0;
        then the stop signal, then SIGKILL once ``grace`` seconds have passed.
        """
        _REGISTRY.discard(self)
        proc = self.process
        if proc.poll() is None and self._stops_on_stdin_eof and self._close_stdin():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=min(grace, 10.0))
        if proc.poll() is None:
            _signal_group(proc.pid, self._stop_signal)
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                logger.warning("%s (pid %d) ignored signal %d for %.0fs; killing", self.name, proc.pid, self._stop_signal, grace)
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        self._close_stdin()
        return proc.returncode

    def log_tail(self, lines: int = 30) -> str:
        """The last lines the server wrote (stdout and stderr), for error messages."""
        return _tail(self.log_path, lines)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --------------------------------------------------------------------------- cleanup


_REGISTRY: set[Server] = set()


def _stop_all() -> None:
    for server in list(_REGISTRY):
        with contextlib.suppress(Exception):
            server.stop(grace=15)


atexit.register(_stop_all)


def _signal_group(pid: int, sig: int) -> None:
    """Signal the group led by ``pid``. Callers do so only while the leader is unreaped
    (alive or a zombie of ours), so the group id cannot belong to anybody else yet."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


_PR_SET_PDEATHSIG = 1
try:  # resolved in the parent: nothing that may take a lock runs after fork
    _PRCTL: Callable[..., int] | None = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):
    _PRCTL = None


def _child_setup(parent_death_signal: bool) -> Callable[[], None]:
    def setup() -> None:
        """Runs in the child between fork and exec; keep it tiny."""
        # A parent started with SIGINT ignored (a background shell job) would pass that
        # on, and milvus-lite stops gracefully only on SIGINT.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if parent_death_signal and _PRCTL is not None:
            _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)

    return setup


def _spawn(argv: list[str], log_path: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start a child in its own process group, its output going straight to ``log_path``.

    The log is written by the child itself, so it stays complete even when this process
    dies first. stdin is a pipe that only this process holds: its end of file tells the
    child that the parent is gone.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            # The kernel sends the parent-death signal when the spawning *thread* ends, so
            # only a child of the main thread may ask for it.
            preexec_fn=_child_setup(threading.current_thread() is threading.main_thread()),
        )


def _tail(path: Path, lines: int) -> str:
    try:
        text = path.read_text("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _wait_for_line(proc: subprocess.Popen, log_path: Path, offset: int, marker: str, timeout: float, name: str) -> str:
    """Wait until the child writes a line containing ``marker`` after ``offset``; return it."""
    deadline = time.monotonic() + timeout
    while True:
        with open(log_path, "rb") as log:
            log.seek(offset)
            for raw in log.read().decode("utf-8", "replace").splitlines():
                if marker in raw:
                    return raw.strip()
        if proc.poll() is not None:
            raise ServerStartError(
                f"{name} exited with code {proc.returncode} before it was ready; log {log_path}:\n{_tail(log_path, 30)}"
            )
        if time.monotonic() > deadline:
            raise ServerStartError(f"{name} was not ready within {timeout:.0f}s; log {log_path}:\n{_tail(log_path, 30)}")
        time.sleep(0.05)


def _port_accepts(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((host, port)) == 0


def free_port() -> int:
    """A port that was free a moment ago (the caller must cope with losing a race)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --------------------------------------------------------------------------- Neo4j


def java_executable() -> str:
    """``$JAVA_HOME/bin/java`` if set, else ``java`` on PATH; must be Java 17 or newer."""
    java_home = os.environ.get("JAVA_HOME")
    candidate = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not candidate or not Path(candidate).exists():
        raise ServerStartError("no Java runtime: install a JDK 17+ (tests/infra/setup.sh does) or set JAVA_HOME")
    try:
        out = subprocess.run([candidate, "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.SubprocessError) as e:
        raise ServerStartError(f"cannot run {candidate}: {e}") from e
    version = _java_major(out)
    if version is None or version < 17:
        raise ServerStartError(f"Neo4j 5.26 needs Java 17+; {candidate} reports: {out.strip().splitlines()[:1]}")
    return candidate


def _java_major(version_output: str) -> int | None:
    """17 from 'openjdk version "17.0.15" ...'; 8 from 'java version "1.8.0_392"'."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', version_output)
    if match is None:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def _launcher_is_built() -> bool:
    launcher_class = NEO4J_CLASSES / Path(*NEO4J_MAIN_CLASS.split(".")).with_suffix(".class")
    if not (launcher_class.exists() and NEO4J_CLASSPATH_FILE.exists()):
        return False
    pom_time = NEO4J_POM.stat().st_mtime
    if NEO4J_CLASSPATH_FILE.stat().st_mtime < pom_time:
        return False
    newest_input = max([pom_time, *(src.stat().st_mtime for src in NEO4J_SOURCES.rglob("*.java"))])
    if launcher_class.stat().st_mtime < newest_input:
        return False
    # The jars live in the local Maven repository; a wiped ~/.m2 means rebuild.
    return all(Path(jar).exists() for jar in _read_classpath())


def _read_classpath() -> list[str]:
    text = NEO4J_CLASSPATH_FILE.read_text("utf-8").strip()
    return [entry for entry in text.split(os.pathsep) if entry]


def build_neo4j_launcher(force: bool = False) -> list[str]:
    """Compile the launcher with Maven if needed; return its full runtime classpath.

    Safe to call from several processes at once (a file lock serializes the build).
    """
    NEO4J_TARGET.mkdir(exist_ok=True)
    with open(NEO4J_TARGET / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if force or not _launcher_is_built():
            mvn = shutil.which("mvn")
            if mvn is None:
                raise ServerStartError("Maven (mvn) is not installed; run tests/infra/setup.sh")
            log_path = NEO4J_TARGET / "build.log"
            started = time.monotonic()
            logger.info("building the Neo4j launcher with Maven (first time resolves ~160 MB of jars)")
            with open(log_path, "wb") as log:
                try:
                    result = subprocess.run(
                        [mvn, "-q", "-B", "-f", str(NEO4J_POM), "compile"],
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                        timeout=BUILD_TIMEOUT,
                    )
                except subprocess.TimeoutExpired as e:
                    raise ServerStartError(f"Maven build of the Neo4j launcher took over {BUILD_TIMEOUT:.0f}s") from e
            if result.returncode == 0 and NEO4J_CLASSPATH_FILE.exists():
                # Maven leaves an unchanged classpath file untouched; mark it current.
                NEO4J_CLASSPATH_FILE.touch()
            if result.returncode != 0 or not _launcher_is_built():
                raise ServerStartError(
                    f"Maven build of the Neo4j launcher failed (exit {result.returncode}); {log_path}:\n{_tail(log_path, 30)}"
                )
            logger.info("Neo4j launcher built in %.1fs", time.monotonic() - started)
        return [str(NEO4J_CLASSES), *_read_classpath()]


def start_neo4j(
    tmpdir: os.PathLike | str,
    *,
    timeout: float = DEFAULT_NEO4J_TIMEOUT,
    page_cache: str = "64m",
    heap: str = "512m",
) -> Server:
    """Start an embedded Neo4j 5.26 Community with Bolt on 127.0.0.1 and auth disabled.

    ``tmpdir`` receives the database home (``neo4j-home``) and the log (``neo4j.log``).
    The OS picks the Bolt port and the launcher reports it, so runs never race for ports.
    Returns once Bolt accepts connections; raises ServerStartError otherwise.
    """
    java = java_executable()
    classpath = build_neo4j_launcher()
    base = Path(tmpdir)
    home = base / "neo4j-home"
    log_path = base / "neo4j.log"
    argv = [
        java,
        f"-Xms{heap}",
        f"-Xmx{heap}",
        *NEO4J_JVM_OPTIONS,
        "-cp",
        os.pathsep.join(classpath),
        NEO4J_MAIN_CLASS,
        str(home),
        "0",
        page_cache,
    ]
    offset = log_path.stat().st_size if log_path.exists() else 0
    started = time.monotonic()
    proc = _spawn(argv, log_path)
    server = Server(
        name="neo4j",
        uri="",
        process=proc,
        data_dir=home,
        log_path=log_path,
        start_seconds=0.0,
        _stop_signal=signal.SIGTERM,  # the launcher's shutdown hook stops Neo4j cleanly
        _stdin=proc.stdin,
        _stops_on_stdin_eof=True,
    )
    _REGISTRY.add(server)
    try:
        line = _wait_for_line(proc, log_path, offset, "READY bolt://", timeout, "neo4j")
    except BaseException:
        server.stop(grace=10)
        raise
    server.uri = line.split(" ", 1)[1]
    server.start_seconds = time.monotonic() - started
    logger.info("neo4j ready at %s after %.1fs (pid %d)", server.uri, server.start_seconds, proc.pid)
    return server


# --------------------------------------------------------------------------- Milvus


def start_milvus_server(
    tmpdir: os.PathLike | str,
    *,
    timeout: float = DEFAULT_MILVUS_TIMEOUT,
    attempts: int = 3,
) -> Server:
    """Start ``milvus-lite server`` (milvus-lite 3.x gRPC server mode) on 127.0.0.1.

    Runs ``python -m milvus_lite server`` with the current interpreter; ``.uri`` is
    ``http://127.0.0.1:PORT`` for ``pymilvus.MilvusClient(uri=...)``. milvus-lite does not
    report a port it picked itself, so a free port is chosen here and a lost race (bind
    failure) is retried with another port.
    """
    base = Path(tmpdir)
    data_dir = base / "milvus-data"
    log_path = base / "milvus.log"
    errors: list[str] = []
    for _ in range(attempts):
        port = free_port()
        try:
            return _start_milvus_once(data_dir, log_path, port, timeout)
        except ServerStartError as e:
            errors.append(str(e))
            if _port_accepts("127.0.0.1", port):
                continue  # someone else took the port: try another
            msg = str(e).lower()
            # retry a lost port race, and an early crash of milvus-lite's gRPC poller under
            # load ("exited with code -6": epoll_wait Bad file descriptor); fail otherwise
            if "bind" not in msg and "address already in use" not in msg and "exited with code" not in msg:
                break
    raise ServerStartError("milvus-lite server did not start:\n" + "\n---\n".join(errors))


def _start_milvus_once(data_dir: Path, log_path: Path, port: int, timeout: float) -> Server:
    argv = [
        sys.executable,
        "-m",
        "milvus_lite",
        "server",
        "--data-dir",
        str(data_dir),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    env = dict(os.environ, PYTHONUNBUFFERED="1")  # its "listening on" line must not wait in a buffer
    offset = log_path.stat().st_size if log_path.exists() else 0
    started = time.monotonic()
    proc = _spawn(argv, log_path, env=env)
    server = Server(
        name="milvus-lite",
        uri=f"http://127.0.0.1:{port}",
        process=proc,
        data_dir=data_dir,
        log_path=log_path,
        start_seconds=0.0,
        _stop_signal=signal.SIGINT,  # milvus-lite closes its data dir on KeyboardInterrupt
        _stdin=proc.stdin,
    )
    _REGISTRY.add(server)
    try:
        _wait_for_line(proc, log_path, offset, "listening on", timeout, "milvus-lite server")
        deadline = time.monotonic() + timeout
        while not _port_accepts("127.0.0.1", port):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise ServerStartError(f"milvus-lite server never accepted on port {port}:\n{_tail(log_path, 30)}")
            time.sleep(0.05)
    except BaseException:
        server.stop(grace=10)
        raise
    server.start_seconds = time.monotonic() - started
    logger.info("milvus-lite server ready at %s after %.1fs (pid %d)", server.uri, server.start_seconds, proc.pid)
    return server


# --------------------------------------------------------------------------- CLI


def _main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    if not argv or argv[0] not in {"build", "neo4j", "milvus"}:
        sys.stderr.write("usage: servers.py build | neo4j [DIR] | milvus [DIR]\n")
        return 2
    try:
        if argv[0] == "build":
            started = time.monotonic()
            classpath = build_neo4j_launcher(force="--force" in argv)
            sys.stdout.write(f"neo4j launcher ready: {len(classpath) - 1} jars, {time.monotonic() - started:.1f}s\n")
            return 0
        base = Path(argv[1]) if len(argv) > 1 else Path(tempfile.mkdtemp(prefix=f"codesynapse-{argv[0]}-"))
        server = start_neo4j(base) if argv[0] == "neo4j" else start_milvus_server(base)
    except ServerStartError as e:
        sys.stderr.write(f"{e}\n")
        return 1
    sys.stdout.write(f"{server.uri}\n")
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
