"""Lists as spreadsheets: the entities of a class as CSV or XLSX, as the list page shows them.

``GET /api/entity/{eClass}`` answers with a download when ``$format`` is ``csv`` or ``xlsx``
or the ``Accept`` header prefers ``text/csv`` or the XLSX media type; the list page's Export
links ask for it with the page's ``$filter``, ``$orderby`` and columns (``$select``). The
rows are those of the same list query (the visibility rule and the same ``$filter`` and
``$orderby`` parsers), so a bad ``$filter`` is the same 400 as the list's, raised before the
first byte is sent.

Memory stays flat however long the list: rows are read in batches of :data:`BATCH` from one
streamed result (a server-side cursor on PostgreSQL), the reference names and storage paths of
a batch are looked up once per batch, CSV goes out a batch at a time and XLSX is written by
openpyxl's write-only workbook to a temporary file that is then sent in chunks.

Columns are the list's: the id, then each field under its label (:func:`label_of`) with the
value the page shows: a reference by the name of its target (its id in a column beside it,
``<Label> ID``), a stored item's location by its name path and slot, a number with its unit.
A number without a unit is exported exactly (a number cell in XLSX). Text a spreadsheet would
run as a formula (starting with ``=``, ``+``, ``-``, ``@``, tab or carriage return) is
prefixed with ``'`` in CSV and written as a text cell in XLSX.
"""
from __future__ import annotations

import csv
import io
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from flask import Response, stream_with_context
from marshmallow import fields
from marshmallow.validate import OneOf
from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from openpyxl.worksheet._write_only import WriteOnlyWorksheet
from sqlalchemy import Select, select
from werkzeug.datastructures import MIMEAccept

from labapp.access.actor import Actor
from labapp.access.visibility import readable
from labapp.db import db
from labapp.entities import display, navigation, reading
from labapp.entities.forms import label_of
from labapp.entities.schemas import EntityQuerySchema
from labapp.entities.views import default_columns
from labapp.model.registry import ClassSpec
from labapp.query.fields import entity_fields
from labapp.query.filter import compile_filter
from labapp.query.listing import paging_value, parse_orderby, parse_select

JSON = "application/json"
CSV = "text/csv"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
MEDIA_TYPES = {"csv": CSV, "xlsx": XLSX}
# The downloads as the OpenAPI document shows them beside the JSON page.
DOWNLOADS = {
    CSV: {"type": "string", "description": "The list as CSV (UTF-8 with a byte order mark); "
                                           "first row the column labels."},
    XLSX: {"type": "string", "format": "binary",
           "description": "The list as one XLSX sheet; first row the column labels."},
}
# Rows read, looked up and written at a time; bytes of the XLSX file sent at a time.
BATCH = 1000
CHUNK = 64 * 1024
# What a spreadsheet would take as the start of a formula (OWASP "CSV injection").
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")

Value = str | int | float
Names = Mapping[str, tuple[str, str]]
Places = Mapping[str, display.Place]
Convert = Callable[[Mapping[str, Any], Names, Places], Value]


class EntityExportQuerySchema(EntityQuerySchema):
    """The list's OData options and ``$format`` (``json``, ``csv`` or ``xlsx``)."""

    format = fields.String(data_key="$format", validate=OneOf(("json", *MEDIA_TYPES)))


def wanted_format(requested: str | None, accept: MIMEAccept) -> str | None:
    """``csv`` or ``xlsx`` when the request asks for a spreadsheet, None for JSON.

    ``$format`` wins over ``Accept``; of the media types the caller accepts equally, JSON
    comes first (a browser's ``*/*`` gets JSON).
    """
    if requested:
        return None if requested == "json" else requested
    best = accept.best_match([JSON, CSV, XLSX])
    return next((name for name, media in MEDIA_TYPES.items() if media == best), None)


@dataclass(frozen=True)
class Export:
    """One planned export: the statement of the visible rows in list order, the names of
    its columns, the headers and one converter per exported column."""

    spec: ClassSpec
    statement: Select[Any]
    selected: list[str]
    attribute_keys: list[str]
    shown: list[str]
    headers: list[str]
    converters: list[Convert]

    def batches(self, actor: Actor) -> Iterator[list[list[Value]]]:
        """The exported rows, :data:`BATCH` at a time, references and places looked up
        once per batch."""
        result = db.session.execute(self.statement.execution_options(yield_per=BATCH))
        for partition in result.partitions():
            rows = [dict(zip(self.selected, row, strict=True)) for row in partition]
            for row in rows:
                attributes = row.get("attributes") or {}
                for key in self.attribute_keys:
                    row[key] = attributes.get(key.split(".", 1)[1])
            names = reading.visible_names(
                actor, display.referenced_ids(self.spec, rows, self.shown))
            places = navigation.stored_places(
                actor, display.place_ids(self.spec, rows, self.shown))
            yield [[convert(row, names, places) for convert in self.converters]
                   for row in rows]


def plan_export(actor: Actor, spec: ClassSpec, query: Mapping[str, Any]) -> Export:
    """The export of the list ``query`` describes (``filter``, ``orderby``, ``select``,
    ``top``, ``skip``); without ``select`` the list page's default columns.

    Raises InvalidInput (``invalid_filter``, ``invalid_orderby``, ``invalid_select``,
    ``invalid_paging``) exactly as the list does.
    """
    source = entity_fields(spec)
    # The page's links carry its empty options too: empty means absent, as on the page.
    condition = compile_filter(query.get("filter") or None, source, user_id=actor.user_id)
    order = parse_orderby(query.get("orderby") or None, source, spec.model.id.asc())
    shown = [name for name in parse_select(query.get("select") or None, source, always=())
             if name != "id"] or list(default_columns(spec))
    companions = [extra for name in shown if (extra := display.companion_field(spec, name))]
    wanted = list(dict.fromkeys(["id", *shown, *companions]))
    selected = [name for name in wanted if not name.startswith("attributes.")]
    attribute_keys = [name for name in wanted if name.startswith("attributes.")]
    if attribute_keys and "attributes" not in selected:
        selected.append("attributes")
    columns = [getattr(spec.model, spec.fields[name].stored_attr) for name in selected]
    statement = (select(*columns).where(readable(actor, spec.model), condition)
                 .order_by(*order))
    if query.get("top") not in (None, ""):
        statement = statement.limit(paging_value("$top", query["top"]))
    if query.get("skip") not in (None, ""):
        statement = statement.offset(paging_value("$skip", query["skip"]))
    headers, converters = ["ID"], [_plain("id")]
    for name in shown:
        headers.append(label_of(name))
        converters.append(_converter(spec, name))
        if name in spec.fields and spec.fields[name].type == "ref":
            headers.append(f"{label_of(name)} ID")
            converters.append(_plain(name))
    return Export(spec, statement, selected, attribute_keys, shown, headers, converters)


def _plain(name: str) -> Convert:
    return lambda row, names, places: display.text(row.get(name), exact=True)


def _converter(spec: ClassSpec, name: str) -> Convert:
    """How the cell of field ``name`` is exported, as the list page's cell shows it."""
    if display.is_place(spec, name):
        def place(row: Mapping[str, Any], names: Names, places: Places) -> Value:
            location = row.get(name)
            if location is None:
                return ""
            known = places.get(location)
            slot = row.get(display.SLOT_FIELD)
            if known is None:
                return str(location)
            return f"{known.path} · {slot}" if slot else known.path
        return place
    field = spec.fields.get(name)
    if field is not None and field.type == "ref":
        def reference(row: Mapping[str, Any], names: Names, places: Places) -> Value:
            target = row.get(name)
            if target is None:
                return ""
            return (names[target][1] or target) if target in names else str(target)
        return reference
    unit = display.unit_field(spec, name) or ""

    def value(row: Mapping[str, Any], names: Names, places: Places) -> Value:
        shown = row.get(name)
        if isinstance(shown, int | float) and not isinstance(shown, bool):
            measured = row.get(unit)
            return f"{display.text(shown)} {measured}" if measured else shown
        return display.text(shown)
    return value


def _csv_text(value: Value) -> Value:
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return f"'{value}"
    if isinstance(value, float) and value.is_integer():
        return int(value)  # 3, not the float's 3.0, as XLSX shows it
    return value


def csv_chunks(export: Export, actor: Actor) -> Iterator[bytes]:
    """The CSV file (UTF-8 with a byte order mark, so spreadsheets read it as UTF-8), one
    chunk per batch of rows."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    buffer.write("\ufeff")
    writer.writerow([_csv_text(header) for header in export.headers])
    for batch in export.batches(actor):
        writer.writerows([_csv_text(value) for value in row] for row in batch)
        yield buffer.getvalue().encode("utf-8")
        buffer.seek(0)
        buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue().encode("utf-8")


def _xlsx_row(sheet: WriteOnlyWorksheet, row: Sequence[Value]) -> list[Any]:
    cells: list[Any] = []
    for value in row:
        if isinstance(value, str):
            value = ILLEGAL_CHARACTERS_RE.sub("", value)
            if value.startswith(_FORMULA_START):
                text_cell = WriteOnlyCell(sheet, value=value)
                text_cell.data_type = "s"  # never a formula, whatever it starts with
                cells.append(text_cell)
                continue
        cells.append(value)
    return cells


def xlsx_chunks(export: Export, actor: Actor) -> Iterator[bytes]:
    """The XLSX workbook (one sheet named after the class), built by openpyxl's write-only
    workbook in a temporary file and sent in chunks of :data:`CHUNK` bytes."""
    workbook = Workbook(write_only=True)
    sheet = workbook.create_sheet(export.spec.name)
    sheet.append(_xlsx_row(sheet, export.headers))
    for batch in export.batches(actor):
        for row in batch:
            sheet.append(_xlsx_row(sheet, row))
    with tempfile.TemporaryFile() as spool:
        workbook.save(spool)
        spool.seek(0)
        while chunk := spool.read(CHUNK):
            yield chunk


def export_response(actor: Actor, spec: ClassSpec, query: Mapping[str, Any],
                    file_format: str) -> Response:
    """The streamed download of the list ``query`` describes as ``file_format`` (``csv`` or
    ``xlsx``), named ``<Class>-<YYYYMMDD>.<format>``. Raises InvalidInput for a bad query,
    before anything is sent."""
    export = plan_export(actor, spec, query)
    chunks = csv_chunks(export, actor) if file_format == "csv" else xlsx_chunks(export, actor)
    mimetype = f"{CSV}; charset=utf-8" if file_format == "csv" else XLSX
    response = Response(stream_with_context(chunks), content_type=mimetype)
    filename = f"{spec.name}-{datetime.now(UTC):%Y%m%d}.{file_format}"
    response.headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    response.headers["Cache-Control"] = "no-store"
    return response
