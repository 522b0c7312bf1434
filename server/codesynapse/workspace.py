"""Where a repository is, who it is (identity → graph_id), where its index lives, and
what git says about it."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from codesynapse.scope import graph_id_for

DATA_DIR_NAME = ".codesynapse-data"


def _git(root: Path, *args: str, timeout: float = 5.0) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


@dataclass(frozen=True)
class Workspace:
    root: Path
    identity: str
    graph_id: str
    data_dir: Path

    @property
    def db_path(self) -> Path:
        return self.data_dir / "graph.db"

    def relpath(self, path: str | Path) -> str | None:
        """The '/'-separated path of ``path`` inside the workspace, or None when it lies
        outside (``..``, another absolute path, a symlink out)."""
        p = Path(path)
        if not p.is_absolute():
            p = self.root / p
        try:
            real = Path(os.path.realpath(p))
            rel = real.relative_to(self.root)
        except (ValueError, OSError):
            return None
        s = rel.as_posix()
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:  # not UTF-8: never indexed, so never a valid request path
            return None
        return None if s in ("", ".") else s

    def git_head(self) -> str | None:
        return _git(self.root, "rev-parse", "HEAD")

    def git_dirty(self) -> bool | None:
        out = _git(self.root, "status", "--porcelain", "--untracked-files=no", timeout=10.0)
        return None if out is None else bool(out)


def repo_identity(root: Path) -> str:
    """The remote URL when the repository has one (so clones share a graph), else the root.
    Credentials in the URL (``https://user:token@host/…``, ``https://<token>@host/…``) are
    not part of the identity: a clone made with a token and one made without are the same
    repository, and the identity is stored (graph metadata). A plain user name
    (``ssh://git@host/…``) stays."""
    url = _git(root, "config", "--get", "remote.origin.url")
    if url:
        return _URL_USERINFO_RE.sub(_without_credentials, url).removesuffix(".git")
    return str(root)


_URL_USERINFO_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/@]*)@")


def _without_credentials(m: re.Match[str]) -> str:
    from codesynapse.extract.redact import contains_secret

    user = m.group(2)
    return m.group(1) if ":" in user or contains_secret(user) else m.group(0)


def default_data_root() -> Path:
    env = os.environ.get("CODESYNAPSE_DATA_DIR")
    if env:
        return Path(env)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "codesynapse"


def data_dir_for(root: str | Path, data_dir: str | Path | None = None) -> Path:
    """The data folder of the workspace at ``root`` (``data_dir`` when given); nothing is
    created. The shared daemon is keyed by it (codesynapse.daemon)."""
    if data_dir:
        return Path(data_dir)
    root = Path(os.path.realpath(root))
    # per repository *checkout*: two clones share a graph id but not an index file
    key = hashlib.sha256(str(root).encode()).hexdigest()[:12]
    return default_data_root() / f"{root.name}-{key}"


def open_workspace(root: str | Path, data_dir: str | Path | None = None) -> Workspace:
    root = Path(os.path.realpath(root))
    if not root.is_dir():
        raise FileNotFoundError(f"workspace root is not a directory: {root}")
    identity = repo_identity(root)
    gid = graph_id_for(identity)
    data = data_dir_for(root, data_dir)
    data.mkdir(parents=True, exist_ok=True)
    return Workspace(root=root, identity=identity, graph_id=gid, data_dir=data)
