"""Which process owns a session, and whether that process is still running.

Session memory is visible only to its session, and a session lives as long as the process
that made it (a daemon connection, a CLI run): the session id is a fresh random token that
is never chosen again. A process that ends cleanly deletes its session memory; one killed
with ``kill -9`` cannot, so each session records its owner and the next start purges the
sessions whose owner is gone (``memory.factory.purge_orphaned_sessions``).

An owner is ``host/boot/pidns/pid/start``: the host name, the kernel's boot id, the pid
namespace, the pid and the process' start time (clock ticks since boot). The start time
tells a reused pid from the owner; a different boot id means every process of that boot is
gone. A process on another host or in another pid namespace cannot be checked from here:
it counts as running (its own host purges it).
"""

from __future__ import annotations

import functools
import os
import socket

_SEP = "/"


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return ""


def _start_ticks(pid: int) -> str:
    """The process' start time from /proc (field 22 of stat), "" where there is no /proc or
    no such process."""
    stat = _read(f"/proc/{pid}/stat")
    if not stat:
        return ""
    fields = stat.rsplit(")", 1)[-1].split()
    # fields[0] is the state (field 3); the start time is field 22
    return fields[19] if len(fields) > 19 else ""


def _pidns() -> str:
    try:
        return os.readlink("/proc/self/ns/pid").replace(_SEP, "_")
    except OSError:
        return ""


@functools.lru_cache(maxsize=1)
def _here() -> tuple[str, str, str]:
    host = socket.gethostname().replace(_SEP, "_")
    boot = _read("/proc/sys/kernel/random/boot_id")
    return host, boot, _pidns()


def process_owner(pid: int | None = None) -> str:
    """The owner string of this process (or of ``pid`` on this host)."""
    pid = os.getpid() if pid is None else pid
    host, boot, ns = _here()
    return _SEP.join((host, boot, ns, str(pid), _start_ticks(pid)))


def owner_alive(owner: str) -> bool:
    """False when the owner is certainly gone: same host and pid namespace, and another
    boot, or no such pid, or that pid started at another time. True when it runs, or when it
    cannot be told from here. An unparsable owner counts as running (nothing is purged on a
    guess)."""
    parts = owner.split(_SEP)
    if len(parts) != 5 or not parts[3].isdigit():
        return True
    host, boot, ns, pid_s, start = parts
    here_host, here_boot, here_ns = _here()
    if host != here_host:
        return True
    if boot and here_boot and boot != here_boot:
        return False  # the machine restarted since
    if ns != here_ns:
        return True
    pid = int(pid_s)
    if not os.path.exists("/proc/self/stat"):  # no /proc: does the pid exist at all
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except OSError:
            return True
        return True
    now = _start_ticks(pid)
    if not now:
        return False  # no such process
    if _zombie(pid):
        return False
    return not start or now == start


def _zombie(pid: int) -> bool:
    stat = _read(f"/proc/{pid}/stat")
    fields = stat.rsplit(")", 1)[-1].split()
    return bool(fields) and fields[0] in ("Z", "X")
