"""memory/owner.py: a session's owning process, and whether it is gone (real processes)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from codesynapse.memory.owner import owner_alive, process_owner

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs /proc")


def _fields(owner: str) -> list[str]:
    parts = owner.split("/")
    assert len(parts) == 5, owner
    return parts


def test_this_process_is_alive_and_its_owner_names_its_pid():
    me = process_owner()
    assert _fields(me)[3] == str(os.getpid()) and _fields(me)[4].isdigit()
    assert owner_alive(me)


def test_a_process_killed_is_gone():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        owner = process_owner(child.pid)
        assert owner_alive(owner)
    finally:
        child.kill()
        child.wait()
    assert not owner_alive(owner)


def test_a_reused_pid_is_not_the_owner():
    host, boot, ns, pid, start = _fields(process_owner())
    earlier = str(int(start) - 1)  # this pid, but a process that started at another time
    assert not owner_alive("/".join((host, boot, ns, pid, earlier)))


def test_another_boot_means_gone_another_host_or_pid_namespace_cannot_be_told():
    host, boot, ns, pid, start = _fields(process_owner())
    assert not owner_alive("/".join((host, "another-boot-id", ns, pid, start)))
    assert owner_alive("/".join(("another-host", boot, ns, "1", "1")))
    assert owner_alive("/".join((host, boot, "pid:[1]", "1", "1")))
    assert owner_alive("not an owner string")  # nothing is purged on a guess
