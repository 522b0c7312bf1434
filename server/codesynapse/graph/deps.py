"""Module nodes kept in step with the manifests of the tree, incrementally like code.

``sync_manifests`` (the full index and its catch-up: the walk names every manifest and
lockfile) and ``sync_paths`` (live updates: the files that changed) read a manifest again
only when it or its lockfile changed (size and mtime), and drop the requirements of a
manifest that is gone. IMPORTED_BY is derived from the stored import rows (``imported_by``):
an import not resolved inside the graph whose module lies under one of a module's import
names (``import_names``).
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Iterable, Sequence
from functools import lru_cache

from codesynapse.extract.manifests import (
    is_dependency_file,
    lockfiles_for,
    manifest_for_lockfile,
    manifest_kind,
    module_key,
    read_manifest,
)
from codesynapse.graph.depmodel import DependencyStore, ManifestRow
from codesynapse.policy.model import redaction_stamp

log = logging.getLogger(__name__)

MAX_MANIFEST_BYTES = 8 << 20
MAX_LOCK_BYTES = 64 << 20


def supported(store) -> bool:
    return isinstance(store, DependencyStore)


def _stat(root: str, rel: str) -> os.stat_result | None:
    try:
        st = os.stat(os.path.join(root, rel))
    except OSError:
        return None
    import stat as st_mod

    return st if st_mod.S_ISREG(st.st_mode) else None


def _stamp(root: str, rel: str, policy=None) -> str:
    """size:mtime of a manifest and of each lockfile beside it ("-" for an absent one), and
    the key of the redaction patterns in force when there are some (what is read of it is
    redacted: another set of patterns reads it again)."""
    parts = []
    for p in [rel, *lockfiles_for(rel)]:
        st = _stat(root, p)
        parts.append(f"{st.st_size}:{st.st_mtime_ns}" if st else "-")
    if redaction := redaction_stamp(policy):
        parts.append(redaction)
    return "|".join(parts)


def _reader(root: str):
    def read(rel: str) -> str | None:
        st = _stat(root, rel)
        if st is None:
            return None
        if st.st_size > MAX_LOCK_BYTES:
            raise ValueError(f"larger than {MAX_LOCK_BYTES >> 20} MB")
        try:
            with open(os.path.join(root, rel), "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return None

    return read


def _redactor(policy):
    from codesynapse.extract.redact import redact

    extra = tuple(getattr(policy, "redact_patterns", ())) if policy is not None else ()
    return lambda s: redact(s, extra) if s else s


def _read(root: str, rel: str, stamp: str, policy):
    kind = manifest_kind(rel.rsplit("/", 1)[-1])
    assert kind is not None
    st = _stat(root, rel)
    read = _reader(root)
    text = None
    note = ""
    if st is not None and st.st_size > MAX_MANIFEST_BYTES:
        note = f"not read: larger than {MAX_MANIFEST_BYTES >> 20} MB"
    else:
        try:
            text = read(rel)
        except ValueError as e:
            note = f"not read: {e}"
    if text is None:
        from codesynapse.extract.manifests import ECOSYSTEM

        return ManifestRow(path=rel, kind=kind, ecosystem=ECOSYSTEM[kind], stamp=stamp, notes=note or "not readable"), []

    def safe_read(p: str) -> str | None:
        try:
            return read(p)
        except ValueError:
            return None

    mx = read_manifest(rel, text, safe_read, _redactor(policy))
    row = ManifestRow(path=rel, kind=mx.kind, ecosystem=mx.ecosystem, stamp=stamp, lockfile=mx.lockfile,
                      notes="; ".join(mx.notes), requirements=len(mx.requirements))
    return row, mx.requirements


def sync_manifests(store, root, found: Iterable[str], policy=None) -> int:
    """Make the stored manifests those of ``found`` (every manifest and lockfile path the
    walk saw): changed ones read again, vanished ones dropped. Returns how many were written."""
    if not supported(store):
        return 0
    root = str(root)
    wanted = set()
    for rel in found:
        name = rel.rsplit("/", 1)[-1]
        if manifest_kind(name) is not None:
            wanted.add(rel)
    stored = {m.path: m for m in store.manifests()}
    items = []
    for rel in sorted(wanted):
        stamp = _stamp(root, rel, policy)
        old = stored.get(rel)
        if old is not None and old.stamp == stamp:
            continue
        items.append(_read(root, rel, stamp, policy))
    gone = sorted(set(stored) - wanted)
    if items or gone:
        store.write_manifests(items, gone)
        log.info("modules: %d manifest(s) read, %d dropped", len(items), len(gone))
    return len(items) + len(gone)


def sync_paths(store, root, paths: Iterable[str], policy=None) -> int:
    """Live update: the dependency files among ``paths`` changed (written, created or deleted)."""
    if not supported(store):
        return 0
    root = str(root)
    manifests: set[str] = set()
    for rel in paths:
        if not is_dependency_file(rel):
            continue
        if manifest_kind(rel.rsplit("/", 1)[-1]) is not None:
            manifests.add(rel)
        else:
            m = manifest_for_lockfile(rel)
            if m:
                manifests.add(m)
    if not manifests:
        return 0
    stored = {m.path: m for m in store.manifests()}
    items, gone = [], []
    for rel in sorted(manifests):
        excluded = policy is not None and policy.excluded(rel)
        if _stat(root, rel) is None or excluded:
            if rel in stored:
                gone.append(rel)
            continue
        stamp = _stamp(root, rel, policy)
        if rel in stored and stored[rel].stamp == stamp:
            continue
        items.append(_read(root, rel, stamp, policy))
    if items or gone:
        store.write_manifests(items, gone)
    return len(items) + len(gone)


# -- IMPORTED_BY --------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _python_distributions() -> dict[str, tuple[str, ...]]:
    """Distribution key (PEP 503) → the top-level import names its installed metadata
    declares (``top_level.txt`` / RECORD, through ``packages_distributions()``), for the
    distributions installed beside the daemon."""
    from importlib import metadata

    out: dict[str, set[str]] = {}
    try:
        for top, dists in metadata.packages_distributions().items():
            if not top.isidentifier():
                continue
            for d in dists:
                out.setdefault(module_key("pypi", d), set()).add(top)
    except Exception:  # broken metadata of one distribution must not stop the answer
        log.debug("packages_distributions failed", exc_info=True)
    return {k: tuple(sorted(v)) for k, v in out.items()}


def import_names(ecosystem: str, name: str) -> tuple[list[str], str]:
    """The module names an import of this module is written with, and how they are known:
    ``metadata`` (Python's installed metadata), ``name`` (the ecosystem imports a module by
    its package name: npm, Go module paths, Cargo crates with ``-`` as ``_``, a Python
    distribution whose name is its import name), ``group`` (a Maven groupId taken as a
    Java package prefix: best effort)."""
    if ecosystem == "pypi":
        key = module_key("pypi", name)
        tops = _python_distributions().get(key)
        if tops:
            return list(tops), "metadata"
        return [key.replace("-", "_")], "name"
    if ecosystem == "cargo":
        return [name.replace("-", "_")], "name"
    if ecosystem == "maven":
        group = name.split(":", 1)[0]
        return ([group] if group else []), "group"
    return [name], "name"


_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))


def is_standard(language: str, module: str) -> bool:
    """An import of the language's standard library (never a required module)."""
    head = re.split(r"[./]|::", module, maxsplit=1)[0]
    if language == "python":
        return head in _STDLIB or head == "__future__"
    if language == "go":
        return "." not in module.split("/", 1)[0]
    if language in ("javascript", "typescript", "tsx"):
        return module.startswith("node:") or head in _NODE_BUILTINS
    if language == "rust":
        return head in ("std", "core", "alloc", "crate", "self", "super")
    if language in ("java", "kotlin"):
        return head in ("java", "javax", "kotlin", "jdk", "sun")
    return False


_NODE_BUILTINS = frozenset(
    "assert buffer child_process cluster console crypto dgram dns events fs http http2 https module net os path "
    "perf_hooks process querystring readline stream string_decoder timers tls tty url util v8 vm worker_threads "
    "zlib".split())


def unmapped_imports(store, keys: Sequence[tuple[str, str]], limit: int = 20) -> tuple[int, list[dict]]:
    """Imports not resolved inside the graph, not of a standard library and under no
    required module's import name: (how many module names, the most imported first)."""
    prefixes = []
    for eco, key in keys:
        names, _how = import_names(eco, key)
        prefixes.extend(names)
    pref = tuple(sorted(set(prefixes)))
    out = []
    total = 0
    for language, module, n in store.external_imports(limit=5000):
        if is_standard(language, module) or module.startswith("."):
            continue
        if any(module == p or module.startswith((p + ".", p + "/", p + "::")) for p in pref):
            continue
        total += 1
        if len(out) < limit:
            out.append({"module": module, "language": language, "files": n})
    return total, out
