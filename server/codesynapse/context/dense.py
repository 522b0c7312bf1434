"""The dense leg over symbol metadata: one local embedding per symbol, kept in Milvus.

What is embedded is a symbol's *metadata* (:func:`symbol_text`), never its body: its name
split into words, its kind, the qualified name above it, its signature, its redacted summary
(redacted when it was stored; a method without one has the summary of the method it
overrides, :func:`inherited_summaries`), the heading path of a doc section, the names it calls (call
edges of the graph) and the words of its file path. A query is embedded whole and sentence
by sentence, and the mean of those unit vectors is searched (:func:`query_parts`,
:func:`query_vector`). A change of the text (as when the names called were added) changes
every row's text hash, so the next sync embeds those rows again. The model is the memory embedder (``memory/embedder.py``: fastembed on the int8
MiniLM shipped in a package, nothing downloaded), shared with memory in the process.

Storage: one collection per model key (model hash + dimension), ``cs_sym_<key>``, in the
vector store memory uses (the milvus-lite folder under the index's data folder, or the
Milvus server of ``milvusUri``). Each row: ``id`` = 32 hex of sha256(graph id, path,
qualified name) (primary key), ``graph_d`` (the graph id: hex the server derived, validated
before it enters a filter), ``path``, ``qname``, ``text_h`` (16 hex of sha256 of the metadata
text) and ``vec``. A symbol whose metadata text is unchanged is never embedded again; a
changed one is embedded and upserted; a deleted one is deleted. Symbols sharing a path and
a qualified name (a redefinition) share one row, the first one's.

Work runs in one tracked background thread, started by :meth:`SymbolVectors.start` (the
daemon starts it once its first index is done, ``codesynapse index --vectors`` before it
exits; other processes, a one-shot ``codesynapse query`` or a benchmark, only if they ask) and
fed by :meth:`SymbolVectors.sync` (after each index, the whole graph) and
:meth:`SymbolVectors.update_paths` (after each live update, only the files it changed).
Nothing is opened or embedded before the first sync, so the first answer is never delayed.
The thread runs at a lower CPU priority where the OS allows it (Linux: per-thread nice).
A failure is logged once and reported by :meth:`SymbolVectors.status` and every search as
state ``unavailable`` with the reason; the whole graph is tried again after a growing pause
(5 s doubling to 5 min) or at the next sync or live update, whichever comes first (an
embedder that cannot load is not retried: its files do not change while the process runs).

:meth:`SymbolVectors.search` embeds the query and searches in the memory's ``EmbedWorker``
pattern: one timeout (2 s) for both; a timeout, no model, a broken model or a vector store
that is down answer ``DenseResult(state="unavailable", reason=...)``, never an exception.
Every hit is checked again (its graph, its key, a finite score) and against the current
graph: a hit whose symbol no longer exists at that path is dropped.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from codesynapse.errors import StoreError
from codesynapse.graph.model import SymbolRow

log = logging.getLogger(__name__)

COLLECTION_PREFIX = "cs_sym_"
GRAPH_ID = re.compile(r"^[0-9a-f]{8,64}$")
KEY = re.compile(r"^[0-9a-f]{32}$")
MODEL_KEY = re.compile(r"^[0-9a-f]{16}_[0-9]{1,5}$")
FIELD_MAX_BYTES = 2048  # path / qname column width; a longer one is not embedded
TEXT_MAX_CHARS = 480  # metadata text cap (~120 tokens): summaries are first lines anyway
SIGNATURE_MAX_CHARS = 200
SUMMARY_MAX_CHARS = 240
EMBED_BATCH = 32  # texts per model call (sorted by length, so a batch pads little)
UPSERT_BATCH = 256  # rows per Milvus upsert
FLUSH_EVERY = 512  # rows between milvus-lite flushes during a long sync: its memtable is searched row
# by row (measured: 1,000 rows 77 ms, 3,000 rows 270 ms a search; flushed 3-20 ms; a flush ~0.5 s)
QUERY_PAGE = 16384  # Milvus' largest query window (offset + limit)
SEARCH_MAX = 100
EXTRA_CANDIDATES = 10  # asked beyond ``limit`` so that stale hits dropped do not shorten the list
BACKGROUND_NICE = 10
RETRY_FIRST_S = 5.0  # after a failure the whole graph is tried again after 5, 10, 20 ... s
RETRY_MAX_S = 300.0
OUTPUT_FIELDS = ["id", "graph_d", "path", "qname"]

# every answer of a process that never computes the vectors (a CLI query, a benchmark) carries
# this reason: short; docs/PROTOCOL.md says who computes them (the daemon, `index --vectors`)
NOT_STARTED = "not computed by this process"


class DenseHit(msgspec.Struct, frozen=True):
    qname: str
    path: str
    score: float


class DenseResult(msgspec.Struct, frozen=True):
    hits: list[DenseHit]
    state: str  # "ready" | "pending" | "unavailable"
    reason: str = ""


# -- metadata text ----------------------------------------------------------------------------

_SUB = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+|[^\W\d_A-Za-z]+")
_TOKEN = re.compile(r"[^\W_]+(?:_+[^\W_]+)*", re.UNICODE)
_SPACE = re.compile(r"\s+")


def split_words(text: str) -> list[str]:
    """Lower-case words of identifiers and prose: split on punctuation, underscores, case
    changes and digits (``HTTPServerError2`` → http, server, error, 2; ``__init__`` →
    init)."""
    return [m.group(0).lower() for tok in _TOKEN.finditer(text) for m in _SUB.finditer(tok.group(0))]


def _clip(text: str, n: int) -> str:
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


CALLS_MAX = 12  # distinct callee names a symbol's text lists (its first calls, in source order)


def symbol_text(row: SymbolRow, calls: Sequence[str] = ()) -> str:
    """The metadata text embedded for a symbol (never its body), fields joined by ". ":

    ``<kind> <name words>`` · ``in <words of the qualified name above it>`` (a doc section:
    ``section <heading path>``) · the signature · the summary · ``calls <words of the names
    it calls>`` (``calls``: at most ``CALLS_MAX``, see ``_callee_names``) · ``file <path
    words>`` (the extension left out). Empty fields and a field that repeats an earlier one
    are left out."""
    kind = (row.kind or "symbol").lower()
    name_words = " ".join(split_words(row.name)) or row.name.strip()
    parts: list[str] = []
    if kind == "section":
        # qname "README.md#Install > From source": the heading path says where it sits
        heading = row.qname.split("#", 1)[1] if "#" in row.qname else row.name
        parts.append(f"doc section {_clip(heading, SIGNATURE_MAX_CHARS)}")
    else:
        parts.append(f"{kind} {name_words}")
        above = row.qname[: len(row.qname) - len(row.name)] if row.name and row.qname.endswith(row.name) \
            else row.qname
        above_words = " ".join(split_words(above))
        if above_words:
            parts.append(f"in {above_words}")
        if row.signature.strip():
            parts.append(_clip(row.signature, SIGNATURE_MAX_CHARS))
    if row.summary.strip():
        parts.append(_clip(row.summary, SUMMARY_MAX_CHARS))
    called = [" ".join(split_words(c)) for c in calls]
    called = list(dict.fromkeys(c for c in called if c))[:CALLS_MAX]
    if called:
        parts.append("calls " + ", ".join(called))
    base = row.path.rsplit("/", 1)[-1]
    stem_path = row.path.rsplit(".", 1)[0] if "." in base.lstrip(".") else row.path
    path_words = " ".join(split_words(stem_path))
    if path_words:
        parts.append(f"file {path_words}")
    out: list[str] = []
    for p in parts:
        p = p.rstrip(". ")  # the fields are joined by ". "
        if p and p not in out:
            out.append(p)
    return _clip(". ".join(out), TEXT_MAX_CHARS)


_SENTENCE_END = re.compile(r"(?<=[.?!;])\s+(?=\S)")
QUERY_PARTS_MAX = 4  # sentences of a query embedded on their own, beside the whole query
PART_MIN_WORDS = 3  # a shorter piece ("Why?") is no sentence of its own


def query_parts(text: str) -> list[str]:
    """What the dense leg embeds for a query: the query whole and, when it has more than one
    sentence, each of its first ``QUERY_PARTS_MAX`` sentences. A task often states a symptom
    in one sentence and asks for the code in another; embedded whole, the longer sentence
    dominates the pooled vector."""
    text = text.strip()
    sentences = [x.strip() for x in _SENTENCE_END.split(text) if len(x.split()) >= PART_MIN_WORDS]
    if len(sentences) < 2:
        return [text]
    return [text, *sentences[:QUERY_PARTS_MAX]]


def query_vector(vecs: Sequence[Sequence[float]]) -> list[float]:
    """The query vector searched: the mean of the unit vectors of the query's parts
    (``query_parts``), so that each sentence weighs alike; a symbol's cosine with it orders
    as the mean of its cosines with the parts. Non-finite or zero parts are left out (the
    whole query is the first part: when it is bad, the query is rejected as before)."""
    first = np.asarray(vecs[0], dtype=np.float64)
    if len(vecs) == 1:
        return list(vecs[0])
    units = []
    for v in vecs:
        a = np.asarray(v, dtype=np.float64)
        n = float(np.linalg.norm(a))
        if a.shape == first.shape and math.isfinite(n) and n > 0.0:
            units.append(a / n)
    if len(units) <= 1:
        return list(vecs[0])
    return [float(x) for x in np.mean(units, axis=0)]


def symbol_key(graph_id: str, path: str, qname: str) -> str:
    """The row key of a symbol: 32 hex of sha256 over graph id, path and qualified name."""
    return hashlib.sha256(f"{graph_id}\0{path}\0{qname}".encode()).hexdigest()[:32]


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def collection_name(model_key: str) -> str:
    if not MODEL_KEY.match(model_key):
        raise StoreError(f"invalid model key {model_key!r}")
    return COLLECTION_PREFIX + model_key


def _ids_literal(ids: Sequence[str]) -> str:
    for i in ids:
        if not KEY.match(i):
            raise StoreError(f"not a symbol vector key: {i!r}")
    return "[" + ", ".join(f'"{i}"' for i in ids) + "]"


def _fits(row: SymbolRow) -> bool:
    return len(row.path.encode()) <= FIELD_MAX_BYTES and len(row.qname.encode()) <= FIELD_MAX_BYTES


class _Current(msgspec.Struct):
    path: str
    qname: str
    text: str
    text_h: str


# -- the in-process copy searched -------------------------------------------------------------

class _Mirror:
    """This graph's rows of the collection in process memory (float32, unit length: cosine is
    a dot product), searched exactly. milvus-lite 3.x searches in Python, row by row (measured:
    230-430 ms of CPU a search at 76,532 rows, whatever the filter or index), this in a few
    milliseconds. Milvus stays the store: the copy is read from it when the service starts
    and every write to Milvus is made here too. Thread-safe."""

    def __init__(self, dim: int, capacity: int = 1024):
        self.dim = dim
        self._vecs = np.zeros((max(16, capacity), dim), dtype=np.float32)
        self._n = 0
        self._keys: list[str] = []
        self._meta: list[tuple[str, str]] = []  # (path, qname) per row
        self._row: dict[str, int] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._n

    def put(self, key: str, path: str, qname: str, vec: Sequence[float]) -> None:
        v = np.asarray(vec, dtype=np.float32)
        norm = float(np.linalg.norm(v)) if v.shape == (self.dim,) else 0.0
        if not math.isfinite(norm) or norm == 0.0:
            return  # never stored: Milvus refused it too
        with self._lock:
            i = self._row.get(key)
            if i is None:
                if self._n == len(self._vecs):  # grow by half: a doubling would waste ~1 KiB a row
                    grown = np.zeros((len(self._vecs) + len(self._vecs) // 2, self.dim), dtype=np.float32)
                    grown[: self._n] = self._vecs[: self._n]
                    self._vecs = grown
                i = self._n
                self._n += 1
                self._keys.append(key)
                self._meta.append((path, qname))
                self._row[key] = i
            else:
                self._meta[i] = (path, qname)
            self._vecs[i] = v / norm

    def trim(self) -> None:
        """Give back the room grown beyond the rows (up to a third of the copy)."""
        with self._lock:
            if len(self._vecs) > self._n + 16:
                self._vecs = self._vecs[: max(16, self._n)].copy()

    def remove(self, key: str) -> None:
        with self._lock:
            i = self._row.pop(key, None)
            if i is None:
                return
            last = self._n - 1
            if i != last:  # the last row takes the freed place
                self._vecs[i] = self._vecs[last]
                moved = self._keys[last]
                self._keys[i], self._meta[i] = moved, self._meta[last]
                self._row[moved] = i
            self._keys.pop()
            self._meta.pop()
            self._n = last

    def search(self, vec: Sequence[float], limit: int) -> list[tuple[str, str, str, float]]:
        """(key, path, qname, cosine) of the ``limit`` nearest rows, nearest first."""
        q = np.asarray(vec, dtype=np.float32)
        q = q / float(np.linalg.norm(q))
        with self._lock:
            n = self._n
            if n == 0:
                return []
            scores = self._vecs[:n] @ q
            k = min(limit, n)
            top = np.argpartition(-scores, k - 1)[:k]
            top = top[np.argsort(-scores[top], kind="stable")]
            return [(self._keys[i], *self._meta[i], float(scores[i])) for i in top]


# -- the service ------------------------------------------------------------------------------

class SymbolVectors:
    """Symbol metadata vectors of one graph; see the module docstring. Thread-safe.

    ``store()`` returns the current graph store (the App may open it again);
    ``open_embedder()`` returns an ``Embedder`` (``model_key``, ``dim``, ``embed``) or raises
    (``EmbedderUnavailable``); ``open_vectors()`` returns ``(MilvusVectors, release)`` or
    raises (``StoreError``). Both are called in the background thread, at the first sync."""

    def __init__(self, store: Callable[[], Any], graph_id: str, *, open_embedder: Callable[[], Any],
                 open_vectors: Callable[[], tuple[Any, Callable[[], None]]], unavailable: str = ""):
        if not GRAPH_ID.match(graph_id):
            raise ValueError("graph id is not a hex digest")
        from codesynapse.memory.embedder import EmbedWorker

        self._store = store
        self.graph_id = graph_id
        self._open_embedder = open_embedder
        self._open_vectors = open_vectors
        self.embedder: Any = None
        self.vectors: Any = None
        self._release: Callable[[], None] | None = None
        self._collection = ""
        self._query = EmbedWorker(name="codesynapse-symvec-query", workers=2)
        self._cv = threading.Condition()
        self._full = False  # a whole-graph sync is asked for
        self._paths: set[str] = set()  # files to bring in line
        self._busy = False
        self._started = False
        self._stop = False
        self._thread: threading.Thread | None = None
        self._synced = False  # one whole-graph sync has completed
        self._embedder_error = unavailable  # permanent: the model is off or cannot load
        self._error = ""  # the last failure (cleared by the next success)
        self._failures = 0
        self._retry_at: float | None = None  # after a failure: when the whole graph is tried again
        self._logged: set[str] = set()
        # what the collection holds for this graph: key → (path, text hash), and path → keys
        self._rows: dict[str, tuple[str, str]] = {}
        self._by_path: dict[str, set[str]] = {}
        self._loaded = False
        self._mirror: _Mirror | None = None  # complete once the rows are loaded (``_loaded``)
        self._unflushed = 0  # rows written since the last milvus-lite flush
        self._total = 0
        self.stats: dict[str, float] = {"embedded": 0, "embedSeconds": 0.0, "deleted": 0,
                                        "lastSyncSeconds": 0.0}

    # -- control ------------------------------------------------------------------------------
    def start(self) -> None:
        """Arm the background thread: nothing is opened until the first :meth:`sync`, and
        status is ``pending`` from now until that sync completes."""
        with self._cv:
            if self._started or self._stop:
                return
            self._started = True
            self._thread = threading.Thread(target=self._run, name="codesynapse-symvec", daemon=True)
            self._thread.start()

    def sync(self) -> None:
        """Bring every symbol of the graph in line (after an index). No-op until started."""
        with self._cv:
            if not self._started:
                return
            self._full = True
            self._paths.clear()
            self._cv.notify_all()

    def update_paths(self, paths: Iterable[str]) -> None:
        """Bring the symbols of these files in line (after a live update): only symbols whose
        metadata text changed are embedded again; those gone are deleted."""
        with self._cv:
            if not self._started:
                return
            if not self._full:
                self._paths.update(paths)
            self._cv.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until no work is queued or running (or the service is unavailable)."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            while self._started and not self._stop and (self._full or self._paths or self._busy):
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cv.wait(left if left is not None else 1.0)
            return True

    def close(self, join: float = 10.0) -> None:
        with self._cv:
            self._stop = True
            self._cv.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(join)
            if thread.is_alive():
                log.warning("symbol vectors: the background thread did not stop within %g s", join)
                self._query.shutdown()
                return  # it releases the vector store itself when it ends
        self._release_vectors()
        self._query.shutdown()

    def _release_vectors(self) -> None:
        with self._cv:
            release, self._release = self._release, None
            self.vectors = None
        if release is not None:
            try:
                release()
            except Exception:
                log.exception("symbol vectors: releasing the vector store")

    # -- state --------------------------------------------------------------------------------
    @property
    def collection(self) -> str:
        """The Milvus collection of the active model ("" until the first sync opened it)."""
        return self._collection

    def _unavailable_reason(self) -> str:
        return self._embedder_error or self._error

    def status(self) -> dict[str, Any]:
        with self._cv:
            reason = self._unavailable_reason()
            if not self._started and not self._embedder_error:
                state, reason = "unavailable", NOT_STARTED
            elif reason:
                state = "unavailable"
            elif self._synced and not (self._full or self._paths or self._busy):
                state = "ready"
            else:
                state = "pending"
            out: dict[str, Any] = {"state": state, "embedded": len(self._rows), "total": self._total}
            if reason:
                out["reason"] = reason
            if self.embedder is not None:
                out["model"] = self.embedder.model_key
            return out

    # -- search -------------------------------------------------------------------------------
    def search(self, text: str, limit: int = 10, timeout: float = 2.0) -> DenseResult:
        """At most ``limit`` symbols nearest to ``text``, each still in the current graph."""
        try:
            return self._search(text, limit, timeout)
        except Exception as e:  # noqa: BLE001 (never out of search: the other legs answer)
            reason = f"{e.__class__.__name__}: {e}"[:300]
            self._log_once(f"symbol vectors: search failed: {reason}", exc=e)
            return DenseResult(hits=[], state="unavailable", reason=reason)

    def _search(self, text: str, limit: int, timeout: float) -> DenseResult:
        from codesynapse.memory.embedder import EmbeddingRejected, EmbeddingTimeout

        st = self.status()
        if st["state"] == "unavailable":
            return DenseResult(hits=[], state="unavailable", reason=st.get("reason", ""))
        embedder, vectors, name = self.embedder, self.vectors, self._collection
        if embedder is None or vectors is None or not name:
            return DenseResult(hits=[], state="pending", reason="the embedding model is loading")
        query = text.strip() if isinstance(text, str) else ""
        if not query:
            return DenseResult(hits=[], state=st["state"], reason="empty query")
        limit = max(1, min(int(limit), SEARCH_MAX))
        want = min(limit + EXTRA_CANDIDATES, SEARCH_MAX)
        timeout = max(0.0, float(timeout))
        end = time.monotonic() + timeout

        def run() -> list[dict[str, Any]]:
            vec = query_vector(embedder.embed(query_parts(query[:TEXT_MAX_CHARS * 4])))
            left = end - time.monotonic()
            if left <= 0:
                raise EmbeddingTimeout("no time left for the vector search")
            mirror = self._mirror
            if mirror is not None and self._loaded:
                return [{"id": k, "distance": score, "entity": {"id": k, "graph_d": self.graph_id,
                                                                "path": path, "qname": qname}}
                        for k, path, qname, score in mirror.search(vec, want)]
            return self._milvus_search(vectors, name, vec, want, left)  # while the copy loads

        try:
            raw = self._query.call(run, timeout)
        except EmbeddingTimeout:
            return DenseResult(hits=[], state="unavailable", reason="timeout")
        except EmbeddingRejected as e:
            return DenseResult(hits=[], state="unavailable", reason=f"query embedding rejected: {e}")
        except StoreError as e:  # VectorsUnavailable included
            self._log_once(f"symbol vectors: vector search failed: {e}")
            return DenseResult(hits=[], state="unavailable", reason=f"vector store: {e}"[:300])
        hits: list[DenseHit] = []
        seen: set[tuple[str, str]] = set()
        for h in raw:
            ent = h.get("entity") or {}
            score = float(h.get("distance", float("nan")))
            path, qname, key = ent.get("path"), ent.get("qname"), ent.get("id", h.get("id"))
            if not (isinstance(path, str) and isinstance(qname, str) and math.isfinite(score)):
                continue
            if ent.get("graph_d") != self.graph_id or key != symbol_key(self.graph_id, path, qname):
                log.warning("symbol vectors: dropped a hit from another graph or with a foreign key")
                continue
            if (qname, path) in seen or not self._current(qname, path):
                continue  # stale: the symbol is gone or moved since it was embedded
            seen.add((qname, path))
            hits.append(DenseHit(qname=qname, path=path, score=score))
            if len(hits) >= limit:
                break
        st = self.status()
        if st["state"] == "pending":  # hits from the part embedded so far
            return DenseResult(hits=hits, state="pending",
                               reason=f"{st['embedded']} of {st['total']} symbols embedded")
        return DenseResult(hits=hits, state=st["state"], reason=st.get("reason", ""))

    def _current(self, qname: str, path: str) -> bool:
        return any(r.path == path for r in self._store().symbols_by_qname(qname))

    def _graph_filter(self, templated: bool, extra: str = "") -> tuple[str, dict[str, Any]]:
        if not GRAPH_ID.match(self.graph_id):  # checked in __init__ too: it enters the expression
            raise StoreError("graph id is not a hex digest")
        if templated:
            expr, params = "graph_d == {g}", {"g": self.graph_id}
        else:
            expr, params = f'graph_d == "{self.graph_id}"', {}
        return (f"{expr} and {extra}" if extra else expr), params

    def _milvus_search(self, vectors: Any, name: str, vec: Sequence[float], limit: int,
                       timeout: float) -> list[dict[str, Any]]:
        def build(templated: bool) -> Any:
            expr, params = self._graph_filter(templated)
            kwargs: dict[str, Any] = {"filter_params": params} if params else {}
            return lambda c: c.search(
                name, data=[list(vec)], anns_field="vec", limit=limit, filter=expr,
                output_fields=OUTPUT_FIELDS, timeout=timeout,
                search_params={"metric_type": "COSINE"}, **kwargs)

        try:
            res = vectors.filtered("symbol search", build)
        except StoreError as e:
            if "load" not in str(e):
                raise
            # a new milvus-lite owner (the previous one exited) has not loaded the collection
            vectors.filtered("load symbol collection", lambda templated: lambda c: c.load_collection(name))
            res = vectors.filtered("symbol search", build)
        return list(res[0]) if res else []

    # -- the background thread ----------------------------------------------------------------
    def _run(self) -> None:
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)
        except (AttributeError, OSError):  # not Linux, or not allowed: run at normal priority
            pass
        try:
            while True:
                with self._cv:
                    while not self._stop and not self._full and not self._paths:
                        if self._retry_at is not None and time.monotonic() >= self._retry_at:
                            self._retry_at = None
                            self._full = True
                            break
                        self._cv.wait(None if self._retry_at is None
                                      else max(0.01, self._retry_at - time.monotonic()))
                    if self._stop:
                        return
                    full, paths = self._full, set(self._paths)
                    self._full = False
                    self._paths.clear()
                    self._busy = True
                try:
                    self._work(full, paths)
                except _Stopped:
                    return
                except Exception as e:  # noqa: BLE001 (logged once, reported by status, retried)
                    self._fail(e, full, paths)
                finally:
                    with self._cv:
                        self._busy = False
                        self._cv.notify_all()
        finally:
            with self._cv:
                self._busy = False
                self._cv.notify_all()
                closed = self._stop
            if closed:
                self._release_vectors()

    def _fail(self, e: Exception, full: bool, paths: set[str]) -> None:
        reason = f"{e.__class__.__name__}: {e}"[:300]
        with self._cv:
            self._error = reason
            # the work is not lost: the whole graph is tried again after a growing pause
            # (or at the next sync or live update, whichever comes first)
            self._loaded = False
            self._collection = ""  # ensured (created if missing, loaded) again on the retry
            self._failures += 1
            self._retry_at = time.monotonic() + min(RETRY_MAX_S, RETRY_FIRST_S * 2 ** (self._failures - 1))
        self._log_once(f"symbol vectors: background work failed: {reason}", exc=e)

    def _log_once(self, msg: str, exc: BaseException | None = None) -> None:
        with self._cv:
            if msg in self._logged:
                log.debug("%s", msg)
                return
            self._logged.add(msg)
        if exc is not None:
            log.error("%s", msg, exc_info=exc)
        else:
            log.warning("%s", msg)

    def _check_stop(self) -> None:
        if self._stop:
            raise _Stopped

    def _open(self) -> bool:
        """Open the embedder and the vector store (once). False: the embedder cannot load."""
        from codesynapse.memory.embedder import EmbedderUnavailable

        if self._embedder_error:
            return False
        if self.embedder is None:
            try:
                emb = self._open_embedder()
            except EmbedderUnavailable as e:
                with self._cv:
                    self._embedder_error = f"embedder unavailable: {e}"
                self._log_once(f"symbol vectors: {self._embedder_error}")
                return False
            with self._cv:
                self.embedder = emb
        self._check_stop()
        if self.vectors is None:
            vectors, release = self._open_vectors()
            with self._cv:
                self.vectors, self._release = vectors, release
                if self._stop:
                    raise _Stopped
        self._check_stop()
        if not self._collection:
            self._collection = self._ensure_collection()
        return True

    def _ensure_collection(self) -> str:
        name = collection_name(self.embedder.model_key)
        dim = int(self.embedder.dim)

        def op(c: Any) -> None:
            from pymilvus import DataType

            if not c.has_collection(name):
                schema = c.create_schema(auto_id=False, enable_dynamic_field=False)
                schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=32)
                schema.add_field("graph_d", DataType.VARCHAR, max_length=64)
                schema.add_field("path", DataType.VARCHAR, max_length=FIELD_MAX_BYTES)
                schema.add_field("qname", DataType.VARCHAR, max_length=FIELD_MAX_BYTES)
                schema.add_field("text_h", DataType.VARCHAR, max_length=16)
                schema.add_field("vec", DataType.FLOAT_VECTOR, dim=dim)
                ip = c.prepare_index_params()
                ip.add_index(field_name="vec", index_type=getattr(self.vectors, "index_type", "FLAT"),
                             metric_type="COSINE")
                try:
                    c.create_collection(name, schema=schema, consistency_level="Strong")
                    c.create_index(name, ip, sync=False)  # see memory/vectors.py
                except Exception:
                    if not c.has_collection(name):  # not a lost race with another process
                        raise
            c.load_collection(name)

        self.vectors.filtered("create symbol collection", lambda templated: op)
        return name

    def _work(self, full: bool, paths: set[str]) -> None:
        t0 = time.perf_counter()
        if not self._open():
            return
        self._check_stop()
        if not self._loaded:
            self._load_rows()
            full = True  # what changed while the rows were not known is not known either
        if full:
            current = self._current_all()
            with self._cv:
                self._total = len(current)
        else:
            current = self._current_paths(paths)
        self._check_stop()
        # rows to delete: known rows of the files looked at that are not current any more
        if full:
            stale = [k for k in self._rows if k not in current]
        else:
            stale = [k for p in paths for k in self._by_path.get(p, ()) if k not in current]
        self._delete(stale)
        todo = [(k, c) for k, c in current.items() if self._rows.get(k, ("", ""))[1] != c.text_h]
        self._embed_and_store(todo)
        if full and todo and self._mirror is not None:
            self._mirror.trim()
        with self._cv:
            if full:
                self._synced = True
            self._total = len(self._rows)
            self._error = ""
            self._failures = 0
            self._retry_at = None
        self.stats["lastSyncSeconds"] = time.perf_counter() - t0
        if todo or stale:
            log.info("symbol vectors: %d embedded, %d deleted in %.1f s (%s)", len(todo), len(stale),
                     self.stats["lastSyncSeconds"], "whole graph" if full else f"{len(paths)} files")

    def _current_all(self) -> dict[str, _Current]:
        store = self._store()
        modules = {f.path: f.module for f in store.files()}
        return self._current_of(store.all_symbols(), _callee_names(store.all_calls(), self._check_stop), modules)

    def _current_paths(self, paths: set[str]) -> dict[str, _Current]:
        """The texts of the rows of ``paths`` and of the files of their types' subtypes (a
        method there may inherit the summary of a method of these files)."""
        rows: list[SymbolRow] = []
        store = self._store()
        for p in sorted(paths):
            rows.extend(store.symbols_in_file(p))
        more = subtype_files(store, [r.qname for r in rows if r.kind in INHERITABLE_TYPE_KINDS]) - set(paths)
        for p in sorted(more):
            rows.extend(store.symbols_in_file(p))
        every = sorted(set(paths) | more)
        modules = {p: f.module for p, f in store.files_by_paths(every).items()}
        return self._current_of(rows, _callee_names(store.calls_in_files(every), self._check_stop), modules)

    def _current_of(self, rows: Iterable[SymbolRow],
                    calls: dict[tuple[str, str], list[str]] | None = None,
                    modules: dict[str, str] | None = None) -> dict[str, _Current]:
        """The text of each row (``symbol_text``) by key. A method without a summary of its
        own is written with the summary of the method it overrides (``inherited_summaries``);
        ``modules``: each file's module (a function whose parent is it is no method)."""
        calls = calls or {}
        modules = modules or {}
        out: dict[str, _Current] = {}
        undocumented: list[tuple[str, SymbolRow]] = []
        for i, r in enumerate(rows):
            if i % 4096 == 0:
                self._check_stop()
            if not _fits(r):
                continue
            k = symbol_key(self.graph_id, r.path, r.qname)
            if k in out:
                continue  # a redefinition at the same path: the first one speaks for both
            text = symbol_text(r, calls.get((r.path, r.qname), ()))
            out[k] = _Current(path=r.path, qname=r.qname, text=text, text_h=text_hash(text))
            if not r.summary.strip() and member_sep(r) is not None and r.parent != modules.get(r.path):
                undocumented.append((k, r))
        if undocumented:
            got = inherited_summaries(self._store(), [r for _k, r in undocumented], modules)
            for k, r in undocumented:
                doc = got.get((r.path, r.qname))
                if doc:
                    text = symbol_text(msgspec.structs.replace(r, summary=doc), calls.get((r.path, r.qname), ()))
                    out[k] = _Current(path=r.path, qname=r.qname, text=text, text_h=text_hash(text))
        return out

    def _load_rows(self) -> None:
        """What the collection holds for this graph, read in key ranges small enough for one
        query window (a range that fills the window is split by the next hex digit)."""
        rows: dict[str, tuple[str, str]] = {}
        mirror = _Mirror(int(self.embedder.dim), capacity=max(1024, self._total))
        prefixes = [f"{i:x}" for i in range(16)]
        while prefixes:
            self._check_stop()
            prefix = prefixes.pop()
            got = self._query_prefix(prefix)
            if len(got) >= QUERY_PAGE and len(prefix) < 8:
                prefixes.extend(prefix + f"{i:x}" for i in range(16))
                continue
            for r in got:
                k = r.get("id")
                if isinstance(k, str) and KEY.match(k):
                    rows[k] = (str(r.get("path", "")), str(r.get("text_h", "")))
                    mirror.put(k, rows[k][0], str(r.get("qname", "")), r.get("vec") or ())
        mirror.trim()
        by_path: dict[str, set[str]] = {}
        for k, (p, _) in rows.items():
            by_path.setdefault(p, set()).add(k)
        with self._cv:
            self._rows, self._by_path, self._mirror, self._loaded = rows, by_path, mirror, True

    def _query_prefix(self, prefix: str) -> list[dict[str, Any]]:
        if not re.fullmatch(r"[0-9a-f]{1,8}", prefix):
            raise StoreError("bad key prefix")
        name = self._collection

        def build(templated: bool) -> Any:
            expr, params = self._graph_filter(templated, f'id like "{prefix}%"')
            kwargs: dict[str, Any] = {"filter_params": params} if params else {}
            return lambda c: c.query(name, filter=expr, output_fields=["id", "path", "qname", "text_h", "vec"],
                                     limit=QUERY_PAGE, **kwargs)

        return list(self.vectors.filtered("symbol rows", build) or [])

    def _delete(self, keys: Sequence[str]) -> None:
        name = self._collection
        for i in range(0, len(keys), 1000):
            chunk = list(keys[i:i + 1000])

            def build(templated: bool, chunk: list[str] = chunk) -> Any:
                expr, params = self._graph_filter(templated, f"id in {_ids_literal(chunk)}")
                kwargs: dict[str, Any] = {"filter_params": params} if params else {}
                return lambda c: c.delete(name, filter=expr, **kwargs)

            self.vectors.filtered("symbol delete", build)
            with self._cv:
                for k in chunk:
                    if self._mirror is not None:
                        self._mirror.remove(k)
                    p, _ = self._rows.pop(k, ("", ""))
                    keys_of = self._by_path.get(p)
                    if keys_of is not None:
                        keys_of.discard(k)
                        if not keys_of:
                            del self._by_path[p]
            self.stats["deleted"] += len(chunk)
        self._written(len(keys))

    def _embed_and_store(self, todo: list[tuple[str, _Current]]) -> None:
        if not todo:
            return
        name = self._collection
        dim = int(self.embedder.dim)
        todo.sort(key=lambda kc: len(kc[1].text))  # similar lengths pad little
        pending: list[dict[str, Any]] = []

        def upsert() -> None:
            nonlocal pending
            if not pending:
                return
            data = pending
            self.vectors.filtered("symbol upsert", lambda templated: (lambda c: c.upsert(name, data)))
            with self._cv:
                for d in data:
                    k, p = d["id"], d["path"]
                    old = self._rows.get(k)
                    if old is not None and old[0] != p:
                        self._by_path.get(old[0], set()).discard(k)
                    self._rows[k] = (p, d["text_h"])
                    self._by_path.setdefault(p, set()).add(k)
                    if self._mirror is not None:
                        self._mirror.put(k, p, d["qname"], d["vec"])
            pending = []
            self._written(len(data))

        for i in range(0, len(todo), EMBED_BATCH):
            self._check_stop()
            batch = todo[i:i + EMBED_BATCH]
            t = time.perf_counter()
            vecs = self.embedder.embed([c.text for _, c in batch])
            self.stats["embedSeconds"] += time.perf_counter() - t
            self.stats["embedded"] += len(batch)
            for (k, c), v in zip(batch, vecs, strict=True):
                if len(v) != dim or not all(math.isfinite(x) for x in v) or not any(v):
                    raise StoreError(f"refusing an invalid vector for {c.qname}")
                pending.append({"id": k, "graph_d": self.graph_id, "path": c.path, "qname": c.qname,
                                "text_h": c.text_h, "vec": v})
            if len(pending) >= UPSERT_BATCH:
                upsert()
        upsert()

    def _written(self, n: int) -> None:
        """Flush milvus-lite's memtable every FLUSH_EVERY rows written: searches go to the
        in-process copy, but Milvus answers while the copy loads, and its memtable is searched
        row by row. A small live update is not flushed on its own (a flush costs ~0.5 s; the
        write is durable in milvus-lite's log either way)."""
        self._unflushed += n
        if self._unflushed >= FLUSH_EVERY:
            self.vectors.settle(self._collection)
            self._unflushed = 0


def _callee_names(calls: Iterable[Any], check: Callable[[], None] = lambda: None) -> dict[tuple[str, str], list[str]]:
    """(path, caller qname) → the names it calls as written (resolved or not), distinct, in
    source order, at most ``CALLS_MAX``, itself left out: what a symbol does is visible in
    what it calls (``retry``, ``sleep``, ``decode``). Calls are metadata of the graph, never
    the body's text; they change only with the caller's own file, so a live update of that
    file brings the text in line. (Measured on the tune half of the plain-English set: only
    the calls resolved in the graph did no better than every call.)"""
    out: dict[tuple[str, str], list[str]] = {}
    for i, c in enumerate(calls):
        if i % 16384 == 0:
            check()
        if not c.name:
            continue
        got = out.setdefault((c.path, c.caller), [])
        if len(got) < CALLS_MAX and c.name not in got and c.target != c.caller:
            got.append(c.name)
    return out


METHOD_KINDS = frozenset({"method", "function"})
INHERIT_DEPTH = 3  # levels of supertypes looked through for the doc an undocumented method inherits


def member_sep(r: SymbolRow) -> str | None:
    """The separator between a method's type and its name in its qualified name (``.``,
    ``::``, ``#``, ``/``), or None when ``r`` is no method of a type."""
    if r.kind not in METHOD_KINDS or not r.parent or not (r.qname.startswith(r.parent) and r.qname.endswith(r.name)):
        return None
    sep = r.qname[len(r.parent):len(r.qname) - len(r.name)]
    return sep if sep in (".", "::", "#", "/") else None


def inherited_summaries(store: Any, rows: Sequence[SymbolRow],
                        modules: dict[str, str] | None = None) -> dict[tuple[str, str], str]:
    """(path, qualified name) → the summary a method without one inherits: that of the
    nearest method of the same name in the supertypes of its type (the index's inheritance
    edges, at most ``INHERIT_DEPTH`` levels up, breadth first), as javadoc (``{@inheritDoc}``
    implied for an ``@Override``), rustdoc (a trait's method docs on its impls) and Python's
    ``inspect.getdoc`` show it. An implementation or override documented by its base only
    (``write`` of a ``TypeAdapter``, ``handle`` of a middleware trait, ``convert`` of a
    ``ParamType``) otherwise has no summary at all. Only the summary is borrowed: the name,
    type and signature stay the method's own. The doc of a base in another file is read when
    the method's text is made, and made again at a live update of the base's file
    (``SymbolVectors._current_paths`` reads the files of its types' subtypes with it). A
    base that another file's edit newly resolves (the inheritance edge was unresolved) is
    seen at the next sync of the whole graph. ``modules``: each file's module; a function
    whose parent is its module is no method (nothing to look up for it)."""
    modules = modules or {}
    wanted = [r for r in rows
              if member_sep(r) is not None and not r.summary.strip() and r.parent != modules.get(r.path)]
    if not wanted:
        return {}
    type_paths: dict[str, set[str]] = {}
    for r in wanted:
        type_paths.setdefault(r.parent, set()).add(r.path)  # a type's methods live in its files
    bases: dict[str, list[str]] = {}
    level = set(type_paths)
    seen = set(level)
    for _ in range(INHERIT_DEPTH):
        paths = sorted({p for t in level for p in type_paths.get(t, ())})
        nxt: list[str] = []
        for _id, ih in store.inherits_touching(paths, ()):
            if ih.child in level and ih.target and ih.target != ih.child:
                got = bases.setdefault(ih.child, [])
                if ih.target not in got:
                    got.append(ih.target)
                if ih.target not in seen:
                    seen.add(ih.target)
                    nxt.append(ih.target)
        if not nxt:
            break
        for t, defs in store.symbols_by_qnames(nxt).items():
            type_paths.setdefault(t, set()).update(d.path for d in defs if d.kind != "module")
        level = set(nxt)
    if not bases:
        return {}
    cands: dict[tuple[str, str], list[str]] = {}
    for r in wanted:
        sep = member_sep(r) or "."
        order: list[str] = []
        frontier = [r.parent]
        for _ in range(INHERIT_DEPTH):
            frontier = [b for t in frontier for b in bases.get(t, ()) if b not in order]
            order.extend(dict.fromkeys(frontier))
        if order:
            cands[(r.path, r.qname)] = [t + sep + r.name for t in order]
    defs = store.symbols_by_qnames(q for qs in cands.values() for q in qs)
    out: dict[tuple[str, str], str] = {}
    for key, qs in cands.items():
        for q in qs:
            doc = next((d.summary for d in defs.get(q, []) if d.kind in METHOD_KINDS and d.summary.strip()), "")
            if doc:
                out[key] = doc
                break
    return out


INHERITABLE_TYPE_KINDS = frozenset({"class", "struct", "interface", "trait", "enum", "type", "object", "record"})


def subtype_files(store: Any, types: Sequence[str]) -> set[str]:
    """The files of the subtypes of ``types``, ``INHERIT_DEPTH`` levels down: where a method
    may inherit the summary of a method of these types (``inherited_summaries``)."""
    out: set[str] = set()
    level = list(dict.fromkeys(types))
    seen = set(level)
    for _ in range(INHERIT_DEPTH):
        if not level:
            break
        nxt: list[str] = []
        for rows in store.subtypes_many(level).values():
            for ih in rows:
                out.add(ih.path)
                if ih.child not in seen:
                    seen.add(ih.child)
                    nxt.append(ih.child)
        level = nxt
    return out


class _Stopped(Exception):
    """The service is closing: the background work stops where it is."""


# -- wiring -----------------------------------------------------------------------------------

def open_symbol_vectors(store: Callable[[], Any], graph_id: str, data_dir: Path,
                        memory_settings: Any) -> SymbolVectors:
    """SymbolVectors of the graph store ``store()`` on the memory's embedder and vector store of ``data_dir`` (the memory
    data folder: ``<index data>/memory``), shared with memory in this process.
    ``memory_settings``: a dict (``memory_settings(app)``) or ``MemorySettings``."""
    from codesynapse.memory.embedder import EmbedderUnavailable
    from codesynapse.memory.factory import (
        EMBEDDER_DIR,
        acquire_vectors,
        get_embedder,
        release_vectors,
    )
    from codesynapse.memory.service import MemorySettings, settings_from_dict

    s = memory_settings if isinstance(memory_settings, MemorySettings) else settings_from_dict(memory_settings)
    data_dir = Path(data_dir)
    off = "embedder unavailable: the embedder is off (setting embedder = none)" if s.embedder == "off" else ""

    def open_embedder() -> Any:
        if s.embedder == "off":
            raise EmbedderUnavailable("the embedder is off (setting embedder = none)")
        return get_embedder(s, data_dir / EMBEDDER_DIR)

    def open_vectors() -> tuple[Any, Callable[[], None]]:
        if s.vectors == "off":
            raise StoreError("the vector store is off (setting vectors = off)")
        data_dir.mkdir(parents=True, exist_ok=True)
        vectors, key = acquire_vectors(s, data_dir)
        return vectors, lambda: release_vectors(key)

    return SymbolVectors(store, graph_id, open_embedder=open_embedder, open_vectors=open_vectors,
                         unavailable=off)


def for_app(app: Any) -> SymbolVectors | None:
    """The App's SymbolVectors, or None when the setting ``symbolVectors`` is off."""
    if not getattr(app.settings, "symbol_vectors", True):
        return None
    from codesynapse.memory.methods import memory_settings

    try:
        return open_symbol_vectors(lambda: app.store, app.workspace.graph_id, app.workspace.data_dir / "memory",
                                   memory_settings(app))
    except ValueError as e:  # a graph id that may not enter a filter: no dense leg, no crash
        log.error("symbol vectors: %s; the dense leg is off", e)
        return None
