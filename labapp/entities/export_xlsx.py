"""The XLSX file of a list export, with cells a spreadsheet computes with (decisions §20).

Numbers are number cells and moments date cells (UTC, shown in ISO form: ``2026-03-05
22:30:00``, a date ``2026-03-05``). A number measured in a unit (an amount and its unit)
gets the unit in its header when every number of the column has that one unit
(``Amount (µL)``), else a column of its own beside it (``Unit``), so a column never sums
millilitres with microlitres unseen. Text cells stay text, whatever they begin with (a
formula's ``=``, ``+``, ``-``, ``@`` is never run); characters XML cannot hold are dropped.
A float is written with every digit it needs to read back as the same double; an integer
beyond what a spreadsheet's floating point holds exactly (2⁵³) is written as text, so its
digits survive, and so is a number that is not finite.

Which form a unit takes is known only once every row is read, and openpyxl's write-only
workbook writes the header first: the rows are read once and spooled (pickled a batch at a
time) to a temporary file while the units of each column are collected, then written from
the spool. One read, so the header and the rows come from the same statement, and memory
stays flat however long the list.
"""
from __future__ import annotations

import math
import pickle
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import IO, Any, NamedTuple

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from openpyxl.worksheet._write_only import WriteOnlyWorksheet

# What a spreadsheet would take as the start of a formula (OWASP "CSV injection").
FORMULA_START = frozenset("=+-@\t\r")
# Bytes of the XLSX file sent at a time.
CHUNK = 64 * 1024
# The largest integer a spreadsheet's double holds exactly.
EXACT_INTEGERS = 2 ** 53
DATETIME_FORMAT = "yyyy-mm-dd hh:mm:ss"
DATE_FORMAT = "yyyy-mm-dd"


class Measure(NamedTuple):
    """A number and the unit a row gives it (None when the row names none); a tuple, as
    it is pickled once per cell."""

    value: int | float
    unit: str | None


@dataclass(frozen=True)
class Column:
    """A column of the export: its header and, for a column of :class:`Measure` values,
    the header of the unit column added beside it when its numbers have several units
    (None when the unit is already a column of the export)."""

    header: str
    unit_header: str | None = None


@dataclass(frozen=True)
class _Layout:
    """How a column is written once its units are known: its header, and whether its unit
    goes into a column beside it."""

    header: str
    unit_column: str | None


def _layout(column: Column, units: set[str | None]) -> _Layout:
    if len(units) == 1 and (unit := next(iter(units))):
        return _Layout(f"{column.header} ({unit})", None)
    if len(units) > 1:
        return _Layout(column.header, column.unit_header)
    return _Layout(column.header, None)


def _text_cell(sheet: WriteOnlyWorksheet, text: str) -> WriteOnlyCell:
    cell = WriteOnlyCell(sheet, value=ILLEGAL_CHARACTERS_RE.sub("", text))
    cell.data_type = "s"  # never a formula, whatever it starts with
    return cell


def _cell(sheet: WriteOnlyWorksheet, value: Any) -> Any:
    """The cell of one value: none for ``""``, text as text, a number as a number (as text
    when a spreadsheet would change it), a moment as a date cell in ISO form."""
    if value == "":
        return None  # a blank cell, which sums and filters as empty
    if isinstance(value, str):
        return _text_cell(sheet, value) if value[:1] in FORMULA_START else (
            ILLEGAL_CHARACTERS_RE.sub("", value))
    if isinstance(value, datetime | date):
        cell = WriteOnlyCell(sheet, value=value)
        cell.number_format = DATETIME_FORMAT if isinstance(value, datetime) else DATE_FORMAT
        return cell
    if (type(value) is int and abs(value) > EXACT_INTEGERS) or (
            type(value) is float and not math.isfinite(value)):
        return _text_cell(sheet, str(value))
    if type(value) is float and float(f"{value:.16g}") != value:
        # openpyxl writes 16 significant digits (0.1 + 0.2 became 0.3); the shortest text
        # that reads back as the same double has up to 17, as spreadsheets write them.
        cell = WriteOnlyCell(sheet, value=repr(value))
        cell.data_type = "n"
        return cell
    return value


def _spooled(batches: Iterable[list[list[Any]]], spool: IO[bytes],
             width: int) -> list[set[str | None]]:
    """Write ``batches`` to ``spool``; the units of the :class:`Measure` values of each
    column (empty for a column without any)."""
    units: list[set[str | None]] = [set() for _ in range(width)]
    for batch in batches:
        for row in batch:
            for at, value in enumerate(row):
                if isinstance(value, Measure):
                    units[at].add(value.unit)
        pickle.dump(batch, spool, protocol=pickle.HIGHEST_PROTOCOL)
    return units


def _unspooled(spool: IO[bytes]) -> Iterator[list[list[Any]]]:
    spool.seek(0)
    while True:
        try:
            yield pickle.load(spool)  # our own file, written just now by _spooled
        except EOFError:
            return


def xlsx_chunks(title: str, columns: Sequence[Column],
                batches: Iterable[list[list[Any]]]) -> Iterator[bytes]:
    """The XLSX workbook of one sheet named ``title``: a header row from ``columns`` and
    the rows of ``batches`` (text, numbers, moments, :class:`Measure` values, ``""`` for
    none), sent in chunks of :data:`CHUNK` bytes once the workbook is complete."""
    with tempfile.TemporaryFile() as spool, tempfile.TemporaryFile() as output:
        units = _spooled(batches, spool, len(columns))
        layouts = [_layout(column, seen) for column, seen in zip(columns, units, strict=True)]
        workbook = Workbook(write_only=True)
        sheet = workbook.create_sheet(title)
        headers: list[str] = []
        for layout in layouts:
            headers += [layout.header, *([layout.unit_column] if layout.unit_column else [])]
        sheet.append([_cell(sheet, header) for header in headers])
        for batch in _unspooled(spool):
            for row in batch:
                cells = []
                for layout, value in zip(layouts, row, strict=True):
                    number = value.value if isinstance(value, Measure) else value
                    cells.append(_cell(sheet, number))
                    if layout.unit_column:
                        unit = value.unit if isinstance(value, Measure) else None
                        cells.append(_cell(sheet, unit or ""))
                sheet.append(cells)
        workbook.save(output)
        output.seek(0)
        while chunk := output.read(CHUNK):
            yield chunk
