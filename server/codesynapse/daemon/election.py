"""Which process is a workspace's daemon, and how to reach it.

Files in the data folder (all owner-only, mode 0600):

* ``daemon.lock`` — the daemon holds an exclusive OS lock on it (``flock``) for as long as it
  runs, and writes in it ``{"pid", "socket"}`` (or ``{"pid", "host", "port"}`` on the TCP
  fallback) once it listens. The kernel drops the lock when the process dies, even by
  ``kill -9``: a lock file whose lock nobody holds is stale (its pid is dead) and the next
  daemon takes it over. Two daemons started at once cannot both hold it: the loser exits.
* ``daemon.sock`` — the unix domain socket, made with umask 0177 (mode 0600 from the start),
  in the data folder; when that path is too long for ``sun_path`` (108 bytes) the socket
  lives in an owner-only (0700) folder ``$XDG_RUNTIME_DIR/codesynapse`` or
  ``/tmp/codesynapse-<uid>`` under a name derived from the data folder.
* ``daemon.token`` — only on the TCP fallback (no AF_UNIX, or ``CODESYNAPSE_DAEMON_TRANSPORT=tcp``):
  127.0.0.1 on a random port; a client proves it may read the data folder by sending this
  random token in its hello.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import socket
import stat
import tempfile
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

LOCK_NAME = "daemon.lock"
SOCKET_NAME = "daemon.sock"
TOKEN_NAME = "daemon.token"
SUN_PATH_MAX = 100  # bytes of a unix socket path (Linux allows 107, macOS 103)
HELLO_MAX = 64 * 1024  # bytes of one hello / welcome line

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]


def use_tcp() -> bool:
    return not hasattr(socket, "AF_UNIX") or os.environ.get("CODESYNAPSE_DAEMON_TRANSPORT", "").lower() == "tcp"


def _open_owner_only(path: Path, flags: int) -> int:
    fd = os.open(path, flags | os.O_CREAT, 0o600)
    try:
        os.chmod(path, 0o600)  # a file made before by another umask
    except OSError:
        pass
    return fd


# ---- the lock ---------------------------------------------------------------------------


class DaemonLock:
    """The exclusive lock on ``daemon.lock``; ``try_acquire`` never blocks."""

    def __init__(self, data_dir: Path):
        self.path = Path(data_dir) / LOCK_NAME
        self.fd: int | None = None

    def try_acquire(self) -> bool:
        fd = _open_owner_only(self.path, os.O_RDWR)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            else:  # pragma: no cover - Windows
                import msvcrt

                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            os.close(fd)
            return False
        self.fd = fd
        return True

    def write_info(self, info: dict[str, Any]) -> None:
        assert self.fd is not None
        data = json.dumps(info).encode()
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, data, 0) if hasattr(os, "pwrite") else os.write(self.fd, data)
        os.fsync(self.fd)

    def release(self, clear: bool = True) -> None:
        if self.fd is None:
            return
        try:
            if clear:
                os.ftruncate(self.fd, 0)
        except OSError:
            pass
        os.close(self.fd)  # drops the lock
        self.fd = None


def lock_held(data_dir: Path) -> bool:
    """True while some process holds the daemon lock of ``data_dir``."""
    probe = DaemonLock(data_dir)
    if probe.try_acquire():
        probe.release(clear=False)
        return False
    return True


def read_info(data_dir: Path) -> dict[str, Any] | None:
    try:
        text = (Path(data_dir) / LOCK_NAME).read_text(encoding="utf-8")
        info = json.loads(text) if text.strip() else None
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def pid_alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---- the endpoint -----------------------------------------------------------------------


def socket_path(data_dir: Path) -> Path:
    """Where the daemon of ``data_dir`` listens (see the module docstring)."""
    p = Path(data_dir).resolve() / SOCKET_NAME
    if len(os.fsencode(str(p))) <= SUN_PATH_MAX:
        return p
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    folder = Path(base) / (f"codesynapse-{os.getuid()}" if not os.environ.get("XDG_RUNTIME_DIR") else "codesynapse")
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = folder.stat()
    if st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) & 0o077:
        raise PermissionError(f"{folder} is not owner-only (0700, owned by this user); cannot place the socket")
    key = hashlib.sha256(str(Path(data_dir).resolve()).encode()).hexdigest()[:20]
    return folder / f"{key}.sock"


def new_token(data_dir: Path) -> str:
    token = secrets.token_hex(32)
    path = Path(data_dir) / TOKEN_NAME
    fd = _open_owner_only(path, os.O_WRONLY | os.O_TRUNC)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(token)
    return token


def read_token(data_dir: Path) -> str | None:
    try:
        return (Path(data_dir) / TOKEN_NAME).read_text(encoding="ascii").strip() or None
    except OSError:
        return None


def connect(info: dict[str, Any], timeout: float = 5.0) -> socket.socket | None:
    """A connected socket to the endpoint ``info`` names, or None."""
    try:
        if info.get("socket"):
            if not hasattr(socket, "AF_UNIX"):
                return None
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(timeout)
            s.connect(str(info["socket"]))
        elif info.get("port"):
            s = socket.create_connection(("127.0.0.1", int(info["port"])), timeout=timeout)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        else:
            return None
    except (OSError, ValueError, TypeError):
        return None
    s.settimeout(None)
    return s
