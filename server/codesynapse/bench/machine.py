"""What a result was measured on: machine, Python, our commit, the date."""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _mem_total_bytes() -> int | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def _our_commit() -> str:
    here = Path(__file__).resolve().parents[3]
    try:
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                             text=True, timeout=5, stdin=subprocess.DEVNULL)
        return out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def load_average() -> list[float] | None:
    """1, 5 and 15-minute load averages: other work on a shared machine skews timings."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _dirty_files() -> list[str]:
    """Tracked files of the server package with uncommitted changes: a shared working tree
    may run code that is not in the recorded commit."""
    here = Path(__file__).resolve().parents[3]
    try:
        out = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no", "--", "server"],
                             capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return []
    return sorted(line[3:] for line in out.stdout.splitlines() if line.strip()) if out.returncode == 0 else []


def machine_info() -> dict[str, Any]:
    mem = _mem_total_bytes()
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "ramGiB": round(mem / 2**30, 1) if mem else None,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "pythonImplementation": platform.python_implementation(),
        "executable": sys.executable,
        "codesynapseCommit": _our_commit(),
        "uncommittedServerFiles": _dirty_files(),
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "loadAverage": load_average(),
    }


def machine_line(m: dict[str, Any]) -> str:
    return (f"{m['cpu']}, {m['cores']} cores, {m['ramGiB']} GiB RAM, {m['os']}; "
            f"Python {m['python']}; CodeSynapse {m['codesynapseCommit'] or 'uncommitted'}"
            + (f" plus uncommitted changes in {', '.join(m['uncommittedServerFiles'])}"
               if m.get("uncommittedServerFiles") else "")
            + f"; {m['date']}"
            + (f"; load average {m['loadAverage'][0]} / {m['loadAverage'][1]} / {m['loadAverage'][2]} when written"
               if m.get("loadAverage") else ""))
