"""``daemon.log`` rotated by size, as ``logging.handlers.RotatingFileHandler`` names its
files: when the log reaches ``max_bytes`` it becomes ``daemon.log.1`` (``.1`` becomes
``.2`` …, the oldest beyond ``backups`` is deleted) and a new ``daemon.log`` is started.

The daemon's records are written by logsetup's writer thread to a duplicate of its
stderr, which the proxy opened on ``daemon.log`` (daemon/proxy.py); ``rotation`` returns
the writer's ``after_write`` hook that rotates after a record has taken the file over the
limit. The new file goes in place of both the writer's descriptor and descriptor 2, so what
reaches stderr raw (an interpreter's last words) lands in the current file too and counts
towards its size.

Sizes: ``CODESYNAPSE_DAEMON_LOG_BYTES`` (default 10 MiB) per file and
``CODESYNAPSE_DAEMON_LOG_BACKUPS`` (default 3) older files: at most 40 MiB with the defaults.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

MAX_BYTES = 10 * 1024 * 1024
BACKUPS = 3
MIN_BYTES = 4096  # a smaller limit from the environment is raised to this


def _env_int(name: str, default: int, low: int) -> int:
    try:
        return max(low, int(os.environ.get(name, "").strip() or default))
    except ValueError:
        return default


def limits() -> tuple[int, int]:
    """(bytes per file, older files kept) from the environment, or the defaults."""
    return (_env_int("CODESYNAPSE_DAEMON_LOG_BYTES", MAX_BYTES, MIN_BYTES),
            _env_int("CODESYNAPSE_DAEMON_LOG_BACKUPS", BACKUPS, 1))


def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def rotate(path: Path, backups: int) -> None:
    """``path.N-1`` → ``path.N`` … ``path`` → ``path.1`` (the oldest is replaced)."""
    for i in range(backups - 1, 0, -1):
        src = path.with_name(f"{path.name}.{i}")
        if src.exists():
            os.replace(src, path.with_name(f"{path.name}.{i + 1}"))
    os.replace(path, path.with_name(f"{path.name}.1"))


def rotation(path: Path, max_bytes: int | None = None, backups: int | None = None,
             stderr_fd: int = 2) -> Callable[[int], None] | None:
    """The writer's hook for ``path`` when the daemon's stderr is that file (the proxy
    started it); None otherwise (stderr is a terminal or another file: nothing to rotate)."""
    env_bytes, env_backups = limits()
    max_bytes = max_bytes or env_bytes
    backups = backups or env_backups
    if not _same_file(stderr_fd, path):
        return None

    def after_write(fd: int) -> None:
        if os.fstat(fd).st_size < max_bytes:
            return
        if not _same_file(fd, path):  # someone moved the file: start a new one in its place
            new = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        else:
            rotate(path, backups)
            new = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.dup2(new, fd)
            if stderr_fd != fd:
                os.dup2(new, stderr_fd)
        finally:
            os.close(new)

    return after_write
