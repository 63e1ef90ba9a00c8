"""The import wizard (issue 22): upload, map the columns, dry run, commit.

1. ``/import`` — choose the class and the file; the upload is held (pending) for step 2.
2. ``/import/map/<token>`` — each column to a field (preset from the mapping saved for the
   file's source name, else the automatic one), the sheet of a workbook, "save mapping as";
   starting it queues a dry run.
3. ``/import/<id>`` — the job: a progress bar polled by htmx while the worker reads the rows
   (with a notice when no worker runs to take the job, or the one running it stopped),
   then the counts, the rows' outcomes page by page (errors only on request), the annotated
   file and Commit (disabled while any row has an error).
4. The commit is a job of its own on the same page: its counts and the entities it wrote.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from flask import Blueprint, Response, redirect, request, url_for
from werkzeug.datastructures import FileStorage
from werkzeug.wrappers import Response as BaseResponse

from labapp.access.actor import Actor
from labapp.db import transaction
from labapp.errors import AppError, InvalidInput, NotFound
from labapp.files.service import clean_filename
from labapp.imports import saved, service, uploads, workers
from labapp.imports.mapping import auto_map, importable
from labapp.imports.spreadsheets import SourceTable, open_table
from labapp.model import ImportJob
from labapp.model.registry import ClassSpec, classes
from labapp.reading.wording import label_of
from labapp.web.blocks import render_page
from labapp.web.loader import current_actor
from labapp.web.pages import members_only
from labapp.web.units import opens_own_units

bp = members_only(Blueprint("import_views", __name__, url_prefix="/import"))

PAGE = "imports/wizard.html"
JOB_PAGE = "imports/job.html"
PAGE_SIZE = 50
SHOWN_ENTITIES = 50
POLL = "500ms"


def _importable(actor: Actor) -> list[ClassSpec]:
    return [spec for spec in classes() if service.may_import(actor, spec)]


def _upload_page(actor: Actor, *, eclass: str = "", error: str | None = None,
                 status: int = 200) -> Response:
    return render_page(PAGE, status=status, step=1, spec=None, choices=_importable(actor),
                       chosen=eclass, error=error)


@bp.get("")
def start() -> Response:
    """Step 1: the class (``?eClass=`` preselects it) and the file."""
    return _upload_page(current_actor(), eclass=request.args.get("eClass", ""))


@bp.post("")
@opens_own_units
def upload() -> BaseResponse:
    """Receive the file, check it opens, and hold it for the mapping step."""
    actor = current_actor()
    eclass = request.form.get("eClass", "")
    part = request.files.get("file")
    try:
        spec = service.import_class(actor, eclass)
    except AppError as error:
        return _upload_page(actor, eclass=eclass, error=error.detail, status=error.status)
    if not isinstance(part, FileStorage) or not part.filename:
        return _upload_page(actor, eclass=eclass, error="Choose a CSV or XLSX file.",
                            status=400)
    filename = clean_filename(part.filename) or "upload"
    received = uploads.receive(part.stream)
    try:
        open_table(received.path, filename)
    except AppError as error:
        uploads.discard(received.path)
        return _upload_page(actor, eclass=eclass, error=error.detail, status=error.status)
    token = uploads.hold(received, owner=actor.author_id, eclass=spec.name, filename=filename)
    return redirect(url_for(".mapping", token=token), 303)


def _pending(actor: Actor, token: str) -> uploads.Pending:
    held = uploads.pending(token, actor.author_id)
    if held is None:
        raise NotFound("This upload is gone (it is kept for a day); upload the file again.")
    return held


@contextmanager
def _file_of(held: uploads.Pending) -> Iterator[uploads.Upload]:
    """The pending upload with a file to read (see :func:`labapp.imports.uploads.held_file`);
    404 when it is gone."""
    with ExitStack() as stack:
        try:
            upload = stack.enter_context(uploads.held_file(held))
        except FileNotFoundError:
            raise NotFound("This upload is gone; upload the file again.") from None
        yield upload


def _mapping_page(actor: Actor, held: uploads.Pending, *, sheet: str | None,
                  chosen: dict[str, str] | None = None, save_as: str | None = None,
                  match: str = "", error: str | None = None, status: int = 200) -> Response:
    spec = service.import_class(actor, held.eclass)
    with _file_of(held) as upload:
        table = open_table(upload.path, held.filename, sheet=sheet or None)
        preset = chosen if chosen is not None else (
            saved.offered(actor, spec, held.filename, table.headers)
            or auto_map(spec, table.headers))
        fields = [(field.name, label_of(field.name)) for field in importable(spec)]
        return render_page(PAGE, status=status, step=2, held=held, spec=spec, table=table,
                           columns=_columns(table, preset), fields=fields, match=match,
                           save_as=saved.source_name(held.filename) if save_as is None
                           else save_as, error=error)


def _columns(table: SourceTable, preset: dict[str, str]) -> list[dict[str, Any]]:
    """Each column with its mapped field and the value of the first data row."""
    first = next(iter(table.rows()), (0, []))[1]
    return [{"index": index, "header": header, "field": preset.get(header, ""),
             "example": "" if index >= len(first) or first[index] is None
             else str(first[index])[:60]}
            for index, header in enumerate(table.headers)]


@bp.get("/map/<token>")
def mapping(token: str) -> Response:
    """Step 2: map each column to a field (``?sheet=`` another sheet of a workbook)."""
    actor = current_actor()
    held = _pending(actor, token)
    try:
        return _mapping_page(actor, held, sheet=request.args.get("sheet"))
    except InvalidInput as error:
        return _mapping_page(actor, held, sheet=None, error=error.detail, status=400)


@bp.post("/map/<token>")
@opens_own_units
def run_dry(token: str) -> BaseResponse:
    """Queue the dry run of the mapped file (and save the mapping when asked)."""
    actor = current_actor()
    held = _pending(actor, token)
    sheet = request.form.get("sheet") or None
    save_as = request.form.get("saveAs", "").strip()
    match = request.form.get("match", "").strip()
    with _file_of(held) as upload:
        table = open_table(upload.path, held.filename, sheet=sheet)
        chosen = {header: request.form.get(f"column-{index}", "")
                  for index, header in enumerate(table.headers)}
        try:
            with transaction():
                job = service.start_import(actor, upload, service.ImportRequest(
                    eclass=held.eclass, filename=held.filename, mapping=chosen,
                    dry_run=True, match=match or None, sheet=sheet))
                if request.form.get("save") == "on" and save_as:
                    saved.save(actor, service.import_class(actor, held.eclass), save_as,
                               job.mapping)
            error = None
        except InvalidInput as refused:
            error = refused.detail
    if error is not None:
        return _mapping_page(actor, held, sheet=sheet, chosen=chosen, save_as=save_as,
                             match=match, error=error, status=400)
    uploads.release(token)
    return redirect(url_for(".job", job_id=job.id), 303)


def _job_context(actor: Actor, job: ImportJob) -> dict[str, Any]:
    errors_only = request.args.get("outcome") == "error"
    skip_text = request.args.get("skip", "")
    skip = int(skip_text) if skip_text.isdigit() else 0
    finished = job.status in ("done", "failed")
    page = service.rows_page(job, top=PAGE_SIZE if finished else 0, skip=skip,
                             outcome="error" if errors_only else None)
    committed = service.commit_of(job) if job.dry_run else None
    written = [] if job.dry_run or job.status != "done" else [
        row for row in service.rows_page(job, top=SHOWN_ENTITIES, skip=0).data
        if row.entity_id and row.outcome in ("create", "update")]
    return {"job": job, "counts": service.counts_of(job), "page": page, "skip": skip,
            "page_size": PAGE_SIZE, "errors_only": errors_only, "finished": finished,
            "committed": committed, "written": written, "poll": POLL,
            "worker": workers.state_of(job),
            "may_commit": (job.dry_run and job.status == "done" and committed is None
                           and not service.counts_of(job)["error"]),
            "list_filter": " or ".join(f"id eq '{row.entity_id}'" for row in written)}


@bp.get("/<job_id>")
def job(job_id: str) -> Response:
    """Steps 3 and 4: the job's progress, then its outcome (block ``job`` for htmx)."""
    actor = current_actor()
    found = service.visible_job(actor, job_id)
    context = _job_context(actor, found)
    return render_page(JOB_PAGE, block="job", **context)


@bp.post("/<job_id>/commit")
def commit(job_id: str) -> BaseResponse:
    """Queue the commit of a dry run and follow it on its own page."""
    committing = service.commit_dry_run(current_actor(), job_id)
    return redirect(url_for(".job", job_id=committing.id), 303)
