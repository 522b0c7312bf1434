"""Text tokenizers every graph backend shares: one definition of a symbol's search terms,
of a callee's head and of the folded word tokens the server backends' full-text fields hold
(and their queries ask for), so that SQLite, Neo4j and HugeGraph index and look up alike."""

from __future__ import annotations

import re
import unicodedata

# camel-case parts: "HTTPServer" → HTTP, Server; "parse2" → parse, 2
CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
MAX_QUERY_TERMS = 256  # × 3 fields stays under Lucene's 1024-clause limit
_QUERY_WORDS = 32  # word tokens of a free-text query (as SQLite's FTS5 query takes)


def name_terms(name: str, qname: str) -> str:
    """Searchable terms: the identifier split on case and underscores, lower-cased."""
    parts: list[str] = []
    for piece in re.split(r"[^A-Za-z0-9]+", name):
        parts.extend(m.group(0).lower() for m in CAMEL.finditer(piece))
    return " ".join(dict.fromkeys(parts))


def callee_head(callee: str) -> str:
    """The first segment of a callee expression: ``a`` of ``a.b(c)``, ``a[0]``, ``a::b``, ``a->b``."""
    return re.split(r"[.(\[:]|->", callee, maxsplit=1)[0]


def fold(token: str) -> str:
    """Lower-case and strip diacritics (FTS5 unicode61 folds case and removes diacritics)."""
    decomposed = unicodedata.normalize("NFKD", token)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()


def fold_tokens(text: str) -> str:
    """Word tokens (letters, digits, underscore — unicode61 with tokenchars '_'), folded,
    space-separated: what the full-text fields hold."""
    return " ".join(fold(t) for t in re.findall(r"\w+", text))


def query_terms(text: str) -> list[str]:
    """The terms of a free-text query, as SQLite's FTS5 query builds them: every word token
    (at most 32) plus its camel-case parts when it has several; folded, de-duplicated."""
    toks = [t for t in re.split(r"[^\w]+", text) if t]
    terms: list[str] = []
    for t in toks[:_QUERY_WORDS]:
        terms.append(t)
        low = [m.group(0).lower() for m in CAMEL.finditer(t)]
        if len(low) > 1:
            terms.extend(low)
    folded = [fold(t) for t in terms]
    return [t for t in dict.fromkeys(folded) if t and re.fullmatch(r"\w+", t)][:MAX_QUERY_TERMS]
