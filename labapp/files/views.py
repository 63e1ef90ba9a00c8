"""Uploading a file from an entity's detail page (the page itself is the entity browser's)."""
from __future__ import annotations

from flask import Blueprint, flash, request
from werkzeug.wrappers import Response as BaseResponse

from labapp.blobs import stored
from labapp.entities.detail import back_to, render_detail
from labapp.errors import InvalidInput
from labapp.files import service
from labapp.reading.lookup import class_named, load_visible
from labapp.web.loader import current_actor
from labapp.web.pages import members_only
from labapp.web.units import opens_own_units

bp = members_only(Blueprint("file_views", __name__, url_prefix="/entities"))


@bp.post("/<eclass>/<path:entity_id>/files")
@opens_own_units
def upload_file(eclass: str, entity_id: str) -> BaseResponse:
    """Store an uploaded file (once per content) and attach it to the entity, as
    ``POST /api/file`` does; then back to the files of the detail page."""
    actor = current_actor()
    spec = class_named(eclass)
    subject_id = load_visible(actor, spec, entity_id).id
    upload = request.files.get("file")
    name = service.clean_filename(upload.filename or "") if upload else ""
    if upload is None or not name:
        return render_detail(actor, spec, entity_id, status=400,
                             file_error="Choose a file to upload.")
    try:
        with stored(upload.stream) as blob:
            service.create_file(actor, sha256=blob.sha256, size=blob.size, name=name,
                                media_type=service.media_type_for(name, upload.mimetype),
                                subject_id=subject_id,
                                description=request.form.get("description", "").strip() or None)
    except InvalidInput as error:
        return render_detail(actor, spec, entity_id, status=400, file_error=error.detail)
    flash(f"File “{name}” uploaded.", "success")
    return back_to(spec, entity_id, "files")
