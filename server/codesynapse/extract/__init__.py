"""Extraction: file bytes → FileExtraction (metadata only)."""

from __future__ import annotations

import hashlib
import threading

from codesynapse.extract import incremental as incremental_mod
from codesynapse.extract.engine import extract_file
from codesynapse.extract.languages import detect, load
from codesynapse.extract.model import FileExtraction

__all__ = ["extract_source", "content_hash", "detect", "reset_caches"]

_local = threading.local()


def reset_caches() -> None:
    """Forget what the language hooks cached about the file system (``__init__.py``,
    ``go.mod``, ``Cargo.toml`` lookups): called before each update, since those files can
    appear or vanish while the daemon runs."""
    import sys

    for name, mod in list(sys.modules.items()):
        if name.startswith("codesynapse.extract.lang.") and mod is not None:
            for value in vars(mod).values():
                clear = getattr(value, "cache_clear", None)
                if callable(clear) and getattr(value, "__module__", "") == name:
                    clear()


def content_hash(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def _parser(name: str):
    parsers = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = _local.parsers = {}
    p = parsers.get(name)
    if p is None:
        p = parsers[name] = load(name).parser()
    return p


def extract_source(root: str, relpath: str, data: bytes, language: str, redact_extra=(),
                   incremental: bool = False, keep_dir: str | None = None) -> FileExtraction:
    """Parse ``data`` (the bytes of ``relpath`` under ``root``) and extract its graph facts.
    ``incremental`` (live updates): re-use the kept extraction of the file's last version
    where the edit did not reach (extract/incremental.py), with the same result.
    ``keep_dir``: where the extraction of a file that can be kept is written (and read back
    by the file's first live update)."""
    loaded = load(language)
    h = content_hash(data)
    hooks = loaded.hooks
    module = hooks.module_name(relpath, root)  # type: ignore[attr-defined]
    if loaded.spec.kind == "doc":
        return hooks.extract(relpath=relpath, src=data, parser=_parser(language), module=module,  # type: ignore[attr-defined]
                             file_hash=h, language=language, redact_extra=redact_extra)
    if not getattr(hooks, "disk_keep", True):
        keep_dir = None
    if (incremental or keep_dir) and getattr(hooks, "traces_file_facts", False) \
            and len(data) >= incremental_mod.MIN_BYTES:
        kw = dict(root=root, parser=_parser(language), src=data, query=loaded.query, hooks=hooks, relpath=relpath,
                  language=language, module=module, file_hash=h, redact_extra=redact_extra)
        if incremental:
            return incremental_mod.extract(**kw, keep_dir=keep_dir)
        return incremental_mod.extract_whole(**kw, keep_dir=keep_dir)
    return extract_file(
        parser=_parser(language), src=data, query=loaded.query, hooks=hooks, relpath=relpath,  # type: ignore[arg-type]
        language=language, module=module, file_hash=h, redact_extra=redact_extra,
    )
