"""Following a checkout's HEAD (watch/head.py) on real git repositories: a commit, a checkout
of another commit or branch, a reset and a commit in a linked worktree are each seen once;
a quiet checkout and a change that does not move HEAD (a new branch elsewhere) are not."""

from __future__ import annotations

import subprocess
from pathlib import Path

from codesynapse.watch.head import HeadWatcher


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), "-c", "user.email=t@example.invalid", "-c", "user.name=t",
                           *args], check=True, capture_output=True, text=True).stdout.strip()


def head(cwd: Path) -> str:
    return git(cwd, "rev-parse", "HEAD")


def test_moves_of_head_are_seen_once_each(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.py").write_text("x = 1\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "c1")
    c1 = head(root)
    moves: list[str] = []
    w = HeadWatcher(root, moves.append)
    assert w.check() is None  # nothing moved

    (root / "a.py").write_text("x = 2\n")  # an edit alone does not move HEAD
    assert w.check() is None
    git(root, "commit", "-qam", "c2")
    c2 = head(root)
    assert w.check() == c2 and w.check() is None

    git(root, "branch", "-q", "side", c1)  # another branch's ref: HEAD stays
    assert w.check() is None
    git(root, "checkout", "-q", "side")
    assert w.check() == c1
    git(root, "checkout", "-q", "--detach", c2)
    assert w.check() == c2
    git(root, "checkout", "-q", "main")  # the same commit on a branch: HEAD's file changed, not the commit
    assert w.check() is None
    git(root, "reset", "-q", "--hard", c1)
    assert w.check() == c1
    assert moves == [c2, c1, c2, c1]


def test_a_linked_worktree_follows_its_own_head(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "commit", "-q", "--allow-empty", "-m", "c1")
    wt = tmp_path / "wt"
    git(root, "worktree", "add", "-q", "-b", "feature", str(wt))
    moves: list[str] = []
    w = HeadWatcher(wt, moves.append)
    git(root, "commit", "-q", "--allow-empty", "-m", "on main")  # the main checkout moves, not this one
    assert w.check() is None
    git(wt, "commit", "-q", "--allow-empty", "-m", "on feature")
    assert w.check() == head(wt) and moves == [head(wt)]


def test_outside_git_nothing_is_followed(tmp_path):
    w = HeadWatcher(tmp_path, lambda c: None)
    assert w.git_dir is None and w.check() is None
    w.start()  # no thread for a non-git folder
    assert w._thread is None


def test_a_push_that_moves_heads_pushed_point_is_seen(tmp_path):
    """A team checkout stands on the base of HEAD's newest pushed first-parent ancestor
    (store/team.py ``pushed_point``): a push moves it without moving HEAD, and is seen once; a
    fetch that brings nothing of HEAD's history is not."""
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    root = tmp_path / "repo"
    git(tmp_path, "clone", "-q", str(bare), str(root))
    git(root, "commit", "-q", "--allow-empty", "-m", "c1")
    git(root, "push", "-q", "origin", "main")
    c1 = head(root)
    moves: list[str] = []
    w = HeadWatcher(root, moves.append)
    assert (w.commit, w.pushed) == (c1, c1)

    git(root, "commit", "-q", "--allow-empty", "-m", "c2 (local)")
    c2 = head(root)
    assert w.check() == c2 and w.pushed == c1  # HEAD moved; c2 is not pushed
    git(root, "push", "-q", "origin", "main")
    assert w.check() == c2 and w.pushed == c2  # HEAD stays, its pushed point moved
    assert w.check() is None

    other = tmp_path / "other"  # someone else pushes another branch; this checkout fetches it
    git(tmp_path, "clone", "-q", str(bare), str(other))
    git(other, "checkout", "-q", "-b", "side")
    git(other, "commit", "-q", "--allow-empty", "-m", "s1")
    git(other, "push", "-q", "origin", "side")
    git(root, "fetch", "-q", "origin")
    assert w.check() is None
    assert moves == [c2, c2]


def test_the_pushed_point_of_head(tmp_path):
    """``pushed_point``: HEAD's unpushed first-parent commits (newest first) and the newest one
    a remote-tracking ref contains; a repository without one has pushed nothing."""
    from codesynapse.store.team import pushed_point

    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "commit", "-q", "--allow-empty", "-m", "c1")
    c1 = head(root)
    git(root, "commit", "-q", "--allow-empty", "-m", "c2")
    c2 = head(root)
    assert pushed_point(root, c2) == ([c2, c1], "")  # no remote: nothing pushed

    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(root, "remote", "add", "origin", str(bare))
    git(root, "push", "-q", "origin", f"{c1}:refs/heads/main")
    git(root, "fetch", "-q", "origin")
    assert pushed_point(root, c2) == ([c2], c1)
    # a merge of a side branch: its second parent's commits are not on the first-parent chain
    git(root, "checkout", "-q", "-b", "side", c1)
    git(root, "commit", "-q", "--allow-empty", "-m", "s1")
    git(root, "checkout", "-q", "main")
    git(root, "merge", "-q", "--no-ff", "-m", "m", "side")
    m = head(root)
    assert pushed_point(root, m) == ([m, c2], c1)
    git(root, "push", "-q", "origin", "main")
    assert pushed_point(root, m) == ([], m)
