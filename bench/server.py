"""A real gunicorn server on a fresh database, and plain HTTP clients for it.

The database is created and initialised in this process (``flask init``, users, tokens) with
the production Argon2 parameters; the server runs ``labapp:create_app()`` in its own
processes, configured through ``LABAPP_*`` variables as an operator would.
"""
from __future__ import annotations

import base64
import http.client
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WORKERS = 2  # what `make run` starts
START_SECONDS = 180  # a loaded 2-core machine took more than 60 s to boot two workers


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass(frozen=True)
class Server:
    host: str
    port: int
    pid: int | None = None  # the gunicorn master (its workers are its children)

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=60)


@contextmanager
def gunicorn(environment: dict[str, str], workers: int = WORKERS,
             application: str = "labapp:create_app()") -> Iterator[Server]:
    """Serve ``application`` (by default ``labapp:create_app()``) as ``make run`` does (its
    settings module, ``labapp.serving``) with ``environment`` added to this process's;
    stopped (SIGTERM, then waited for) on exit."""
    port = free_port()
    env = {**os.environ, **environment}
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "python:labapp.serving", "--bind",
         f"127.0.0.1:{port}", "--workers", str(workers), "--log-level", "warning",
         application],
        env=env, cwd=Path(__file__).resolve().parent.parent)
    server = Server("127.0.0.1", port, process.pid)
    try:
        _wait_until_healthy(server, process)
        yield server
    finally:
        process.terminate()
        process.wait(timeout=30)


def children(pid: int) -> list[int]:
    """The pids of the processes ``pid`` started (a gunicorn master's: its workers)."""
    return [int(child) for child in
            Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def rss(pid: int, part: str = "VmRSS") -> int:
    """The resident memory of process ``pid`` in bytes (``part`` ``RssAnon``: only its
    anonymous memory, not the mapped files); 0 once it has gone."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except FileNotFoundError:
        return 0
    return next((int(line.split()[1]) * 1024 for line in lines
                 if line.startswith(f"{part}:")), 0)


def _wait_until_healthy(server: Server, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {process.returncode}")
        try:
            status, _ = request(server.connection(), "GET", "/healthz")
            if status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)  # a server starting up: nothing to wait on but the port
    raise RuntimeError(f"gunicorn did not become healthy within {START_SECONDS} s")


def basic(username: str, secret: str) -> dict[str, str]:
    token = base64.b64encode(f"{username}:{secret}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def request(connection: http.client.HTTPConnection, method: str, path: str,
            headers: dict[str, str] | None = None, body: Any = None) -> tuple[int, bytes]:
    """One request on ``connection`` (reopened by http.client when the server closed it)."""
    sent = dict(headers or {})
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        sent["Content-Type"] = "application/json"
    connection.request(method, path, body=data, headers=sent)
    response = connection.getresponse()
    return response.status, response.read()
