"""The uploaded files of import jobs: ``instance/imports/<job id>.csv|.xlsx``, one per job.

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
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from flask import current_app

CHUNK = 1024 * 1024
_PARTIAL = ".partial-"
_PENDING = ".pending-"
_TOKEN = re.compile(r"[A-Za-z0-9_-]{22}")
KEEP_PENDING_SECONDS = 24 * 3600  # an upload the wizard never mapped is kept this long


def folder() -> Path:
    """The folder of the uploads, inside the instance folder (made on first use)."""
    path = Path(current_app.config["LABAPP"]["INSTANCE_PATH"]) / "imports"
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
    upload's suffix)."""
    name = f"{job_id}{upload.path.suffix}"
    os.replace(upload.path, folder() / name)
    return name


def share(name: str, job_id: str) -> str:
    """Give the upload stored as ``name`` to job ``job_id`` too (a hard link: the content is
    kept until the last job holding it goes); the new stored name. FileNotFoundError when
    the upload is gone."""
    target = f"{job_id}{Path(name).suffix}"
    os.link(folder() / name, folder() / target)
    return target


def path_of(name: str) -> Path:
    """The path of a stored upload (it may be gone: a job's upload is removed with it)."""
    return folder() / Path(name).name


def discard(name_or_path: str | Path) -> None:
    """Remove a stored or received upload (nothing when it is gone already)."""
    path = Path(name_or_path)
    (path if path.is_absolute() else path_of(str(path))).unlink(missing_ok=True)


@dataclass(frozen=True)
class Pending:
    """An upload waiting for the wizard's mapping step."""

    token: str
    owner: str
    eclass: str
    filename: str
    upload: Upload


def hold(upload: Upload, *, owner: str, eclass: str, filename: str) -> str:
    """Keep a received upload for the mapping step; the token that finds it again."""
    token = secrets.token_urlsafe(16)
    path = folder() / f"{_PENDING}{token}{upload.path.suffix}"
    os.replace(upload.path, path)
    note = {"owner": owner, "eclass": eclass, "filename": filename,
            "sha256": upload.sha256, "size": upload.size, "suffix": upload.path.suffix}
    _note(token).write_text(json.dumps(note), encoding="utf-8")
    return token


def _note(token: str) -> Path:
    return folder() / f"{_PENDING}{token}.json"


def pending(token: str, owner: str) -> Pending | None:
    """The pending upload ``token`` of ``owner`` (None for anyone else's or a gone one)."""
    if not _TOKEN.fullmatch(token):
        return None
    try:
        note = json.loads(_note(token).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    path = folder() / f"{_PENDING}{token}{note.get('suffix', '')}"
    if note.get("owner") != owner or not path.exists():
        return None
    return Pending(token, owner, note["eclass"], note["filename"],
                   Upload(path, note["sha256"], note["size"]))


def release(token: str) -> None:
    """Forget a pending upload (its file too, unless a job took it)."""
    held = _note(token)
    for suffix in (".csv", ".xlsx"):
        (folder() / f"{_PENDING}{token}{suffix}").unlink(missing_ok=True)
    held.unlink(missing_ok=True)


def purge_stale() -> int:
    """Remove pending and partial uploads older than :data:`KEEP_PENDING_SECONDS`; how
    many files went."""
    cutoff = time.time() - KEEP_PENDING_SECONDS
    removed = 0
    for path in folder().iterdir():
        if path.name.startswith((_PENDING, _PARTIAL)):
            try:
                if path.stat().st_mtime < cutoff:
                    path.unlink()
                    removed += 1
            except FileNotFoundError:
                continue
    return removed
