"""``/api/import``: the upload form, the job's query options and the job as shown
(decisions §15)."""
from __future__ import annotations

import json
from typing import Any

from marshmallow import Schema, ValidationError, fields, post_load, pre_load, validate
from werkzeug.datastructures import FileStorage

from labapp.files.service import clean_filename
from labapp.model.imports import JOB_STATUSES, ROW_OUTCOMES
from labapp.schemafields import UtcTimestamp

DEFAULT_TOP = 100
MAX_TOP = 1000
_BOOLEANS = {"true": True, "1": True, "yes": True, "on": True,
             "false": False, "0": False, "no": False, "off": False}


class FilePart(fields.Field[Any]):
    """A ``multipart/form-data`` file part with a file name."""

    def _deserialize(self, value: Any, attr: str | None, data: Any,
                     **kwargs: Any) -> FileStorage:
        if not isinstance(value, FileStorage) or not value.filename:
            raise ValidationError("expected a file part with a file name")
        return value


class FormBoolean(fields.Field[bool]):
    """``true``/``false`` (also 1/0, yes/no, on/off) as a form sends it."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> bool:
        found = _BOOLEANS.get(str(value).strip().lower())
        if found is None:
            raise ValidationError("expected true or false")
        return found


class MappingText(fields.Field[Any]):
    """A JSON object ``{column: field}``, or else the name of a saved mapping."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        text = str(value).strip()
        if not text.startswith("{"):
            if len(text) > 255:
                raise ValidationError("a saved mapping's name has at most 255 characters")
            return text
        try:
            mapping = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValidationError(f"is not a JSON object: {error}") from None
        if not isinstance(mapping, dict) or not all(
                isinstance(column, str) and isinstance(target, str | None)
                for column, target in mapping.items()):
            raise ValidationError("expected a JSON object of column names to field names")
        return {column: target or "" for column, target in mapping.items()}


class ImportFormSchema(Schema):
    """``POST /api/import`` (``multipart/form-data``). Blank optional fields count as
    absent."""

    file = FilePart(required=True, metadata={"type": "string", "format": "binary",
                                             "description": "CSV or XLSX"})
    eClass = fields.String(required=True, validate=validate.Length(min=1, max=64))
    mapping = MappingText(metadata={
        "type": "string", "maxLength": 100000,
        "description": "a JSON object {column: field} (field '' or null: not imported; "
                       "attributes.<key>: a free attribute), or the name of a saved "
                       "mapping; absent: the mapping saved for the file's source name, "
                       "else the automatic one"})
    dryRun = FormBoolean(load_default=True, metadata={
        "type": "string", "enum": ["true", "false"], "description": "default true"})
    match = fields.String(validate=validate.Length(max=64), metadata={
        "description": "a unique field that finds the entity a row updates (besides id "
                       "and barcode)"})
    sheet = fields.String(validate=validate.Length(max=255),
                          metadata={"description": "the sheet of an XLSX workbook "
                                                   "(default: the first)"})

    @pre_load
    def _drop_blank(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {key: value for key, value in data.items()
                if not (isinstance(value, str) and not value.strip())}

    @post_load
    def _complete(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        part: FileStorage = data["file"]
        name = clean_filename(part.filename or "")
        if not name:
            raise ValidationError("the file name of the upload is not usable", "file")
        return {**data, "filename": name}


class JobQuerySchema(Schema):
    """``GET /api/import/{id}``: a page of the row outcomes."""

    top = fields.String(data_key="$top", load_default=None, metadata={
        "pattern": "^[0-9]*$", "description": f"rows per page (default {DEFAULT_TOP}, "
                                              f"at most {MAX_TOP})"})
    skip = fields.String(data_key="$skip", load_default=None,
                         metadata={"pattern": "^[0-9]*$"})
    outcome = fields.String(load_default=None, validate=validate.OneOf(ROW_OUTCOMES))


class DownloadQuerySchema(Schema):
    """The format of a download."""

    format = fields.String(load_default="csv", validate=validate.OneOf(("csv", "xlsx")))


class CellErrorSchema(Schema):
    column = fields.String(required=True, allow_none=True)
    message = fields.String(required=True)


class RowOutcomeSchema(Schema):
    row = fields.Integer(required=True)
    outcome = fields.String(required=True, validate=validate.OneOf(ROW_OUTCOMES))
    entityID = fields.String()
    errors = fields.List(fields.Nested(CellErrorSchema), required=True)


class RowsSchema(Schema):
    data = fields.List(fields.Nested(RowOutcomeSchema), required=True)
    total = fields.Integer(required=True)
    nextSkip = fields.Integer(required=True, allow_none=True)


class CountsSchema(Schema):
    create = fields.Integer(required=True)
    update = fields.Integer(required=True)
    unchanged = fields.Integer(required=True)
    error = fields.Integer(required=True)


class ProgressSchema(Schema):
    done = fields.Integer(required=True)
    total = fields.Integer(required=True, allow_none=True)


class WorkerStateSchema(Schema):
    """Whether a worker runs an unfinished job (``worker`` is null once it is done or
    failed)."""

    alive = fields.Boolean(required=True, allow_none=True, metadata={
        "description": "queued: whether any worker runs to take the job; running: whether "
                       "the worker running it is alive; null when that cannot be told (a "
                       "worker of another host)"})
    message = fields.String(required=True, allow_none=True, metadata={
        "description": "what the user should know when no worker will take or finish the "
                       "job (and how to start one), else null"})


class JobStartedSchema(Schema):
    """The answer to starting an import: poll ``GET /api/import/{id}``."""

    id = fields.String(required=True)
    status = fields.String(required=True, validate=validate.OneOf(JOB_STATUSES))


class JobSchema(JobStartedSchema):
    """An import job with a page of its rows' outcomes."""

    eClass = fields.String(required=True)
    dryRun = fields.Boolean(required=True)
    filename = fields.String(required=True)
    sha256 = fields.String(required=True)
    size = fields.Integer(required=True)
    sheet = fields.String(required=True, allow_none=True)
    mapping = fields.Dict(keys=fields.String(), values=fields.String(), required=True)
    match = fields.String(required=True, allow_none=True)
    counts = fields.Nested(CountsSchema, required=True)
    progress = fields.Nested(ProgressSchema, required=True)
    error = fields.String(required=True, allow_none=True)
    ownerID = fields.String(required=True)
    dryRunID = fields.String(required=True, allow_none=True, metadata={
        "description": "the dry run this job commits"})
    createdUtc = UtcTimestamp(required=True)
    startedUtc = UtcTimestamp(required=True, allow_none=True)
    finishedUtc = UtcTimestamp(required=True, allow_none=True)
    worker = fields.Nested(WorkerStateSchema, required=True, allow_none=True)
    rows = fields.Nested(RowsSchema, required=True)
