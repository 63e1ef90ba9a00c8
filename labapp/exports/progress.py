"""An export run in the background for the administration page, its progress in a file.

The state lives in ``sync/.progress.json`` (state, done, total, filename, error), so every
worker process answers the page's polls alike. One export runs at a time per instance folder:
a run holds an exclusive lock (``flock``) on ``sync/.export.lock`` from its start to its end,
which every process sharing the folder sees, and which the system drops when a process dies
mid-export. The page shows a run as "running" while its file says so and was updated within
:data:`STALE_SECONDS`.

On PostgreSQL the lock is an advisory lock of the database (:data:`labapp.advisory.EXPORT`,
held on a connection of its own, dropped by the server when the process dies), so one export
runs at a time across every host sharing the database; a host whose own file shows no run
still shows one under way while another host's run holds the lock (:func:`locked`).
``POST /api/sync/save`` takes the same lock (:func:`holding`).
"""
from __future__ import annotations

import fcntl
import functools
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from labapp import advisory
from labapp.atomic import write_whole
from labapp.exports.service import ExportResult, Progress, export_folder

STATE_FILE = ".progress.json"
LOCK_FILE = ".export.lock"
STALE_SECONDS = 120
_KEY = 1  # the one export lock in advisory.EXPORT


def _path(instance_path: str | Path) -> Path:
    return export_folder(instance_path) / STATE_FILE


def read_state(instance_path: str | Path) -> dict[str, Any]:
    """The state of the latest background export (``{"state": "idle"}`` when none)."""
    try:
        state: dict[str, Any] = json.loads(_path(instance_path).read_text(encoding="utf-8"))
        return state
    except (OSError, ValueError):
        return {"state": "idle"}


def _write(instance_path: str | Path, state: dict[str, Any]) -> None:
    path = _path(instance_path)
    write_whole(path, json.dumps({**state, "updated": time.time()}))


def _claim(instance_path: str | Path, engine: Engine | None) -> Callable[[], None] | None:
    """The release of the export lock now held, or None while another run holds it: the
    advisory lock of ``engine``'s database when it is PostgreSQL, else ``flock``."""
    if engine is not None and advisory.on_postgresql(engine):
        held = advisory.take(engine, advisory.EXPORT, _KEY)
        return None if held is None else held.release
    descriptor = os.open(export_folder(instance_path) / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        return None
    return functools.partial(os.close, descriptor)  # closing it releases the lock


def locked(engine: Engine) -> bool:
    """Whether an export of any host holds the lock of ``engine``'s database now
    (PostgreSQL; on SQLite the instance folder's state file tells, so False)."""
    return advisory.on_postgresql(engine) and advisory.is_held(engine, advisory.EXPORT, _KEY)


class ExportRunning(RuntimeError):
    """Another export holds the lock."""


@contextmanager
def holding(instance_path: str | Path, engine: Engine) -> Iterator[None]:
    """Hold the export lock for the block; raises :class:`ExportRunning` while another
    export holds it."""
    release = _claim(instance_path, engine)
    if release is None:
        raise ExportRunning("an export is already under way")
    try:
        yield
    finally:
        release()


def is_running(state: dict[str, Any]) -> bool:
    """Whether ``state`` is an export still under way."""
    return (state.get("state") == "running"
            and time.time() - state.get("updated", 0) < STALE_SECONDS)


def start(instance_path: str | Path, work: Callable[[Progress], ExportResult],
          engine: Engine | None = None) -> bool:
    """Run ``work`` (an export given a progress callback) in a thread; False when an export
    is already under way, in this process or another one sharing the instance folder (or,
    when ``engine`` is PostgreSQL's, another host sharing its database)."""
    release = _claim(instance_path, engine)
    if release is None:
        return False
    try:
        _write(instance_path, {"state": "running", "done": 0, "total": 0})
    except BaseException:
        release()
        raise

    def progress(done: int, total: int) -> None:
        _write(instance_path, {"state": "running", "done": done, "total": total})

    def run() -> None:
        try:
            _finish(instance_path, work, progress)
        finally:
            release()

    threading.Thread(target=run, name="labapp-export", daemon=True).start()
    return True


def _finish(instance_path: str | Path, work: Callable[[Progress], ExportResult],
            progress: Progress) -> None:
    """Run ``work`` and record how it ended."""
    try:
        result = work(progress)
    except Exception as error:  # reported on the page; the export left nothing behind
        _write(instance_path, {"state": "failed", "error": str(error)})
        return
    _write(instance_path, {"state": "done", "filename": result.filename,
                           "entities": result.entities, "bytes": result.bytes})
