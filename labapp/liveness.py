"""Which job-running processes are alive, as the kernel tells it: each holds a lock file.

A process that runs jobs (the worker; ``flask import``, which runs its own job) holds an
exclusive ``flock`` on a file of its own, ``instance/workers/<id>.lock``, for as long as it
runs them; the kernel drops the lock when the process ends, however it ends (``kill -9`` and
the out-of-memory killer included). A job records the id of the process that claimed it.
Anyone who shares the instance folder (another worker, a web process answering
``GET /api/import/{id}``, ``/healthz``) asks for a *shared* lock on that file without
waiting: refused, the process lives; granted, it is gone. Probers never refuse each other
(shared locks), and the probe is right at once — no heartbeat to wait out.

Nothing is written to the database to stay alive: on SQLite a commit holds the write lock
for its whole length (an import's can last minutes), so a lease renewed by an ``UPDATE``
from another connection would wait behind it and go stale while its worker is well.

An id is ``<role>_<host>_<pid>_<random>``: the role (``worker`` takes queued jobs,
``import`` runs only its own), where the process runs and its process id, so an operator
can find it and a later design can tell hosts apart. A lock file is made under a temporary
name, locked, and only then renamed to its id: nobody ever sees it free while its process
lives. A missing file of this host's process means the process is gone (a worker that stops
cleanly removes its file); the file of a process on another host that does not share this
instance folder cannot be probed (:data:`UNKNOWN`).

On PostgreSQL the same holds across hosts through the database instead of files
(:class:`DatabaseLock`): a process takes an advisory lock keyed by its id on a connection of
its own (:mod:`labapp.advisory`), then writes its row in ``worker_process``; the server drops
the lock when the process dies. A probe reads the server's locks, so a process of any host
is ``alive`` or ``gone``, never ``unknown``; the rows list the processes of every host.
"""
from __future__ import annotations

import fcntl
import os
import re
import secrets
import socket
import weakref
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from flask import current_app
from sqlalchemy import delete, insert, select

from labapp import advisory
from labapp.db import db
from labapp.model import WorkerProcess
from labapp.model.types import utc_now

WORKER, IMPORT = "worker", "import"
State = Literal["alive", "gone", "unknown"]
ALIVE: State = "alive"
GONE: State = "gone"
UNKNOWN: State = "unknown"
SUFFIX = ".lock"
_ID = re.compile(r"(worker|import)_([A-Za-z0-9.-]{1,64})_(\d{1,10})_([0-9a-f]{12})")
_NOT_IN_HOST = re.compile(r"[^A-Za-z0-9.-]+")
_OWN_WORKER = "labapp.liveness.worker"  # app.extensions: the lock of the worker loop running
_OWN_IMPORT = "labapp.liveness.import"  # app.extensions: the lock of this app's own imports


def folder() -> Path:
    """The folder of the lock files (of the current application's instance)."""
    return Path(current_app.config["LABAPP"]["INSTANCE_PATH"]) / "workers"


def host_name() -> str:
    """This machine's name as ids carry it (letters, digits, dots and hyphens)."""
    return _NOT_IN_HOST.sub("-", socket.gethostname())[:64] or "host"


@dataclass(frozen=True)
class ProcessId:
    """Who holds a lock: its role, host, process id and a random part (pids are reused)."""

    role: str
    host: str
    pid: int
    token: str

    def __str__(self) -> str:
        return f"{self.role}_{self.host}_{self.pid}_{self.token}"

    @classmethod
    def parse(cls, text: str) -> ProcessId | None:
        """The id written as ``text``, or None when it is not one (so never a path)."""
        found = _ID.fullmatch(text)
        if found is None:
            return None
        return cls(found[1], found[2], int(found[3]), found[4])


class Lock:
    """An exclusive lock on the file of a new id, held until :meth:`release` or the
    process ends (also when the object is dropped)."""

    def __init__(self, directory: Path, role: str) -> None:
        self.id = ProcessId(role, host_name(), os.getpid(), secrets.token_hex(6))
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{self.id}{SUFFIX}"
        partial = directory / f".{self.id}.partial"
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                             0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a new file: granted
            os.rename(partial, self.path)  # it appears locked: never seen free while we live
        except BaseException:
            os.close(descriptor)
            partial.unlink(missing_ok=True)
            raise
        self._closed = weakref.finalize(self, os.close, descriptor)

    def release(self) -> None:
        """Remove the file and drop the lock (the process no longer runs jobs)."""
        if self._closed.alive:
            self.path.unlink(missing_ok=True)
            self._closed()


class DatabaseLock:
    """The advisory lock of a new id on PostgreSQL, its row in ``worker_process`` written
    once the lock is held, both kept until :meth:`release` or the process ends (also when
    the object is dropped: the lock then goes with its connection, the row stays until a
    :func:`sweep`)."""

    def __init__(self, role: str) -> None:
        self.id = ProcessId(role, host_name(), os.getpid(), secrets.token_hex(6))
        engine = db.engine
        held = advisory.take(engine, advisory.PROCESS, advisory.key(str(self.id)))
        if held is None:  # a fresh random id: nobody else holds its key
            raise RuntimeError(f"the advisory lock of {self.id} is taken")
        self._held = held
        try:
            held.connection.execute(insert(WorkerProcess).values(
                id=str(self.id), role=role, host=self.id.host, pid=self.id.pid,
                started_utc=utc_now()))
        except BaseException:
            held.release()
            raise

    def release(self) -> None:
        """Remove the row and drop the lock (the process no longer runs jobs)."""
        if not self._held.connection.closed:
            try:
                self._held.connection.execute(
                    delete(WorkerProcess).where(WorkerProcess.id == str(self.id)))
            finally:
                self._held.release()


def _in_database() -> bool:
    """Whether the current application keeps its locks in the database (PostgreSQL)."""
    return advisory.on_postgresql(db.engine)


def new_lock(role: str) -> Lock | DatabaseLock:
    """A lock of ``role`` under a new id: a file in the instance folder, or on PostgreSQL
    an advisory lock and a row (in an application context)."""
    return DatabaseLock(role) if _in_database() else Lock(folder(), role)


def _free(path: Path) -> bool | None:
    """Whether nobody holds the lock of ``path``; None when there is no such file."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(descriptor)  # also drops the shared lock when it was granted
    return True


def state(process_id: str | None) -> State:
    """Whether the process of ``process_id`` (as a job recorded it) is alive: ``gone`` when
    its lock is free, or when its file is missing and it ran on this host; ``unknown`` for
    no id, a malformed one, an unreadable file, or a process of another host whose file this
    instance folder does not have."""
    parsed = ProcessId.parse(process_id) if process_id else None
    if parsed is None:
        return UNKNOWN
    if _in_database():
        held = advisory.is_held(db.engine, advisory.PROCESS, advisory.key(str(parsed)))
        return ALIVE if held else GONE
    try:
        free = _free(folder() / f"{parsed}{SUFFIX}")
    except OSError:
        return UNKNOWN
    if free is None:
        return GONE if parsed.host == host_name() else UNKNOWN
    return GONE if free else ALIVE


def _files(role: str | None = None) -> Iterator[Path]:
    try:
        yield from (path for path in folder().glob(f"{role or '*'}_*{SUFFIX}"))
    except OSError:
        return


def alive(role: str = WORKER) -> list[ProcessId]:
    """The processes of ``role`` holding their lock now (in this instance folder; on
    PostgreSQL, on every host)."""
    if _in_database():
        held = _held_keys()
        return [parsed for parsed in _rows(role) if advisory.key(str(parsed)) in held]
    found: list[ProcessId] = []
    for path in _files(role):
        parsed = ProcessId.parse(path.name.removesuffix(SUFFIX))
        if parsed is not None and _free(path) is False:
            found.append(parsed)
    return found


def _rows(role: str | None = None) -> list[ProcessId]:
    """The processes with a row in ``worker_process`` (of ``role``), alive or not."""
    statement = select(WorkerProcess.id)
    if role is not None:
        statement = statement.where(WorkerProcess.role == role)
    with db.engine.connect() as connection:
        ids = list(connection.scalars(statement))
    return [parsed for parsed in map(ProcessId.parse, ids) if parsed is not None]


def _held_keys() -> set[int]:
    return advisory.held_keys(db.engine, advisory.PROCESS)


def sweep(keep: Collection[str] = ()) -> int:
    """Remove the files of processes that are gone, but those whose ids are in ``keep``;
    how many."""
    if _in_database():
        held = _held_keys()
        gone = [str(parsed) for parsed in _rows() if str(parsed) not in keep
                and advisory.key(str(parsed)) not in held]
        with db.engine.begin() as connection:
            connection.execute(delete(WorkerProcess).where(WorkerProcess.id.in_(gone)))
        return len(gone)
    removed = 0
    for path in _files():
        if path.name.removesuffix(SUFFIX) not in keep and _free(path):
            path.unlink(missing_ok=True)
            removed += 1
    return removed


@contextmanager
def holding(role: str = WORKER) -> Iterator[ProcessId]:
    """Hold a lock of ``role`` for the block (the worker loop's life); the application's
    claims record its id meanwhile (:func:`own_id`)."""
    lock = new_lock(role)
    extensions = current_app.extensions
    before = extensions.get(_OWN_WORKER)
    extensions[_OWN_WORKER] = lock
    try:
        yield lock.id
    finally:
        extensions[_OWN_WORKER] = before
        lock.release()


def own_id() -> str:
    """The id a claim of the current application records: the lock of the worker loop
    running in it, else a lock of role ``import`` taken at the first claim and held as long
    as the application lives (``flask import`` runs its own job)."""
    extensions = current_app.extensions
    lock = extensions.get(_OWN_WORKER) or extensions.get(_OWN_IMPORT)
    if lock is None:
        made = new_lock(IMPORT)
        # Of threads claiming at once, one lock is kept (setdefault is atomic): a lock
        # dropped after its id was recorded would make a live job look abandoned.
        lock = extensions.setdefault(_OWN_IMPORT, made)
        if lock is not made:
            made.release()
    return str(lock.id)
