"""Files an import gives back: the original rows annotated with their outcome and errors,
and an empty template of a class (headers by label and one example row).

Every cell written here that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return is prefixed with ``'``, so a spreadsheet program shows it as text instead of running
it as a formula (CSV injection). XLSX files are written by openpyxl in write-only mode,
row by row, with every cell as a value (never a formula). CSV files are UTF-8 with a byte
order mark, as the list export (:mod:`labapp.entities.export`) writes them.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any

from labapp.imports.engine import RowOutcome
from labapp.imports.mapping import importable
from labapp.imports.spreadsheets import SourceTable
from labapp.model.registry import ClassSpec, FieldSpec
from labapp.reading.wording import label_of

OUTCOME_COLUMN, ERRORS_COLUMN = "Import outcome", "Import errors"
BOM = "\ufeff"
_RISKY = ("=", "+", "-", "@", "\t", "\r")
# The fields a template shows, in this order, when the class has them (then the others).
_TEMPLATE_FIRST = ("name", "barcode", "type", "status", "description", "amount", "unit",
                   "locationID", "position", "parentID", "dateTaken", "expiryDate")
_EXAMPLES: dict[str, Any] = {
    "name": "Example 1", "barcode": "BC-0001", "type": "Other", "description": "",
    "amount": 250, "unit": "µL", "locationID": "Freezer 1 / Rack 2 / Box 12",
    "position": "A1", "parentID": "", "dateTaken": "2026-03-01", "expiryDate": "2027-03-01",
}
_BY_TYPE: dict[str, Any] = {"str": "", "text": "", "int": 1, "float": 1.5, "bool": "yes",
                            "date": "2026-03-01", "datetime": "2026-03-01T12:00:00Z",
                            "ref": ""}


def safe(value: Any) -> Any:
    """A cell value that no spreadsheet program runs as a formula: risky text gets ``'``."""
    if isinstance(value, str) and value.startswith(_RISKY):
        return "'" + value
    return value


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime) and value.time() == datetime.min.time():
        return value.date().isoformat()  # a date cell of a workbook
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _annotated_rows(table: SourceTable, outcomes: Sequence[RowOutcome]
                    ) -> Iterator[list[Any]]:
    yield [*table.headers, OUTCOME_COLUMN, ERRORS_COLUMN]
    by_row = {outcome.row: outcome for outcome in outcomes}
    for number, cells in table.rows():
        outcome = by_row.get(number)
        errors = "; ".join(f"{error.column}: {error.message}" if error.column else error.message
                           for error in (outcome.errors if outcome else []))
        yield [*cells, outcome.outcome if outcome else "", errors]


def _csv_lines(rows: Iterable[Sequence[Any]], delimiter: str = ",") -> Iterator[str]:
    """The rows as CSV text line by line, after a byte order mark: spreadsheet programs
    then read the file as UTF-8, as they do the list export."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter)
    buffer.write(BOM)
    for row in rows:
        writer.writerow([safe(_text(value)) for value in row])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()


def annotated_csv(table: SourceTable, outcomes: Sequence[RowOutcome]) -> Iterator[str]:
    """The original rows plus outcome and error columns, as CSV text line by line, with the
    delimiter of the uploaded file (a spreadsheet set to that delimiter opened the file;
    it opens the annotated one alike) and a byte order mark."""
    return _csv_lines(_annotated_rows(table, outcomes), table.delimiter)


def _write_xlsx(rows: Iterable[Sequence[Any]], path: Path, title: str) -> None:
    import openpyxl

    workbook = openpyxl.Workbook(write_only=True)
    sheet = workbook.create_sheet(title=title[:31] or "Sheet1")
    for row in rows:
        sheet.append([safe(value) for value in row])
    workbook.save(path)


def annotated_xlsx(table: SourceTable, outcomes: Sequence[RowOutcome], path: Path) -> None:
    """The annotated rows (see :func:`annotated_csv`) as an XLSX workbook at ``path``."""
    _write_xlsx(_annotated_rows(table, outcomes), path, table.sheet or "Import")


def template_fields(spec: ClassSpec) -> list[FieldSpec]:
    """The fields a template of ``spec`` has columns for."""
    fields = {field.name: field for field in importable(spec) if field.name != "id"}
    first = [fields[name] for name in _TEMPLATE_FIRST if name in fields]
    return first + [field for name, field in fields.items() if name not in _TEMPLATE_FIRST]


def _example(spec: ClassSpec, field: FieldSpec) -> Any:
    if field.name == "status":
        return spec.workflow.initial
    if field.choices:
        return field.choices[0]
    if field.name in _EXAMPLES:
        return _EXAMPLES[field.name]
    return _BY_TYPE.get(field.type, "")


def _template_rows(spec: ClassSpec) -> list[list[Any]]:
    fields = template_fields(spec)
    return [[label_of(field.name) for field in fields],
            [_example(spec, field) for field in fields]]


def template_csv(spec: ClassSpec) -> str:
    """A CSV template of ``spec``: headers by label and one example row."""
    return "".join(_csv_lines(_template_rows(spec)))


def template_xlsx(spec: ClassSpec, path: Path) -> None:
    """An XLSX template of ``spec`` (see :func:`template_csv`) at ``path``."""
    _write_xlsx(_template_rows(spec), path, spec.name)
