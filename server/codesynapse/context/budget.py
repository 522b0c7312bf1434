"""The token budget: every answer's size is ceil(json_bytes / 4) of its complete JSON.

The bytes are those of ``json.dumps(answer, ensure_ascii=False, separators=(",", ":"))``
in UTF-8 — the answer's own ``tokens`` and ``resultBytes`` fields included, so the count
is a fixed point. ``maxTokens`` is normalized to 256–20,000. A packer adds optional items
in priority order while they fit and lists what it left out; it never goes over.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from codesynapse.errors import BudgetError, DeadlineExceeded

MIN_TOKENS = 256
MAX_TOKENS = 20_000
DEADLINE_S = 10.0


def normalize_max_tokens(value: int | None, default: int) -> int:
    if value is None:
        return default
    return max(MIN_TOKENS, min(MAX_TOKENS, int(value)))


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def tokens_for(n_bytes: int) -> int:
    """ceil(n_bytes / 4): the tokens of ``n_bytes`` bytes of JSON — the one estimator of every
    budget, answer and benchmark."""
    return -(-n_bytes // 4)


def finalize(answer: dict[str, Any]) -> dict[str, Any]:
    """Set ``tokens`` and ``resultBytes`` so that they describe the answer that holds them."""
    answer["tokens"] = 0
    answer["resultBytes"] = 0
    for _ in range(8):
        n = len(dumps(answer))
        tokens = tokens_for(n)
        if answer["tokens"] == tokens and answer["resultBytes"] == n:
            return answer
        answer["tokens"] = tokens
        answer["resultBytes"] = n
    raise RuntimeError("token count did not converge")  # cannot happen: digits only grow


class Deadline:
    def __init__(self, seconds: float = DEADLINE_S):
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def check(self) -> None:
        if time.monotonic() > self.end:
            raise DeadlineExceeded(self.seconds)

    @property
    def remaining(self) -> float:
        return max(0.0, self.end - time.monotonic())


@dataclass
class Packer:
    """Fill ``answer[key]`` lists in priority order under ``max_tokens``."""

    answer: dict[str, Any]
    max_tokens: int
    omitted: dict[str, list] = field(default_factory=dict)  # what → [count, hint, items?, key?]
    # False when the request left maxTokens to its default: the answer then gives the
    # budget (``maxTokens``) only when something was left out, where it tells how to get more
    echo_budget: bool = True
    _used: int = 0

    def __post_init__(self) -> None:
        self.answer.setdefault("truncated", False)
        # room for the envelope numbers (tokens, resultBytes) and omission notes
        self._reserve = 48
        self._used = tokens_for(len(dumps(self.answer))) + self._reserve
        if self._used > self.max_tokens:
            raise BudgetError(self._used, self.max_tokens)

    def room(self) -> int:
        """Tokens left under the budget, as the packer accounts them."""
        return self.max_tokens - self._used

    def fits(self, item: Any) -> bool:
        return self._used + tokens_for(len(dumps(item)) + 1) <= self.max_tokens

    def take(self, item: Any) -> bool:
        """Account for ``item`` if it fits (the caller places it)."""
        cost = tokens_for(len(dumps(item)) + 1)
        if self._used + cost > self.max_tokens:
            return False
        self._used += cost
        return True

    def add(self, key: str, item: Any, what: str | None = None, hint: str = "") -> bool:
        cost = tokens_for(len(dumps(item)) + 1)
        if self._used + cost > self.max_tokens:
            self.omit(what or key, 1, hint)
            return False
        self.answer.setdefault(key, []).append(item)
        self._used += cost
        return True

    def set(self, key: str, value: Any, what: str | None = None, hint: str = "") -> bool:
        cost = tokens_for(len(dumps({key: value})) + 1)
        if self._used + cost > self.max_tokens:
            self.omit(what or key, 1, hint)
            return False
        self.answer[key] = value
        self._used += cost
        return True

    def omit(self, what: str, count: int, hint: str = "", items: list | None = None,
             key: str | None = None) -> None:
        """Count ``count`` more of ``what`` as left out; ``items`` (names of what was left
        out, e.g. a bare name's alternatives) are listed in the note under ``key`` (default:
        ``what``). Items alone (``count`` 0) are added to a note already counted."""
        if count <= 0 and not (items and what in self.omitted):
            return
        if what not in self.omitted:
            # the note itself takes room: account for it when it is first made
            self._used += tokens_for(len(dumps({"what": what, "count": 999999, "hint": hint})) + 1)
        entry = self.omitted.setdefault(what, [0, hint])
        entry[0] += count
        if hint:
            entry[1] = hint
        if items:
            self._used += tokens_for(len(dumps(items)) + len(key or what) + 4)
            if len(entry) < 3:
                entry.extend([[], key or what])
            entry[2].extend(items)

    def _notes(self, truncated: bool = False) -> None:
        """Write ``omitted`` (only when something was left out), ``truncated`` and, when the
        budget was not asked for, ``maxTokens`` only for an answer that was cut."""
        a = self.answer
        if self.omitted:
            a["omitted"] = [{"what": w, "count": e[0], "hint": e[1], **({e[3]: e[2]} if len(e) > 2 else {})}
                            for w, e in sorted(self.omitted.items())]
        else:
            a.pop("omitted", None)
        a["truncated"] = truncated or bool(self.omitted) or bool(a.get("truncated"))
        if a["truncated"] or self.echo_budget:
            a.setdefault("maxTokens", self.max_tokens)
        else:
            a.pop("maxTokens", None)

    def done(self) -> dict[str, Any]:
        """Write the omission list and the counts; trim further if the notes overflow."""
        a = self.answer
        self._notes()
        finalize(a)
        # The estimate is conservative, but never trust it: drop trailing optional items.
        while a["tokens"] > self.max_tokens:
            dropped = False
            for key in ("related", "nodes", "edges", "results", "cards", "changed", "callers", "tests",
                        "candidates", "suggestions"):
                v = a.get(key)
                if isinstance(v, list) and v:
                    v.pop()
                    self.omit(key, 1, "raise maxTokens to see more")
                    dropped = True
                    break
            self._notes(truncated=True)
            if not dropped and any(e[1] or len(e) > 2 for e in self.omitted.values()):
                for entry in self.omitted.values():  # last resort: keep the counts, drop the hints
                    del entry[2:]
                    entry[1] = ""
                self._notes(truncated=True)
                dropped = True
            finalize(a)
            if not dropped:
                raise BudgetError(a["tokens"], self.max_tokens)
        return a
