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
``<Label> ID``), a stored item's location by its name path and slot. Numbers are exact (not
rounded as the page rounds them). CSV holds text as the page words it: a number with its
unit (``180 µL``), a moment in ISO 8601 UTC. XLSX holds cells to compute with
(:mod:`export_xlsx`, decisions §20): numbers and date cells, a unit in the header or a
column of its own. Text a spreadsheet would run as a formula (starting with ``=``, ``+``,
``-``, ``@``, tab or carriage return) is prefixed with ``'`` in CSV and written as a text
cell in XLSX.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from flask import Response, stream_with_context
from marshmallow import fields
from marshmallow.validate import OneOf
from sqlalchemy import Select, select
from werkzeug.datastructures import MIMEAccept

from labapp.access.actor import Actor
from labapp.access.visibility import readable
from labapp.db import db
from labapp.entities import display, loading, navigation
from labapp.entities.export_xlsx import FORMULA_START, Column, Measure, xlsx_chunks
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
# Rows read, looked up and written at a time.
BATCH = 1000
# Floats up to this size that are whole numbers are written as integers (3, not 3.0).
_WHOLE = 2 ** 53

# A cell's value: CSV's are text and numbers; XLSX's also moments and measures.
Value = str | int | float | datetime | date | Measure
Row = Sequence[Any]
Names = Mapping[str, tuple[str, str]]
Places = Mapping[str, display.Place]
Convert = Callable[[Row, Names, Places], Value]


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
    """One planned export: the statement of the visible rows in list order, the columns,
    one converter per exported column (reading the statement's row by position), and the
    positions of the references and of the storage location the converters look up."""

    spec: ClassSpec
    statement: Select[Any]
    columns: list[Column]
    converters: list[Convert]
    references: list[int]
    place: int | None

    def batches(self, actor: Actor) -> Iterator[list[list[Value]]]:
        """The exported rows, :data:`BATCH` at a time, references and places looked up
        once per batch."""
        result = db.session.execute(self.statement.execution_options(yield_per=BATCH))
        for rows in result.partitions():
            names = loading.visible_names(
                actor, {row[at] for row in rows for at in self.references if row[at]})
            places = {} if self.place is None else navigation.stored_places(
                actor, {row[self.place] for row in rows if row[self.place]})
            yield [[convert(row, names, places) for convert in self.converters]
                   for row in rows]


def plan_export(actor: Actor, spec: ClassSpec, query: Mapping[str, Any], *,
                for_csv: bool = True) -> Export:
    """The export of the list ``query`` describes (``filter``, ``orderby``, ``select``,
    ``top``, ``skip``); without ``select`` the list page's default columns. ``for_csv``
    words values as text and prefixes formula text with ``'``; else numbers with a unit
    are :class:`Measure` values, moments are ``datetime`` (naive UTC) and ``date`` values
    and datetime headers say ``(UTC)``.

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
    if len(selected) < len(wanted) and "attributes" not in selected:
        selected.append("attributes")
    at = {name: position for position, name in enumerate(selected)}
    columns = [getattr(spec.model, spec.fields[name].stored_attr) for name in selected]
    statement = (select(*columns).where(readable(actor, spec.model), condition)
                 .order_by(*order))
    if query.get("top") not in (None, ""):
        statement = statement.limit(paging_value("$top", query["top"]))
    if query.get("skip") not in (None, ""):
        statement = statement.offset(paging_value("$skip", query["skip"]))
    columns, converters = [Column("ID")], [_text(at["id"], for_csv)]
    references: list[int] = []
    for name in shown:
        field = spec.fields.get(name)
        column = Column(label_of(name))
        if field is None:  # attributes.key
            converters.append(_attribute(at["attributes"], name.split(".", 1)[1], for_csv))
        elif display.is_place(spec, name):
            converters.append(_place(at[name], at.get(display.SLOT_FIELD), for_csv))
        elif field.type == "ref":
            converters.append(_reference(at[name], for_csv))
            references.append(at[name])
        elif field.type in ("datetime", "date"):
            converters.append(_moment(at[name], for_csv))
            if field.type == "datetime" and not for_csv:
                column = Column(f"{column.header} (UTC)")
        else:
            unit = display.unit_field(spec, name)
            converters.append(_value(at[name], at.get(unit or ""), for_csv))
            if unit and not for_csv:
                # Beside the numbers when they have several units, unless shown already.
                column = Column(column.header, None if unit in shown else label_of(unit))
        columns.append(column)
        if field is not None and field.type == "ref":
            columns.append(Column(f"{label_of(name)} ID"))
            converters.append(_text(at[name], for_csv))
    place = next((at[name] for name in shown if display.is_place(spec, name)), None)
    return Export(spec, statement, columns, converters, references, place)


def _guarded(text: str, for_csv: bool) -> str:
    """``text`` with ``'`` before a formula's first character when written to CSV."""
    return f"'{text}" if for_csv and text[:1] in FORMULA_START else text


def _number(value: Any, unit: Any, for_csv: bool) -> str | int | float:
    """A number exactly (a whole float as an integer), with its unit as text when it has
    one; any other value as one line of text."""
    if type(value) is float and value.is_integer() and abs(value) < _WHOLE:
        value = int(value)
    elif type(value) not in (int, float):
        return _guarded(display.text(value), for_csv)
    return _guarded(f"{value} {unit}", for_csv) if unit else value


def _text(at: int, for_csv: bool) -> Convert:
    def text(row: Row, names: Names, places: Places) -> Value:
        value = row[at]
        if value is None:
            return ""
        return _guarded(value if type(value) is str else display.text(value), for_csv)
    return text


def _value(at: int, unit_at: int | None, for_csv: bool) -> Convert:
    """A field's value; a number with its unit as text for CSV, as a :class:`Measure` for
    XLSX when the field has a unit field."""
    def value(row: Row, names: Names, places: Places) -> Value:
        shown = row[at]
        if shown is None:
            return ""
        if type(shown) is str:
            return _guarded(shown, for_csv)
        unit = None if unit_at is None else row[unit_at]
        if for_csv or unit_at is None:
            return _number(shown, unit, for_csv)
        number = _number(shown, None, for_csv)
        return number if isinstance(number, str) else Measure(number, unit or None)
    return value


def _attribute(at: int, key: str, for_csv: bool) -> Convert:
    def attribute(row: Row, names: Names, places: Places) -> Value:
        shown = (row[at] or {}).get(key)
        return "" if shown is None else _number(shown, None, for_csv)
    return attribute


def _moment(at: int, for_csv: bool) -> Convert:
    """A datetime or date: ISO 8601 text for CSV (UTC, ``…Z``), the value for XLSX (a
    datetime in UTC without its zone, to the second, which a spreadsheet cannot hold)."""
    def moment(row: Row, names: Names, places: Places) -> Value:
        value = row[at]
        if value is None:
            return ""
        if not isinstance(value, datetime):
            day: date = value
            return day.isoformat() if for_csv else day
        if for_csv:
            # display.iso's text, without strftime (the slowest step of a row)
            return f"{value.astimezone(UTC).isoformat(timespec='seconds')[:19]}Z"
        return value.astimezone(UTC).replace(tzinfo=None, microsecond=0)
    return moment


def _reference(at: int, for_csv: bool) -> Convert:
    """The target's name, its id when the caller may not see it (as the page shows it)."""
    def reference(row: Row, names: Names, places: Places) -> Value:
        target = row[at]
        if target is None:
            return ""
        return _guarded((names[target][1] or target) if target in names else target, for_csv)
    return reference


def _place(at: int, slot_at: int | None, for_csv: bool) -> Convert:
    """Where a stored item is: the location's name path and the slot (its id if unknown)."""
    def place(row: Row, names: Names, places: Places) -> Value:
        location = row[at]
        if location is None:
            return ""
        known = places.get(location)
        slot = None if slot_at is None else row[slot_at]
        if known is None:
            return _guarded(location, for_csv)
        return _guarded(f"{known.path} · {slot}" if slot else known.path, for_csv)
    return place


def csv_chunks(export: Export, actor: Actor) -> Iterator[bytes]:
    """The CSV file (UTF-8 with a byte order mark, so spreadsheets read it as UTF-8), one
    chunk per batch of rows."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    buffer.write("\ufeff")
    writer.writerow([_guarded(column.header, True) for column in export.columns])
    for batch in export.batches(actor):
        writer.writerows(batch)  # guarded by the converters of a CSV plan
        yield buffer.getvalue().encode("utf-8")
        buffer.seek(0)
        buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue().encode("utf-8")


def export_response(actor: Actor, spec: ClassSpec, query: Mapping[str, Any],
                    file_format: str) -> Response:
    """The streamed download of the list ``query`` describes as ``file_format`` (``csv`` or
    ``xlsx``), named ``<Class>-<YYYYMMDD>.<format>``. Raises InvalidInput for a bad query,
    before anything is sent."""
    export = plan_export(actor, spec, query, for_csv=file_format == "csv")
    chunks = csv_chunks(export, actor) if file_format == "csv" else xlsx_chunks(
        export.spec.name, export.columns, export.batches(actor))
    mimetype = f"{CSV}; charset=utf-8" if file_format == "csv" else XLSX
    response = Response(stream_with_context(chunks), content_type=mimetype)
    filename = f"{spec.name}-{datetime.now(UTC):%Y%m%d}.{file_format}"
    response.headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    response.headers["Cache-Control"] = "no-store"
    return response
