"""Files: naming and typing uploads, registering stored content, finding it for download.

The content itself is written by :mod:`labapp.blobs` (:func:`labapp.blobs.stored`): in the
folder store *before* the File entity is created, so the database transaction never waits on
disk I/O; in the database store inside the File's transaction. An upload rejected after that
takes its content out of the store again.
"""
from __future__ import annotations

import mimetypes
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from labapp.access.actor import Actor
from labapp.blobs import StoredContent, content_of
from labapp.entities.service import create_stored_file
from labapp.errors import AppError, NotFound
from labapp.mediatypes import is_media_type
from labapp.model import File
from labapp.model.registry import CLASSES
from labapp.reading.lookup import load_visible, to_api

DEFAULT_MEDIA_TYPE = "application/octet-stream"

# The batch machinery names its single item; an upload names the form field alone.
_ITEM_PREFIX = re.compile(r"^entities\[0\](?:\.|:\s*)")


def clean_filename(raw: str) -> str:
    """A file name safe to show and to send in ``Content-Disposition``.

    Keeps only the last path component (``/`` or ``\\``), drops control, format (such as the
    right-to-left override) and line-separator characters, and trims surrounding spaces.
    Returns ``""`` when nothing usable is left (``..``, ``/``, only control characters).
    """
    last = re.split(r"[/\\]", raw)[-1]
    kept = "".join(char for char in last
                   if unicodedata.category(char)[0] != "C" and char not in "\u2028\u2029")
    kept = kept.strip()
    return "" if set(kept) <= {"."} else kept


def media_type_for(name: str, declared: str | None) -> str:
    """The media type of an upload that did not name one: the type its part declared unless
    that says nothing (missing, malformed, ``application/octet-stream``), else a guess from
    the name, else ``application/octet-stream``."""
    essence = (declared or "").split(";")[0].strip().lower()
    if declared and is_media_type(declared) and essence != DEFAULT_MEDIA_TYPE:
        return declared
    guessed, _ = mimetypes.guess_type(name, strict=False)
    return guessed or DEFAULT_MEDIA_TYPE


def create_file(actor: Actor, *, sha256: str, size: int, name: str, media_type: str,
                subject_id: str | None = None, file_type: str | None = None,
                description: str | None = None) -> dict[str, Any]:
    """Create the File entity of content already stored; runs in the caller's transaction.

    Raises 400 naming the form field (``name``, ``subjectID``, …) for a value that does not
    fit or a subject that is unknown or invisible (the same answer), 403 without Write on the
    department/project the file will belong to (its subject's, else the caller's home).
    """
    try:
        return create_stored_file(actor, name=name, media_type=media_type, sha256=sha256,
                                  size=size, subject_id=subject_id, file_type=file_type,
                                  description=description)
    except AppError as error:
        raise _as_upload_error(error) from None


def _as_upload_error(error: AppError) -> AppError:
    """The same error, worded for the upload form instead of a batch's first item."""
    error.detail = _ITEM_PREFIX.sub("", error.detail)
    error.args = (error.detail,)
    if error.errors:
        error.errors = [{"field": entry["field"].removeprefix("entities.0."),
                         "message": entry["message"]} for entry in error.errors]
    return error


def file_metadata(actor: Actor, file_id: str) -> dict[str, Any]:
    """The File entity as ``POST /api/file`` answers it; 404 unless the actor may see it."""
    return to_api(load_visible(actor, CLASSES["File"], file_id))


@dataclass(frozen=True)
class Download:
    """What a download sends: the content, its media type, a safe file name and its digest."""

    content: StoredContent
    media_type: str
    name: str
    sha256: str


def find_download(actor: Actor, file_id: str) -> Download:
    """The content of a visible File; 404 for an unknown, invisible or non-File id and for a
    File without stored content.

    The media type is the stored one unless it is malformed (possible through the ``files``
    property of ``POST /api/entity``), then ``application/octet-stream``. The name is the
    entity name cleaned by :func:`clean_filename`, else the id with an extension for the
    media type.
    """
    file = load_visible(actor, CLASSES["File"], file_id)
    if not isinstance(file, File):
        raise NotFound(f"{file_id!r} is not a File.")
    content = content_of(file.sha256)
    if content is None or file.sha256 is None:
        raise NotFound(f"File {file_id!r} has no stored content.")
    media_type = file.media_type or ""
    if not is_media_type(media_type):
        media_type = DEFAULT_MEDIA_TYPE
    return Download(content, media_type, clean_filename(file.name or "")
                    or _fallback_name(file.id, media_type), file.sha256)


def _fallback_name(file_id: str, media_type: str) -> str:
    """The id with an extension for the media type (``FIL00001.csv``)."""
    extension = mimetypes.guess_extension(media_type.split(";")[0].strip(), strict=False)
    return (clean_filename(file_id) or "download") + (extension or "")
