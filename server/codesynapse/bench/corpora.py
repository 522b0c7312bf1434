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

Registry corpora at pinned versions (the retrieval evaluation's repositories), each fetched
with the registry's own client into the cache and unpacked there (never into the repository):

* ``pypi:NAME==VERSION`` — the sdist (``pip download --no-deps --no-binary :all:``);
* ``npm:NAME@VERSION`` — the package tarball (``npm pack``); ``build/`` and ``dist/`` excluded;
* ``go:MODULE@VERSION`` — the module zip from the module cache (``go mod download -json``);
* ``maven:GROUP:ARTIFACT:VERSION`` — the ``-sources.jar`` (``mvn dependency:get``);
* ``crate:NAME@VERSION`` — the ``.crate`` file (``cargo fetch`` of a throw-away manifest that
  depends on exactly that version, with default features off).

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


def _unpack_once(dest: Path, marker: str, unpack) -> None:
    """Unpack into ``dest`` through a ``.partial`` folder unless ``dest/marker`` exists."""
    if (dest / marker).exists():
        return
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        top = unpack(tmp)
        shutil.rmtree(dest, ignore_errors=True)
        Path(top).rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run(cmd: list[str], what: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    log.info("fetching %s: %s", what, " ".join(cmd))
    try:
        return subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL, timeout=600, capture_output=True,
                              text=True, cwd=cwd)
    except FileNotFoundError as e:
        raise SystemExit(f"cannot fetch {what}: {cmd[0]} is not installed") from e
    except subprocess.CalledProcessError as e:
        raise SystemExit(f"cannot fetch {what}: {' '.join(cmd)} failed: {(e.stderr or e.stdout or '').strip()[-400:]}")


def _single_top(tmp: Path) -> Path:
    entries = [p for p in tmp.iterdir()]
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else tmp


def pypi_sdist(name: str, version: str) -> Corpus:
    downloads = cache_dir() / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    norm = name.lower().replace("-", "_")

    def sdists() -> list[Path]:
        return [p for p in downloads.glob("*.tar.gz")
                if p.name.lower().replace("-", "_") == f"{norm}_{version}.tar.gz".lower()]

    if not sdists():
        _run([sys.executable, "-m", "pip", "download", f"{name}=={version}", "--no-deps", "--no-binary", ":all:",
              "-d", str(downloads)], f"{name}=={version}")
    found = sdists()
    if not found:
        raise SystemExit(f"pip download {name}=={version} left no sdist in {downloads}")
    dest = cache_dir() / "corpora" / f"pypi-{norm}-{version}"

    def unpack(tmp: Path) -> Path:
        with tarfile.open(found[0]) as tar:
            _safe_extract(tar, tmp)
        return _single_top(tmp)

    _unpack_once(dest, "PKG-INFO", unpack)
    return Corpus(f"{norm}-{version}", dest, f"{name} {version} (PyPI sdist)",
                  f"pip download {name}=={version} --no-deps --no-binary :all:", languages=("python",))


def npm_source(name: str, version: str) -> Corpus:
    """An npm package that ships its TypeScript source: the tarball without its prebuilt
    ``build/`` and ``dist/`` output."""
    c = npm_package(name, version)
    return Corpus(name.rsplit("/", 1)[-1] + "-" + version, c.path, c.version, c.source, exclude=("build/", "dist/"),
                  languages=("typescript",))


def go_module(module: str, version: str) -> Corpus:
    out = _run(["go", "mod", "download", "-json", f"{module}@{version}"], f"{module}@{version}")
    info = json.loads(out.stdout)
    if info.get("Error") or not info.get("Zip"):
        raise SystemExit(f"go mod download {module}@{version}: {info.get('Error') or 'no zip'}")
    dest = cache_dir() / "corpora" / ("go-" + module.replace("/", "_") + "-" + version)

    def unpack(tmp: Path) -> Path:
        import zipfile

        with zipfile.ZipFile(info["Zip"]) as z:
            _safe_unzip(z, tmp)
        # a module zip holds MODULE@VERSION/... under the module path
        top = tmp / f"{module}@{version}"
        return top if top.is_dir() else tmp

    _unpack_once(dest, "go.mod", unpack)
    parts = module.split("/")
    short = parts[-2] if len(parts) > 1 and parts[-1][:1] == "v" and parts[-1][1:].isdigit() else parts[-1]
    return Corpus(f"{short}-{version}", dest, f"{module} {version} (Go module)", f"go mod download -json {module}@{version}",
                  exclude=("testdata/",), languages=("go",))


def _safe_unzip(z, dest: Path) -> None:
    root = os.path.realpath(dest)
    for m in z.infolist():
        target = os.path.realpath(os.path.join(dest, m.filename))
        if not (target + os.sep).startswith(root + os.sep) and target != root:
            raise ValueError(f"refusing to extract {m.filename!r}")
    z.extractall(dest)
    for dirpath, dirnames, filenames in os.walk(dest):  # module-cache zips unpack read-only elsewhere; keep writable
        for n in filenames:
            os.chmod(os.path.join(dirpath, n), 0o644)


def maven_sources(group: str, artifact: str, version: str) -> Corpus:
    m2 = Path(os.path.expanduser("~")) / ".m2" / "repository" / Path(*group.split(".")) / artifact / version
    jar = m2 / f"{artifact}-{version}-sources.jar"
    if not jar.exists():
        _run(["mvn", "-q", "-B", "dependency:get", f"-Dartifact={group}:{artifact}:{version}:jar:sources",
              "-Dtransitive=false"], f"{group}:{artifact}:{version} sources")
    if not jar.exists():
        raise SystemExit(f"mvn dependency:get left no {jar}")
    dest = cache_dir() / "corpora" / f"maven-{group}-{artifact}-{version}"

    def unpack(tmp: Path) -> Path:
        import zipfile

        with zipfile.ZipFile(jar) as z:
            _safe_unzip(z, tmp)
        (tmp / ".sources-jar").write_text(f"{group}:{artifact}:{version}\n")
        return tmp

    _unpack_once(dest, ".sources-jar", unpack)
    return Corpus(f"{artifact}-{version}", dest, f"{group}:{artifact} {version} (Maven Central sources jar)",
                  f"mvn dependency:get -Dartifact={group}:{artifact}:{version}:jar:sources", exclude=("META-INF/",),
                  languages=("java",))


def crate_source(name: str, version: str) -> Corpus:
    cargo_home = Path(os.environ.get("CARGO_HOME") or Path(os.path.expanduser("~")) / ".cargo")

    def crates() -> list[Path]:
        return sorted((cargo_home / "registry" / "cache").glob(f"*/{name}-{version}.crate"))

    if not crates():
        proj = cache_dir() / "downloads" / f"crate-fetch-{name}-{version}"
        (proj / "src").mkdir(parents=True, exist_ok=True)
        (proj / "src" / "main.rs").write_text("fn main() {}\n")
        (proj / "Cargo.toml").write_text(
            f'[package]\nname = "fetch-only"\nversion = "0.0.0"\nedition = "2021"\n\n'
            f'[dependencies]\n{name} = {{ version = "={version}", default-features = false }}\n')
        _run(["cargo", "fetch", "--manifest-path", str(proj / "Cargo.toml")], f"crate {name}@{version}")
    found = crates()
    if not found:
        raise SystemExit(f"cargo fetch left no {name}-{version}.crate under {cargo_home}/registry/cache")
    dest = cache_dir() / "corpora" / f"crate-{name}-{version}"

    def unpack(tmp: Path) -> Path:
        with tarfile.open(found[0]) as tar:
            _safe_extract(tar, tmp)
        return _single_top(tmp)

    _unpack_once(dest, "Cargo.toml", unpack)
    return Corpus(f"{name}-{version}", dest, f"{name} {version} (crates.io crate)", f"cargo fetch ({name} ={version})",
                  languages=("rust",))


LINUX_TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")  # Debian's linux-source-6.1
LINUX_FRACTIONS = {"linux-6.1-25": 1, "linux-6.1-50": 2, "linux-6.1": 4}  # quarters of the file list


def _linux_tree() -> Path:
    """The Linux 6.1 source from Debian's ``linux-source-6.1`` (installed with apt-get when
    the tarball is absent), unpacked once into the bench cache."""
    if not LINUX_TARBALL.exists():
        log.info("installing linux-source-6.1 with apt-get")
        _run(["apt-get", "install", "-y", "linux-source-6.1"], "linux-source-6.1")
    if not LINUX_TARBALL.exists():
        raise SystemExit(f"{LINUX_TARBALL} is missing after apt-get install linux-source-6.1")
    dest = cache_dir() / "corpora" / "linux-6.1"

    def unpack(tmp: Path) -> Path:
        _run(["tar", "-xJf", str(LINUX_TARBALL), "-C", str(tmp)], "the Linux 6.1 source")
        return _single_top(tmp)

    _unpack_once(dest, "MAINTAINERS", unpack)
    return dest


def in_quarters(rel: str, quarters: int) -> bool:
    """A deterministic sample of a tree's files: those whose path's CRC-32 falls in the first
    ``quarters`` quarters (so the 25% sample lies inside the 50% one, and both inside the whole)."""
    import zlib

    return zlib.crc32(rel.encode("utf-8")) % 4 < quarters


def linux_corpus(name: str) -> Corpus:
    """The Linux 6.1 kernel (``linux-6.1``) or a quarter sample of its files (``linux-6.1-25``,
    ``linux-6.1-50``: ``in_quarters``), as a tree of hard links beside the unpacked source."""
    full = _linux_tree()
    quarters = LINUX_FRACTIONS[name]
    version = f"Linux 6.1 (Debian linux-source-6.1){'' if quarters == 4 else f', {quarters * 25}% of its files'}"
    source = f"apt-get install linux-source-6.1 ({LINUX_TARBALL})"
    if quarters == 4:
        return Corpus(name, full, version, source, languages=("c",))
    dest = cache_dir() / "corpora" / name

    def sample(tmp: Path) -> Path:
        top = tmp / name
        for dirpath, _dirs, files in os.walk(full):
            rel_dir = os.path.relpath(dirpath, full)
            for f in files:
                rel = f if rel_dir == "." else f"{rel_dir}/{f}"
                src = os.path.join(dirpath, f)
                if os.path.islink(src) or not in_quarters(rel, quarters):
                    continue
                os.makedirs(top / rel_dir, exist_ok=True)
                os.link(src, top / rel)
        (top / ".sample").write_text(f"{quarters}/4 of {full}\n", encoding="utf-8")
        return top

    _unpack_once(dest, ".sample", sample)
    return Corpus(name, dest, version, source + f"; files with crc32(path) % 4 < {quarters}", languages=("c",))


def registry(spec: str) -> Corpus | None:
    """A registry corpus (``pypi:``, ``npm:``, ``go:``, ``maven:``, ``crate:``) or None."""
    kind, sep, rest = spec.partition(":")
    if not sep or not rest:
        return None
    kind = kind.lower()
    if kind == "pypi" and "==" in rest:
        name, version = rest.split("==", 1)
        return pypi_sdist(name, version)
    if kind == "npm" and "@" in rest[1:]:
        name, version = rest.rsplit("@", 1)
        return npm_source(name, version)
    if kind == "go" and "@" in rest:
        module, version = rest.rsplit("@", 1)
        return go_module(module, version)
    if kind == "maven" and rest.count(":") == 2:
        return maven_sources(*rest.split(":"))
    if kind == "crate" and "@" in rest:
        name, version = rest.split("@", 1)
        return crate_source(name, version)
    if kind in ("pypi", "npm", "go", "maven", "crate"):
        raise SystemExit(f"corpus {spec!r}: write pypi:NAME==VERSION, npm:NAME@VERSION, go:MODULE@VERSION, "
                         "maven:GROUP:ARTIFACT:VERSION or crate:NAME@VERSION")
    return None


ALIASES = {"stdlib": "python-stdlib", "python": "python-stdlib", "python-stdlib": "python-stdlib",
           "django": "django", "go": "go-stdlib", "go-stdlib": "go-stdlib", "rxjs": "rxjs",
           "linux": "linux-6.1", "kernel": "linux-6.1", "linux-6.1": "linux-6.1", "linux-6.1-25": "linux-6.1-25",
           "linux-6.1-50": "linux-6.1-50"}


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
    if key in LINUX_FRACTIONS:
        return linux_corpus(key)
    reg = registry(spec) if spec and not Path(spec).expanduser().is_dir() else None
    if reg is not None:
        return reg
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
    shutil.copytree(corpus.path, dest, ignore=skip_names(corpus), symlinks=True)
    return dest


def skip_names(corpus: Corpus):
    """The ``ignore`` of a copy of ``corpus`` (``shutil.copytree``'s): of the names in a
    folder, those the policy drops anyway."""
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

    return ignore


def make_policy(exclude: tuple[str, ...] = (), include: tuple[str, ...] = ()):
    """The effective policy of a benchmark run: the default policy plus ``exclude`` (and
    ``include``, which re-includes a default exclusion such as the stdlib's ``venv``
    package)."""
    from codesynapse.policy.model import Policy

    return Policy(exclude=tuple(exclude), include=tuple(include))
