"""The uploaded files of import jobs: ``<folder>/<job id>.csv|.xlsx``, one per job.

Where they live follows the file store setting (docs/decisions/import-uploads-store.md):

- folder store: in ``imports/`` of the instance folder, or in ``.imports/`` of
  ``LABAPP_FILE_STORE_PATH`` when that is set (the folder the hosts share);
- database store: as contents of the database store (:mod:`labapp.content_rows`), written
  in the job's own transaction and found by the job's SHA-256, so a worker of any host can
  read them. The reader needs a file: :func:`opened` streams the content to a temporary
  file of the host's ``instance/imports/`` and removes it after use. ``files gc`` keeps
  every content an import job names; the worker's upkeep removes a finished job's content
  with the job (unless a File or another job names it).

An upload is written under a temporary name (hashed on the way, read in chunks, never whole)
and renamed to its job's name once the job row is about to be written; it lives as long as
its job (the annotated download reads it again) and goes with it. Between the wizard's
upload and mapping steps an upload is *pending*: ``.pending-<token>`` with a JSON note of
its owner, class and name beside it, removed when the job is started or after
:data:`KEEP_PENDING_SECONDS`. These files are not in the
content store of :mod:`labapp.blobs`: no File entity names them, and its collector would
take them.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import IO

from flask import current_app
from sqlalchemy import delete

from labapp import blobs, content_rows
from labapp.db import db, transaction
from labapp.model import ImportPending
from labapp.model.types import utc_now

CHUNK = 1024 * 1024
_PARTIAL = ".partial-"
_PENDING = ".pending-"
_FETCHED = ".fetched-"
_TOKEN = re.compile(r"[A-Za-z0-9_-]{22}")
KEEP_PENDING_SECONDS = 24 * 3600  # an upload the wizard never mapped is kept this long


def folder() -> Path:
    """The folder of this host's upload files (made on first use): where the folder store
    keeps them (``.imports/`` of ``LABAPP_FILE_STORE_PATH`` when set, else ``imports/`` of
    the instance folder); with the database store, the host's own ``imports/`` for uploads
    being received and temporary copies."""
    settings = current_app.config["LABAPP"]
    shared = settings["FILE_STORE_PATH"]
    if shared and not blobs.uses_database():
        path = Path(shared) / ".imports"
    else:
        path = Path(settings["INSTANCE_PATH"]) / "imports"
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass(frozen=True)
class Upload:
    """A stored upload not yet given to a job: its path, SHA-256 and size."""

    path: Path
    sha256: str
    size: int


def receive(stream: IO[bytes]) -> Upload:
    """Write ``stream`` to a new temporary file of the folder; the caller gives it to a job
    (:func:`keep`) or removes it (:func:`discard`). The file's suffix says what its content
    starts like: ``.xlsx`` for a zip archive (openpyxl opens no other name), else ``.csv``."""
    first = stream.read(CHUNK)
    suffix = ".xlsx" if first.startswith(b"PK") else ".csv"
    path = folder() / f"{_PARTIAL}{secrets.token_hex(8)}{suffix}"
    digest = hashlib.sha256()
    size = 0
    try:
        with open(path, "xb") as target:
            chunk = first
            while chunk:
                digest.update(chunk)
                size += len(chunk)
                target.write(chunk)
                chunk = stream.read(CHUNK)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return Upload(path, digest.hexdigest(), size)


def keep(upload: Upload, job_id: str) -> str:
    """Give a received upload to job ``job_id``; its stored name (the job's id and the
    upload's suffix). Database store: its content is streamed into the current
    transaction's rows (the caller still removes the received file)."""
    name = f"{job_id}{upload.path.suffix}"
    if blobs.uses_database():
        connection = db.session.connection()
        if content_rows.hold(connection, upload.sha256):  # stored already (a pending upload)
            return name
        with upload.path.open("rb") as stream:
            sha256, _ = content_rows.write(connection, stream)
        if sha256 != upload.sha256:
            raise OSError(f"the received upload {upload.path.name} changed on disk")
        return name
    os.replace(upload.path, folder() / name)
    return name


def share(name: str, sha256: str, job_id: str) -> str:
    """Give the upload stored as ``name`` (content ``sha256``) to job ``job_id`` too (a
    hard link, or in the database store a hold on the content row until the transaction
    ends: the content is kept until the last job naming it goes); the new stored name.
    FileNotFoundError when the upload is gone."""
    target = f"{job_id}{Path(name).suffix}"
    if blobs.uses_database():
        if not content_rows.hold(db.session.connection(), sha256):
            raise FileNotFoundError(sha256)
        return target
    os.link(folder() / name, folder() / target)
    return target


@contextmanager
def opened(name: str, sha256: str) -> Iterator[Path]:
    """A file holding the stored upload ``name`` (content ``sha256``) for the block: the
    stored file itself, or in the database store a temporary copy on this host, streamed
    from the rows piece by piece and removed when the block ends. FileNotFoundError when
    the upload is gone."""
    if not blobs.uses_database():
        path = path_of(name)
        if not path.is_file():
            raise FileNotFoundError(name)
        yield path
        return
    found = content_rows.find(db.session.connection(), sha256)
    if found is None:
        raise FileNotFoundError(name)
    content_id, size = found
    path = folder() / f"{_FETCHED}{secrets.token_hex(8)}{Path(name).suffix}"
    try:
        with content_rows.open_reader(db.engine.connect, content_id, size) as source, \
                open(path, "xb") as target:
            while chunk := source.read(CHUNK):
                target.write(chunk)
        yield path
    finally:
        path.unlink(missing_ok=True)


def path_of(name: str) -> Path:
    """The path of a stored upload (it may be gone: a job's upload is removed with it)."""
    return folder() / Path(name).name


def discard(name_or_path: str | Path) -> None:
    """Remove a stored or received upload (nothing when it is gone already)."""
    path = Path(name_or_path)
    (path if path.is_absolute() else path_of(str(path))).unlink(missing_ok=True)


@dataclass(frozen=True)
class Pending:
    """An upload waiting for the wizard's mapping step (:func:`held_file` gives its file)."""

    token: str
    owner: str
    eclass: str
    filename: str
    upload: Upload  # database store: ``path`` is only a name (the content is in the rows)


def hold(upload: Upload, *, owner: str, eclass: str, filename: str) -> str:
    """Keep a received upload for the mapping step; the token that finds it again. Database
    store: its content and an ``import_pending`` row are committed here (any host may serve
    the next step) and the received file goes."""
    token = secrets.token_urlsafe(16)
    suffix = upload.path.suffix
    if blobs.uses_database():
        try:
            with transaction() as session, upload.path.open("rb") as stream:
                sha256, size = content_rows.write(session.connection(), stream)
                session.add(ImportPending(token=token, owner_id=owner, eclass=eclass,
                                          filename=filename, sha256=sha256, size=size,
                                          suffix=suffix, created_utc=utc_now()))
        finally:
            upload.path.unlink(missing_ok=True)
        return token
    path = folder() / f"{_PENDING}{token}{suffix}"
    os.replace(upload.path, path)
    note = {"owner": owner, "eclass": eclass, "filename": filename,
            "sha256": upload.sha256, "size": upload.size, "suffix": suffix}
    _note(token).write_text(json.dumps(note), encoding="utf-8")
    return token


def _note(token: str) -> Path:
    return folder() / f"{_PENDING}{token}.json"


def pending(token: str, owner: str) -> Pending | None:
    """The pending upload ``token`` of ``owner`` (None for anyone else's or a gone one)."""
    if not _TOKEN.fullmatch(token):
        return None
    if blobs.uses_database():
        row = db.session.get(ImportPending, token)
        if row is None or row.owner_id != owner:
            return None
        return Pending(token, owner, row.eclass, row.filename,
                       Upload(Path(f"{token}{row.suffix}"), row.sha256, row.size))
    try:
        note = json.loads(_note(token).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    path = folder() / f"{_PENDING}{token}{note.get('suffix', '')}"
    if note.get("owner") != owner or not path.exists():
        return None
    return Pending(token, owner, note["eclass"], note["filename"],
                   Upload(path, note["sha256"], note["size"]))


@contextmanager
def held_file(held: Pending) -> Iterator[Upload]:
    """The pending upload as a received one, with a file to read, for the block (database
    store: a temporary copy, removed after the block). FileNotFoundError when it is gone."""
    if not blobs.uses_database():
        yield held.upload
        return
    with opened(held.upload.path.name, held.upload.sha256) as path:
        yield Upload(path, held.upload.sha256, held.upload.size)


def release(token: str) -> None:
    """Forget a pending upload (its file too, unless a job took it; database store: its row,
    the content stays for the job that took it or the collector)."""
    if blobs.uses_database():
        with transaction():
            db.session.execute(delete(ImportPending).where(ImportPending.token == token))
        return
    held = _note(token)
    for suffix in (".csv", ".xlsx"):
        (folder() / f"{_PENDING}{token}{suffix}").unlink(missing_ok=True)
    held.unlink(missing_ok=True)


def purge_stale() -> int:
    """Remove pending, partial and fetched uploads older than :data:`KEEP_PENDING_SECONDS`
    (database store: pending rows and their contents, unless a File or job names them);
    how many went."""
    cutoff = time.time() - KEEP_PENDING_SECONDS
    removed = 0
    for path in folder().iterdir():
        if path.name.startswith((_PENDING, _PARTIAL, _FETCHED)):
            try:
                if path.stat().st_mtime < cutoff:
                    path.unlink()
                    removed += 1
            except FileNotFoundError:
                continue
    if blobs.uses_database():
        oldest = utc_now() - timedelta(seconds=KEEP_PENDING_SECONDS)
        with transaction():
            digests = list(db.session.scalars(
                delete(ImportPending).where(ImportPending.created_utc < oldest)
                .returning(ImportPending.sha256)))
        if digests:
            blobs.collect_garbage(sorted(set(digests)), 0, dry_run=False)
        removed += len(digests)
    return removed
