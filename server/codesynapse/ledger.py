"""The savings ledger: what every answer of a session cost and what it saved.

For every custom answer the ledger of its session records the method, the tokens returned
(the JSON-RPC response, bytes/4 — the estimator ``bench tokens`` uses), the cache-hit tokens
(the cards and sites of the answer that this session already received in an earlier answer:
the client has paid for them once) and the two raw-context estimates of the same answer —
baseline (a), the files behind it, and baseline (b), grep output plus the files an agent
would open — computed by the one function ``bench tokens`` uses
(:func:`codesynapse.bench.baselines.raw_baselines`).

Recording is cheap and happens on the request's path (one compact encode of the answer and
a hash per card). The raw estimates read files and grep the tree, so they are computed off
that path: by the ledger's worker while no request is running, or at once for a
``codesynapse/ledger`` request or the end of the session. They describe the index as it
is when computed (an edit in between changes them as it changes the answer).

Each session (one LSP connection, or one CLI run) has its own ``SessionLedger``, owned by
the App's ``LedgerBook`` and keyed by the session's Scope. Workspace totals are kept across
sessions in the data folder (``ledger-totals.json``): summed counts per method, never a
session id. Nothing here is a metric label (``metrics.py`` reads the sums only).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Annotated, Any

import msgspec

from codesynapse import metrics
from codesynapse.bench.baselines import CorpusText, Request, Yielded, raw_baselines
from codesynapse.bench.stats import reduction_pct
from codesynapse.context.budget import tokens_for
from codesynapse.scope import Scope

log = logging.getLogger(__name__)

LAST_MAX = 100  # answers a ledger request may ask for (`last`)
KEPT = LAST_MAX  # per-answer rows a session keeps (its totals cover every answer)
SEEN_MAX = 100_000  # card/site digests a session remembers for cache-hit counting
IDLE_S = 0.3  # the worker computes raw estimates only after this long without a request
WAITING_MAX = 10_000  # answers a session keeps waiting for their raw estimates; older ones go unestimated
CLOSE_S = 2.0  # time the end of a session gives its last raw estimates; the rest go unestimated
TOTALS_FILE = "ledger-totals.json"
TOTALS_VERSION = 1
ESTIMATOR = "bytes/4 (ceil)"
# requests about the session, the index or the policy, not answers to a question about the code (an
# editor polls indexStatus every few seconds and the ledger with it): not counted, though metrics count them
UNCOUNTED = frozenset({"codesynapse/ledger", "codesynapse/policyEffects", "codesynapse/indexStatus"})
_MEMORY_TURNS = frozenset({"codesynapse/memory/remember"})  # the turns that carry facts (recall's baseline)


class LedgerParams(msgspec.Struct, kw_only=True, rename="camel", frozen=True, forbid_unknown_fields=True):
    last: Annotated[int, msgspec.Meta(ge=0, le=LAST_MAX)] = 10


def _est(n_bytes: int) -> int:
    return tokens_for(n_bytes)


def jsonrpc_bytes(result: Any, error: dict[str, Any] | None = None) -> bytes:
    """The JSON-RPC response the daemon writes for an answer, as ``bench tokens`` measures it:
    ``{"jsonrpc":"2.0","id":1,"result":…}``, compact, UTF-8, without the Content-Length header."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": 1}
    if error is not None:
        msg["error"] = error
    else:
        msg["result"] = result
    return json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


_ENVELOPE = len(jsonrpc_bytes(0)) - 1  # the bytes around a result


def response_bytes(answer: Any) -> int:
    """``len(jsonrpc_bytes(answer))``; a context answer's own ``resultBytes`` (the size of
    the answer that holds it, context/budget.py ``finalize``) spares encoding it again
    (``bench tokens`` encodes it in full and checks that the two agree)."""
    if isinstance(answer, dict):
        n = answer.get("resultBytes")
        if isinstance(n, int) and not isinstance(n, bool) and n > 0:
            return n + _ENVELOPE
    return len(jsonrpc_bytes(answer))


# ---- cache-hit: the cards and sites an answer repeats -----------------------------------------

_VOLATILE = frozenset({"legs"})  # how an item was found, not what it says


_encode = msgspec.json.Encoder(order="sorted").encode


def _scan(answer: Any, seen: set[bytes]) -> tuple[list[bytes], int]:
    """The cards and sites of an answer — every object that names a ``qualifiedName``
    (cards, callers, callees, graph nodes, search results, tests) — as digests of their
    content (compact, keys sorted, without how they were found), and the bytes of those the
    session has already received (``seen``); an item inside a repeated one is part of it."""
    digests: list[bytes] = []
    hit = 0
    stack = [answer]
    while stack:
        o = stack.pop()
        if isinstance(o, dict):
            if "qualifiedName" in o:
                enc = _encode({k: v for k, v in o.items() if k not in _VOLATILE} if not _VOLATILE.isdisjoint(o) else o)
                d = hashlib.blake2b(enc, digest_size=12).digest()
                if d in seen:
                    hit += len(enc)
                    continue
                digests.append(d)
            stack.extend(v for v in o.values() if isinstance(v, (dict, list)))
        elif isinstance(o, list):
            stack.extend(v for v in o if isinstance(v, (dict, list)))
    return digests, hit


@dataclass(slots=True)
class Row:
    """One answer. Until its raw estimates are computed it keeps only what the worker needs to
    make the ``baselines.Request`` (``request``: method, params, kind, earlier memory turns), not
    the answer or a Request object: a session may keep ``WAITING_MAX`` of them."""

    method: str
    returned: int  # tokens of the response
    cache_hit: int  # tokens of cards/sites the session had already received
    at: float
    request: tuple | None = None  # (method, params, kind, turns) until the raw estimates are computed
    raw_a: int | None = None
    raw_b: int | None = None
    files_a: int = 0
    files_b: int = 0

    def public(self) -> dict[str, Any]:
        d: dict[str, Any] = {"method": self.method, "tokens": self.returned, "cacheHitTokens": self.cache_hit,
                             "at": round(self.at, 3)}
        if self.raw_a is None:
            d["raw"] = "pending" if self.request is not None else "unestimated"
        else:
            d.update({"rawA": self.raw_a, "rawB": self.raw_b, "filesA": self.files_a, "filesB": self.files_b,
                      "avoidedA": self.raw_a - self.returned if self.raw_a else None,
                      "avoidedB": self.raw_b - self.returned if self.raw_b else None})
        return d


@dataclass
class Sums:
    """Summed counts. ``avoided*`` and ``returnedVs*`` sum only answers whose raw estimate is
    not 0 (a reduction is "not applicable" without one); ``answers`` counts every answer."""

    answers: int = 0
    errors: int = 0
    returned: int = 0
    cache_hit: int = 0
    raw_a: int = 0
    raw_b: int = 0
    returned_vs_a: int = 0  # returned tokens of the answers with raw (a) > 0
    returned_vs_b: int = 0
    pending: int = 0  # answers whose raw estimates are not computed yet
    unestimated: int = 0  # answers counted without raw estimates (the daemon was never idle long enough)

    def add_answer(self, returned: int, cache_hit: int) -> None:
        self.answers += 1
        self.returned += returned
        self.cache_hit += cache_hit
        self.pending += 1

    def add_raw(self, returned: int, a: int, b: int) -> None:
        self.pending -= 1
        self.raw_a += a
        self.raw_b += b
        if a:
            self.returned_vs_a += returned
        if b:
            self.returned_vs_b += returned

    def give_up(self) -> None:
        self.pending -= 1
        self.unestimated += 1

    def merge(self, o: Sums) -> None:
        for k in self.__dataclass_fields__:
            setattr(self, k, getattr(self, k) + getattr(o, k))

    def public(self) -> dict[str, Any]:
        def pct(raw: int, ret: int) -> float | None:
            r = reduction_pct(raw, ret)
            return None if r is None else round(r, 2)

        return {"answers": self.answers, "errors": self.errors, "tokens": self.returned,
                "cacheHitTokens": self.cache_hit, "rawA": self.raw_a, "rawB": self.raw_b,
                "avoidedA": self.raw_a - self.returned_vs_a, "avoidedB": self.raw_b - self.returned_vs_b,
                "reductionPctA": pct(self.raw_a, self.returned_vs_a),
                "reductionPctB": pct(self.raw_b, self.returned_vs_b), "pending": self.pending,
                "unestimated": self.unestimated}

    def to_json(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "pending"}

    @classmethod
    def from_json(cls, d: Any) -> Sums:
        s = cls()
        if isinstance(d, dict):
            for k in cls.__dataclass_fields__:
                v = d.get(k)
                if k != "pending" and isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                    setattr(s, k, v)
        return s


@dataclass
class SessionLedger:
    """The ledger of one session. Its lock guards every field."""

    started: float = field(default_factory=time.time)
    total: Sums = field(default_factory=Sums)
    methods: dict[str, Sums] = field(default_factory=dict)
    rows: deque = field(default_factory=lambda: deque(maxlen=KEPT))
    seen: set = field(default_factory=set)
    turns: list = field(default_factory=list)  # memory turns that carried facts (recall's baseline)
    unflushed: dict[str, Sums] = field(default_factory=dict)  # per method, not yet in the workspace totals
    waiting: deque = field(default_factory=deque)  # rows whose raw estimates are pending
    lock: threading.Lock = field(default_factory=threading.Lock)
    ended: bool = False

    def _sums(self, method: str) -> tuple[Sums, Sums]:
        m = self.methods.get(method)
        if m is None:
            m = self.methods[method] = Sums()
        u = self.unflushed.get(method)
        if u is None:
            u = self.unflushed[method] = Sums()
        return m, u

    def record(self, method: str, params: Any, answer: Any) -> Row:
        returned = _est(response_bytes(answer))
        with self.lock:
            digests, hit_bytes = _scan(answer, self.seen)
            room = SEEN_MAX - len(self.seen)
            if room > 0:
                self.seen.update(digests[:room])
            hit = min(_est(hit_bytes), returned) if hit_bytes else 0
            kind = "recall" if method == "codesynapse/memory/recall" else ""
            req = (method, params if isinstance(params, dict) else {}, kind, tuple(self.turns) if kind else ())
            if method in _MEMORY_TURNS:
                self.turns.append({"method": method, "params": params})
            row = Row(method=method, returned=returned, cache_hit=hit, at=time.time(), request=req)
            metrics.answer_counted(method, returned, hit)
            m, u = self._sums(method)
            for s in (self.total, m, u):
                s.add_answer(returned, hit)
            self.rows.append(row)
            self.waiting.append(row)
            if len(self.waiting) > WAITING_MAX:
                self._give_up(self.waiting.popleft())
        return row

    def _give_up(self, row: Row) -> None:  # under the lock
        row.request = None
        m, u = self._sums(row.method)
        for s in (self.total, m, u):
            s.give_up()

    def give_up_waiting(self) -> None:
        with self.lock:
            while self.waiting:
                self._give_up(self.waiting.popleft())

    def record_error(self, method: str) -> None:
        with self.lock:
            m, u = self._sums(method)
            for s in (self.total, m, u):
                s.errors += 1

    def set_raw(self, row: Row, a: int, b: int, files_a: int, files_b: int) -> None:
        with self.lock:
            row.raw_a, row.raw_b, row.files_a, row.files_b, row.request = a, b, files_a, files_b, None
            metrics.raw_estimated(row.method, row.returned, a, b)
            m, u = self._sums(row.method)
            for s in (self.total, m, u):
                s.add_raw(row.returned, a, b)

    def take_unflushed(self) -> dict[str, Sums]:
        """The settled counts not yet in the workspace totals (answers whose raw estimates are
        computed), taken out of ``unflushed``."""
        with self.lock:
            out: dict[str, Sums] = {}
            for method, u in self.unflushed.items():
                if u.pending == 0 and (u.answers or u.errors):
                    out[method] = u
                    self.unflushed[method] = Sums()
            return out

    def answer(self, last: int) -> dict[str, Any]:
        with self.lock:
            rows = list(self.rows)[-last:] if last else []
            return {"session": {**self.total.public(), "startedAt": round(self.started, 3)},
                    "methods": {k: v.public() for k, v in sorted(self.methods.items())},
                    "last": [r.public() for r in reversed(rows)],
                    "estimator": ESTIMATOR,
                    "baselines": {"a": "the files behind the answer: definitions, direct callers, callees, tests",
                                  "b": "grep output for the identifiers plus the files an agent would open"}}


# ---- the App's book of session ledgers -------------------------------------------------------


class LedgerBook:
    """Every session ledger of one App, the worker that computes raw estimates while no
    request runs, and the workspace totals in the data folder."""

    #: counting switch, on in the product; ``codesynapse bench requests --ledger-compare`` turns
    #: it off in-process (alternating rounds) to measure what counting costs a request. Off:
    #: record/record_error do nothing (no entry; the worker has nothing to estimate). begin/end
    #: (the in-flight count, two uncontended lock turns) run either way: they keep the worker
    #: parked while requests run, so an on-round's backlog is not estimated during an off-round.
    counting = True

    def __init__(self, app):
        self.app = app
        self._lock = threading.Lock()
        self._sessions: dict[str, SessionLedger] = {}
        self._inflight = 0
        self._last_request = time.monotonic()
        self._wake = threading.Condition(self._lock)
        self._closed = False
        self._worker: threading.Thread | None = None
        self._compute_lock = threading.Lock()  # one raw-estimate computation at a time
        self.totals_path = app.workspace.data_dir / TOTALS_FILE
        self._texts: dict[str, tuple[tuple[int, int], str, int, int]] = {}  # path -> (stat key, text, bytes, held)
        self._texts_bytes = [0]  # memory the texts in _texts hold (their ``held``)
        settings = getattr(app, "settings", None)
        self.text_cache_max = text_cache_max(getattr(settings, "memory_budget_mb", DEFAULT_BUDGET_MB))

    # -- sessions ------------------------------------------------------------------------------
    def session(self, scope: Scope) -> SessionLedger:
        with self._lock:
            led = self._sessions.get(scope.session)
            if led is None:
                led = self._sessions[scope.session] = SessionLedger()
            return led

    def begin(self) -> None:
        with self._lock:
            self._inflight += 1

    def end(self) -> None:
        # no notify: waking the worker on every answer hands it the GIL at the worst moment
        # (measured: +0.06 ms on a 0.5 ms card, far more under load); it looks every IDLE_S
        with self._lock:
            self._inflight -= 1
            self._last_request = time.monotonic()

    def record(self, scope: Scope, method: str, params: Any, answer: Any) -> None:
        if method in UNCOUNTED or not self.counting:
            return
        self.session(scope).record(method, params, answer)
        self._ensure_worker()

    def record_error(self, scope: Scope, method: str) -> None:
        if method not in UNCOUNTED and self.counting:
            self.session(scope).record_error(method)

    def answer(self, scope: Scope, last: int, deadline_s: float = 5.0) -> dict[str, Any]:
        """The session's ledger, its pending raw estimates computed first (within
        ``deadline_s``; what is left stays ``pending``)."""
        led = self.session(scope)
        self._settle(led, time.monotonic() + deadline_s)
        return led.answer(last)

    def end_session(self, scope: Scope) -> None:
        """The session is over: its counts go to the workspace totals and it is forgotten."""
        with self._lock:
            led = self._sessions.pop(scope.session, None)
        if led is not None:
            self._finish(led)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sessions = list(self._sessions.values())
            self._sessions.clear()
            self._wake.notify_all()
        w = self._worker
        if w is not None:
            w.join(5.0)
        for led in sessions:
            self._finish(led)

    def _finish(self, led: SessionLedger) -> None:
        try:
            self._settle(led, time.monotonic() + CLOSE_S)
        except Exception:  # the store may be gone: the settled counts are still kept
            log.warning("ledger: raw estimates of the last answers could not be computed", exc_info=True)
        led.give_up_waiting()
        with led.lock:
            first = not led.ended
            led.ended = True
        self.flush(led, new_session=first and led.total.answers > 0)

    # -- raw estimates -------------------------------------------------------------------------
    def _ensure_worker(self) -> None:
        if self._worker is not None or self._closed:
            return
        with self._lock:
            if self._worker is None and not self._closed:
                self._worker = threading.Thread(target=self._run, name="ledger-raw", daemon=True)
                self._worker.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._closed:
                    idle = time.monotonic() - self._last_request
                    if self._inflight == 0 and idle >= IDLE_S and not self._index_busy() \
                            and any(s.waiting for s in self._sessions.values()):
                        break
                    self._wake.wait(max(IDLE_S - idle, 0.05) if self._inflight == 0 else IDLE_S)  # close() wakes it
                if self._closed:
                    return
                sessions = list(self._sessions.values())
            for led in sessions:
                self._settle(led, time.monotonic() + 1.0, yield_to_requests=True)
                self.flush(led)

    def _busy(self) -> bool:
        with self._lock:
            return self._inflight > 0 or self._index_busy()

    def _index_busy(self) -> bool:
        """The index has changes queued or being applied: a save waits for no raw estimate
        (each greps the whole tree; on a kernel-size tree, seconds of the GIL)."""
        state = getattr(self.app, "index_state", None)
        return state is not None and state.pending > 0

    def _settle(self, led: SessionLedger, until: float, yield_to_requests: bool = False) -> None:
        with self._compute_lock:
            corpus = None
            while time.monotonic() < until:
                if yield_to_requests and self._busy():
                    return
                with led.lock:
                    if not led.waiting:
                        return
                    row = led.waiting.popleft()
                try:  # the files as they are now: a text read for an earlier answer may have changed since
                    if corpus is None:
                        corpus = self._corpus()
                        if yield_to_requests:  # a grep stops between files once a request or an update comes
                            corpus.stop = self._busy
                    a, b, fa, fb = self._estimate(_request(row.request), corpus)
                except Yielded:  # estimated again from the start when the daemon is idle
                    with led.lock:
                        led.waiting.appendleft(row)
                    return
                except Exception:  # counted without a raw estimate rather than retried for ever
                    log.warning("ledger: the raw estimate of a %s answer failed", row.method, exc_info=True)
                    a = b = fa = fb = 0
                led.set_raw(row, a, b, fa, fb)

    def _corpus(self):
        """The files the index holds now, their texts from the book's cache while a file's
        size and modification time are those it was read with."""
        files = [(f.path, f.language) for f in self.app.store.files() if f.status != "skipped"]
        return _cached_corpus(str(self.app.workspace.root), files, self._texts, self._texts_bytes,
                              self.text_cache_max)

    def _estimate(self, req, corpus) -> tuple[int, int, int, int]:
        return estimate(self.app, req, corpus)

    # -- workspace totals ----------------------------------------------------------------------
    def flush(self, led: SessionLedger, new_session: bool = False) -> None:
        delta = led.take_unflushed()
        if not delta and not new_session:
            return
        try:
            merge_totals(self.totals_path, delta, new_session)
        except OSError as e:
            log.warning("ledger: the workspace totals could not be written (%s)", e)


def _request(pending: tuple):
    """The ``baselines.Request`` of a row's pending (method, params, kind, turns)."""
    method, params, kind, turns = pending
    return Request(method=method, params=params, kind=kind, requests=list(turns))


DEFAULT_BUDGET_MB = 1024  # index.memoryBudget's default (settings.memory_budget_mb)
# The raw estimates' file-text cache holds at most this share of index.memoryBudget: 1/32, 32 MB at
# the default 1 GB. The budget bounds the whole daemon (issue 24 #2), and on the kernel its symbol
# table and resolver take ~780 MB of the 1 GB and a save's state ~100 MB; the cache only spares
# re-reading files for the next answer's grep (on a tree larger than the cache every grep reads
# files again anyway), so it gets a small share.
TEXT_CACHE_SHARE = 32


def text_cache_max(budget_mb: int) -> int:
    """Bytes of memory the raw estimates' file texts may hold between answers."""
    return (max(64, int(budget_mb)) << 20) // TEXT_CACHE_SHARE


def _held(text: str) -> int:
    """The memory a str takes: its characters at the width of its widest one (1, 2 or 4 bytes:
    one emoji makes a mostly ASCII file 4 bytes a character, 4× its UTF-8 size) and the header."""
    return sys.getsizeof(text)


def _cached_corpus(root: str, files: list[tuple[str, str]], cache: dict, total: list[int], bound: int):
    """``bench.baselines.CorpusText`` whose texts come from ``cache`` while the file's
    (size, mtime) are unchanged: each raw estimate greps the whole tree, and re-reading it for
    every answer costs more than the answer. The texts it keeps (the cache's and the corpus'
    own, which are those of the cache) hold at most ``bound`` bytes of memory; a text that does
    not fit is read again when asked again."""
    class Cached(CorpusText):
        def text(self, path: str) -> str:
            t = self._text.get(path)
            if t is not None:
                return t
            full = os.path.join(self.root, path)
            try:
                st = os.stat(full)
                key = (st.st_size, st.st_mtime_ns)
            except OSError:
                key = None
            hit = cache.get(path)
            if key is not None and hit is not None and hit[0] == key:
                self._bytes[path] = hit[2]
                t = self._text[path] = hit[1]
                return t
            t = super().text(path)
            del self._text[path]  # kept below only as the cache's own entry
            old = cache.pop(path, None)
            if old is not None:
                total[0] -= old[3]
            held = _held(t)
            if key is None or held > bound:
                return t
            if total[0] + held > bound:
                cache.clear()
                self._text.clear()
                total[0] = 0
            cache[path] = (key, t, self._bytes[path], held)
            total[0] += held
            self._text[path] = t
            return t

    return Cached(root, files)


def estimate(app, req, corpus) -> tuple[int, int, int, int]:
    """(raw (a) tokens, raw (b) tokens, files (a), files (b)) of one request: the bytes of
    ``bench tokens``' baselines through the bytes/4 estimator."""
    ctx = app.services.context
    with app.store.snapshot():
        _idents, a, b = raw_baselines(req, app, ctx, corpus)
    return _est(a.bytes), _est(b.bytes), len(a.files), len(b.files)


@contextlib.contextmanager
def _locked(path):
    lock = open(str(path) + ".lock", "a+")  # noqa: SIM115 - held for the block
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()


def read_totals(path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except (OSError, ValueError):
        d = {}
    if not isinstance(d, dict) or d.get("version") != TOTALS_VERSION:
        d = {}
    methods = d.get("methods") if isinstance(d.get("methods"), dict) else {}
    sessions = d.get("sessions")
    return {"version": TOTALS_VERSION,
            "sessions": sessions if isinstance(sessions, int) and sessions >= 0 else 0,
            "since": d.get("since") if isinstance(d.get("since"), str) else "",
            "updated": d.get("updated") if isinstance(d.get("updated"), str) else "",
            "methods": {str(k): Sums.from_json(v) for k, v in methods.items()}}


def merge_totals(path, delta: dict[str, Sums], new_session: bool) -> None:
    """Add a session's settled counts to the workspace totals (one file, written whole and
    renamed into place under a lock: two daemons and a CLI run may end at once)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with _locked(path):
        t = read_totals(path)
        for method, s in delta.items():
            t["methods"].setdefault(method, Sums()).merge(s)
        if new_session:
            t["sessions"] += 1
        t["since"] = t["since"] or now
        t["updated"] = now
        out = {"version": TOTALS_VERSION, "sessions": t["sessions"], "since": t["since"], "updated": t["updated"],
               "estimator": ESTIMATOR,
               "methods": {k: v.to_json() for k, v in sorted(t["methods"].items())}}
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1, sort_keys=True)
        os.replace(tmp, path)


def workspace_totals(path) -> dict[str, Any]:
    """The workspace totals as ``codesynapse stats`` prints them."""
    t = read_totals(path)
    total = Sums()
    for s in t["methods"].values():
        total.merge(s)
    return {"sessions": t["sessions"], "since": t["since"], "updated": t["updated"], "estimator": ESTIMATOR,
            "total": total.public(), "methods": {k: v.public() for k, v in sorted(t["methods"].items())}}

