"""The model a running application uses: loaded from the extension files at start-up,
re-read by the admin pages and by sync, and followed after a sync made by another worker.

Each application holds its own model (``app.extensions``, :mod:`labapp.model.registry`),
replaced whole when the files are re-read, so requests in other threads keep reading a
whole model. A sync records a new generation in ``model_state`` and then writes it to the
stamp file :data:`SYNC_STAMP` in the instance folder the workers share. Every request
(:func:`follow_synced_model`, a hook :func:`labapp.create_app` registers; static files
skip it) looks at that file's identity (one ``stat``, a tenth of the cost of reading it)
and, when it changed, checks the database and re-reads the extension files if the
generation is one this worker has not loaded, so the first request after a sync returned is
served with the new model by every worker, without a restart. The database is also asked at
most once per :data:`CHECK_SECONDS` in case the stamp is lost (or a rewrite looked the
same: the same inode again within the file system's clock tick). One request
thread at a time does that check.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from flask import Flask
from flask_migrate import upgrade
from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError

from labapp.atomic import write_whole
from labapp.db import db
from labapp.errors import InvalidInput
from labapp.model import ModelState
from labapp.model.extensions import ExtensionError, Extensions, install, read
from labapp.model.registry import publish
from labapp.schema import schema_state

CHECK_SECONDS = 1.0
_UNSEEN = object()
EXTENSION_FOLDER = "datamodel"
SYNC_STAMP = "datamodel.synced"
logger = logging.getLogger(__name__)


def extension_folder(app: Flask) -> Path:
    return Path(app.instance_path) / EXTENSION_FOLDER


def load_model(app: Flask) -> None:
    """Read and install the extension files at start-up; a bad file stops the start with
    :class:`ExtensionError` (naming the file and the field), nothing of it loaded."""
    stamp = _stamp_of(app)  # before the files: a sync in between is followed
    extensions = read(extension_folder(app))
    with app.app_context():
        install(extensions)
    app.extensions["labapp_model"] = {"extensions": extensions, "seen": _UNSEEN, "checked": 0.0,
                                     "stamp": stamp, "lock": threading.Lock()}


def reload_model(app: Flask) -> Extensions:
    """Re-read the files now: the model they make is this application context's (a file
    added since start-up becomes expected), while the other requests keep the synchronised
    one until :func:`mark_synced`; a bad file is a 400 naming it, and the model stays as it
    was."""
    try:
        extensions = read(extension_folder(app))
    except ExtensionError as error:
        raise InvalidInput(f"Data-model extension file: {error}") from None
    install(extensions, publish=False)
    return extensions


def extension_problem(app: Flask) -> str | None:
    """The validation error of the extension files as they are now, or None."""
    try:
        read(extension_folder(app))
    except ExtensionError as error:
        return str(error)
    return None


def follow_synced_model(app: Flask) -> None:
    """Re-read the files when another worker synced (in a request of ``app``; one thread
    of the application at a time, the others wait for its answer)."""
    state: dict[str, Any] = app.extensions["labapp_model"]
    with state["lock"]:
        _follow(app, state)


def _follow(app: Flask, state: dict[str, Any]) -> None:
    now = time.monotonic()
    stamped = _stamp_of(app)
    if now - state["checked"] < CHECK_SECONDS and stamped == state["stamp"]:
        return
    # A worker's first check cannot tell from the generation alone whether its files were
    # read before or after the last sync; the stamp moving since start-up tells.
    stamp_moved = stamped != state["stamp"]
    state["checked"], state["stamp"] = now, stamped
    generation = _synced_generation()
    if generation == state["seen"]:
        return
    if state["seen"] is not _UNSEEN or stamp_moved:
        try:
            state["extensions"] = read(extension_folder(app))
            install(state["extensions"])
        except ExtensionError as error:
            logger.error("The synchronised data model cannot be loaded: %s", error)
    state["seen"] = generation


def mark_synced(app: Flask) -> None:
    """This worker made the sync: the model of this application context is the
    synchronised one, served from now on by every thread. Tell the other workers through
    the stamp file (written whole, then renamed into place)."""
    synced = publish().source
    generation = _synced_generation()
    state = app.extensions["labapp_model"]
    with state["lock"]:
        state["seen"] = generation
        if isinstance(synced, Extensions):
            state["extensions"] = synced
    stamp = Path(app.instance_path) / SYNC_STAMP
    stamp.parent.mkdir(parents=True, exist_ok=True)
    write_whole(stamp, str(generation))


def _stamp_of(app: Flask) -> tuple[int, int, int, int] | None:
    """Which stamp file the last sync left: inode, change and modification times, size
    (each sync renames a new file into place); None without one."""
    try:
        found = os.stat(os.path.join(app.instance_path, SYNC_STAMP))
    except OSError:
        return None
    return found.st_ino, found.st_ctime_ns, found.st_mtime_ns, found.st_size


def _synced_generation() -> int | None:
    try:
        with db.engine.connect() as connection:
            return connection.scalar(select(ModelState.generation).where(ModelState.id == 1))
    except SQLAlchemyError:
        return None


def apply_migrations(app: Flask) -> list[str]:
    """Apply the pending schema migrations; the heads reached when any were pending."""
    state = schema_state()
    if state.up_to_date:
        return []
    upgrade(directory=str(app.extensions["migrate"].directory))
    return sorted(state.expected)
