"""The files an import hands out: a job's annotated file and a class's template.

Both are written by :mod:`labapp.imports.annotated`; this module turns them into responses.
XLSX is built in a temporary file that is unlinked at once and sent from its open handle, so
nothing is left behind whatever happens to the download.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path, PurePath
from typing import BinaryIO
from urllib.parse import quote

from flask import Response
from sqlalchemy import select

from labapp.db import db
from labapp.errors import Conflict
from labapp.imports import service, uploads
from labapp.imports.annotated import annotated_csv, annotated_xlsx, template_csv, template_xlsx
from labapp.imports.engine import CellError, RowOutcome
from labapp.model import ImportJob, ImportRow
from labapp.model.registry import ClassSpec

CHUNK = 64 * 1024
CSV = "text/csv"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
MEDIA = {
    CSV: {"type": "string", "description": "CSV (UTF-8 with a byte order mark; an annotated "
                                           "file keeps the uploaded file's delimiter)"},
    XLSX: {"type": "string", "format": "binary", "description": "one XLSX sheet"},
}


def outcomes_of(job: ImportJob) -> list[RowOutcome]:
    """The stored outcome of each of the job's rows, by row number."""
    rows = db.session.scalars(select(ImportRow).where(ImportRow.job_id == job.id)
                              .order_by(ImportRow.row))
    return [RowOutcome(row.row, row.outcome, row.entity_id,  # type: ignore[arg-type]
                       [CellError(error.get("column"), error.get("message", ""))
                        for error in row.errors]) for row in rows]


def _attachment(response: Response, name: str) -> Response:
    response.headers["Content-Disposition"] = f"attachment; filename*=UTF-8''{quote(name, safe='')}"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.cache_control.private = True
    return response


def _encoded(chunks: Iterator[str]) -> Iterator[bytes]:
    for chunk in chunks:
        yield chunk.encode("utf-8")


def _sent(handle: BinaryIO) -> Iterator[bytes]:
    """The content of an open file, read in chunks; closed at the end."""
    try:
        while chunk := handle.read(CHUNK):
            yield chunk
    finally:
        handle.close()


def _xlsx_response(write: Callable[[Path], None], name: str) -> Response:
    """Send the XLSX file ``write(path)`` makes."""
    descriptor, path = tempfile.mkstemp(suffix=".xlsx", dir=uploads.folder(),
                                        prefix=".download-")
    os.close(descriptor)
    try:
        write(Path(path))
        handle = open(path, "rb")  # noqa: SIM115 - closed by _sent
        size = os.fstat(handle.fileno()).st_size
    finally:
        os.unlink(path)
    response = Response(_sent(handle), mimetype=XLSX)
    response.headers["Content-Length"] = str(size)
    return _attachment(response, name)


def annotated(job: ImportJob, file_format: str) -> Response:
    """The job's file with each row's outcome; 409 until the outcomes are known."""
    if job.status in ("queued", "running"):
        raise Conflict(f"The rows of import {job.id} are not read yet; try again when it "
                       "is done.")
    if not job.counts:
        raise Conflict(f"Import {job.id} failed before its rows were read: {job.error}")
    outcomes = outcomes_of(job)
    stem = PurePath(job.filename).stem or "import"
    if file_format == "xlsx":
        with service.job_table(job) as table:
            return _xlsx_response(lambda path: annotated_xlsx(table, outcomes, path),
                                  f"{stem}-annotated.xlsx")
    # The rows are read as the response is sent: the file (a temporary copy with the
    # database store) goes when the response is closed.
    stack = ExitStack()
    table = stack.enter_context(service.job_table(job))
    response = Response(_encoded(annotated_csv(table, outcomes)), mimetype=CSV)
    response.call_on_close(stack.close)
    return _attachment(response, f"{stem}-annotated.csv")


def template(spec: ClassSpec, file_format: str) -> Response:
    """The import template of a class."""
    if file_format == "xlsx":
        return _xlsx_response(lambda path: template_xlsx(spec, path),
                              f"{spec.name}-import.xlsx")
    return _attachment(Response(template_csv(spec), mimetype=CSV), f"{spec.name}-import.csv")
