"""Logging for the CLI and the daemon: bounded records, and (for the daemon) no blocking.

* Every record is at most ``RECORD_MAX`` bytes once written (message, traceback and
  prefix): a 10 MB parameter that reaches a log call costs 2 KiB of log, not 10 MB. Long
  arguments are cut before the message is formatted, so the cost of formatting is bounded
  too.
* The daemon logs through a bounded queue: the event-loop thread only formats the bounded
  record and puts it on the queue; one writer thread writes it to stderr. When stderr
  blocks (a client that does not read it), the queue fills and records are dropped and
  counted, instead of the loop stopping on a full pipe.
"""

from __future__ import annotations

import logging
import os
import queue
import reprlib
import sys
import threading
from collections.abc import Callable
from typing import Any

RECORD_MAX = 2048  # bytes per written record, newline included
ARG_MAX = 1024  # characters kept of one argument
QUEUE_MAX = 2000  # records waiting for stderr (2000 × 2 KiB = 4 MiB at most)
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_CUT = " …[{} more]"
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = ARG_MAX
_REPR.maxlevel, _REPR.maxdict, _REPR.maxlist, _REPR.maxtuple = 6, 30, 30, 30


def bound_text(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + _CUT.format(f"{len(text) - limit:,} chars")


def _bound_arg(a: Any) -> Any:
    if isinstance(a, (int, float, bool)) or a is None:
        return a
    if isinstance(a, str):
        return bound_text(a, ARG_MAX)
    if isinstance(a, (bytes, bytearray)):
        return bound_text(repr(bytes(a[:ARG_MAX + 1])), ARG_MAX)
    if isinstance(a, (dict, list, tuple, set, frozenset)):  # without building the whole repr
        return bound_text(_REPR.repr(a), ARG_MAX)
    try:
        s = str(a)
    except Exception:  # noqa: BLE001 - any __str__ may raise; logging must not
        s = f"<{type(a).__name__}>"
    return bound_text(s, ARG_MAX)


class BoundArgs(logging.Filter):
    """Cut every argument (and a non-string message) to ``ARG_MAX`` characters before the
    record is formatted."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not isinstance(record.msg, str):
            record.msg = _bound_arg(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_bound_arg(a) for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: _bound_arg(v) for k, v in record.args.items()}
        return True


class BoundedFormatter(logging.Formatter):
    """A record written is at most ``limit`` bytes (UTF-8), newline included: the head of
    the message and the tail of its traceback (where the error is) are kept."""

    def __init__(self, fmt: str = FORMAT, limit: int = RECORD_MAX):
        super().__init__(fmt)
        self.limit = limit

    def format(self, record: logging.LogRecord) -> str:
        try:
            text = super().format(record)
        except Exception as e:  # noqa: BLE001 - bad format arguments: say so, never fail
            text = f"{record.levelname} {record.name}: unformattable log record {record.msg!r:.300}: {e!r:.200}"
        data = text.encode("utf-8", "replace")
        room = self.limit - 1
        if len(data) <= room:
            return text
        note = f" …[{len(data) - room:,} bytes cut]… ".encode()
        head = (room - len(note)) * 2 // 3
        tail = room - len(note) - head
        return (data[:head] + note + data[len(data) - tail:]).decode("utf-8", "ignore")


class _DroppingQueueHandler(logging.Handler):
    """Formats a record (bounded) on the calling thread and puts it on the queue without
    waiting; counts what a full queue drops."""

    def __init__(self, q: queue.Queue, formatter: logging.Formatter):
        super().__init__()
        self.q = q
        self.formatter = formatter
        self.dropped = 0
        self.addFilter(BoundArgs())

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.formatter.format(record)
        except Exception:  # noqa: BLE001 - a record that cannot be formatted is dropped, counted
            self.dropped += 1
            return
        try:
            self.q.put_nowait(line)
        except queue.Full:
            self.dropped += 1

    def handleError(self, record: logging.LogRecord) -> None:  # never write to stderr from here
        self.dropped += 1


class _Writer(threading.Thread):
    """Writes queued lines to a duplicate of fd 2 with ``os.write``: no Python stream
    lock is held while it blocks, so neither logging nor interpreter exit can wait on it."""

    def __init__(self, q: queue.Queue, handler: _DroppingQueueHandler,
                 after_write: Callable[[int], None] | None = None):
        super().__init__(name="codesynapse-log", daemon=True)
        self.q = q
        self.handler = handler
        self.fd = os.dup(sys.stderr.fileno())
        self.reported = 0
        self.after_write = after_write  # called with the descriptor after each record (rotation)

    def run(self) -> None:
        while True:
            line = self.q.get()
            if isinstance(line, threading.Event):  # flush(): everything before it is written
                line.set()
                continue
            dropped = self.handler.dropped
            if dropped > self.reported:
                line = f"({dropped - self.reported} log records dropped: stderr was not read)\n{line}"
                self.reported = dropped
            data = (line + "\n").encode("utf-8", "replace")
            try:
                while data:
                    data = data[os.write(self.fd, data):]
            except OSError:
                return
            if self.after_write is not None:
                try:
                    self.after_write(self.fd)
                except OSError:
                    pass  # the record is written; rotation is tried again after the next one


_active: tuple[_DroppingQueueHandler, _Writer] | None = None


def _install(handler: logging.Handler, level: int) -> None:
    """Put ``handler`` on the root logger in place of the handlers this module installed
    earlier (handlers installed by others, e.g. a test runner's, stay)."""
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, "_codesynapse", False):
            root.removeHandler(h)
    handler._codesynapse = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    logging.captureWarnings(True)


def configure(level: int) -> None:
    """Bounded records to stderr, written on the calling thread (the CLI's commands)."""
    if _active is not None:  # the daemon's queue stays (its writer thread owns stderr)
        logging.getLogger().setLevel(level)
        return
    root = logging.getLogger()
    if any(not getattr(h, "_codesynapse", False) for h in root.handlers):
        return  # configured by the host already (as logging.basicConfig would leave it)
    h = logging.StreamHandler(sys.stderr)
    h.setFormatter(BoundedFormatter())
    h.addFilter(BoundArgs())
    _install(h, level)


def configure_queued(level: int | None = None, after_write: Callable[[int], None] | None = None) -> None:
    """Bounded records to stderr through a bounded queue and one writer thread (the
    daemon). ``level`` None keeps the root logger's level. ``after_write(fd)`` runs on the
    writer thread after each record (daemon/logfile.py rotates daemon.log there)."""
    global _active
    if _active is not None:
        if level is not None:
            logging.getLogger().setLevel(level)
        if after_write is not None:
            _active[1].after_write = after_write
        return
    q: queue.Queue = queue.Queue(QUEUE_MAX)
    handler = _DroppingQueueHandler(q, BoundedFormatter())
    writer = _Writer(q, handler, after_write)
    writer.start()
    _active = (handler, writer)
    _install(handler, logging.getLogger().level if level is None else level)


def flush(timeout: float = 2.0) -> None:
    """Wait until what is queued now is written (at most ``timeout``: stderr may block).
    The queue stays in place: a record logged later is queued too, never written here."""
    if _active is None:
        return
    _, writer = _active
    done = threading.Event()
    try:
        writer.q.put(done, timeout=timeout)
    except queue.Full:
        return
    done.wait(timeout)
