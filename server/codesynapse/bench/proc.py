"""Process-tree memory from /proc (Linux): the resident set of a process and its
descendants, sampled while it runs."""

from __future__ import annotations

import os
import threading
import time


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as f:
                stat = f.read()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(name))
    return kids


def rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def tree(pid: int) -> list[int]:
    kids = _children_map()
    out, stack = [], [pid]
    while stack:
        p = stack.pop()
        out.append(p)
        stack.extend(kids.get(p, []))
    return out


class TreeSampler:
    """Samples the RSS of ``pid`` and its descendants every ``interval`` seconds."""

    def __init__(self, pid: int, interval: float = 0.05):
        self.pid = pid
        self.interval = interval
        self.peak_total = 0
        self.peak_main = 0
        self.peak_worker = 0
        self.peak_workers = 0
        self.max_workers_seen = 0
        self.samples = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def start(self) -> TreeSampler:
        self._t.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._t.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            pids = tree(self.pid)
            main = rss_bytes(self.pid)
            workers = [rss_bytes(p) for p in pids if p != self.pid]
            total = main + sum(workers)
            self.samples += 1
            self.peak_main = max(self.peak_main, main)
            self.peak_total = max(self.peak_total, total)
            if workers:
                self.peak_worker = max(self.peak_worker, max(workers))
                self.peak_workers = max(self.peak_workers, sum(workers))
                self.max_workers_seen = max(self.max_workers_seen, len(workers))
            if main == 0 and not workers:
                return
            time.sleep(self.interval)


def dir_size(path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(dirpath, f))
            except OSError:
                pass
    return total
