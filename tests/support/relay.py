"""A TCP relay between a client and a daemon, whose connections a test cuts: the network
between them failing (a proxy's timeout, a laptop's sleep, a dropped VPN) while the daemon
runs on. Real sockets and threads, bytes passed through as they are."""

from __future__ import annotations

import contextlib
import socket
import threading


class Relay:
    """Listens on 127.0.0.1 (``url``) and passes each connection on to ``target``. ``cut``
    breaks every open connection and refuses new ones (closed at once) until ``mend``."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._down = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return  # closed
            with self._lock:
                refuse = self._down
            if refuse:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)  # its end: the other way may still carry the rest
        src.close()  # each socket is read by one pipe, which closes it when done

    def cut(self) -> None:
        with self._lock:
            self._down = True
            doomed, self._open = self._open, []
        for s in doomed:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def mend(self) -> None:
        with self._lock:
            self._down = False

    def close(self) -> None:
        self.cut()
        self._server.close()
