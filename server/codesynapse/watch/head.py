"""Following a checkout's HEAD (issue 26, docs/TEAM.md): a commit, a checkout of another
branch or commit, a pull, a reset — anything that moves HEAD — is seen within a poll
interval, and ``on_move(HEAD's commit)`` is called once per move. So is a push (or a fetch)
that moves HEAD's pushed point: the newest first-parent ancestor of HEAD that a
remote-tracking ref contains (``store.team.pushed_point``), whose base a team checkout
stands on.

What is watched is git's own bookkeeping, by ``stat``/read, not by running git: the HEAD file
of the checkout's git directory (a branch switch or a detached checkout rewrites it), the
ref it names under the common git directory (a commit, a pull or a reset on the branch
rewrites it), ``packed-refs``, and the directories under ``refs/remotes`` (a push or a fetch
writes a remote-tracking ref there, which changes its directory). Only when one of them
changed is git asked (``rev-parse HEAD``, and where the pushed point is), so a quiet checkout
costs two small reads, three ``stat`` calls and one directory listing per remote per
interval. Worktrees and submodules (a ``.git`` file) work: the directories come from
``git rev-parse``.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

POLL_S = 1.0
REMOTE_DIRS_MAX = 256  # directories under refs/remotes whose change is watched


def _git(root: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10.0,
                             stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _dir_stamps(top: Path) -> tuple:
    """(directory, mtime) of ``top`` and the directories below it (at most REMOTE_DIRS_MAX):
    writing a ref file (a lock file renamed over it) changes its directory's mtime."""
    out: list[tuple[str, int]] = []
    todo = [top]
    while todo and len(out) < REMOTE_DIRS_MAX:
        d = todo.pop()
        try:
            out.append((str(d), os.stat(d).st_mtime_ns))
            with os.scandir(d) as entries:
                todo.extend(Path(e.path) for e in entries if e.is_dir(follow_symlinks=False))
        except OSError:
            continue
    return tuple(sorted(out))


def _pushed(root: Path, head: str) -> str:
    from codesynapse.store.team import pushed_point

    return pushed_point(root, head)[1] if head else ""


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


class HeadWatcher:
    """Polls the checkout at ``root`` every ``interval`` seconds in a thread of its own;
    ``on_move(commit)`` runs in that thread when HEAD names another commit than it did."""

    def __init__(self, root: Path, on_move: Callable[[str], None], interval: float = POLL_S):
        self.root = Path(root)
        self.on_move = on_move
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        git_dir = _git(self.root, "rev-parse", "--absolute-git-dir")
        common = _git(self.root, "rev-parse", "--git-common-dir")
        self.git_dir = Path(git_dir) if git_dir else None
        # --git-common-dir is relative to the directory git ran in (the root), or absolute
        self.common_dir = (self.root / common) if common else self.git_dir
        self.commit = _git(self.root, "rev-parse", "HEAD") or ""
        self.pushed = _pushed(self.root, self.commit) if self.git_dir is not None else ""
        self._sig = self._signature()

    def _signature(self) -> tuple:
        if self.git_dir is None:
            return ()
        head = self.git_dir / "HEAD"
        try:
            text = head.read_text(errors="replace").strip()
        except OSError:
            text = ""
        ref = text[5:].strip() if text.startswith("ref: ") else ""
        common = self.common_dir or self.git_dir
        return (text, _stamp(head), _read(common / ref) if ref else None, _stamp(common / ref) if ref else None,
                _stamp(common / "packed-refs"), _dir_stamps(common / "refs" / "remotes"))

    def check(self) -> str | None:
        """One poll: HEAD's commit when HEAD or its pushed point moved since the last poll
        (``on_move`` called), else None."""
        sig = self._signature()
        if sig == self._sig:
            return None
        self._sig = sig
        commit = _git(self.root, "rev-parse", "HEAD") or ""
        if not commit:
            return None
        pushed = _pushed(self.root, commit)
        if commit == self.commit and pushed == self.pushed:
            return None
        if commit != self.commit:
            log.info("HEAD moved: %s -> %s", self.commit[:12] or "(none)", commit[:12])
        else:
            log.info("HEAD's pushed point moved: %s -> %s", self.pushed[:12] or "(none)", pushed[:12] or "(none)")
        self.commit, self.pushed = commit, pushed
        try:
            self.on_move(commit)
        except Exception:  # a failing callback must not stop the watcher
            log.exception("following HEAD to %s failed", commit[:12])
        return commit

    def start(self) -> None:
        if self.git_dir is None:
            return  # not a git checkout: nothing to follow
        self._thread = threading.Thread(target=self._run, name="codesynapse-head", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.check()

    def stop(self) -> None:
        self._stop.set()
