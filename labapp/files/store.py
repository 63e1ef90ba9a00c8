"""The content store: ``instance/files/ab/cd/<sha256>``, each content written once.

Writes go to a temporary file that is renamed into place, so a reader never sees half a file
and two writers of the same content cannot corrupt it.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from io import BytesIO
from pathlib import Path
from typing import BinaryIO

from flask import current_app

CHUNK = 1024 * 1024


def store_root() -> Path:
    return Path(current_app.config["LABAPP"]["INSTANCE_PATH"]) / "files"


def blob_path(sha256: str) -> Path:
    """Where the content with this digest lives."""
    return store_root() / sha256[:2] / sha256[2:4] / sha256


def store_stream(stream: BinaryIO) -> tuple[str, int]:
    """Store a stream's content; returns its SHA-256 hex digest and size in bytes."""
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
