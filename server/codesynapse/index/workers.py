"""What extraction worker processes write goes into the server's logging.

A worker is a separate process: a Python warning, a library's message, a note that C code
(tree-sitter) writes to file descriptor 2, or a stray ``print`` would reach the server's
stderr unformatted (around its bounded log queue) and, for stdout, the protocol stream
itself (a spawned worker inherits the server's descriptors 1 and 2).

``WorkerOutput`` is a pipe opened before a pool starts and closed after it ends. Each worker's
initializer (``start``) points its descriptors 1 and 2 at the pipe's write end (so C code's
writes are caught too) and logs plainly to that stderr; a thread of the server reads the
pipe and logs each line as a warning of ``codesynapse.index.worker`` (at most ``LINE_MAX``
characters), through the server's own handlers.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable
from multiprocessing import Pipe
from multiprocessing.connection import Connection

from codesynapse.logsetup import bound_text

log = logging.getLogger("codesynapse.index.worker")

LINE_MAX = 1000  # characters of one worker line kept in the log
READ_CHUNK = 65536
JOIN_S = 5.0  # the reader's wait for the last lines once the pool has ended
WORKER_FORMAT = "%(levelname)s %(name)s: %(message)s"


def start(out: Connection, parent: int, then: Callable[[int], None] | None = None) -> None:
    """Pool initializer: descriptors 1 and 2 (and sys.stdout / sys.stderr, which write to
    them) go to ``out``; logging in the worker writes plain lines there (the server adds
    the time); Python warnings are logged. Then ``then(parent)`` (die with the parent)."""
    fd = out.fileno()
    for std in (sys.stdout, sys.stderr):
        try:
            std.flush()  # what a forked worker inherited unwritten goes out before the switch
        except (OSError, ValueError, AttributeError):
            pass
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    out.close()
    root = logging.getLogger()
    for h in list(root.handlers):  # a forked worker inherits the server's (its queue has no writer here)
        root.removeHandler(h)
    h = logging.StreamHandler(sys.stderr)
    h.setFormatter(logging.Formatter(WORKER_FORMAT))
    root.addHandler(h)
    root.setLevel(logging.WARNING)
    logging.captureWarnings(True)
    if then is not None:
        then(parent)


class WorkerOutput:
    """``with WorkerOutput() as out:`` the write end to give each worker (``start``'s
    first argument) while the pool runs; the reader logs what the workers write until
    the last of them has ended."""

    def __init__(self) -> None:
        self._r, self._w = Pipe(duplex=False)
        self._thread = threading.Thread(target=self._read, name="codesynapse-worker-output", daemon=True)

    def __enter__(self) -> Connection:
        self._thread.start()
        return self._w

    def __exit__(self, *exc: object) -> None:
        self._w.close()  # EOF once every worker's copy is closed too
        self._thread.join(JOIN_S)

    def _read(self) -> None:
        fd = self._r.fileno()
        pending = b""
        try:
            while True:
                try:
                    chunk = os.read(fd, READ_CHUNK)
                except InterruptedError:
                    continue
                except OSError:
                    break
                if not chunk:
                    break
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    self._log(line)
                if len(pending) > 4 * LINE_MAX:  # a line without an end: logged in parts
                    self._log(pending)
                    pending = b""
            self._log(pending)
        finally:
            self._r.close()

    @staticmethod
    def _log(line: bytes) -> None:
        text = line.decode("utf-8", "replace").rstrip()
        if text.strip():
            log.warning("extraction worker: %s", bound_text(text, LINE_MAX))
