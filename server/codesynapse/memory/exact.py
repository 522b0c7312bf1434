"""The order of memory's exact leg, one function for every memory store (SQLite, Neo4j,
HugeGraph): each store finds the live visible entities whose id, name or alias is one of the
terms, and ranks them here."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from codesynapse.store.memory import EntityRecord


def exact_terms(terms: Iterable[str]) -> list[str]:
    """The terms to look up: blank ones dropped, each once, in the order given."""
    return [t for t in dict.fromkeys(terms) if t]


def rank_exact(records: Iterable[EntityRecord], terms: Sequence[str], limit: int) -> list[EntityRecord]:
    """The first ``limit`` of ``records`` ranked by the earliest term each matches; at the same
    term an id or name match before an alias match, then the session's own entity before a
    durable one, then by id. A record that matches no term goes last."""
    order = {t: i for i, t in enumerate(terms)}

    def key(r: EntityRecord) -> tuple[int, int, int, str]:
        best = (len(terms), 2)
        for t, i in order.items():
            if t == r.id or t == r.name:
                best = min(best, (i, 0))
            elif t in r.aliases:
                best = min(best, (i, 1))
        return (best[0], best[1], 0 if r.session else 1, r.id)

    return sorted(records, key=key)[:limit]
