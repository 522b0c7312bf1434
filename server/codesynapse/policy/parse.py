"""Reading and validating ``.codesynapse.yaml``.

The file is composed with ``yaml.compose`` (safe: node tree only, no object construction)
so every diagnostic can point at the offending node. Validation is all-or-nothing: any
error keeps the previous valid policy (or the default) in force; warnings do not.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Final

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from codesynapse.extract.redact import compile_patterns, find_secrets, redact
from codesynapse.policy.globs import GlobError, compile_symbol_glob, parse_path_glob
from codesynapse.policy.model import (
    DEFAULT_MAX_FILE_BYTES,
    POLICY_VERSION,
    Annotation,
    LanguageOverride,
    Policy,
    PolicyDiagnostic,
    default_policy,
)
from codesynapse.scope import SCOPE_FIELDS

log = logging.getLogger(__name__)

__all__ = ["POLICY_FILENAME", "load_policy", "parse_policy"]

POLICY_FILENAME: Final = ".codesynapse.yaml"
MAX_POLICY_BYTES: Final = 256 * 1024
MAX_FILE_BYTES_LIMIT: Final = 1 << 30  # 1 GiB
MAX_GLOBS: Final = 1000
MAX_ANNOTATIONS: Final = 500
MAX_LANGUAGES: Final = 200
MAX_REDACT: Final = 100
MAX_NOTE_CHARS: Final = 1000
MAX_NESTING: Final = 64

_TOP_KEYS: Final = ("version", "exclude", "include", "maxFileBytes", "languages", "annotations", "redact", "findings")
_ANNOTATION_KEYS: Final = ("path", "symbol", "note")
# Keys that would choose or widen the request scope. A policy lives in the repository, so
# anyone who can commit could set them: they are rejected wherever they appear.
_SCOPE_KEYS: Final = frozenset(
    {k.lower() for k in SCOPE_FIELDS}
    | {"graph", "graphs", "tenants", "namespaces", "sessions", "org", "organization",
       "organisation", "orgid", "org_id", "workspace", "repository", "repositories", "access"}
)
_LANGUAGE_RE: Final = re.compile(r"^[a-z][a-z0-9_+#-]{0,31}$")

_STR: Final = "tag:yaml.org,2002:str"
_INT: Final = "tag:yaml.org,2002:int"
_NULL: Final = "tag:yaml.org,2002:null"


class _Diagnostics:
    def __init__(self) -> None:
        self.items: list[PolicyDiagnostic] = []

    def add(self, node: Node | None, key: str, message: str, severity: str = "error") -> None:
        if node is None:  # the whole file: mark its first character
            line = column = end_line = 0
            end_column = 1
        else:
            line, column = node.start_mark.line, node.start_mark.column
            end_line, end_column = node.end_mark.line, node.end_mark.column
            if (end_line, end_column) <= (line, column):
                end_line, end_column = line, column + 1
        self.items.append(
            PolicyDiagnostic(
                message=message,
                line=line,
                column=column,
                end_line=end_line,
                end_column=end_column,
                severity=severity,
                key=key,
            )
        )

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.items)


def _describe(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    if node.tag == _NULL:
        return "nothing (null)"
    if node.tag == _INT:
        return "a number"
    if node.tag == "tag:yaml.org,2002:bool":
        return "true/false"
    return "a string" if node.tag == _STR else f"a {node.tag.rsplit(':', 1)[-1]}"


def _scalar_text(node: Node, key: str, diags: _Diagnostics, what: str) -> str | None:
    """A scalar's text as written (``exclude: [2019]`` means a directory named 2019)."""
    if not isinstance(node, ScalarNode) or node.tag == _NULL:
        diags.add(node, key, f"{key}: expected {what}, found {_describe(node)}")
        return None
    return str(node.value)


def _check_scope_key(node: ScalarNode, key: str, diags: _Diagnostics) -> bool:
    name = str(node.value)
    if name.lower().replace("-", "_") in _SCOPE_KEYS or name.lower() in _SCOPE_KEYS:
        diags.add(
            node,
            key,
            f"{key}: a repository policy cannot set '{name}': the tenant, graph, namespace and "
            "session scope is fixed by the server and cannot be chosen or widened by a policy",
        )
        return True
    return False


def _unknown_key(node: ScalarNode, key: str, allowed: tuple[str, ...], diags: _Diagnostics) -> None:
    name = str(node.value)
    close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.6)
    hint = f"; did you mean '{close[0]}'?" if close else f"; allowed keys: {', '.join(allowed)}"
    diags.add(node, key, f"{key}: unknown key '{name}'{hint}")


def _mapping_items(
    node: MappingNode, prefix: str, allowed: tuple[str, ...], diags: _Diagnostics
) -> dict[str, tuple[ScalarNode, Node]]:
    """Validated ``key → (key node, value node)``; unknown, scope and duplicate keys are
    reported."""
    out: dict[str, tuple[ScalarNode, Node]] = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, ScalarNode):
            diags.add(key_node, prefix or "(root)", f"{prefix or 'policy'}: keys must be plain names")
            continue
        name = str(key_node.value)
        dotted = f"{prefix}.{name}" if prefix else name
        if _check_scope_key(key_node, dotted, diags):
            continue
        if name not in allowed:
            _unknown_key(key_node, dotted, allowed, diags)
            continue
        if name in out:
            diags.add(key_node, dotted, f"{dotted}: duplicate key (first set on line {out[name][0].start_mark.line + 1})")
            continue
        out[name] = (key_node, value_node)
    return out


def _string_list(
    node: Node, key: str, diags: _Diagnostics, limit: int, check: Callable[[str], None], what: str
) -> list[str] | None:
    if isinstance(node, ScalarNode) and node.tag == _NULL:
        return []
    if not isinstance(node, SequenceNode):
        diags.add(node, key, f"{key}: expected a list of {what}s, found {_describe(node)}")
        return None
    if len(node.value) > limit:
        diags.add(node, key, f"{key}: at most {limit} entries are allowed (found {len(node.value)})")
        return None
    out: list[str] = []
    ok = True
    for i, item in enumerate(node.value):
        item_key = f"{key}[{i}]"
        text = _scalar_text(item, item_key, diags, f"a {what}")
        if text is None:
            ok = False
            continue
        try:
            check(text)
        except ValueError as e:  # GlobError is a ValueError
            diags.add(item, item_key, f"{item_key}: {e}")
            ok = False
            continue
        out.append(text)
    return out if ok else None


def _check_path_glob(text: str) -> None:
    parse_path_glob(text)


def _check_regex(text: str) -> None:
    compile_patterns([text])


def _known_languages() -> frozenset[str] | None:
    """Language names the extractor knows, or None when the registry cannot be loaded."""
    try:
        from codesynapse.extract.languages import BY_NAME
    except Exception:  # the registry is optional here: without it names are only shape-checked
        log.debug("language registry unavailable; language names are not checked", exc_info=True)
        return None
    return frozenset(BY_NAME)


def _parse_version(node: Node, diags: _Diagnostics) -> int | None:
    if isinstance(node, ScalarNode) and node.tag == _INT:
        value = _to_int(node)
        if value == POLICY_VERSION:
            return value
        diags.add(node, "version", f"version: unsupported version {node.value}; this server understands version {POLICY_VERSION}")
        return None
    diags.add(node, "version", f"version: expected the number {POLICY_VERSION}, found {_describe(node)}")
    return None


def _to_int(node: ScalarNode) -> int | None:
    try:
        value = SafeConstructor().construct_yaml_int(node)
    except (ConstructorError, ValueError):
        return None
    return value if isinstance(value, int) else None


def _parse_max_file_bytes(node: Node, diags: _Diagnostics) -> int | None:
    key = "maxFileBytes"
    if not (isinstance(node, ScalarNode) and node.tag == _INT):
        diags.add(node, key, f"{key}: expected a whole number of bytes, found {_describe(node)}")
        return None
    value = _to_int(node)
    if value is None or value <= 0:
        diags.add(node, key, f"{key}: must be a positive number of bytes (found {node.value})")
        return None
    if value > MAX_FILE_BYTES_LIMIT:
        diags.add(node, key, f"{key}: at most {MAX_FILE_BYTES_LIMIT} bytes (1 GiB) (found {node.value})")
        return None
    return value


def _parse_languages(node: Node, diags: _Diagnostics) -> list[LanguageOverride] | None:
    key = "languages"
    if isinstance(node, ScalarNode) and node.tag == _NULL:
        return []
    if not isinstance(node, MappingNode):
        diags.add(node, key, f"{key}: expected a mapping of glob → language, found {_describe(node)}")
        return None
    if len(node.value) > MAX_LANGUAGES:
        diags.add(node, key, f"{key}: at most {MAX_LANGUAGES} entries are allowed (found {len(node.value)})")
        return None
    known = _known_languages()
    out: list[LanguageOverride] = []
    seen: dict[str, int] = {}
    ok = True
    for glob_node, lang_node in node.value:
        glob = _scalar_text(glob_node, key, diags, "a glob")
        if glob is None:
            ok = False
            continue
        item_key = f"{key}.{glob}"
        try:
            parsed = parse_path_glob(glob)
        except GlobError as e:
            diags.add(glob_node, item_key, f"{item_key}: {e}")
            ok = False
            continue
        if parsed.dir_only:
            diags.add(glob_node, item_key, f"{item_key}: a language applies to files; write '{glob.rstrip('/')}/**' for every file below a directory")
            ok = False
            continue
        if parsed.text in seen:
            diags.add(glob_node, item_key, f"{item_key}: duplicate glob (first on line {seen[parsed.text] + 1})")
            ok = False
            continue
        seen[parsed.text] = glob_node.start_mark.line
        lang = _scalar_text(lang_node, item_key, diags, "a language name")
        if lang is None:
            ok = False
            continue
        lang = lang.strip().lower()
        if not _LANGUAGE_RE.match(lang):
            diags.add(lang_node, item_key, f"{item_key}: '{lang_node.value}' is not a language name")
            ok = False
            continue
        if known is not None and lang not in known:
            close = difflib.get_close_matches(lang, sorted(known), n=1, cutoff=0.6)
            hint = f"; did you mean '{close[0]}'?" if close else f" (known: {', '.join(sorted(known))})"
            diags.add(lang_node, item_key, f"{item_key}: '{lang}' is not a language this server indexes{hint}", "warning")
        out.append(LanguageOverride(glob=parsed.text, language=lang))
    return out if ok else None


def _parse_annotations(node: Node, redact_extra: tuple[re.Pattern[str], ...], diags: _Diagnostics) -> list[Annotation] | None:
    key = "annotations"
    if isinstance(node, ScalarNode) and node.tag == _NULL:
        return []
    if not isinstance(node, SequenceNode):
        diags.add(node, key, f"{key}: expected a list of {{path or symbol, note}} entries, found {_describe(node)}")
        return None
    if len(node.value) > MAX_ANNOTATIONS:
        diags.add(node, key, f"{key}: at most {MAX_ANNOTATIONS} entries are allowed (found {len(node.value)})")
        return None
    out: list[Annotation] = []
    ok = True
    for i, item in enumerate(node.value):
        item_key = f"{key}[{i}]"
        if not isinstance(item, MappingNode):
            diags.add(item, item_key, f"{item_key}: expected a mapping with 'path' or 'symbol' and 'note', found {_describe(item)}")
            ok = False
            continue
        n_before = len(diags.items)
        fields = _mapping_items(item, item_key, _ANNOTATION_KEYS, diags)
        if len(diags.items) > n_before:
            ok = False
            continue
        has_path, has_symbol = "path" in fields, "symbol" in fields
        if has_path == has_symbol:
            diags.add(item, item_key, f"{item_key}: give exactly one of 'path' (a path glob) or 'symbol' (a qualified name or glob)")
            ok = False
            continue
        if "note" not in fields:
            diags.add(item, item_key, f"{item_key}: 'note' is required")
            ok = False
            continue
        target_name = "path" if has_path else "symbol"
        target_node = fields[target_name][1]
        target = _scalar_text(target_node, f"{item_key}.{target_name}", diags, "a string")
        note_node = fields["note"][1]
        note = _scalar_text(note_node, f"{item_key}.note", diags, "a string")
        if target is None or note is None:
            ok = False
            continue
        try:
            if has_path:
                target = parse_path_glob(target).text
            else:
                compile_symbol_glob(target)
                target = target.strip()
        except GlobError as e:
            diags.add(target_node, f"{item_key}.{target_name}", f"{item_key}.{target_name}: {e}")
            ok = False
            continue
        note = " ".join(note.split())
        if not note:
            diags.add(note_node, f"{item_key}.note", f"{item_key}.note: must not be empty")
            ok = False
            continue
        if len(note) > MAX_NOTE_CHARS:
            diags.add(note_node, f"{item_key}.note", f"{item_key}.note: at most {MAX_NOTE_CHARS} characters (found {len(note)})")
            ok = False
            continue
        if find_secrets(note, redact_extra):
            note = redact(note, redact_extra)
            diags.add(note_node, f"{item_key}.note", f"{item_key}.note: contains a secret; it was redacted ({note})", "warning")
        out.append(Annotation(path=target, note=note) if has_path else Annotation(symbol=target, note=note))
    return out if ok else None


def _yaml_error(e: yaml.YAMLError, diags: _Diagnostics) -> None:
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    problem = getattr(e, "problem", None) or str(e)
    context = getattr(e, "context", None)
    message = f"invalid YAML: {problem}" + (f" ({context})" if context else "")
    if any(w in f"{problem} {context}" for w in ("alias", "anchor", "character '*'")):
        message += "; quote globs that start with '*', e.g. \"*.min.js\""
    if mark is None:
        diags.add(None, "", message)
        return
    diags.items.append(
        PolicyDiagnostic(
            message=message,
            line=mark.line,
            column=mark.column,
            end_line=mark.line,
            end_column=mark.column + 1,
            severity="error",
            key="",
        )
    )


def parse_policy(text: str, previous: Policy | None = None) -> tuple[Policy, list[PolicyDiagnostic]]:
    """Parse and validate policy text.

    Returns the new policy and its diagnostics; when there is any error, the diagnostics
    and ``previous`` (or the default policy) instead — an invalid policy never takes effect.
    """
    fallback = previous if previous is not None else default_policy()
    try:
        return _parse(text, fallback)
    except Exception:  # a validator bug must not take the server down or apply a bad policy
        log.exception("unexpected error while validating %s", POLICY_FILENAME)
        return fallback, [PolicyDiagnostic(
            message=f"internal error while validating {POLICY_FILENAME}; the previous policy stays in force "
                    "(see the server log)",
            end_column=1,
        )]


def _parse(text: str, fallback: Policy) -> tuple[Policy, list[PolicyDiagnostic]]:
    diags = _Diagnostics()
    if len(text.encode("utf-8", errors="replace")) > MAX_POLICY_BYTES:
        diags.add(None, "", f"the policy file is larger than {MAX_POLICY_BYTES // 1024} KiB")
        return fallback, diags.items
    if _flow_depth(text) > MAX_NESTING:
        diags.add(None, "", "invalid YAML: nested too deeply")
        return fallback, diags.items
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        _yaml_error(e, diags)
        return fallback, diags.items
    except RecursionError:
        diags.add(None, "", "invalid YAML: nested too deeply")
        return fallback, diags.items
    if root is None:  # empty file or only comments
        return default_policy(), []
    if not isinstance(root, MappingNode):
        diags.add(root, "", f"the policy must be a mapping of keys ({', '.join(_TOP_KEYS)}), found {_describe(root)}")
        return fallback, diags.items

    fields = _mapping_items(root, "", _TOP_KEYS, diags)
    values: dict[str, object] = {}

    if "version" in fields:
        values["version"] = _parse_version(fields["version"][1], diags)
    redact_extra: tuple[re.Pattern[str], ...] = ()
    if "redact" in fields:
        patterns = _string_list(fields["redact"][1], "redact", diags, MAX_REDACT, _check_regex, "regular expression")
        values["redact"] = patterns
        if patterns:
            redact_extra = compile_patterns(patterns)
    for name in ("exclude", "include", "findings"):
        if name in fields:
            values[name] = _string_list(fields[name][1], name, diags, MAX_GLOBS, _check_path_glob, "glob")
    if "maxFileBytes" in fields:
        values["maxFileBytes"] = _parse_max_file_bytes(fields["maxFileBytes"][1], diags)
    if "languages" in fields:
        values["languages"] = _parse_languages(fields["languages"][1], diags)
    if "annotations" in fields:
        values["annotations"] = _parse_annotations(fields["annotations"][1], redact_extra, diags)

    diags.items.sort(key=lambda d: (d.line, d.column))
    if diags.has_errors:
        return fallback, diags.items
    policy = Policy(
        version=_as(values.get("version"), POLICY_VERSION),
        exclude=tuple(_as(values.get("exclude"), [])),
        include=tuple(_as(values.get("include"), [])),
        max_file_bytes=_as(values.get("maxFileBytes"), DEFAULT_MAX_FILE_BYTES),
        languages=tuple(_as(values.get("languages"), [])),
        annotations=tuple(_as(values.get("annotations"), [])),
        redact=tuple(_as(values.get("redact"), [])),
        findings=tuple(_as(values.get("findings"), [])),
    )
    return policy, diags.items


def _flow_depth(text: str) -> int:
    """The deepest nesting of [ ] and { } (quotes ignored: an over-estimate is harmless);
    checked before parsing so absurd nesting is refused without deep recursion."""
    depth = deepest = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif ch in "]}" and depth:
            depth -= 1
    return deepest


def _as(value, default):  # type: ignore[no-untyped-def]
    return default if value is None else value


def load_policy(root: Path, previous: Policy | None = None) -> tuple[Policy, list[PolicyDiagnostic]]:
    """The policy of the repository at ``root`` (``root/.codesynapse.yaml``).

    No file: the default policy, no diagnostics. An unreadable or invalid file: its
    diagnostics and ``previous`` (or the default).
    """
    path = Path(root) / POLICY_FILENAME
    fallback = previous if previous is not None else default_policy()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return default_policy(), []
    except OSError as e:
        return fallback, [PolicyDiagnostic(message=f"cannot read {POLICY_FILENAME}: {e.strerror or e}", end_column=1)]
    if len(data) > MAX_POLICY_BYTES:
        return fallback, [
            PolicyDiagnostic(message=f"the policy file is larger than {MAX_POLICY_BYTES // 1024} KiB", end_column=1)
        ]
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n")
        return fallback, [PolicyDiagnostic(message=f"{POLICY_FILENAME} is not valid UTF-8 (byte {e.start})",
                                           line=line, end_line=line, end_column=1)]
    policy, diagnostics = parse_policy(text, previous)
    for d in diagnostics:
        log.info("%s:%d:%d: %s: %s", path, d.line + 1, d.column + 1, d.severity, d.message)
    return policy, diagnostics
