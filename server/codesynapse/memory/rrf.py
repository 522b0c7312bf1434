"""Reciprocal-rank fusion (Cormack et al.): score(d) = Σ_legs 1 / (k + rank_leg(d)),
ranks starting at 1, k = 60 by contract."""

from __future__ import annotations

from collections.abc import Sequence

RRF_K = 60


def rrf(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Fuse ranked id lists (best first; duplicates inside one list count once, at their
    best rank). Result: (id, score) by score descending; ties broken by best single rank,
    then by the order of first appearance across the lists (leg order), so it is stable."""
    if k < 0:
        raise ValueError("k must be >= 0")
    scores: dict[str, float] = {}
    best_rank: dict[str, int] = {}
    first_seen: dict[str, int] = {}
    seen_order = 0
    for ranking in rankings:
        seen_here: set[str] = set()
        for rank, doc in enumerate(ranking, start=1):
            if doc in seen_here:
                continue
            seen_here.add(doc)
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + rank)
            best_rank[doc] = min(best_rank.get(doc, rank), rank)
            if doc not in first_seen:
                first_seen[doc] = seen_order
                seen_order += 1
    return sorted(scores.items(), key=lambda kv: (-kv[1], best_rank[kv[0]], first_seen[kv[0]]))
