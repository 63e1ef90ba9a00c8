"""One HTTP POST of a webhook delivery: to an address checked just before, never to
another one, within a time limit, reading at most a few KB of the answer.

The connection goes to the address :func:`labapp.webhooks.addresses.target` checked (not to
the host name, which DNS could answer differently a moment later: "DNS rebinding"); HTTPS
still verifies the certificate against the host name, which is also the ``Host`` header.
Redirects are not followed (a 3xx is a failed attempt). The whole attempt, connecting
included, ends after ``timeout`` seconds; of the answer only :data:`KEPT_BYTES` are read
(a receiver answering a gigabyte costs nothing) and then the connection is closed.
"""
from __future__ import annotations

import http.client
import socket
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass

from labapp.webhooks.addresses import Target

KEPT_BYTES = 4096
USER_AGENT = "labapp-webhooks/1"


@dataclass(frozen=True)
class Outcome:
    """What one attempt came to: the answer's status (None: no answer), how long it took,
    the start of the answer's body, and the error that stopped it."""

    status: int | None
    duration_ms: int
    body: str | None
    error: str | None

    @property
    def succeeded(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


class _Deadline:
    def __init__(self, seconds: float, started: float) -> None:
        self.ends = started + seconds

    def left(self) -> float:
        left = self.ends - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        return left


def _connect(target: Target, deadline: _Deadline) -> socket.socket:
    """A socket connected to the first of the target's checked addresses that answers."""
    failure: OSError | None = None
    for address in target.addresses:
        try:
            return socket.create_connection((address, target.port), timeout=deadline.left())
        except TimeoutError:
            raise
        except OSError as error:
            failure = error
    raise failure or OSError("no address to connect to")


class _PinnedConnection(http.client.HTTPConnection):
    """An HTTP connection to a checked address, named by its host; ``pinned`` is its socket
    (kept by the response once the connection lets go of it)."""

    pinned: socket.socket | None = None

    def __init__(self, target: Target, deadline: _Deadline) -> None:
        super().__init__(target.host, target.port, timeout=deadline.left())
        self._target = target
        self._deadline = deadline

    def connect(self) -> None:
        self.sock = self.pinned = _connect(self._target, self._deadline)


class _PinnedTlsConnection(http.client.HTTPSConnection):
    """An HTTPS connection to a checked address whose certificate is checked against the
    host's name."""

    pinned: socket.socket | None = None

    def __init__(self, target: Target, deadline: _Deadline) -> None:
        self._tls = ssl.create_default_context()
        super().__init__(target.host, target.port, timeout=deadline.left(), context=self._tls)
        self._target = target
        self._deadline = deadline

    def connect(self) -> None:
        raw = _connect(self._target, self._deadline)
        self.sock = self.pinned = self._tls.wrap_socket(
            raw, server_hostname=self._target.host)


def post(target: Target, headers: Mapping[str, str], body: bytes, timeout: float,
         started: float | None = None) -> Outcome:
    """POST ``body`` to ``target`` (see the module docstring), ending ``timeout`` seconds
    after ``started`` (a ``time.monotonic()`` moment: when the attempt began, its host's
    lookup included; default now); never raises for what the network or the receiver does:
    that is the outcome's ``error``."""
    started = time.monotonic() if started is None else started
    deadline = _Deadline(timeout, started)
    connection: _PinnedConnection | _PinnedTlsConnection | None = None

    def ended(status: int | None, text: str | None, error: str | None) -> Outcome:
        return Outcome(status, int((time.monotonic() - started) * 1000), text, error)

    try:
        connection = (_PinnedTlsConnection if target.scheme == "https"
                      else _PinnedConnection)(target, deadline)
        connection.request("POST", target.path, body=body, headers={
            "Content-Type": "application/json", "User-Agent": USER_AGENT, **headers})
        pinned = connection.pinned
        if pinned is not None:
            pinned.settimeout(deadline.left())
        response = connection.getresponse()
        kept = _read_bounded(response, pinned, deadline)
        response.close()
        return ended(response.status, kept.decode("utf-8", "replace"), None)
    except TimeoutError:
        return ended(None, None, f"no answer within {timeout:g} s")
    except (OSError, http.client.HTTPException, ssl.SSLError) as error:
        return ended(None, None, f"{type(error).__name__}: {error}"[:500])
    finally:
        if connection is not None:
            connection.close()


def _read_bounded(response: http.client.HTTPResponse, pinned: socket.socket | None,
                  deadline: _Deadline) -> bytes:
    """At most :data:`KEPT_BYTES` of the answer's body, within the deadline."""
    kept = b""
    while len(kept) < KEPT_BYTES:
        if pinned is not None:
            pinned.settimeout(deadline.left())
        chunk = response.read1(KEPT_BYTES - len(kept))
        if not chunk:
            break
        kept += chunk
    return kept
