"""A TCP proxy on 127.0.0.1 that can make a real server slow or unreachable.

Modes (switchable at any time):

* ``pass``: bytes flow both ways;
* ``slow``: every chunk waits ``delay`` seconds before it is forwarded (a slow server or
  network);
* ``blackhole``: connections are accepted and held, nothing is forwarded (a hung server);
* ``down``: existing connections are reset and new ones are refused (a dead server).

The daemon under test is pointed at the proxy instead of the server, so the server itself
stays real and untouched.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time


class FaultProxy:
    def __init__(self, upstream_host: str, upstream_port: int):
        self.upstream = (upstream_host, upstream_port)
        self.mode = "pass"
        self.delay = 0.0
        self._lock = threading.Lock()
        self._conns: list[socket.socket] = []
        self._stop = threading.Event()
        self._listener: socket.socket | None = None
        self.port = 0
        self._open_listener(0)
        self.accepted = 0

    # -- control --------------------------------------------------------------------------------
    def set(self, mode: str, delay: float = 0.0) -> None:
        assert mode in ("pass", "slow", "blackhole", "down")
        with self._lock:
            self.mode, self.delay = mode, delay
        if mode == "down":
            self._drop_all()
            if self._listener is not None:
                with contextlib.suppress(OSError):
                    self._listener.close()
                self._listener = None
        elif self._listener is None:
            self._open_listener(self.port)

    def retarget(self, host: str, port: int) -> None:
        """Send new connections to another upstream (a server restarted elsewhere)."""
        self.upstream = (host, port)

    def close(self) -> None:
        self._stop.set()
        self._drop_all()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.close()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    # -- internals ------------------------------------------------------------------------------
    def _open_listener(self, port: int) -> None:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        for _ in range(100):
            try:
                s.bind(("127.0.0.1", port))
                break
            except OSError:
                time.sleep(0.05)
        s.listen(64)
        self.port = s.getsockname()[1]
        self._listener = s
        threading.Thread(target=self._accept_loop, args=(s,), daemon=True).start()

    def _drop_all(self) -> None:
        with self._lock:
            conns, self._conns = self._conns, []
        for c in conns:
            with contextlib.suppress(OSError):
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            with contextlib.suppress(OSError):
                c.close()

    def _accept_loop(self, listener: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            self.accepted += 1
            if self.mode == "down":
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.upstream, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while not self._stop.is_set():
                data = src.recv(65536)
                if not data:
                    break
                while True:
                    mode, delay = self.mode, self.delay
                    if mode == "blackhole":
                        time.sleep(0.05)  # hold the bytes; forward them if the mode changes
                        continue
                    if mode == "slow":
                        time.sleep(delay)
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
