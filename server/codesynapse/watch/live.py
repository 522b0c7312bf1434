"""The live updater: one debounced, coalescing queue of changes → incremental updates
(applied to the index by index/live.py's ``LiveIndex``).

A saved or written file that arrives
alone is applied after a few milliseconds of quiet; a burst, and unsaved-buffer edits
(keystrokes), wait out the configured debounce and are coalesced.

Sources: LSP didOpen/didChange/didSave/didClose (unsaved buffers become overlays over the
saved file and are dropped on close), workspace/didChangeWatchedFiles, and a watchfiles
watcher for changes made outside the editor. A storm (a branch switch) is coalesced per path
and applied in batches, so requests keep being served — with a freshness stamp that says
work is pending.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from codesynapse.extract.languages import detect
from codesynapse.extract.manifests import is_dependency_file
from codesynapse.findings.sarif import watched as sarif_watched
from codesynapse.index.live import POLICY_FILE, LiveIndex
from codesynapse.sysmem import trim

log = logging.getLogger(__name__)

BATCH_MAX = 500
QUEUE_MAX = 100_000
WARM_MAX = 64  # opened documents waiting to be prepared for live updates
# A disk change that arrives alone (one didSave, one file written) is applied after this much
# quiet instead of the whole debounce; when more changes follow within it (a storm, an editor
# saving several buffers), the worker waits out the debounce and coalesces them. Buffer edits
# (didChange, one per keystroke) always wait out the debounce.
LONE_QUIET_S = 0.005


class LiveUpdater:
    def __init__(self, app, on_change: Callable[[set[str]], None] | None = None,
                 on_policy: Callable[[list], None] | None = None):
        self.app = app
        self.state = app.index_state  # pending, open buffers and the policy: read and written there
        self.on_change = on_change
        self.on_policy = on_policy
        self.q: queue.Queue = queue.Queue(maxsize=QUEUE_MAX)
        self.overlays: dict[str, bytes] = {}
        # the files whose content in the index is an unsaved buffer (path -> those bytes); every
        # other file is the disk. The shared daemon compares it with a connection's buffers
        # (daemon/views.py), and sets ``gate``: a context manager taken around each batch.
        self.in_index: dict[str, bytes] = {}
        self.gate: Callable[[dict[str, str]], Any] | None = None
        self.worker_started = False
        # set once the worker has read the symbol table and warmed the resolver: an edit
        # queued before waits for that (on the kernel: seconds after the daemon starts)
        self.ready = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._overflow = threading.Event()
        self.debounce = max(0, app.settings.debounce_ms) / 1000.0
        self.applied = threading.Condition()
        self.generation = 0
        self._backoff = 0.0  # seconds to wait before retrying a batch the store refused
        self._warm_q: queue.Queue = queue.Queue()  # (path, bytes) of opened documents to prepare
        self._warm_lock = threading.Lock()
        self._warm_thread: threading.Thread | None = None
        self._listeners: list[Callable[[set[str]], None]] = []  # told after each applied update
        self._head = None  # the HEAD watcher of a team graph's checkout (start_watcher)
        # applies each batch to the index; the policy callback is looked up when it fires
        # (the shared daemon sets ``on_policy`` after the updater is built)
        self.index = LiveIndex(app, self._tell, lambda diagnostics: self.on_policy and self.on_policy(diagnostics))

    def subscribe(self, fn: Callable[[set[str]], None]) -> None:
        """Call ``fn(paths)`` (from the worker thread) after each update that changed the
        index; a function subscribed again is kept once."""
        if fn not in self._listeners:
            self._listeners.append(fn)

    def unsubscribe(self, fn: Callable[[set[str]], None]) -> None:
        """Stop calling ``fn`` (a connection of the shared daemon ended)."""
        try:
            self._listeners.remove(fn)
        except ValueError:
            pass

    def _tell(self, paths: set[str]) -> None:
        if self.on_change:
            self.on_change(paths)
        for fn in list(self._listeners):
            try:
                fn(paths)
            except Exception:  # a listener must not stop the updater
                log.exception("a live-update listener failed")

    # -- sources ------------------------------------------------------------------------------
    def _put(self, kind: str, rel: str) -> None:
        try:
            self.q.put_nowait((kind, rel))
            self.state.pending = self.q.qsize()
        except queue.Full:
            # bounded queue: fall back to one full catch-up instead of growing without end
            self._overflow.set()

    def buffer_changed(self, rel: str, text: str) -> None:
        self.overlays[rel] = text.encode("utf-8")
        self.state.buffer_in(rel)
        self._put("overlay", rel)

    def buffer_opened(self, rel: str, text: str) -> None:
        """A document opened in the editor: a large file's extraction is prepared in the
        background (without writing anything), so that its first save is absorbed as fast as
        the ones after it (extract/incremental.py keeps the last extraction of recently
        updated files; without it the first update of a file extracts it whole)."""
        if len(self._warm_q.queue) >= WARM_MAX:
            return  # many files opened at once: the first saves of the rest extract them whole
        self._warm_q.put((rel, text.encode("utf-8")))
        with self._warm_lock:
            if self._warm_thread is None or not self._warm_thread.is_alive():
                self._warm_thread = threading.Thread(target=self._warm_worker, name="codesynapse-warm",
                                                     daemon=True)
                self._warm_thread.start()

    def _warm_worker(self) -> None:
        while not self._stop.is_set():
            try:
                rel, data = self._warm_q.get(timeout=1.0)
            except queue.Empty:
                return
            try:
                self.index.warm(rel, data)
            except Exception:
                log.exception("preparing %s for live updates failed", rel)
            finally:
                self._warm_q.task_done()

    def warm_idle(self, timeout: float = 30.0) -> bool:
        """Wait until the documents opened so far are prepared (tests, the bench)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self._warm_q.unfinished_tasks == 0:
                return True
            time.sleep(0.01)
        return False

    def buffer_saved(self, rel: str) -> None:
        self.overlays.pop(rel, None)
        self.state.buffer_out(rel)
        self._put("disk", rel)

    def buffer_closed(self, rel: str) -> None:
        had = self.overlays.pop(rel, None) is not None
        self.state.buffer_out(rel)
        if had:
            self._put("disk", rel)

    def disk_changed(self, rel: str) -> None:
        self._put("disk", rel)

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self, watch: bool = True) -> None:
        self.start_watcher(watch)
        self.start_worker()

    def start_watcher(self, watch: bool = True) -> None:
        """Start watching (events queue up until the worker starts). A team graph's checkout
        also follows its HEAD (watch/head.py): when HEAD moves, the worker indexes the tree
        again, which first moves the store to the base of the new HEAD (store/team.py)."""
        if watch:
            w = threading.Thread(target=self._watch, name="codesynapse-watch", daemon=True)
            w.start()
            self._threads.append(w)
        if getattr(self.app.store, "prepare_index", None) is not None and self._head is None:
            from codesynapse.watch.head import HeadWatcher

            self._head = HeadWatcher(self.app.workspace.root, lambda _commit: self.full_index_soon())
            self._head.start()

    def full_index_soon(self) -> None:
        """Index the whole tree again once the queue is quiet (HEAD moved; as after an overflow)."""
        self._overflow.set()

    def start_worker(self) -> None:
        self.worker_started = True  # the first index is in: buffers may be applied from now on
        t = threading.Thread(target=self._worker, name="codesynapse-live", daemon=True)
        t.start()
        self._threads.append(t)

    def stop(self, join: float = 0.0) -> None:
        """Stop watching and updating; with ``join``, wait up to that many seconds for a
        batch in progress to finish."""
        self._stop.set()
        if self._head is not None:
            self._head.stop()
        try:
            self.q.put_nowait(("stop", ""))
        except queue.Full:
            pass
        if join:
            end = time.monotonic() + join
            for t in self._threads:
                t.join(max(0.0, end - time.monotonic()))

    def wait_idle(self, timeout: float = 10.0) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.q.empty() and self.state.pending == 0:
                return True
            time.sleep(0.01)
        return False

    def _watch(self) -> None:
        try:
            from watchfiles import watch
        except ImportError:
            log.warning("watchfiles is not installed: changes outside the editor are seen on restart only")
            return
        root = str(self.app.workspace.root)
        policy = self.state.policy

        def keep(change, path: str) -> bool:
            rel = self.app.workspace.relpath(path)
            if rel is None:
                return False
            if rel == POLICY_FILE:
                return True
            parts = rel.split("/")
            for i in range(1, len(parts)):
                if policy is not None and policy.excluded("/".join(parts[:i]), is_dir=True):
                    return False
            return detect(rel) is not None or is_dependency_file(rel) or sarif_watched(rel, self.state.policy)

        try:
            # a change is handed on after 5 ms without another (one file write is a few events
            # within microseconds); the updater's queue coalesces what a burst spreads further
            for changes in watch(root, watch_filter=keep, stop_event=self._stop, debounce=50, step=5,
                                 rust_timeout=1000, yield_on_timeout=False, recursive=True):
                for _change, path in changes:
                    rel = self.app.workspace.relpath(path)
                    if rel is not None:
                        self.disk_changed(rel)
        except Exception:
            log.exception("the file watcher stopped")

    # -- the worker ---------------------------------------------------------------------------
    def _worker(self) -> None:
        # a catch-up that found the tree as stored read no symbol table (Indexer.index_tree):
        # read it now, before the first edit needs it, rather than in that edit's update, and
        # make the resolver's star graph and tables (what a save's new calls are looked up in)
        if not self._stop.is_set():
            self._safe(self.app.indexer.warm_resolver)
            trim()  # what reading the table allocated and freed (the kernel's: ~45 MB)
        self.ready.set()
        while not self._stop.is_set():
            try:
                first = self.q.get(timeout=0.5)
            except queue.Empty:
                if self._overflow.is_set():
                    self._overflow.clear()
                    touched = {**dict.fromkeys(list(self.in_index), "disk"),
                               **dict.fromkeys(list(self.overlays), "overlay")}
                    with self._gate(touched):
                        ok = self._safe(self._full_index)
                    if not ok:
                        self._overflow.set()  # the store is still failing: catch up later
                        self._pause()
                continue
            if first[0] == "stop":
                return
            if self.debounce:
                quiet = min(self.debounce, LONE_QUIET_S) if first[0] == "disk" else self.debounce
                time.sleep(quiet)
                if quiet < self.debounce and not self.q.empty():
                    time.sleep(self.debounce - quiet)
            batch = {first[1]: first[0]}
            while len(batch) < BATCH_MAX:
                try:
                    kind, rel = self.q.get_nowait()
                except queue.Empty:
                    break
                if kind == "stop":
                    self._stop.set()
                    break
                batch[rel] = kind
            self.state.pending = self.q.qsize() + len(batch)
            with self._gate(batch):
                ok = self._safe(self._apply, batch)
            if ok:
                self._backoff = 0.0
            else:
                # the store refused the batch (Neo4j down, disk full): keep the changes and retry
                # after a growing pause, so that nothing edited meanwhile is lost
                for rel, kind in batch.items():
                    self._put(kind, rel)
                self._pause()
            self.state.pending = self.q.qsize()
            with self.applied:
                self.generation += 1
                self.applied.notify_all()
            if self.q.empty():
                # idle: what the batch freed goes back to the system, after its answers are
                # visible (a few ms on the kernel's index), so the daemon's resident size is
                # what it holds, not the peak of its last update
                trim()

    def _gate(self, batch: dict[str, str]):
        return self.gate(batch) if self.gate is not None else nullcontext()

    def _full_index(self) -> None:
        """Index the tree again from the disk (HEAD moved, the queue overflowed), then put the
        open documents' unsaved buffers back in: the disk's content must not replace them
        until they are saved or closed."""
        self.index.full_index()  # from the disk: no buffer is in the index after it
        self.in_index.clear()
        if self.overlays:
            self._apply(dict.fromkeys(list(self.overlays), "overlay"))

    def _safe(self, fn, *args) -> bool:
        try:
            fn(*args)
            return True
        except Exception:  # logged; the caller keeps the work for a retry
            log.exception("incremental update failed")
            return False

    def _pause(self) -> None:
        self._backoff = min(30.0, max(1.0, self._backoff * 2))
        self._stop.wait(self._backoff)

    def _apply(self, batch: dict[str, str]) -> None:
        """Apply one batch to the index (``LiveIndex.apply``), then record which content of
        each of its files the index holds."""
        ov = dict(self.overlays)  # one version of the buffers for the whole batch
        reindexed = self.index.apply(batch, ov)
        if reindexed:
            self.in_index.clear()  # the tree indexed again from the disk (a new policy)
        for rel in batch:  # the batch is in: each of its files is its buffer's content, or the disk
            if rel in ov:
                self.in_index[rel] = ov[rel]
            else:
                self.in_index.pop(rel, None)
        rest = [rel for rel in ov if rel not in batch] if reindexed else []
        if rest:  # as after _full_index: the unsaved buffers the disk's content replaced go back in
            self._apply(dict.fromkeys(rest, "overlay"))
