"""Import jobs (issue 22): start one from an upload, find it, show it, commit a dry run.

What a request can check without reading the rows it checks before anything is written:
the class and the right to create in it, that the file opens and has headers (and the sheet
exists), the mapping, the match field. A rejected upload leaves no job and no stored file.
The rows themselves are read by the worker (:mod:`labapp.imports.jobs`). A job is seen by
its owner and ADMIN only; to anyone else it does not exist (404).
"""
from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from labapp.access.actor import Actor
from labapp.access.policy import may_create_class
from labapp.db import after_rollback, db
from labapp.errors import Conflict, Forbidden, InvalidInput, NotFound
from labapp.imports import saved, uploads, workers
from labapp.imports.mapping import auto_map, check_mapping
from labapp.imports.spreadsheets import SourceTable, open_table
from labapp.model import ImportJob, ImportRow
from labapp.model.imports import ROW_OUTCOMES
from labapp.model.registry import ClassSpec, find_class
from labapp.model.types import utc_now

# Files are made by uploading content; a spreadsheet row has none.
NOT_IMPORTABLE = frozenset({"File"})
# Classes whose creation needs a role, not write access to a department or project.
_BY_ROLE = frozenset({"Department", "Project", "User"})


def may_import(actor: Actor, spec: ClassSpec) -> bool:
    """Whether the actor may import into ``spec``: they may create its entities somewhere."""
    if spec.name in NOT_IMPORTABLE or not may_create_class(actor, spec.name):
        return False
    return (spec.name in _BY_ROLE or actor.is_admin
            or bool(actor.write_departments or actor.write_projects))


def import_class(actor: Actor, name: str) -> ClassSpec:
    """The class called ``name`` if the actor may import into it: 400 ``unknown_class`` for
    a class the model lacks, 403 when the actor may not create its entities."""
    spec = find_class(name)
    if spec is None:
        raise InvalidInput(f"The data model has no entity class {name!r}.",
                           code="unknown_class",
                           errors=[{"field": "eClass", "message": "unknown class"}])
    if not may_import(actor, spec):
        raise Forbidden(f"You may not import {spec.name} entities.")
    return spec


@dataclass(frozen=True)
class ImportRequest:
    """What an upload asks for: ``mapping`` is ``{column: field}``, the name of a saved
    mapping, or None (the saved mapping of the file's source name, else the automatic one)."""

    eclass: str
    filename: str
    mapping: Mapping[str, str] | str | None = None
    dry_run: bool = True
    match: str | None = None
    sheet: str | None = None


def resolve_mapping(actor: Actor, spec: ClassSpec, table: SourceTable,
                    mapping: Mapping[str, str] | str | None) -> dict[str, str]:
    """The checked ``{column: field}`` mapping a request asks for (see :class:`ImportRequest`);
    InvalidInput ``invalid_mapping`` when it does not fit the file or the class."""
    if isinstance(mapping, str):
        chosen: Mapping[str, str] = saved.named(actor, spec, mapping)
    elif mapping is None:
        chosen = (saved.offered(actor, spec, table.filename, table.headers)
                  or auto_map(spec, table.headers))
    else:
        chosen = mapping
    checked = check_mapping(spec, table.headers, chosen)
    if not checked:
        raise InvalidInput("No column is mapped to a field: map at least one.",
                           code="invalid_mapping",
                           errors=[{"field": "mapping", "message": "nothing mapped"}])
    return checked


def _match_field(spec: ClassSpec, match: str | None, mapping: Mapping[str, str]) -> str | None:
    """The field rows are matched by (as the engine's plan checks it): a stored field that
    is no reference nor JSON, with a column mapped to it. InvalidInput ``invalid_match``."""
    if not match:
        return None
    field = spec.field(match)
    if field is None or field.attr is None or field.type in ("json", "ref"):
        raise InvalidInput(f"{spec.name} has no field {match!r} to match rows by.",
                           code="invalid_match",
                           errors=[{"field": "match", "message": "unknown field"}])
    if field.name not in mapping.values():
        raise InvalidInput(f"Rows are matched by {field.name}, but no column is mapped to it.",
                           code="invalid_match",
                           errors=[{"field": "match", "message": "no column is mapped to it"}])
    return field.name


def start_import(actor: Actor, upload: uploads.Upload, request: ImportRequest) -> ImportJob:
    """Queue the import of a received upload; runs in the caller's transaction, which keeps
    the upload (it is removed again when the transaction rolls back). Raises as
    :func:`import_class`, :func:`resolve_mapping` and :func:`open_table` do
    (``import_rejected`` for a file that cannot be read, is empty or has no header)."""
    spec = import_class(actor, request.eclass)
    table = open_table(upload.path, request.filename, sheet=request.sheet or None)
    mapping = resolve_mapping(actor, spec, table, request.mapping)
    job = ImportJob(id=uuid.uuid4().hex, owner_id=actor.author_id, eclass=spec.name,
                    filename=request.filename, sha256=upload.sha256, size=upload.size,
                    sheet=table.sheet if table.kind == "xlsx" else None, mapping=mapping,
                    match=_match_field(spec, request.match, mapping), dry_run=request.dry_run,
                    status="queued", counts={}, progress_done=0,
                    progress_total=table.row_count, created_utc=utc_now(),
                    upload="")
    job.upload = uploads.keep(upload, job.id)
    after_rollback(lambda: uploads.discard(job.upload))
    db.session.add(job)
    db.session.flush()
    return job


def visible_job(actor: Actor, job_id: str) -> ImportJob:
    """The job ``job_id`` if the actor owns it or is ADMIN; 404 otherwise."""
    job = db.session.get(ImportJob, job_id) if len(job_id) <= 32 else None
    if job is None or not (actor.is_admin or job.owner_id == actor.user_id):
        raise NotFound(f"There is no import {job_id!r}.")
    return job


def counts_of(job: ImportJob) -> dict[str, int]:
    """The job's number of rows of each outcome (all 0 before the plan is made)."""
    return {outcome: int(job.counts.get(outcome, 0)) for outcome in ROW_OUTCOMES}


def row_to_api(row: ImportRow) -> dict[str, Any]:
    """One row's outcome as the API shows it."""
    shown: dict[str, Any] = {"row": row.row, "outcome": row.outcome, "errors": list(row.errors)}
    if row.entity_id is not None:
        shown["entityID"] = row.entity_id
    return shown


@dataclass(frozen=True)
class RowsPage:
    """One page of a job's row outcomes."""

    data: list[ImportRow]
    total: int
    next_skip: int | None


def rows_page(job: ImportJob, *, top: int, skip: int, outcome: str | None = None) -> RowsPage:
    """Rows ``skip`` to ``skip + top`` of the job's outcomes by row number (of one
    ``outcome`` when given)."""
    where = [ImportRow.job_id == job.id]
    if outcome:
        where.append(ImportRow.outcome == outcome)
    total = db.session.scalar(select(func.count()).select_from(ImportRow).where(*where)) or 0
    data = list(db.session.scalars(select(ImportRow).where(*where).order_by(ImportRow.row)
                                   .limit(top).offset(skip))) if top else []
    following = skip + len(data)
    return RowsPage(data, total, following if top and following < total else None)


def job_to_api(job: ImportJob, page: RowsPage | None = None) -> dict[str, Any]:
    """A job as ``GET /api/import/{id}`` shows it (``rows`` when a page is given)."""
    shown: dict[str, Any] = {
        "id": job.id, "status": job.status, "eClass": job.eclass, "dryRun": job.dry_run,
        "filename": job.filename, "sha256": job.sha256, "size": job.size,
        "sheet": job.sheet, "mapping": dict(job.mapping), "match": job.match,
        "counts": counts_of(job),
        "progress": {"done": job.progress_done, "total": job.progress_total},
        "error": job.error, "ownerID": job.owner_id, "dryRunID": job.dry_run_id,
        "createdUtc": job.created_utc, "startedUtc": job.started_utc,
        "finishedUtc": job.finished_utc, "worker": _worker_to_api(job)}
    if page is not None:
        shown["rows"] = {"data": [row_to_api(row) for row in page.data],
                         "total": page.total, "nextSkip": page.next_skip}
    return shown


def _worker_to_api(job: ImportJob) -> dict[str, Any] | None:
    state = workers.state_of(job)
    return None if state is None else {"alive": state.alive, "message": state.message}


def commit_of(job: ImportJob) -> ImportJob | None:
    """The job committing the dry run ``job``, if one was started."""
    return db.session.scalars(select(ImportJob).where(ImportJob.dry_run_id == job.id)).first()


def commit_dry_run(actor: Actor, job_id: str) -> ImportJob:
    """Queue the commit of a finished dry run without errors, as a new job of the actor on
    the same file, mapping and options; the job already committing it when there is one
    (so a repeated request imports once). 404 as :func:`visible_job`; 409 for a job that
    is not a dry run, not done, or has row errors; 403 as :func:`import_class`."""
    dry_run = visible_job(actor, job_id)
    existing = commit_of(dry_run)
    if existing is not None:
        return existing
    if not dry_run.dry_run:
        raise Conflict(f"Import {job_id} is not a dry run; it was committed as it ran.")
    if dry_run.status != "done":
        raise Conflict(f"The dry run {job_id} is {dry_run.status}; commit it once it is done.")
    errors = counts_of(dry_run)["error"]
    if errors:
        raise Conflict(f"The dry run found {errors} rows with errors; correct the file and "
                       "import it again.")
    spec = import_class(actor, dry_run.eclass)
    job = ImportJob(id=uuid.uuid4().hex, owner_id=actor.author_id, eclass=spec.name,
                    filename=dry_run.filename, sha256=dry_run.sha256, size=dry_run.size,
                    sheet=dry_run.sheet, mapping=dict(dry_run.mapping), match=dry_run.match,
                    dry_run=False, status="queued", counts={}, progress_done=0,
                    progress_total=dry_run.progress_total, created_utc=utc_now(),
                    dry_run_id=dry_run.id, upload="")
    try:
        job.upload = uploads.share(dry_run.upload, dry_run.sha256, job.id)
    except FileNotFoundError:
        raise Conflict(f"The file of dry run {job_id} is no longer stored; upload it "
                       "again.") from None
    after_rollback(lambda: uploads.discard(job.upload))
    db.session.add(job)
    db.session.flush()
    return job


@contextmanager
def job_table(job: ImportJob) -> Iterator[SourceTable]:
    """The table of the job's stored file, as the job read it, for the block (with the
    database store the file is a temporary copy on this host, removed after the block);
    404 when the file is gone."""
    with ExitStack() as stack:
        try:
            path = stack.enter_context(uploads.opened(job.upload, job.sha256))
        except FileNotFoundError:
            raise NotFound(f"The file of import {job.id} is no longer stored.") from None
        yield open_table(path, job.filename, sheet=job.sheet)
