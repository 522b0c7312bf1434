"""In-process BM25 over approved entity names, aliases and types.

Identifiers are tokenized so that ``net.Backoff``, ``HTTPServerError`` and ``retry_policy``
match their parts (``net``, ``backoff``; ``http``, ``server``, ``error``; ``retry``,
``policy``) while the exact form of each word is kept as a token too (``net.backoff``),
so an exact identifier outranks a document that only shares its parts.

The index holds only what the caller adds; the memory service keeps one per scope,
containing only entities visible to that scope, so neither postings nor document
frequencies are shared across namespaces or sessions.
"""

from __future__ import annotations

import heapq
import math
import re
import threading
from collections import Counter
from collections.abc import Iterable, Sequence

import msgspec

_WORD_STRIP = "\"'`()[]{}<>,;:!?"
_PART_RE = re.compile(r"[^\W_]+")
_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

MAX_QUERY_TOKENS = 64


def tokenize(text: str) -> list[str]:
    """Lower-cased tokens: each whitespace-separated word in its exact form (surrounding
    quotes/brackets/punctuation stripped) followed by its identifier parts (split on
    non-alphanumerics, snake case, dots and camelCase; digits separate)."""
    out: list[str] = []
    for raw in text.split():
        word = raw.strip(_WORD_STRIP).rstrip(".")
        if not word:
            continue
        exact = word.casefold()
        out.append(exact)
        parts: list[str] = []
        for chunk in _PART_RE.findall(word):
            if chunk.isascii():
                parts.extend(p.casefold() for p in _CAMEL_RE.findall(chunk))
            else:
                parts.append(chunk.casefold())
        if parts != [exact]:
            out.extend(parts)
    return out


class LexicalHit(msgspec.Struct, frozen=True):
    doc_id: str
    score: float
    version: int


class _Doc(msgspec.Struct):
    version: int
    tf: dict[str, int]
    length: int


class LexicalIndex:
    """BM25 (k1=1.2, b=0.75). Thread-safe; upsert/remove are O(tokens of the doc)."""

    def __init__(self, *, k1: float = 1.2, b: float = 0.75):
        self.k1 = k1
        self.b = b
        self._docs: dict[str, _Doc] = {}
        self._postings: dict[str, dict[str, int]] = {}
        self._total_len = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, doc_id: str) -> bool:
        return doc_id in self._docs

    def version_of(self, doc_id: str) -> int | None:
        d = self._docs.get(doc_id)
        return d.version if d else None

    def upsert(self, doc_id: str, version: int, texts: Iterable[str]) -> None:
        tokens: list[str] = []
        for t in texts:
            tokens.extend(tokenize(t))
        tf = dict(Counter(tokens))
        with self._lock:
            self._remove_locked(doc_id)
            self._docs[doc_id] = _Doc(version=version, tf=tf, length=len(tokens))
            self._total_len += len(tokens)
            for tok, n in tf.items():
                self._postings.setdefault(tok, {})[doc_id] = n

    def remove(self, doc_id: str) -> None:
        with self._lock:
            self._remove_locked(doc_id)

    def clear(self) -> None:
        with self._lock:
            self._docs.clear()
            self._postings.clear()
            self._total_len = 0

    def _remove_locked(self, doc_id: str) -> None:
        old = self._docs.pop(doc_id, None)
        if old is None:
            return
        self._total_len -= old.length
        for tok in old.tf:
            p = self._postings.get(tok)
            if p is not None:
                p.pop(doc_id, None)
                if not p:
                    del self._postings[tok]

    def search(self, query: str, limit: int = 10) -> list[LexicalHit]:
        """Best ``limit`` documents, score descending, ties by doc id (stable)."""
        q = list(dict.fromkeys(tokenize(query)))[:MAX_QUERY_TOKENS]
        if not q or limit <= 0:
            return []
        with self._lock:
            n = len(self._docs)
            if n == 0:
                return []
            avgdl = self._total_len / n or 1.0
            scores: dict[str, float] = {}
            k1, b = self.k1, self.b
            for tok in q:
                posting = self._postings.get(tok)
                if not posting:
                    continue
                df = len(posting)
                idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
                for doc_id, tf in posting.items():
                    dl = self._docs[doc_id].length
                    s = idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
                    scores[doc_id] = scores.get(doc_id, 0.0) + s
            best = heapq.nsmallest(limit, scores.items(), key=lambda kv: (-kv[1], kv[0]))
            return [LexicalHit(d, s, self._docs[d].version) for d, s in best]


def entity_texts(name: str, aliases: Sequence[str], type_: str) -> list[str]:
    """The approved text of an entity that both the lexical and the dense leg index."""
    return [name, *aliases, *([type_] if type_ else [])]
