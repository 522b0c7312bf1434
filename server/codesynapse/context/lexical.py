"""The lexical leg's text: per-symbol fields and query terms, split and stemmed alike.

A symbol is described by metadata the graph already holds, never its body (DESIGN "Retrieval
for tasks in plain words"): its name split into sub-words (``requestAsyncId`` → request,
async, id; ``parse_http2`` → parse, http, 2), the parts of its qualified name above it, the
words of its signature, its redacted summary (a docstring's first line, a document heading)
and the words of its file path. Every word is lower-cased and stemmed with the Snowball
English stemmer (Porter 2), in the fields and in the query, so "parsed" meets ``parse`` and
"retries" meets ``retry``. English function words are left out of both (they carry no
subject); words of code are never left out (``get``, ``set`` and ``error`` are common in
code, and BM25's inverse document frequency already weighs them down).

Field weights (``FIELD_WEIGHTS``, the BM25 column weights of the stores' full-text tables):
the name says what the symbol is (4); the qualified-name parts say where it lives (class,
module), shared by its siblings (1.5); the summary says what it does in the author's own
prose — the one field written in the words a task in plain English uses, where a name
matches one of its words by chance ("redirect", "post") — (2); signature words (parameter
names, types) describe it in code (1); path words are shared by every symbol of a file and
directory, the least specific (0.5).
"""

from __future__ import annotations

import re
from functools import lru_cache

import snowballstemmer

FIELDS = ("name", "qname", "signature", "summary", "path")
FIELD_WEIGHTS = (4.0, 1.5, 1.0, 2.0, 0.5)  # in FIELDS order; see the module docstring
MAX_QUERY_TERMS = 64
FIELD_MAX_CHARS = 2000  # a field's stored text is capped (a huge signature says nothing more)

# English function words (articles, pronouns, auxiliaries, prepositions, conjunctions,
# question words) and the words nearly every request about code shares ("code", "function"):
# they say nothing about which code answers. Lower case, before stemming.
STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below
between both but by can cannot could did do does doing down during each few for from further had has
have having he her here hers herself him himself his how i if in into is it its itself just me more
most my myself no nor not now of off on once only or other our ours ourselves out over own same she
should so some such than that the their theirs them themselves then there these they this those
through to too under until up very was we were what when where which while who whom why will with
would you your yours yourself yourselves also instead via whether either neither code codebase
function functions
""".split())  # noqa: SIM905

_SUB = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+|[^\W\d_A-Za-z]+")
_WORDS = re.compile(r"[^\W_]+(?:_+[^\W_]+)*|_+[^\W_]+(?:_+[^\W_]+)*", re.UNICODE)
_stemmer = snowballstemmer.stemmer("english")


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """The Snowball English stem of a lower-case word (memoized: a corpus repeats its words)."""
    if not word.isalpha() or not word.isascii():
        return word
    return _stemmer.stemWord(word)


def sub_words(token: str) -> list[str]:
    """An identifier split on underscores, case changes and digits, lower case:
    ``HTTPServerError`` → http, server, error; ``parse_http2`` → parse, http, 2."""
    return [m.group(0).lower() for m in _SUB.finditer(token)]


def _whole(token: str) -> str:
    """An identifier as one lower-case token without punctuation (``request_id`` →
    ``requestid``), kept beside its sub-words so that a task naming it whole ranks it first."""
    return "".join(ch for ch in token.lower() if ch.isalnum())


def words(text: str, keep_stop: bool = False) -> list[str]:
    """The stemmed sub-words of ``text``, in order, English function words left out."""
    out: list[str] = []
    for m in _WORDS.finditer(text):
        for w in sub_words(m.group(0)):
            if keep_stop or w not in STOP_WORDS:
                out.append(stem(w))
    return out


@lru_cache(maxsize=100_000)
def _shared_words(text: str, keep_stop: bool = False) -> tuple[str, ...]:
    """``words`` of a text many symbols share (a name like ``__init__``, a file's path, a
    class's qualified name): computed once."""
    return tuple(words(text, keep_stop))


def _field(parts) -> str:
    return " ".join(parts)[:FIELD_MAX_CHARS]


def symbol_fields(name: str, qname: str, signature: str, summary: str, path: str) -> tuple[str, ...]:
    """The lexical fields of a symbol, in ``FIELDS`` order: each a space-separated string of
    stemmed lower-case words (what the stores' full-text tables index)."""
    name_part = list(_shared_words(name, keep_stop=True))
    whole = _whole(name)
    if whole and len(sub_words(name)) > 1:
        name_part.append(whole)
    # the qualified name above the symbol: its container and module (the name is field 1)
    above = qname[: len(qname) - len(name)] if name and qname.endswith(name) else qname
    stem_path = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    return (_field(name_part), _field(_shared_words(above)), _field(words(signature)), _field(words(summary)),
            _field(_shared_words(stem_path)))


def query_terms(text: str) -> list[str]:
    """The distinct terms of a query: stemmed sub-words of its words (function words left
    out) and, for an identifier written in several parts (``retryPolicy``, ``max_retries``),
    the identifier whole; at most ``MAX_QUERY_TERMS``."""
    out: list[str] = []
    for m in _WORDS.finditer(text):
        tok = m.group(0)
        parts = sub_words(tok)
        if len(parts) > 1:
            out.append(_whole(tok))
        out.extend(stem(w) for w in parts if w not in STOP_WORDS)
    return list(dict.fromkeys(t for t in out if t))[:MAX_QUERY_TERMS]


def fts_query(terms: list[str]) -> str:
    """An FTS5 query OR-ing the terms (each quoted: no term is read as an operator)."""
    return " OR ".join(f'"{t}"' for t in terms if t and '"' not in t)
