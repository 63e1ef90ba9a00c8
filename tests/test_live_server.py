"""The tests' live server (browsers and real clients): a client that resets its connection
mid-response leaves no file open, so no ResourceWarning fails an unrelated browser test."""
from __future__ import annotations

import gc
import socket
import struct
from urllib.parse import urlsplit

from flask import Flask

from tests.conftest import serving

RESETS = 100  # every run of this many failed before the fix; one in a CI run failed the suite


def reset_after_first_byte(port: int, path: str) -> bytes:
    """Request ``path``, read one byte of the answer, and drop the connection with a reset
    (as Chromium cancels a favicon it no longer wants)."""
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        first = connection.recv(1)
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    return first


def test_a_dropped_static_file_is_closed(app: Flask) -> None:
    with serving(app) as base_url:
        port = urlsplit(base_url).port
        assert port is not None
        answers = [reset_after_first_byte(port, "/static/favicon.svg") for _ in range(RESETS)]
    gc.collect()  # an unclosed file warns here, and filterwarnings = error fails the test
    assert answers == [b"H"] * RESETS
