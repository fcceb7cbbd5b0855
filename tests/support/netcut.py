"""Cutting one node off its database, as a network partition does: the node reaches
PostgreSQL through a TCP forwarder of its own, and ``iptables`` drops every packet to and
from the forwarder's port (the peer hears nothing: no reset, no refusal, the sent bytes are
never acknowledged). Needs root (CAP_NET_ADMIN) and iptables; tests skip loudly otherwise."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator

import pytest


class Forwarder:
    """127.0.0.1:``port`` forwards to 127.0.0.1:``target`` (a thread per connection)."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.server.getsockname()[1])
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._pipe, args=(client,), daemon=True).start()

    def _pipe(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target))
        except OSError:
            client.close()
            return
        with client, upstream:
            while not self.stopped.is_set():
                ready, _, _ = select.select([client, upstream], [], [], 0.2)
                for sock in ready:
                    try:
                        data = sock.recv(65536)
                        if not data:
                            return
                        (upstream if sock is client else client).sendall(data)
                    except OSError:
                        return

    def close(self) -> None:
        self.stopped.set()
        self.server.close()


def _rules(port: int) -> list[list[str]]:
    return [["INPUT", "-i", "lo", "-p", "tcp", flag, str(port), "-j", "DROP"] for flag in ("--dport", "--sport")]


def require_iptables() -> None:
    if os.geteuid() != 0 or shutil.which("iptables") is None:
        pytest.skip("!!! NETWORK CUT NOT TESTED: needs root and iptables (apt-get install iptables) !!!")
    probe = subprocess.run(["iptables", "-S", "INPUT"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"!!! NETWORK CUT NOT TESTED: iptables cannot be used here: {probe.stderr.strip()} !!!")


@contextlib.contextmanager
def cut(port: int) -> Iterator[None]:
    """Drop every packet to and from ``port`` on the loopback while inside; restored after."""
    added = []
    try:
        for rule in _rules(port):
            subprocess.run(["iptables", "-A", *rule], check=True, capture_output=True)
            added.append(rule)
        yield
    finally:
        for rule in added:
            subprocess.run(["iptables", "-D", *rule], check=False, capture_output=True)
