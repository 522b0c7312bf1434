"""The literal leg: where a phrase (an error message, an SQL fragment, a log line) or an
identifier that names no symbol is written in the indexed code.

Nothing is stored for it: the graph stays metadata-only. At request time the indexed code
files (the policy has already excluded what is not to be read; documents and config files
are not code) are read from the workspace and searched for the needles; a hit is kept only
when no secret the redactor finds near it overlaps it, so a query can never confirm a secret
(``AKIA…``) that the index would have redacted. Answers carry locations (path, line, the
enclosing symbol), never the text around a hit.

A word (an identifier, a plain word of the task) counts where the code writes it, not in
a comment: a line that starts a comment (``//``, ``/*``, `` *`` in the C family, ``#`` in
Python, Ruby, PHP) is prose, and "the runtime" in a comment singles nothing out. A quoted
phrase counts anywhere (an error message is quoted in comments and docs too, but is written
once in code; the page shows it first).

Bounded: a needle is followed into at most ``MAX_FILES`` files (then it is "saturated": a
common word), at most ``MAX_HITS`` hits are kept (production code before tests, then by
path and line); the leg reads for at most ``BUDGET_S`` seconds and then answers with what
it found, counting the files it did not read.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from codesynapse.extract.redact import find_secrets

log = logging.getLogger(__name__)

MAX_FILES = 40
MAX_HITS = 200
MIN_NEEDLE = 4
MIN_NUMBER = 3  # a number of three digits (a status code: 404) singles out more than a word of three letters
MAX_NEEDLES = 8
BUDGET_S = 2.0  # the leg's share of a request's 10 s deadline, as the dense leg's 2 s
_WINDOW = 60  # lines either side of a hit given to the redactor
_NOT_CODE = frozenset({"markdown", "yaml", "json", "toml"})
# how a comment line starts, per language (a line, stripped): words are not counted there
_COMMENT_STARTS: dict[str, tuple[bytes, ...]] = {
    **{lang: (b"//", b"/*", b"*") for lang in ("javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp",
                                               "csharp", "kotlin")},
    "php": (b"//", b"/*", b"*", b"#"),
    "python": (b"#",),
    "ruby": (b"#",),
}
_TEST_PATH = re.compile(r"(^|/)(tests?|testing|testdata|__tests__|spec)(/|$)|(^|/)test_[^/]*$|_test\.\w+$"
                        r"|\.(test|spec)\.\w+$|Tests?\.\w+$")


def long_enough(text: str) -> bool:
    """Whether a needle is long enough to look up: ``MIN_NEEDLE`` characters, a number
    ``MIN_NUMBER`` digits."""
    return len(text) >= (MIN_NUMBER if text.isdigit() else MIN_NEEDLE)


@dataclass(frozen=True)
class Needle:
    text: str
    word: bool  # an identifier: matched case-sensitively on word boundaries; else a phrase, any case


@dataclass(frozen=True)
class Hit:
    needle: str
    path: str
    line: int  # 1-based


def _pattern(n: Needle) -> re.Pattern[bytes]:
    body = re.escape(n.text.encode("utf-8"))
    if n.word:
        return re.compile(rb"(?<![A-Za-z0-9_$])" + body + rb"(?![A-Za-z0-9_$])")
    return re.compile(body, re.IGNORECASE)


@dataclass
class Scan:
    hits: list[Hit]
    saturated: set[str]  # needles written in MAX_FILES files or more (scan stopped for them)
    unread: int = 0  # code files left unread when the time budget ran out


def find(root: str, files: Iterable[tuple[str, str]], needles: Sequence[Needle], redact_extra=(),
         seconds: float = BUDGET_S) -> Scan:
    """Hits of ``needles`` in ``files`` ((path, language) pairs, paths relative to
    ``root``); needles written in more than ``MAX_FILES`` files are saturated (common words,
    not something the code singles out). The scan stops after ``seconds`` (a huge tree):
    the hits so far are kept and the unread files counted, never an error."""
    end = time.monotonic() + seconds
    needles = [n for n in needles if long_enough(n.text)][:MAX_NEEDLES]
    live = [(n, n.text.encode("utf-8"), n.text.lower().encode("utf-8"), _pattern(n)) for n in needles]
    hits: list[Hit] = []
    per_needle: dict[str, int] = {}
    saturated: set[str] = set()
    code = sorted(((p, lang) for p, lang in files if lang not in _NOT_CODE),
                  key=lambda f: (bool(_TEST_PATH.search(f[0])), f[0]))
    for i, (path, language) in enumerate(code):
        if not live or len(hits) >= MAX_HITS:
            break
        if i % 32 == 0 and time.monotonic() > end:
            return Scan(hits[:MAX_HITS], saturated, len(code) - i)
        try:
            with open(os.path.join(root, path), "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        lowered = None
        found = []
        for n, b, bl, pat in live:
            if n.word:
                if b in data:
                    found.append((n, pat))
            else:
                if lowered is None:
                    lowered = data.lower()
                if bl in lowered:
                    found.append((n, pat))
        if not found:
            continue
        got = _confirm(path, data, found, redact_extra, _COMMENT_STARTS.get(language, ()))
        hits.extend(got)
        for n in {h.needle for h in got}:
            per_needle[n] = per_needle.get(n, 0) + 1
            if per_needle[n] >= MAX_FILES:
                saturated.add(n)
        live = [x for x in live if x[0].text not in saturated]
    return Scan(hits[:MAX_HITS], saturated)


def _in_comment(data: bytes, pos: int, comment_starts: tuple[bytes, ...]) -> bool:
    """True when the line holding ``pos`` starts a comment (stripped of indentation)."""
    if not comment_starts:
        return False
    bol = data.rfind(b"\n", 0, pos) + 1
    return data[bol:pos + 1].lstrip().startswith(comment_starts)


def _confirm(path: str, data: bytes, found, redact_extra, comment_starts: tuple[bytes, ...] = ()) -> list[Hit]:
    out: list[Hit] = []
    text = None
    starts: list[int] = []
    for n, pat in found:
        for m in pat.finditer(data):
            if n.word and _in_comment(data, m.start(), comment_starts):
                continue  # prose, not where the code writes it
            if text is None:
                text = data.decode("utf-8", "replace")
                # where each line starts (a loop over the characters cost ~14 ms for a large file)
                starts = [0, *itertools.accumulate(len(ln) + 1 for ln in text.split("\n")[:-1])]
            line = data.count(b"\n", 0, m.start()) + 1
            # the redactor looks at the lines around the hit; a secret overlapping it drops it
            lo = starts[max(0, line - 1 - _WINDOW)]
            hi = starts[line + _WINDOW] if line + _WINDOW < len(starts) else len(text)
            window = text[lo:hi]
            col = len(data[:m.start()].decode("utf-8", "replace")) - lo
            end = col + len(data[m.start():m.end()].decode("utf-8", "replace"))
            if any(s < end and col < e for _kind, s, e in find_secrets(window, redact_extra)):
                continue
            out.append(Hit(n.text, path, line))
            if len(out) >= 20:
                break
    return out


def is_test_path(path: str) -> bool:
    return bool(_TEST_PATH.search(path))
