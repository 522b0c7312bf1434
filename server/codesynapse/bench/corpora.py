"""Benchmark corpora: where they come from, which version they are, what the policy keeps.

Named corpora (``--corpus NAME``; anything else is a path):

* ``python-stdlib`` (``stdlib``) — this machine's ``sysconfig.get_paths()["stdlib"]``, indexed
  in place with ``site-packages/`` excluded by policy (installed packages are not the
  standard library) and ``/venv/`` re-included (the default policy drops folders named
  ``venv``, but here it is the stdlib's ``venv`` package).
* ``django`` — Django 5.1 from its sdist, fetched with pip into the cache (never into the
  repository) and unpacked there.
* ``go-stdlib`` (``go``) — ``$(go env GOROOT)/src`` without ``cmd/`` (the toolchain) and
  ``testdata/`` (test inputs, many deliberately invalid).
* ``rxjs`` — the TypeScript sources of the rxjs npm package (``npm pack``), unpacked in the
  cache; the prebuilt ``dist/`` is excluded by the default policy.

The cache is ``$CODESYNAPSE_BENCH_CACHE`` or ``~/.cache/codesynapse-bench``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

DJANGO_SPEC = "django>=5.1,<5.2"
RXJS = ("rxjs", "7.8.2")


def cache_dir() -> Path:
    env = os.environ.get("CODESYNAPSE_BENCH_CACHE")
    base = Path(env) if env else Path(os.path.expanduser("~")) / ".cache" / "codesynapse-bench"
    base.mkdir(parents=True, exist_ok=True)
    return base


@dataclass
class Corpus:
    name: str
    path: Path
    version: str
    source: str
    exclude: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.path), "version": self.version, "source": self.source,
                "policyExclude": list(self.exclude), "policyInclude": list(self.include)}


def python_stdlib() -> Corpus:
    import platform

    path = Path(sysconfig.get_paths()["stdlib"])
    return Corpus("python-stdlib", path, f"CPython {platform.python_version()} standard library",
                  f"sysconfig.get_paths()['stdlib'] = {path}", exclude=("site-packages/",),
                  include=("/venv/",), languages=("python",))


def _safe_extract(tar: tarfile.TarFile, dest: Path) -> None:
    if sys.version_info >= (3, 12):
        tar.extractall(dest, filter="data")
        return
    root = os.path.realpath(dest)
    for m in tar.getmembers():
        target = os.path.realpath(os.path.join(dest, m.name))
        if not (target + os.sep).startswith(root + os.sep) or m.issym() or m.islnk() or m.isdev():
            raise ValueError(f"refusing to extract {m.name!r}")
    tar.extractall(dest)  # noqa: S202 (members checked above)


def django_sdist() -> Corpus:
    downloads = cache_dir() / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    found = sorted(downloads.glob("django-5.1.*.tar.gz"), key=lambda p: [int(x) for x in p.name[7:-7].split(".")
                                                                        if x.isdigit()])
    if not found:
        log.info("fetching the Django 5.1 sdist with pip")
        subprocess.run([sys.executable, "-m", "pip", "download", DJANGO_SPEC, "--no-deps", "--no-binary", ":all:",
                        "-d", str(downloads)], check=True, stdin=subprocess.DEVNULL, timeout=600)
        found = sorted(downloads.glob("django-5.1.*.tar.gz"))
    sdist = found[-1]
    version = sdist.name[len("django-"):-len(".tar.gz")]
    dest = cache_dir() / "corpora" / f"django-{version}"
    if not (dest / "django").is_dir():
        tmp = dest.with_name(dest.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        with tarfile.open(sdist) as tar:
            _safe_extract(tar, tmp)
        shutil.rmtree(dest, ignore_errors=True)
        (tmp / f"django-{version}").rename(dest)
        shutil.rmtree(tmp, ignore_errors=True)
    return Corpus("django", dest, f"Django {version} (sdist)", f"pip download '{DJANGO_SPEC}' --no-binary :all:",
                  languages=("python",))


def go_stdlib() -> Corpus:
    goroot = subprocess.run(["go", "env", "GOROOT"], capture_output=True, text=True, check=True, timeout=30,
                            stdin=subprocess.DEVNULL).stdout.strip()
    version = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, check=True, timeout=30,
                             stdin=subprocess.DEVNULL).stdout.strip()
    return Corpus("go-stdlib", Path(goroot) / "src", f"Go {version} standard library", "$(go env GOROOT)/src",
                  exclude=("/cmd/", "testdata/"), languages=("go",))


def npm_package(name: str, version: str) -> Corpus:
    downloads = cache_dir() / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    tgz = downloads / f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"
    if not tgz.exists():
        log.info("fetching %s@%s with npm pack", name, version)
        subprocess.run(["npm", "pack", f"{name}@{version}", "--pack-destination", str(downloads)], check=True,
                       stdin=subprocess.DEVNULL, timeout=600, capture_output=True)
    dest = cache_dir() / "corpora" / f"{name}-{version}"
    if not (dest / "package.json").exists():
        tmp = dest.with_name(dest.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        with tarfile.open(tgz) as tar:
            _safe_extract(tar, tmp)
        shutil.rmtree(dest, ignore_errors=True)
        (tmp / "package").rename(dest)
        shutil.rmtree(tmp, ignore_errors=True)
    try:
        real = json.loads((dest / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        real = version
    return Corpus(name, dest, f"{name} {real} (npm package)", f"npm pack {name}@{version}",
                  languages=("typescript",))


ALIASES = {"stdlib": "python-stdlib", "python": "python-stdlib", "python-stdlib": "python-stdlib",
           "django": "django", "go": "go-stdlib", "go-stdlib": "go-stdlib", "rxjs": "rxjs"}


def resolve(spec: str, exclude: tuple[str, ...] = ()) -> Corpus:
    """A named corpus, or a directory (indexed with the default policy plus ``exclude``)."""
    key = ALIASES.get(spec.lower()) if spec else None
    if key == "python-stdlib":
        return python_stdlib()
    if key == "django":
        return django_sdist()
    if key == "go-stdlib":
        return go_stdlib()
    if key == "rxjs":
        return npm_package(*RXJS)
    path = Path(spec).expanduser()
    if not path.is_dir():
        raise SystemExit(f"corpus {spec!r} is neither a known name ({', '.join(sorted(set(ALIASES.values())))}) "
                         "nor a directory")
    path = path.resolve()
    version = ""
    try:
        out = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5, stdin=subprocess.DEVNULL)
        if out.returncode == 0:
            version = "git " + out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return Corpus(path.name, path, version or "directory (no version control)", str(path), exclude=tuple(exclude))


_SKIP_DIRS = {"site-packages", "__pycache__", "node_modules", ".git", ".hg", ".codesynapse-data"}


def writable_copy(corpus: Corpus, dest: Path) -> Path:
    """A fresh copy of the corpus's files under ``dest`` (for edits: stale tasks, live
    updates). Folders that the policy drops anyway are not copied."""
    if dest.exists():
        shutil.rmtree(dest)
    skip_rel = {e.strip("/") for e in corpus.exclude if e.startswith("/")}
    skip_any = {e.strip("/") for e in corpus.exclude if not e.startswith("/") and "*" not in e}

    def ignore(dirpath: str, names: list[str]) -> set[str]:
        rel = os.path.relpath(dirpath, corpus.path)
        out = set()
        for n in names:
            r = n if rel == "." else f"{rel}/{n}".replace(os.sep, "/")
            if n in _SKIP_DIRS or n in skip_any or r in skip_rel:
                out.add(n)
        return out

    shutil.copytree(corpus.path, dest, ignore=ignore, symlinks=True)
    return dest


def make_policy(exclude: tuple[str, ...] = (), include: tuple[str, ...] = ()):
    """The effective policy of a benchmark run: the default policy plus ``exclude`` (and
    ``include``, which re-includes a default exclusion such as the stdlib's ``venv``
    package)."""
    from codesynapse.policy.model import Policy

    return Policy(exclude=tuple(exclude), include=tuple(include))
