"""``/api/file``: upload (multipart or base64 form), download, metadata (decisions §11).

Downloads are always ``attachment`` with ``nosniff`` and a sandboxing CSP: a stored HTML or
SVG file must never run in the application's origin.
"""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request, send_file
from marshmallow import Schema, ValidationError
from werkzeug.datastructures import MultiDict
from werkzeug.wrappers import Response as BaseResponse

from labapp.blobs import stored
from labapp.errors import UnsupportedMediaType
from labapp.files import service
from labapp.files.schemas import Base64UploadSchema, MultipartUploadSchema
from labapp.web.endpoints import endpoint
from labapp.web.loader import CSRF_FIELD, current_actor
from labapp.web.units import opens_own_units

bp = Blueprint("file_api", __name__, url_prefix="/api/file")

_SCHEMAS: dict[str, type[Schema]] = {
    "multipart/form-data": MultipartUploadSchema,
    "application/x-www-form-urlencoded": Base64UploadSchema,
}


def _single_values(*sources: MultiDict[str, Any]) -> dict[str, Any]:
    """The form's fields, each given once (the CSRF token is not a field of the upload)."""
    values: dict[str, Any] = {}
    for source in sources:
        for key, items in source.lists():
            if key == CSRF_FIELD:
                continue
            if len(items) > 1 or key in values:
                raise ValidationError({key: ["given more than once"]})
            values[key] = items[0]
    return values


def _read_upload() -> dict[str, Any]:
    schema = _SCHEMAS.get(request.mimetype)
    if schema is None:
        raise UnsupportedMediaType("Send the file as multipart/form-data or as "
                                   "application/x-www-form-urlencoded with base64 content "
                                   f"(got {request.mimetype or 'no content type'}).")
    loaded: dict[str, Any] = schema().load(_single_values(request.form, request.files))
    return loaded


@bp.post("")
@endpoint("Upload a file; answers its File entity. multipart/form-data: file (required), "
          "name (default: the file name), mediaType (default: the part's type or a guess "
          "from the name), subjectID, type, description. application/x-www-form-urlencoded: "
          "name and content (base64) required, mediaType, subjectID, type, description. "
          "Needs Write on the subject's department or project (else the caller's home "
          "department). 400 for invalid fields or an unknown subject, 413 over the upload "
          "limit, 415 for any other content type.",
          forms=_SCHEMAS, responses={201: "The File entity"})
@opens_own_units
def upload_file() -> tuple[Response, int]:
    actor = current_actor()
    upload = _read_upload()
    # Folder store: written before the transaction (no database lock held while writing to
    # disk); database store: inside it. A rejected File takes its content out again.
    with stored(upload.pop("content")) as blob:
        created = service.create_file(actor, sha256=blob.sha256, size=blob.size, **upload)
    return jsonify(created), 201


@bp.get("/<path:file_id>")
@endpoint("The content of a visible file, always as an attachment with its media type; "
          "supports Range and conditional (ETag = SHA-256) requests.",
          responses={200: "The file content", 206: "The requested range",
                     304: "Not modified"})
def download_file(file_id: str) -> BaseResponse:
    download = service.find_download(current_actor(), file_id)
    content = download.content
    response: BaseResponse
    if content.path is not None:
        response = send_file(content.path, mimetype=download.media_type, as_attachment=True,
                             download_name=download.name, conditional=True,
                             etag=download.sha256)
    else:
        # A stream from the database store: Werkzeug knows its length only when told, and
        # answers Range and conditional requests once it does.
        response = send_file(content.open(), mimetype=download.media_type,
                             as_attachment=True, download_name=download.name,
                             conditional=False, etag=download.sha256)
        response.content_length = content.size
        response = response.make_conditional(request.environ, accept_ranges=True,
                                             complete_length=content.size)
    # Exactly the stored type: Werkzeug would add a charset to text/* that may be wrong.
    response.headers["Content-Type"] = download.media_type
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response.cache_control.private = True
    return response


@bp.get("/<path:file_id>/metadata")
@endpoint("The File entity (as POST /api/file answers it; GET /api/entity/File/{id} adds "
          "events and the audit trail).", responses={200: "The File entity"})
def file_metadata(file_id: str) -> Response:
    return jsonify(service.file_metadata(current_actor(), file_id))
