"""Per-connection unsaved-buffer views of the one shared index (issue 19 #2).

The daemon has one index. Each connection has its own unsaved buffers; an answer must reflect
the asking connection's buffers and the disk for every other file. The index reflects one
*view* at a time: the disk plus one set of buffers. ``LiveUpdater.in_index`` records exactly
which files hold buffer content in the index (path → bytes; every other file is the disk).

* A graph request of connection C runs inside ``Views.reading(C)``. When the index already
  reflects C's view (``in_index`` equals C's buffers, byte for byte) C reads at once, sharing
  the index with every other reader of that view. Otherwise C *switches* the index to its
  view: under the exclusive side of the lock (readers of the old view finish first, no reader
  starts meanwhile) the files whose content differs are extracted again, synchronously — C's
  buffers that are not in the index as they are, and the disk for files that hold another
  view's buffer and that C has not dirty. C then reads, and becomes the *owner*.
* The owner's edits (didChange/didSave/didClose) go through the live updater as in one-process
  mode (debounced); another connection's edits are only recorded, and reach the index when
  that connection asks. An edit takes ownership when the owner holds no buffers (an agent with
  none, or nobody yet), so that an editing connection's live updates (findings diagnostics)
  keep flowing while only buffer-less clients ask.
* The live updater's batches take ``Views.gate``: one index change at a time (batches and
  switches), and the exclusive side too when the batch touches a file that holds or will hold
  buffer content (a view change); a batch of disk changes to files nobody has applied dirty
  changes every view alike and runs beside readers, as in one-process mode.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

log = logging.getLogger(__name__)


class Views:
    def __init__(self, live):
        self.live = live  # the shared LiveUpdater
        self.owner: Any = None  # the ConnectionLive whose buffers live.overlays holds
        self.state = threading.Lock()  # owner and live.overlays change together (short holds)
        self.switches = 0  # how many times a request switched the index (indexStatus, tests)
        self._cond = threading.Condition()
        self._readers = 0
        self._writing = False
        self._waiting = 0  # exclusive waiters: new readers queue behind them
        self._apply_lock = threading.Lock()  # one index change at a time
        live.gate = self.gate

    # -- the lock -------------------------------------------------------------------------
    def _enter_exclusive(self) -> None:
        with self._cond:
            self._waiting += 1
            try:
                while self._writing or self._readers:
                    self._cond.wait()
            finally:
                self._waiting -= 1
            self._writing = True

    def _leave_exclusive(self, then_read: bool = False) -> None:
        with self._cond:
            self._writing = False
            if then_read:
                self._readers += 1
            self._cond.notify_all()

    @contextmanager
    def gate(self, batch: dict[str, str]) -> Iterator[None]:
        """Around one live-updater batch (called from the updater's worker)."""
        with self._apply_lock:
            live = self.live
            touches = any(rel in live.overlays or rel in live.in_index for rel in batch)
            if not touches:
                yield
                return
            self._enter_exclusive()
            try:
                yield
            finally:
                self._leave_exclusive()

    # -- requests -------------------------------------------------------------------------
    @contextmanager
    def reading(self, conn) -> Iterator[None]:
        """Run one answer of ``conn`` on an index that reflects ``conn``'s view."""
        if not self.live.worker_started:
            # the first index is still being built from the disk: no buffer is applied before
            # it is in (a switch now could be overwritten by the walk); answers read the disk
            yield
            return
        want = dict(conn.buffers)
        while True:
            with self._cond:
                while self._writing or self._waiting:
                    self._cond.wait()
                if self.live.in_index == want:
                    self._readers += 1
                    break
            if self._switch(conn, want):
                break
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    def _switch(self, conn, want: dict[str, bytes]) -> bool:
        """Bring the index to ``want`` (``conn``'s buffers); True when done and the caller is
        counted as a reader of that view; False when the view already matched (retry)."""
        live = self.live
        with self._apply_lock:
            self._enter_exclusive()
            ok = False
            try:
                if live.in_index == want:
                    ok = True
                    return True
                with self.state:
                    self.owner = conn
                    live.overlays = dict(want)
                    live.app.open_buffers = set(want)
                batch = {rel: "overlay" for rel, data in want.items() if live.in_index.get(rel) != data}
                batch.update({rel: "disk" for rel in live.in_index if rel not in want})
                live._apply(batch)
                self.switches += 1
                ok = True
                return True
            finally:
                self._leave_exclusive(then_read=ok)

    # -- edits (the event loop: never wait long here) --------------------------------------
    def edit(self, conn, rel: str, text: str) -> None:
        with self.state:
            conn.buffers[rel] = text.encode("utf-8")
            owner = self.owner
            if owner is not conn and (owner is None or not owner.buffers):
                self.owner = owner = conn
                self.live.overlays = dict(conn.buffers)
                for other in conn.buffers:
                    if other != rel:
                        self.live._put("overlay", other)
            if owner is conn:
                self.live.buffer_changed(rel, text)

    def saved(self, conn, rel: str) -> None:
        with self.state:
            conn.buffers.pop(rel, None)
            if self.owner is conn:
                self.live.buffer_saved(rel)
            else:
                self.live.disk_changed(rel)

    def closed(self, conn, rel: str) -> None:
        with self.state:
            if conn.buffers.pop(rel, None) is None:
                return
            if self.owner is conn:
                self.live.buffer_closed(rel)

    def gone(self, conn) -> None:
        """``conn`` disconnected: its buffers leave the index (the next request of another
        view switches synchronously; the updater reverts them meanwhile)."""
        with self.state:
            for rel in list(conn.buffers):
                conn.buffers.pop(rel)
                if self.owner is conn:
                    self.live.buffer_closed(rel)
            if self.owner is conn:
                self.owner = None
