"""The benchmark arithmetic, kept apart so unit tests can check it with written-out numbers.

* ``est_tokens(n)`` — the bytes/4 estimator: ceil(n / 4). It is an estimate, labelled so
  everywhere it is printed.
* ``reduction_pct(raw, returned)`` — (raw − returned) / raw × 100, or ``None`` ("not
  applicable") when raw is 0. Negative when the answer is larger than the baseline.
* ``percentile(values, p)`` — nearest-rank: the smallest value with at least p % of the
  values at or below it (``sorted[ceil(p/100 · n) − 1]``); no interpolation, so every
  reported percentile is a latency that was actually observed.
* ``aggregate(rows, ...)`` — reductions from *summed* counts, never an average of ratios.
  Failed tasks (required evidence missing) are not savings: the "successful" aggregate
  leaves them out of both sums and counts them; the "charged" aggregate keeps every task
  and charges a failed task its baseline plus the useless answer (the agent pays for the
  answer and then reads the raw context anyway).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from codesynapse.context.budget import tokens_for


def est_tokens(n_bytes: int) -> int:
    """The bytes/4 estimator (the budget's own, ``context.budget.tokens_for``)."""
    if n_bytes < 0:
        raise ValueError("a byte count cannot be negative")
    return tokens_for(n_bytes)


def reduction_pct(raw: int | float, returned: int | float) -> float | None:
    """(raw − returned) / raw × 100; ``None`` ("not applicable") when raw is 0."""
    if raw < 0 or returned < 0:
        raise ValueError("counts cannot be negative")
    if raw == 0:
        return None
    return (raw - returned) / raw * 100.0


def fmt_pct(value: float | None, digits: int = 1) -> str:
    return "not applicable" if value is None else f"{value:.{digits}f}%"


def percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile of ``values`` (``None`` for no values)."""
    if not 0 < p <= 100:
        raise ValueError("p must be in (0, 100]")
    if not values:
        return None
    ordered = sorted(values)
    rank = math.ceil(p / 100.0 * len(ordered))
    return ordered[max(rank, 1) - 1]


def latency_summary(samples_ms: Sequence[float]) -> dict[str, Any]:
    """n, p50, p95, p99, max and mean of latencies in milliseconds."""
    if not samples_ms:
        return {"n": 0, "p50": None, "p95": None, "p99": None, "max": None, "mean": None}
    return {
        "n": len(samples_ms),
        "p50": percentile(samples_ms, 50),
        "p95": percentile(samples_ms, 95),
        "p99": percentile(samples_ms, 99),
        "max": max(samples_ms),
        "mean": sum(samples_ms) / len(samples_ms),
    }


def coverage(found: int, required: int) -> float | None:
    """Share of required evidence items found, in %; ``None`` when nothing is required."""
    if required == 0:
        return None
    return found / required * 100.0


COUNTS = ("raw", "returned")


def aggregate(rows: Iterable[Mapping[str, Any]], raw_key: str, returned_key: str) -> dict[str, Any]:
    """Aggregate reduction over task rows.

    Each row needs ``raw_key`` and ``returned_key`` (token or byte counts) and ``ok``
    (True when the answer holds all required evidence and met its expectations).

    * ``successful``: sums over ok rows only; failed rows are counted in ``failed``.
    * ``charged``: sums over all rows, a failed row charged raw + returned on the
      returned side (no saving, and the answer's own cost on top).
    * ``notApplicable``: rows whose raw is 0 (their counts still enter the sums).
    """
    rows = list(rows)
    ok = [r for r in rows if r["ok"]]
    failed = [r for r in rows if not r["ok"]]
    raw_ok = sum(r[raw_key] for r in ok)
    ret_ok = sum(r[returned_key] for r in ok)
    raw_all = sum(r[raw_key] for r in rows)
    ret_all = sum(r[returned_key] for r in ok) + sum(r[raw_key] + r[returned_key] for r in failed)
    return {
        "tasks": len(rows),
        "succeeded": len(ok),
        "failed": len(failed),
        "notApplicable": sum(1 for r in rows if r[raw_key] == 0),
        "successful": {"raw": raw_ok, "returned": ret_ok, "reductionPct": reduction_pct(raw_ok, ret_ok)},
        "charged": {"raw": raw_all, "returned": ret_all, "reductionPct": reduction_pct(raw_all, ret_all)},
    }


def median_reduction(rows: Iterable[Mapping[str, Any]], raw_key: str, returned_key: str) -> float | None:
    """Median of the per-task reductions of ok rows with raw > 0 (reported beside the
    aggregate for comparison with the seed's "97.6% median"; the aggregate is the figure)."""
    vals = sorted(reduction_pct(r[raw_key], r[returned_key]) for r in rows if r["ok"] and r[raw_key] > 0)
    if not vals:
        return None
    mid = len(vals) // 2
    return vals[mid] if len(vals) % 2 else (vals[mid - 1] + vals[mid]) / 2.0
