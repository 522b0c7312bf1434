"""The effective repository policy: a frozen value with a fingerprint and fast matchers."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Final

import msgspec
from msgspec.structs import force_setattr

from codesynapse.extract.redact import compile_patterns
from codesynapse.policy.globs import (
    PathMatcher,
    compile_symbol_glob,
    normalize_path_glob,
    parse_path_glob,
)

__all__ = [
    "DEFAULT_EXCLUDES",
    "DEFAULT_MAX_FILE_BYTES",
    "FINGERPRINT_SCHEMA",
    "POLICY_VERSION",
    "Annotation",
    "LanguageOverride",
    "Policy",
    "PolicyDiagnostic",
    "default_policy",
]

POLICY_VERSION: Final = 1
# Bump when matching semantics change, so indexes built under the old rules are not
# mistaken for current ones.
FINGERPRINT_SCHEMA: Final = 1
DEFAULT_MAX_FILE_BYTES: Final = 1_048_576

# Always-on exclusions, in .gitignore syntax (see globs.py). An `include` glob can re-include
# any of them except the ones in _NEVER_INCLUDED.
DEFAULT_EXCLUDES: Final[tuple[str, ...]] = (
    # version control and our own data
    ".git",
    ".hg/",
    ".svn/",
    ".codesynapse-data/",
    # dependencies and vendored code
    "node_modules/",
    "bower_components/",
    "vendor/",
    "third_party/",
    ".venv/",
    "venv/",
    "env/",
    # build output
    "dist/",
    "build/",
    "target/",
    "out/",
    ".next/",
    ".nuxt/",
    ".gradle/",
    "*.egg-info/",
    ".eggs/",
    # caches, editor and tool state
    "__pycache__/",
    ".tox/",
    ".nox/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
    ".cache/",
    ".idea/",
    ".vscode/",
    "coverage/",
    "htmlcov/",
    ".coverage",
    ".DS_Store",
    # minified bundles, source maps, lock files
    "*.min.js",
    "*.min.css",
    "*.map",
    "*.lock",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "pnpm-lock.yaml",
    "go.sum",
    # generated code
    "*_pb2.py",
    "*_pb2.pyi",
    "*_pb2_grpc.py",
    "*.pb.go",
    "*.pb.cc",
    "*.pb.h",
    "*.generated.*",
    "*.g.dart",
    "*.designer.cs",
    # binaries, archives, media, data
    "*.pyc",
    "*.pyo",
    "*.so",
    "*.dylib",
    "*.dll",
    "*.exe",
    "*.o",
    "*.a",
    "*.class",
    "*.jar",
    "*.war",
    "*.wasm",
    "*.png",
    "*.jpg",
    "*.jpeg",
    "*.gif",
    "*.bmp",
    "*.ico",
    "*.webp",
    "*.tiff",
    "*.pdf",
    "*.zip",
    "*.gz",
    "*.tgz",
    "*.bz2",
    "*.xz",
    "*.7z",
    "*.tar",
    "*.whl",
    "*.woff",
    "*.woff2",
    "*.ttf",
    "*.otf",
    "*.eot",
    "*.mp3",
    "*.mp4",
    "*.mov",
    "*.avi",
    "*.webm",
    "*.db",
    "*.sqlite",
    "*.sqlite3",
    "*.bin",
    "*.pkl",
    "*.npy",
    "*.npz",
    "*.parquet",
    "*.onnx",
    "*.pt",
    "*.safetensors",
)
# Never indexed, whatever `include` says: repository internals and the server's own data.
_NEVER_INCLUDED: Final[tuple[str, ...]] = (".git", ".codesynapse-data/")


def redaction_key(policy: Any) -> str:
    """A digest of the redaction patterns ``policy`` adds (order and repeats aside; None: the
    default policy's, none). What was stored under another key may hold what the patterns in
    force redact (index/indexer.py, graph/deps.py)."""
    pats = sorted({getattr(p, "pattern", p) for p in getattr(policy, "redact_patterns", ())}) if policy else []
    return hashlib.sha256(json.dumps(pats).encode()).hexdigest()[:32]


def redaction_stamp(policy: Any) -> str:
    """``r:<redaction_key>`` when ``policy`` has redaction patterns in force, else empty: the
    part of a source's stamp (a manifest's, a SARIF file's) that makes a change of patterns
    read it again, and leaves the stamps of a policy without patterns as they were."""
    return "r:" + redaction_key(policy) if getattr(policy, "redact_patterns", ()) else ""


class PolicyDiagnostic(msgspec.Struct, frozen=True, kw_only=True):
    """A problem in ``.codesynapse.yaml``. Positions are 0-based (LSP convention) and point
    at the offending YAML node; ``key`` is its dotted path (``annotations[1].path``)."""

    message: str
    line: int = 0
    column: int = 0
    end_line: int = 0
    end_column: int = 0
    severity: str = "error"  # "error" | "warning"
    key: str = ""


class Annotation(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Extra context attached to paths (a path glob) or symbols (a qualified-name glob)."""

    note: str
    path: str | None = None
    symbol: str | None = None


class LanguageOverride(msgspec.Struct, frozen=True, kw_only=True):
    glob: str
    language: str


class _Compiled:
    """Matchers built once per policy value (lazily, on first use)."""

    __slots__ = ("annotations", "excludes", "include", "languages", "n_never", "n_user", "never", "redact")

    def __init__(self, policy: Policy):
        never = [parse_path_glob(p) for p in _NEVER_INCLUDED]
        user = [parse_path_glob(p) for p in policy.exclude]
        defaults = [parse_path_glob(p) for p in DEFAULT_EXCLUDES if p not in _NEVER_INCLUDED]
        self.never = PathMatcher(never)
        # one matcher for every exclusion: never-included, then the policy's, then defaults
        self.excludes = PathMatcher(never + user + defaults)
        self.n_never = len(never)
        self.n_user = len(user)
        self.include = PathMatcher([parse_path_glob(p) for p in policy.include])
        self.languages = PathMatcher([parse_path_glob(o.glob) for o in policy.languages], cover=False)
        self.annotations: list[tuple[PathMatcher | None, re.Pattern[str] | None, str]] = []
        for a in policy.annotations:
            if a.path is not None:
                self.annotations.append((PathMatcher([parse_path_glob(a.path)]), None, a.note))
            elif a.symbol is not None:
                self.annotations.append((None, compile_symbol_glob(a.symbol), a.note))
        self.redact = compile_patterns(policy.redact)

    def reason(self, index: int) -> str:
        text = self.excludes.globs[index].text
        if self.n_never <= index < self.n_never + self.n_user:
            return f"excluded by policy: {text}"
        return f"excluded by default: {text}"


def _normalize_path(relpath: str) -> str:
    p = relpath.replace("\\", "/") if "\\" in relpath else relpath
    if p.startswith(("./", "/")) or p.endswith("/"):
        while p.startswith("./"):
            p = p[2:]
        p = p.strip("/")
    return p


class Policy(msgspec.Struct, frozen=True, kw_only=True, rename="camel", dict=True):
    """The effective policy of one repository.

    Build it with :func:`parse_policy`/:func:`load_policy` (which validate) or directly
    (fields are normalized; a bad glob or regex then fails on first use). ``fingerprint`` is
    always recomputed from the other fields.
    """

    version: int = POLICY_VERSION
    exclude: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    languages: tuple[LanguageOverride, ...] = ()
    annotations: tuple[Annotation, ...] = ()
    redact: tuple[str, ...] = ()
    findings: tuple[str, ...] = ()  # globs of SARIF files whose results are imported (findings/sarif.py)
    fingerprint: str = ""

    def __post_init__(self) -> None:
        # Order and spelling of globs and regexes carry no meaning: canonical form, so
        # equivalent policies are equal values with equal fingerprints.
        force_setattr(self, "exclude", tuple(sorted({normalize_path_glob(p) for p in self.exclude})))
        force_setattr(self, "include", tuple(sorted({normalize_path_glob(p) for p in self.include})))
        force_setattr(self, "redact", tuple(sorted(set(self.redact))))
        force_setattr(self, "findings", tuple(sorted({normalize_path_glob(p) for p in self.findings})))
        force_setattr(self, "fingerprint", _fingerprint(self))

    # -- matching ----------------------------------------------------------------------

    def _m(self) -> _Compiled:
        compiled = self.__dict__.get("_compiled")
        if compiled is None:
            compiled = self.__dict__["_compiled"] = _Compiled(self)
        return compiled

    def excluded(self, relpath: str, is_dir: bool = False) -> str | None:
        """Why ``relpath`` (relative to the repository root, ``/``-separated) is excluded,
        or None when it is indexed. For a directory (``is_dir=True``) a reason means the
        whole tree can be skipped: nothing inside it can be re-included."""
        m = self._m()
        path = _normalize_path(relpath)
        if not path:
            return None
        hit = m.excludes.match_index(path, is_dir)
        if hit is None:
            return None
        if m.include and (
            m.include.match_index(path, is_dir) is not None
            or (is_dir and m.include.may_match_below(path))
        ):
            # re-included (or, for a directory, something below may be): only the
            # never-included globs still apply
            never = m.never.match(path, is_dir)
            return None if never is None else f"excluded by default: {never}"
        return m.reason(hit)

    def language_override(self, relpath: str) -> str | None:
        """The language a `languages:` glob assigns to this file (first match wins)."""
        if not self.languages:
            return None
        i = self._m().languages.match_index(_normalize_path(relpath))
        return None if i is None else self.languages[i].language

    def annotations_for(self, relpath: str, qname: str | None = None) -> list[str]:
        """Notes of the annotations matching the file path or the symbol's qualified name,
        in policy order, without duplicates."""
        if not self.annotations:
            return []
        path = _normalize_path(relpath) if relpath else ""
        notes: list[str] = []
        for path_matcher, symbol_re, note in self._m().annotations:
            if path_matcher is not None:
                ok = bool(path) and path_matcher.match(path) is not None
            else:
                ok = qname is not None and symbol_re is not None and symbol_re.match(qname) is not None
            if ok and note not in notes:
                notes.append(note)
        return notes

    @property
    def redact_patterns(self) -> tuple[re.Pattern[str], ...]:
        """The policy's extra secret regexes, compiled (for ``redact(text, extra=...)``)."""
        return self._m().redact

    def size_exceeded(self, size: int) -> str | None:
        """Why a file of ``size`` bytes is skipped, or None when it fits."""
        if size > self.max_file_bytes:
            return f"larger than maxFileBytes ({size} > {self.max_file_bytes} bytes)"
        return None

    def canonical(self) -> dict[str, Any]:
        """The normalized effective policy (defaults included) that the fingerprint hashes."""
        return _canonical(self)


def _canonical(p: Policy) -> dict[str, Any]:
    return {
        "schema": FINGERPRINT_SCHEMA,
        "version": p.version,
        "defaultExclude": list(DEFAULT_EXCLUDES),
        "neverIncluded": list(_NEVER_INCLUDED),
        "exclude": list(p.exclude),
        "include": list(p.include),
        "maxFileBytes": p.max_file_bytes,
        "languages": [[normalize_path_glob(o.glob), o.language] for o in p.languages],
        "annotations": [
            {"path": normalize_path_glob(a.path)} | {"note": a.note}
            if a.path is not None
            else {"symbol": (a.symbol or "").strip(), "note": a.note}
            for a in p.annotations
        ],
        "redact": list(p.redact),
    } | ({"findings": list(p.findings)} if p.findings else {})  # absent: fingerprints of older policies stay


def _fingerprint(p: Policy) -> str:
    blob = json.dumps(_canonical(p), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


_DEFAULT: Policy | None = None


def default_policy() -> Policy:
    """The policy in force when a repository has no (valid) ``.codesynapse.yaml``."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Policy()
    return _DEFAULT
