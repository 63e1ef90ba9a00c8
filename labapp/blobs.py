"""The content store: ``instance/files/ab/cd/<sha256>``, each content written once.

Writes go to a temporary file that is renamed into place, so a reader never sees half a file
and two writers of the same content cannot corrupt it. Content is read in chunks, never
whole. A blob is never deleted here: the File rows that name it may belong to a transaction
that has not committed yet.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
from io import BytesIO
from pathlib import Path
from typing import BinaryIO

from flask import current_app

CHUNK = 1024 * 1024
_DIGEST = re.compile(r"[0-9a-f]{64}")


def store_root() -> Path:
    """The folder of the store, inside the instance folder."""
    return Path(current_app.config["LABAPP"]["INSTANCE_PATH"]) / "files"


def blob_path(sha256: str) -> Path:
    """Where the content with this digest lives; ValueError unless it is a SHA-256 hex
    digest (so a stored value can never point outside the store)."""
    if not _DIGEST.fullmatch(sha256):
        raise ValueError(f"not a SHA-256 hex digest: {sha256!r}")
    return store_root() / sha256[:2] / sha256[2:4] / sha256


def stored_blob(sha256: str | None) -> Path | None:
    """The file holding this content, or None when the digest is missing, malformed or has
    no content in the store."""
    if sha256 is None or not _DIGEST.fullmatch(sha256):
        return None
    path = blob_path(sha256)
    return path if path.is_file() else None


def store_stream(stream: BinaryIO) -> tuple[str, int]:
    """Store a stream's content, read in chunks; returns its SHA-256 hex digest and size."""
    root = store_root()
    root.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    fd, temporary = tempfile.mkstemp(dir=root, prefix=".upload-")
    try:
        with os.fdopen(fd, "wb") as out:
            while chunk := stream.read(CHUNK):
                digest.update(chunk)
                size += len(chunk)
                out.write(chunk)
        sha256 = digest.hexdigest()
        target = blob_path(sha256)
        if target.exists():
            os.unlink(temporary)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return sha256, size


def store_bytes(content: bytes) -> tuple[str, int]:
    """Store ``content``; returns its SHA-256 hex digest and size."""
    return store_stream(BytesIO(content))
