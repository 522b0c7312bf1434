"""Glob patterns of the policy file, compiled to regular expressions.

Path globs follow ``.gitignore`` rules, relative to the repository root:

* ``*`` matches within one path segment, ``?`` one character, ``[a-z]``/``[!a-z]`` one
  character of a class; ``\\`` escapes the next character.
* ``**`` as a whole segment matches any number of segments: ``**/x`` (x at any depth),
  ``a/**`` (everything inside a), ``a/**/b`` (b anywhere below a). Elsewhere it acts as ``*``.
* A pattern without a ``/`` (other than a trailing one) matches at any depth (``*.min.js``,
  ``node_modules``); one with a leading or middle ``/`` is anchored to the root.
* A trailing ``/`` matches directories only.
* For exclusion and annotations a pattern that matches a directory also covers everything
  inside it (``generated`` excludes ``generated/a/b.py``); language overrides match the
  file's own path only.

Symbol globs match qualified names (``pkg.mod.Class.method``): ``*`` and ``?`` stay within
one name component (they do not cross ``.``, ``::`` or ``/``), ``**`` crosses components;
``pkg.mod.**`` matches ``pkg.mod`` and everything below it.

Many patterns are compiled into **one** regex per rule list (a named group per pattern), so
testing a path costs one ``re.match`` however many patterns there are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

__all__ = [
    "GlobError",
    "PathGlob",
    "PathMatcher",
    "compile_symbol_glob",
    "normalize_path_glob",
    "parse_path_glob",
]


class GlobError(ValueError):
    """A glob pattern is malformed; the message says why."""


_MAX_GLOB_CHARS: Final = 1000


def _translate_segment(seg: str, pattern: str, any_char: str) -> str:
    """One segment (no separators) → regex. ``any_char`` is the class of characters a
    wildcard may match (everything but the separators)."""
    out: list[str] = []
    i, n = 0, len(seg)
    while i < n:
        c = seg[i]
        if c == "\\":
            if i + 1 >= n:
                raise GlobError(f"glob {pattern!r}: ends with a lone backslash")
            out.append(re.escape(seg[i + 1]))
            i += 2
        elif c == "*":
            while i < n and seg[i] == "*":
                i += 1
            out.append(f"{any_char}*")
        elif c == "?":
            out.append(any_char)
            i += 1
        elif c == "[":
            j = i + 1
            negate = j < n and seg[j] in "!^"
            if negate:
                j += 1
            body: list[str] = []
            if j < n and seg[j] == "]":  # a leading ] is literal
                body.append("\\]")
                j += 1
            while j < n and seg[j] != "]":
                if seg[j] == "\\" and j + 1 < n:
                    body.append(re.escape(seg[j + 1]))
                    j += 2
                    continue
                ch = seg[j]
                body.append(ch if ch == "-" else re.escape(ch))
                j += 1
            if j >= n:
                raise GlobError(f"glob {pattern!r}: unterminated character class '['")
            if not body:
                raise GlobError(f"glob {pattern!r}: empty character class")
            cls = "".join(body)
            excluded = any_char[2:-1]  # the separators, from "[^...]"
            out.append(f"[^{excluded}{cls}]" if negate else f"(?![{excluded}])[{cls}]")
            i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


# --------------------------------------------------------------------------------------
# Path globs
# --------------------------------------------------------------------------------------

_PATH_ANY: Final = "[^/]"


class PathGlob:
    """One parsed path glob: its regex body (without the trailing boundary), whether it
    matches directories only, whether it is anchored to the root, and the regex of the
    directories that may contain a match (for pruning decisions)."""

    __slots__ = ("anchored", "body", "container", "dir_only", "text")

    def __init__(self, text: str, body: str, dir_only: bool, anchored: bool, container: str):
        self.text = text
        self.body = body
        self.dir_only = dir_only
        self.anchored = anchored
        self.container = container

    def __repr__(self) -> str:
        return f"PathGlob({self.text!r})"


def normalize_path_glob(pattern: str) -> str:
    """The canonical spelling of a path glob (equivalent spellings compare equal):
    surrounding blanks, ``./`` prefixes and a redundant leading ``/`` go; runs of ``**``
    segments collapse."""
    p = pattern.strip()
    while p.startswith("./"):
        p = p[2:]
    segs = p.split("/")
    collapsed: list[str] = []
    for seg in segs:
        if seg == "**" and collapsed and collapsed[-1] == "**":
            continue
        collapsed.append(seg)
    p = "/".join(collapsed)
    # "/a/b" is anchored either way; "/a" is not the same as "a"
    if p.startswith("/") and "/" in p[1:].rstrip("/"):
        p = p[1:]
    return p


def parse_path_glob(pattern: str) -> PathGlob:
    """Parse one path glob. Raises GlobError with a readable reason."""
    if not isinstance(pattern, str):
        raise GlobError(f"glob {pattern!r}: must be a string")
    text = normalize_path_glob(pattern)
    if not text or text == "/":
        raise GlobError("glob is empty")
    if len(text) > _MAX_GLOB_CHARS:
        raise GlobError(f"glob {text[:40]!r}...: longer than {_MAX_GLOB_CHARS} characters")
    if text.startswith("!"):
        raise GlobError(f"glob {text!r}: negation ('!') is not supported; list the path under 'include' instead")
    if "\n" in text or "\r" in text or "\x00" in text:
        raise GlobError(f"glob {text!r}: contains a control character")
    p = text
    dir_only = p.endswith("/")
    p = p.rstrip("/")
    anchored = p.startswith("/") or "/" in p
    p = p.lstrip("/")
    if not p:
        raise GlobError(f"glob {text!r}: matches nothing")
    segs = p.split("/")
    for seg in segs:
        if seg == "":
            raise GlobError(f"glob {text!r}: empty path segment ('//')")
        if seg in {".", ".."}:
            raise GlobError(f"glob {text!r}: '{seg}' segments are not allowed (paths are relative to the repository root)")

    n = len(segs)
    parts: list[str] = []
    for i, seg in enumerate(segs):
        if seg == "**":
            if n == 1:
                parts.append(".*")
            elif i == 0:
                parts.append("(?:.*/)?")
            elif i == n - 1:
                parts.append("/.*")
            else:
                parts.append("/(?:.*/)?")
        else:
            if i > 0 and segs[i - 1] != "**":
                parts.append("/")
            parts.append(_translate_segment(seg, text, _PATH_ANY))
    body = "".join(parts)
    if not anchored:
        body = "(?:.*/)?" + body

    # Directories ("d/") that may contain a match: each proper prefix of the segments,
    # and anything below a "**".
    if not anchored or segs[0] == "**":
        container = ".*"
    else:
        alts: list[str] = []
        prefix = ""
        for i, seg in enumerate(segs[:-1] if segs[-1] != "**" else segs):
            if seg == "**":
                alts.append(prefix + ".*")
                break
            prefix += _translate_segment(seg, text, _PATH_ANY) + "/"
            alts.append(prefix)
        container = "|".join(alts) if alts else "(?!)"
    try:
        re.compile(body)
        re.compile(container)
    except re.error as e:
        raise GlobError(f"glob {text!r}: {e}") from e
    return PathGlob(text, body, dir_only, anchored, container)


_GLOB_SPECIALS: Final = frozenset("*?[\\")


class PathMatcher:
    """A list of path globs, compiled for fast matching.

    ``match(path, is_dir)`` returns the text of a matching glob or None. When several
    match, anchored globs win, then the match at the shallowest segment, then the earliest
    in the list.

    With ``cover=True`` (gitignore semantics: a match on a directory covers everything
    inside it) the globs are split by shape, because most real patterns are simple:

    * anchored globs (``generated/**``) → one combined regex matched at the path start;
    * unanchored names (``node_modules/``, ``.DS_Store``) → one set-disjointness test for
      the whole path, then a dict lookup per segment;
    * unanchored suffixes (``*.min.js``, ``*_pb2.py``) → a dict lookup on each segment's
      extension, then ``str.endswith`` on the few candidates;
    * other unanchored globs (``*.generated.*``) → one combined regex per segment.

    With ``cover=False`` the glob must match the path itself (language overrides); the
    globs are one ordered regex, first match wins.
    """

    __slots__ = ("_anchored", "_container", "_generic", "_generic_dir", "_generic_search", "_names", "_ordered",
                 "_suffix_any", "_suffix_by_ext", "cover", "globs")

    def __init__(self, globs: Sequence[PathGlob], cover: bool = True):
        self.globs = tuple(globs)
        self.cover = cover
        self._anchored: re.Pattern[str] | None = None
        self._ordered: re.Pattern[str] | None = None
        self._names: dict[str, list[tuple[int, bool]]] = {}
        # extension after the last "." → [(suffix, index, dir_only)]; "" key: suffixes
        # without a dot (``*_test``), checked on every segment
        self._suffix_by_ext: dict[str, list[tuple[str, int, bool]]] = {}
        self._suffix_any: list[tuple[str, int, bool]] = []
        self._generic: re.Pattern[str] | None = None  # globs that match files or dirs
        self._generic_dir: re.Pattern[str] | None = None  # dir-only globs
        self._container: re.Pattern[str] | None = None
        self._generic_search: re.Pattern[str] | None = None
        if not self.globs:
            return
        self._container = re.compile(
            "(?:" + "|".join(g.container for g in self.globs) + r")\Z", re.DOTALL
        )
        if not cover:
            alts = [
                f"(?P<g{i}>{g.body}{'/' if g.dir_only else ''}\\Z)" for i, g in enumerate(self.globs)
            ]
            self._ordered = re.compile("|".join(alts), re.DOTALL)
            return
        anchored: list[str] = []
        generic: list[str] = []
        generic_dir: list[str] = []
        for i, g in enumerate(self.globs):
            if g.anchored:
                tail = "/" if g.dir_only else r"(?:/|\Z)"
                anchored.append(f"(?P<g{i}>{g.body}{tail})")
                continue
            seg = g.text.rstrip("/")
            if not (_GLOB_SPECIALS & set(seg)):
                self._names.setdefault(seg, []).append((i, g.dir_only))
            elif seg.startswith("*") and not (_GLOB_SPECIALS & set(seg[1:])):
                sfx = seg[1:]
                if "." in sfx:
                    ext = sfx.rsplit(".", 1)[1]
                    self._suffix_by_ext.setdefault(ext, []).append((sfx, i, g.dir_only))
                else:
                    self._suffix_any.append((sfx, i, g.dir_only))
            else:
                body = g.body[len("(?:.*/)?"):]  # one segment: drop the any-depth prefix
                (generic_dir if g.dir_only else generic).append(f"(?P<g{i}>{body})")
        if anchored:
            self._anchored = re.compile("|".join(anchored), re.DOTALL)
        if generic:
            self._generic = re.compile("|".join(generic), re.DOTALL)
        if generic_dir:
            self._generic_dir = re.compile("|".join(generic_dir), re.DOTALL)
        if generic or generic_dir:
            # any segment that one of them could match (a superset test)
            bodies = "|".join(re.sub(r"\(\?P<g\d+>", "(?:", a) for a in generic + generic_dir)
            self._generic_search = re.compile(f"(?<![^/])(?:{bodies})(?![^/])", re.DOTALL)

    def __bool__(self) -> bool:
        return bool(self.globs)

    def match(self, path: str, is_dir: bool = False) -> str | None:
        """The text of the glob matching ``path`` (a normalized relative path), or None."""
        i = self.match_index(path, is_dir)
        return None if i is None else self.globs[i].text

    def match_index(self, path: str, is_dir: bool = False) -> int | None:
        """The position in the list of a glob matching ``path``, or None."""
        if not self.globs:
            return None
        if self._ordered is not None:
            m = self._ordered.match(path)
            return None if m is None else int((m.lastgroup or "g0")[1:])
        if self._anchored is not None:
            m = self._anchored.match(path + "/" if is_dir else path)
            if m is not None:
                return int((m.lastgroup or "g0")[1:])
        segs = path.split("/")
        names = self._names
        by_ext = self._suffix_by_ext
        generic = self._generic
        generic_dir = self._generic_dir
        # Fast rejection with C-level tests (most paths match nothing)
        if (
            (not names or names.keys().isdisjoint(segs))
            and not self._suffix_any
            # every segment's extension is one of the "."/"/"-separated pieces
            and (not by_ext or by_ext.keys().isdisjoint(path.replace("/", ".").split(".")))
            and (self._generic_search is None or self._generic_search.search(path) is None)
        ):
            return None
        last = len(segs) - 1
        for depth, seg in enumerate(segs):
            is_dir_seg = is_dir or depth < last
            best: int | None = None
            entries = names.get(seg)
            if entries is not None:
                for i, dir_only in entries:
                    if is_dir_seg or not dir_only:
                        best = i
                        break
            if "." in seg:
                candidates = by_ext.get(seg.rpartition(".")[2])
                if candidates is not None:
                    for sfx, i, dir_only in candidates:
                        if (best is None or i < best) and seg.endswith(sfx) and (is_dir_seg or not dir_only):
                            best = i
                            break
            for sfx, i, dir_only in self._suffix_any:
                if (best is None or i < best) and seg.endswith(sfx) and (is_dir_seg or not dir_only):
                    best = i
                    break
            if generic is not None:
                m = generic.fullmatch(seg)
                if m is not None:
                    i = int((m.lastgroup or "g0")[1:])
                    best = i if best is None else min(best, i)
            if generic_dir is not None and is_dir_seg:
                m = generic_dir.fullmatch(seg)
                if m is not None:
                    i = int((m.lastgroup or "g0")[1:])
                    best = i if best is None else min(best, i)
            if best is not None:
                return best
        return None

    def may_match_below(self, dir_path: str) -> bool:
        """Whether some path inside directory ``dir_path`` could match (never a false
        "no": a walker may prune the directory only on False)."""
        if self._container is None:
            return False
        if self._container.match(dir_path + "/") is not None:
            return True
        # the directory itself or one of its parents matches: so does everything inside
        return self.match_index(dir_path, True) is not None


# --------------------------------------------------------------------------------------
# Symbol globs
# --------------------------------------------------------------------------------------

_SYMBOL_ANY: Final = "[^./:]"
_SYMBOL_SPLIT_RE: Final = re.compile(r"(\.|::|/)")


def compile_symbol_glob(pattern: str) -> re.Pattern[str]:
    """A glob on qualified names → a compiled regex matching the whole name."""
    if not isinstance(pattern, str) or not pattern.strip():
        raise GlobError("symbol glob is empty")
    text = pattern.strip()
    if len(text) > _MAX_GLOB_CHARS:
        raise GlobError(f"symbol glob {text[:40]!r}...: longer than {_MAX_GLOB_CHARS} characters")
    pieces = _SYMBOL_SPLIT_RE.split(text)  # name, sep, name, sep, ...
    names = pieces[0::2]
    seps = pieces[1::2]
    if any(name == "" for name in names):
        raise GlobError(f"symbol glob {text!r}: empty name component")
    out: list[str] = []
    n = len(names)
    for i, name in enumerate(names):
        sep = re.escape(seps[i - 1]) if i > 0 else ""
        if name == "**":
            if n == 1:
                out.append(".*")
            elif i == 0:
                out.append(f"(?:.*{re.escape(seps[0])})?")
            elif i == n - 1:
                out.append(f"(?:{sep}.*)?")
            else:
                out.append(f"{sep}(?:.*{re.escape(seps[i])})?")
        else:
            if i > 0 and names[i - 1] != "**":
                out.append(sep)  # (after a "**" the separator is part of its group)
            out.append(_translate_segment(name, text, _SYMBOL_ANY))
    try:
        return re.compile("(?:" + "".join(out) + r")\Z", re.DOTALL)
    except re.error as e:
        raise GlobError(f"symbol glob {text!r}: {e}") from e
