"""The byte pump between a client's stdio and the workspace daemon's socket.

``daemon.proxy`` joins the daemon and then replaces itself (``os.execv``, same pid, same
stdio) with ``python -I -S pump.py FD STATE``: a process that imports only json, os,
socket, sys and threading, so that every extra client costs the interpreter and little
more (``codesynapse bench daemon``). ``FD`` is the connected socket; ``STATE`` a JSON
object: ``pending`` (the [id, method] pairs of requests sent and not yet answered) and
``pid`` (the daemon's). This file must stay importable without the codesynapse package.

Client → daemon frames are copied as they are, after noting the id and method of each
request; daemon → client frames likewise, after dropping the id of each response. When
the daemon's side ends before the client said ``exit`` (the daemon died, ``kill -9``),
every request still waiting gets a RequestFailed error, the client gets a
window/showMessage (Error) saying what happened and what to do, and the pump exits with
status 1. At the client's ``exit`` (or EOF on stdin) the pump closes its side, waits for the
daemon to finish answering, and exits with status 0.
"""

import json
import os
import re
import socket
import sys
import threading

CONTENT_LENGTH = re.compile(rb"^Content-Length: (\d+)\r\n$")  # as lsp/rpc.py reads it
REQUEST_FAILED = -32803


def read_frame(stream):
    """(raw bytes, body) of the next frame, None at EOF. Frames are cut exactly as the
    server's own read loop cuts them (``lsp.rpc.read_frames``: a ``Content-Length: N``
    line, then a blank line; other header lines are skipped), so the bytes the daemon sees
    are the bytes the client sent, framed the same way."""
    raw = []
    length = 0
    while True:
        line = stream.readline()
        if not line:
            return None
        raw.append(line)
        if not length:
            m = CONTENT_LENGTH.match(line)
            if m:
                length = int(m.group(1))
        if length and not line.strip():
            break
    body = stream.read(length)
    if len(body) < length:
        return None
    raw.append(body)
    return b"".join(raw), body


def frame(msg):
    body = json.dumps(msg).encode("utf-8")
    return ("Content-Length: %d\r\n\r\n" % len(body)).encode() + body


def died_message(pid):
    return ("CodeSynapse: the shared workspace daemon (pid %s) stopped unexpectedly. Restart the CodeSynapse "
            "language server (in VS Code: reload the window, or the command 'CodeSynapse: Restart' where "
            "the extension has it) to start a new daemon; the index and the durable memory committed so far "
            "are kept. The daemon's log is daemon.log in the data folder." % pid)


class Pump:
    def __init__(self, sock, stdin, stdout, daemon_pid=None, pending=None):
        self.sock = sock
        self.stdin = stdin
        self.stdout = stdout
        self.daemon_pid = daemon_pid
        self.pending = dict(pending or {})  # id -> method
        self.lock = threading.Lock()
        self.out_lock = threading.Lock()
        self.exiting = threading.Event()
        self.done = threading.Event()

    def note_request(self, body):
        try:
            msg = json.loads(body)
        except (ValueError, RecursionError):
            return
        if not isinstance(msg, dict):
            return
        method = msg.get("method")
        if method == "exit":
            self.exiting.set()
        elif isinstance(method, str) and isinstance(msg.get("id"), (int, str)):
            with self.lock:
                self.pending[msg["id"]] = method

    def note_reply(self, body):
        if not self.pending:
            return
        try:
            msg = json.loads(body)
        except (ValueError, RecursionError):
            return
        if isinstance(msg, dict) and "method" not in msg and isinstance(msg.get("id"), (int, str)):
            with self.lock:
                self.pending.pop(msg["id"], None)

    def write_out(self, data):
        with self.out_lock:
            self.stdout.write(data)
            self.stdout.flush()

    def upstream(self):
        """Client → daemon, on the calling thread."""
        try:
            while not self.exiting.is_set():
                fr = read_frame(self.stdin)
                if fr is None:
                    break
                raw, body = fr
                self.note_request(body)
                self.sock.sendall(raw)
        except OSError:
            pass  # the daemon's side is gone: downstream reports it
        self.exiting.set()
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def downstream(self):
        """Daemon → client, on its own thread."""
        f = self.sock.makefile("rb")
        try:
            while True:
                fr = read_frame(f)
                if fr is None:
                    break
                raw, body = fr
                self.note_reply(body)
                self.write_out(raw)
        except (OSError, ValueError):
            pass
        finally:
            if not self.exiting.is_set():
                self.daemon_died()
            self.done.set()

    def daemon_died(self):
        sys.stderr.write("codesynapse: the workspace daemon (pid %s) stopped while this client was connected\n"
                         % self.daemon_pid)
        with self.lock:
            pending, self.pending = dict(self.pending), {}
        try:
            for msg_id, method in pending.items():
                self.write_out(frame({"jsonrpc": "2.0", "id": msg_id, "error": {
                    "code": REQUEST_FAILED,
                    "message": "%s: the CodeSynapse workspace daemon stopped before answering; restart the "
                               "language server to start a new one" % method[:80]}}))
            self.write_out(frame({"jsonrpc": "2.0", "method": "window/showMessage",
                                  "params": {"type": 1, "message": died_message(self.daemon_pid)}}))
        except (OSError, ValueError):
            pass
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os._exit(1)

    def run(self):
        t = threading.Thread(target=self.downstream, name="codesynapse-downstream", daemon=True)
        t.start()
        self.upstream()
        self.done.wait(10.0)  # the daemon answers what was sent, then closes
        try:
            self.sock.close()
        except OSError:
            pass
        return 0


def main(argv):
    fd = int(argv[1])
    state = json.loads(argv[2])
    sock = socket.socket(fileno=fd)
    pending = {i: m for i, m in state.get("pending", [])}
    stdin = os.fdopen(0, "rb", closefd=False)
    stdout = os.fdopen(1, "wb", closefd=False)
    return Pump(sock, stdin, stdout, state.get("pid"), pending).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
