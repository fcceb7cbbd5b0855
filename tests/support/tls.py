"""A throwaway TLS server identity for 127.0.0.1: a self-signed certificate made by openssl."""

from __future__ import annotations

import ssl
import subprocess
from pathlib import Path


def self_signed_server(directory: Path) -> tuple[ssl.SSLContext, Path]:
    """A server context with a new certificate for 127.0.0.1 (valid one day), and the
    certificate's file, for a client that should trust it (``SSL_CERT_FILE``)."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)  # fmt: skip
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context, cert
