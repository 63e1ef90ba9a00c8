"""Processes of their own for tests: gunicorn serving an application's database and
instance, the worker (``flask --app labapp worker``), and polling for what they bring about."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from bench.server import Server, basic, free_port, request
from labapp import advisory, liveness
from labapp.db import db
from labapp.model import WorkerProcess
from labapp.search.indexer import beat, heartbeat_path, worker_alive
from labapp.worker import Lane, run
from tests.conftest import ADMIN_PASSWORD, SECRET_KEY

ROOT = Path(__file__).resolve().parents[2]  # the project
ADMIN = basic("admin", ADMIN_PASSWORD)


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    """Poll ``condition`` until it returns something true; fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)  # polling a condition another process brings about
    raise AssertionError(f"timed out waiting for {what}")


CARRIED = ("INSTANCE_PATH", "DATABASE_URL", "SEARCH_BACKEND", "FILE_STORE", "FILE_STORE_PATH",
           "RATE_LIMIT_WINDOW_SECONDS", "RATE_LIMIT_PER_TOKEN", "RATE_LIMIT_PER_USER",
           "RATE_LIMIT_PER_ADDRESS")


def environment(app: Flask) -> dict[str, str]:
    """The environment of a process of ``app``: its instance folder, database, search
    backend and file store (the settings of :data:`CARRIED` it has), the tests' secret key."""
    settings = app.config["LABAPP"]
    return {**os.environ, "LABAPP_SECRET_KEY": SECRET_KEY,
            **{f"LABAPP_{name}": str(settings[name]) for name in CARRIED
               if settings.get(name) is not None}}


@contextmanager
def served(app: Flask, workers: int) -> Iterator[tuple[Server, subprocess.Popen]]:
    """gunicorn serving ``app``'s database and instance in a process group of its own."""
    port = free_port()
    env = {**environment(app), "LABAPP_SEARCH_WRITER_TIMEOUT": "120"}
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers",
         str(workers), "--timeout", "300", "--log-level", "warning", "labapp:create_app()"],
        env=env, cwd=ROOT, start_new_session=True)
    server = Server("127.0.0.1", port)

    def healthy() -> bool:
        connection = server.connection()
        try:
            return request(connection, "GET", "/healthz")[0] == 200
        except OSError:
            return process.poll() is not None and pytest.fail("gunicorn exited")
        finally:
            connection.close()

    try:
        wait_for(healthy, "gunicorn to answer")
        yield server, process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)


def call(server: Server, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """One request as the administrator on a connection of its own, closed afterwards."""
    connection = server.connection()
    try:
        status, raw = request(connection, method, path, ADMIN, body)
    finally:
        connection.close()
    return status, json.loads(raw)


def post(server: Server, entities: list[dict[str, Any]]) -> int:
    return call(server, "POST", "/api/entity", {"entities": entities})[0]


def searched(server: Server, term: str) -> set[str]:
    status, body = call(server, "GET", f"/api/search/fulltext/{term}?$top=500")
    assert status == 200, body
    return {item["name"] for item in body["data"]}


@contextmanager
def worker_process(app: Flask, command: tuple[str, ...] = ("worker",),
                   ready: Callable[[Flask, int], bool] | None = None,
                   what: str = "the worker's heartbeat",
                   **overrides: str) -> Iterator[subprocess.Popen]:
    """``flask --app labapp worker`` (or ``command``) on ``app``'s database and instance,
    with the settings ``overrides`` (``ALERT_TICK_SECONDS="1"``), once ``ready(app, pid)``
    holds: by default, once its heartbeat names it."""
    env = {**environment(app),
           **{f"LABAPP_{name}": value for name, value in overrides.items()}}
    process = subprocess.Popen([sys.executable, "-m", "flask", "--app", "labapp", *command],
                               env=env, cwd=ROOT, start_new_session=True,
                               stdout=subprocess.DEVNULL)
    try:
        up = ready or (lambda app, pid: beating(app) == str(pid))
        wait_for(lambda: up(app, process.pid) or process.poll() is not None, what)
        assert process.poll() is None, "the worker exited"
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


def alive(app: Flask) -> bool:
    """Whether ``app``'s worker heartbeat is fresh."""
    with app.app_context():
        return worker_alive()


@contextmanager
def worker_beating(app: Flask) -> Iterator[None]:
    """A search worker's heartbeat without the worker, for the block (requests then only
    queue their changes): its file, and on PostgreSQL its drain lock, dropped afterwards
    (the file stays, as a worker that dies leaves it)."""
    with app.app_context():
        beat(heartbeat_path())
        engine = db.engine
    held = (advisory.take(engine, advisory.SEARCH_DRAIN, advisory.key("a test's worker"))
            if advisory.on_postgresql(engine) else None)
    try:
        yield
    finally:
        if held is not None:
            held.release()


def beating(app: Flask) -> str | None:
    """The pid in the heartbeat file, if any."""
    with app.app_context():
        path = heartbeat_path()
    try:
        return path.read_text()
    except OSError:
        return None


HOLD = ("import sys; from pathlib import Path; from labapp.liveness import Lock; "
        "lock = Lock(Path(sys.argv[1]), sys.argv[2]); print(lock.id, flush=True); "
        "sys.stdin.read()")
# On PostgreSQL a lock is an advisory lock and a row: the holder needs the application.
HOLD_IN_DATABASE = (
    "import sys; from labapp import create_app, liveness; "
    "app = create_app({'INSTANCE_PATH': sys.argv[1], 'DATABASE_URL': sys.argv[3], "
    "'SECRET_KEY': 'holder'}); context = app.app_context(); context.push(); "
    "lock = liveness.new_lock(sys.argv[2]); print(lock.id, flush=True); sys.stdin.read()")


@contextmanager
def held_lock(app: Flask, role: str = liveness.WORKER
              ) -> Iterator[tuple[str, subprocess.Popen]]:
    """Another process holding a lock of ``role`` as ``app``'s processes do (a file in its
    instance folder; on PostgreSQL an advisory lock and a row): (its id, the process). It
    holds it until its stdin closes; kill it to see the lock dropped."""
    settings = app.config["LABAPP"]
    with app.app_context():
        folder = liveness.folder()
    url = settings["DATABASE_URL"]
    if url.startswith("postgresql"):
        arguments = ["-c", HOLD_IN_DATABASE, settings["INSTANCE_PATH"], role, url]
    else:
        arguments = ["-c", HOLD, str(folder), role]
    process = subprocess.Popen([sys.executable, *arguments], cwd=ROOT,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        process_id = process.stdout.readline().strip()
        assert process_id, "the holder printed no id"
        yield process_id, process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=30)


def recorded_locks(app: Flask) -> list[str]:
    """The ids of the processes whose lock leaves a trace for ``app``: lock files in its
    instance folder, or rows of ``worker_process`` on PostgreSQL."""
    with app.app_context():
        if db.engine.dialect.name == "postgresql":
            with db.engine.connect() as connection:
                return sorted(connection.scalars(select(WorkerProcess.id)))
        return sorted(path.name.removesuffix(liveness.SUFFIX)
                      for path in liveness.folder().glob(f"*{liveness.SUFFIX}"))


def killed(process: subprocess.Popen) -> None:
    """SIGKILL: the process gets no chance to clean up."""
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


@contextmanager
def worker_in_thread(app: Flask, stop: threading.Event,
                     in_lanes: Sequence[Lane] | None = None) -> Iterator[threading.Thread]:
    """The worker's loop over ``in_lanes`` (default: every lane) in a thread on ``app``; on
    leaving, ``stop`` is set and the thread joined (a minute at most: the caller checks
    that it ended)."""
    def work() -> None:
        with app.app_context():
            run(stop, in_lanes=in_lanes)

    thread = threading.Thread(target=work, name="test-worker")
    thread.start()
    try:
        yield thread
    finally:
        stop.set()
        thread.join(timeout=60)
