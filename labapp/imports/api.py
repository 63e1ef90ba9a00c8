"""``/api/import``: start a spreadsheet import, follow it, download its annotated file and
the class's template, commit a dry run (decisions §15, issue 22)."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request, url_for
from werkzeug.datastructures import MultiDict

from labapp.db import transaction
from labapp.errors import InvalidInput, UnsupportedMediaType
from labapp.imports import downloads, service, uploads
from labapp.imports.schemas import (
    DEFAULT_TOP,
    MAX_TOP,
    DownloadQuerySchema,
    ImportFormSchema,
    JobQuerySchema,
    JobSchema,
    JobStartedSchema,
)
from labapp.model import ImportJob
from labapp.query.listing import paging_value
from labapp.reading.lookup import class_named
from labapp.web.endpoints import endpoint
from labapp.web.loader import CSRF_FIELD, current_actor
from labapp.web.units import opens_own_units

bp = Blueprint("import_api", __name__, url_prefix="/api/import")
MULTIPART = "multipart/form-data"


def form_values(*sources: MultiDict[str, Any]) -> dict[str, Any]:
    """The form's fields, each given once (the CSRF token is not a field of the import)."""
    values: dict[str, Any] = {}
    for source in sources:
        for key, items in source.lists():
            if key == CSRF_FIELD:
                continue
            if len(items) > 1 or key in values:
                raise InvalidInput(f"{key} is given more than once.", code="validation_failed",
                                   errors=[{"field": key, "message": "given more than once"}])
            values[key] = items[0]
    return values


def start(form: dict[str, Any]) -> ImportJob:
    """Receive the upload of a loaded form and queue its job (the wizard's first step and
    the API share it); nothing stays behind when it is refused."""
    actor = current_actor()
    service.import_class(actor, form["eClass"])  # refuse before receiving the file
    upload = uploads.receive(form["file"].stream)
    try:
        with transaction():
            return service.start_import(actor, upload, service.ImportRequest(
                eclass=form["eClass"], filename=form["filename"],
                mapping=form.get("mapping"), dry_run=form["dryRun"],
                match=form.get("match"), sheet=form.get("sheet")))
    finally:
        uploads.discard(upload.path)  # gone already when the job kept it


@bp.post("")
@endpoint("Upload a CSV or XLSX file to import into one class; answers 202 with the job to "
          "poll (GET /api/import/{id}). The worker reads the rows: a dry run (the default) "
          "only tells each row's outcome, a commit (dryRun=false) writes every row in one "
          "transaction or nothing when any row fails. Refused at once, nothing stored: "
          "400 for a missing file, an unknown class, a file that cannot be read, is empty, "
          "has no header row or is over a limit (columns, row or cell length, shared "
          "strings, a DOCTYPE...: the message names it), an unknown sheet, a bad mapping or "
          "match field; 403 without "
          "the right to create entities of the class; 413 over the upload limit.",
          forms={MULTIPART: ImportFormSchema}, responses={202: JobStartedSchema},
          problems=(413,))
@opens_own_units
def create_import() -> tuple[Response, int]:
    if request.mimetype != MULTIPART:
        raise UnsupportedMediaType(f"Send the file as {MULTIPART} "
                                   f"(got {request.mimetype or 'no content type'}).")
    form = ImportFormSchema().load(form_values(request.form, request.files))
    job = start(form)
    response = jsonify({"id": job.id, "status": job.status})
    response.headers["Location"] = url_for(".get_import", job_id=job.id)
    return response, 202


@bp.get("/<job_id>")
@endpoint("An import job the caller started (ADMIN: any): status, counts, progress and a "
          f"page of the rows' outcomes by row number ($top default {DEFAULT_TOP}, at most "
          f"{MAX_TOP}; outcome=error for the failed rows only).",
          query=JobQuerySchema, responses={200: JobSchema})
def get_import(job_id: str, query: dict[str, Any]) -> Response:
    top = DEFAULT_TOP if query["top"] in (None, "") else paging_value("$top", query["top"])
    skip = 0 if query["skip"] in (None, "") else paging_value("$skip", query["skip"])
    job = service.visible_job(current_actor(), job_id)
    page = service.rows_page(job, top=min(top, MAX_TOP), skip=skip,
                             outcome=query["outcome"])
    data = service.job_to_api(job, page)
    return jsonify(data)


@bp.post("/<job_id>/commit")
@endpoint("Commit a finished dry run without row errors: a new job on the same file, "
          "mapping and options, owned by the caller (202; the same job again when the dry "
          "run was committed already). 409 while the dry run is not done or when it found "
          "errors.", responses={202: JobStartedSchema}, problems=(409,))
def commit_import(job_id: str) -> tuple[Response, int]:
    job = service.commit_dry_run(current_actor(), job_id)
    response = jsonify({"id": job.id, "status": job.status})
    response.headers["Location"] = url_for(".get_import", job_id=job.id)
    return response, 202


@bp.get("/<job_id>/annotated")
@endpoint("The job's file as CSV or XLSX with each row's outcome and errors in two more "
          "columns (cells that a spreadsheet would run as a formula are prefixed with '). "
          "409 until the rows' outcomes are known.",
          query=DownloadQuerySchema, responses={200: "The annotated file"},
          media=downloads.MEDIA, problems=(409,))
def annotated(job_id: str, query: dict[str, Any]) -> Response:
    job = service.visible_job(current_actor(), job_id)
    return downloads.annotated(job, query["format"])


@bp.get("/template/<eclass>")
@endpoint("An empty CSV or XLSX file for importing into a class: a header per field an "
          "import can set and one example row. 404 for an unknown class, 403 without the "
          "right to create its entities.",
          query=DownloadQuerySchema, responses={200: "The template"},
          media=downloads.MEDIA)
def template(eclass: str, query: dict[str, Any]) -> Response:
    spec = service.import_class(current_actor(), class_named(eclass).name)
    return downloads.template(spec, query["format"])
