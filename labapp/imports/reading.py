"""Reading an uploaded spreadsheet (CSV or XLSX) as a header row and streamed data rows.

Everything a file can get wrong is refused here, before a row is planned, with an
:class:`ImportRejected` naming the problem: an empty or header-only file, duplicate or blank
headers, an encoding that is neither UTF-8 nor Latin-1, too many rows, and for XLSX a zip
bomb (checked on the archive's directory before openpyxl opens it), merged cells and formulas
without a saved value (both found by scanning the sheet's XML, not by loading it).
"""
from __future__ import annotations

import codecs
import csv
import re
import zipfile
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from labapp.errors import InvalidInput
from labapp.imports import sheetxml

MAX_ROWS = 200_000
# The sum of the uncompressed sizes an XLSX may unpack to.
MAX_UNCOMPRESSED = 512 * 2**20
_SNIFF_BYTES = 64 * 1024
_CHUNK = 2**20
_DELIMITERS = ",;\t|"
# Latin-1 decodes any byte; a file whose bytes are control characters there is in another
# encoding (UTF-16, Windows-1252 punctuation, binary) and is refused rather than garbled.
_NOT_LATIN1 = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")

Cells = list[Any]
# (row number as the spreadsheet shows it, cells), closable to release the file early.
Rows = Generator[tuple[int, Cells], None, None]


class ImportRejected(InvalidInput):
    """The file cannot be imported at all; the message says why."""

    code = "import_rejected"


@dataclass(frozen=True)
class SourceTable:
    """One sheet of an uploaded file: its headers and a way to stream its data rows.

    :meth:`rows` yields ``(row number as the spreadsheet shows it, cells)`` for every
    non-blank row after the header (cells padded to the headers), and may be called again.
    ``delimiter`` is the CSV file's (a workbook has none: ``,``).
    """

    filename: str
    kind: Literal["csv", "xlsx"]
    sheet: str | None
    sheets: list[str]
    headers: list[str]
    row_count: int | None
    _source: Callable[[], Rows] = field(repr=False, compare=False)
    delimiter: str = ","

    def rows(self) -> Rows:
        return self._source()


def open_table(path: Path, filename: str, *, sheet: str | None = None,
               max_uncompressed: int = MAX_UNCOMPRESSED,
               max_rows: int = MAX_ROWS) -> SourceTable:
    """The table of an uploaded file; its kind is decided by its content (a zip archive is
    XLSX), its name only breaks ties. Raises :class:`ImportRejected`."""
    size = path.stat().st_size
    if size == 0:
        raise ImportRejected(f"{filename} is empty.")
    with path.open("rb") as handle:
        magic = handle.read(4)
    if magic.startswith(b"PK"):
        return _open_xlsx(path, filename, sheet, max_uncompressed, max_rows)
    if filename.lower().endswith((".xlsx", ".xlsm", ".xls")):
        raise ImportRejected(f"{filename} is not an XLSX workbook (save it as .xlsx or CSV).")
    if sheet is not None:
        raise ImportRejected("A CSV file has no sheets; leave the sheet out.")
    return _open_csv(path, filename, max_rows)


# --- headers and rows ------------------------------------------------------------------

def _column_letter(index: int) -> str:
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


def _headers(raw: Cells, filename: str) -> list[str]:
    """The header row cleaned up: trailing blank columns dropped; blank or repeated names
    refused."""
    names = ["" if cell is None else str(cell).strip() for cell in raw]
    while names and not names[-1]:
        names.pop()
    if not names:
        raise ImportRejected(f"{filename} has no header row: the first row must name the "
                             "columns.")
    seen: dict[str, int] = {}
    for index, name in enumerate(names):
        if not name:
            raise ImportRejected(f"Column {_column_letter(index)} of {filename} has no header.")
        key = name.casefold()
        if key in seen:
            raise ImportRejected(f"The header {name!r} appears twice (columns "
                                 f"{_column_letter(seen[key])} and {_column_letter(index)}).")
        seen[key] = index
    return names


def _blank(cells: Cells) -> bool:
    return all(cell is None or (isinstance(cell, str) and not cell.strip()) for cell in cells)


def _fit(cells: Cells, width: int) -> Cells:
    if len(cells) < width:
        return [*cells, *([None] * (width - len(cells)))]
    return list(cells[:width])


def _too_many(filename: str, max_rows: int) -> ImportRejected:
    return ImportRejected(f"{filename} has more than {max_rows:,} data rows; split it into "
                          "smaller files.")


# --- CSV -------------------------------------------------------------------------------

def _encoding(path: Path, filename: str) -> str:
    """``utf-8-sig`` when the whole file is UTF-8 (with or without BOM), else ``latin-1``
    when no byte is a control character there; otherwise refused."""
    with path.open("rb") as handle:
        start = handle.read(4)
        if start.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            raise ImportRejected(f"{filename} is encoded as UTF-16; save it as UTF-8 (or "
                                 "Latin-1) CSV.")
        handle.seek(0)
        decoder = codecs.getincrementaldecoder("utf-8")()
        try:
            while chunk := handle.read(_CHUNK):
                if b"\x00" in chunk:
                    raise ImportRejected(f"{filename} holds NUL bytes: it is not a text file "
                                         "in UTF-8 or Latin-1 (UTF-16 or binary?).")
                decoder.decode(chunk)
            decoder.decode(b"", final=True)
            return "utf-8-sig"
        except UnicodeDecodeError:
            pass
        handle.seek(0)
        while chunk := handle.read(_CHUNK):
            bad = _NOT_LATIN1.search(chunk)
            if bad is not None:
                raise ImportRejected(
                    f"The encoding of {filename} is neither UTF-8 nor Latin-1 (byte "
                    f"0x{bad.group()[0]:02X} is not text there); save it as UTF-8 CSV.")
    return "latin-1"


def _dialect(sample: str) -> type[csv.Dialect] | csv.Dialect:
    try:
        return csv.Sniffer().sniff(sample, delimiters=_DELIMITERS)
    except csv.Error:
        first = sample.split("\n", 1)[0]
        counts = {delimiter: first.count(delimiter) for delimiter in _DELIMITERS}
        best = max(counts, key=lambda key: counts[key])

        class Fallback(csv.excel):
            delimiter = best if counts[best] else ","

        return Fallback


def _csv_records(path: Path, encoding: str,
                 dialect: type[csv.Dialect] | csv.Dialect) -> Rows:
    with path.open(encoding=encoding, newline="") as handle:
        yield from enumerate(csv.reader(handle, dialect), start=1)


def _open_csv(path: Path, filename: str, max_rows: int) -> SourceTable:
    encoding = _encoding(path, filename)
    with path.open(encoding=encoding, newline="") as handle:
        sample = handle.read(_SNIFF_BYTES)
    dialect = _dialect(sample)
    records = _csv_records(path, encoding, dialect)
    try:
        first = next((cells for _, cells in records if not _blank(cells)), None)
        if first is None:
            raise ImportRejected(f"{filename} holds no rows.")
        headers = _headers(first, filename)
        count = 0
        for _, cells in records:  # one cheap pass: the count, and the limit before planning
            if not _blank(cells):
                count += 1
                if count > max_rows:
                    raise _too_many(filename, max_rows)
    except csv.Error as error:
        raise ImportRejected(f"{filename} is not a readable CSV file: {error}.") from None
    finally:
        records.close()
    if count == 0:
        raise ImportRejected(f"{filename} has a header row but no data rows.")
    width = len(headers)

    def rows() -> Rows:
        found_header = False
        for number, cells in _csv_records(path, encoding, dialect):
            if _blank(cells):
                continue
            if not found_header:
                found_header = True
                continue
            yield number, _fit(cells, width)

    return SourceTable(filename, "csv", None, [], headers, count, rows,
                       delimiter=dialect.delimiter)


# --- XLSX ------------------------------------------------------------------------------

def _check_archive(path: Path, filename: str, max_uncompressed: int) -> None:
    """Refuse what is not a zip archive, and a zip bomb, from the archive's directory alone."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError):
        raise ImportRejected(f"{filename} is not a valid XLSX workbook.") from None
    if len(members) > sheetxml.MAX_MEMBERS:
        raise ImportRejected(f"{filename} holds {len(members):,} parts; an XLSX workbook has "
                             "far fewer.")
    total = sum(member.file_size for member in members)
    if total > max_uncompressed:
        raise ImportRejected(f"{filename} unpacks to {total / 2**20:,.0f} MiB, more than the "
                             f"{max_uncompressed / 2**20:,.0f} MiB allowed.")
    for member in members:
        if member.file_size > sheetxml.RATIO_FROM and (
                member.file_size > sheetxml.MAX_RATIO * max(member.compress_size, 1)):
            ratio = member.file_size // max(member.compress_size, 1)
            raise ImportRejected(f"{filename} is compressed {ratio:,} to 1 in "
                                 f"{member.filename}: refused as a zip bomb.")


def _first_rows(rows: Rows) -> tuple[Cells | None, bool]:
    """The first non-blank row of a stream and whether another follows it."""
    first = next((cells for _, cells in rows if not _blank(cells)), None)
    more = first is not None and next(
        (True for _, cells in rows if not _blank(cells)), False)
    return first, more


def _open_xlsx(path: Path, filename: str, sheet: str | None, max_uncompressed: int,
               max_rows: int) -> SourceTable:
    _check_archive(path, filename, max_uncompressed)
    import openpyxl

    try:
        # Loading reads every sheet's dimension (a whole pass over a sheet that lacks one),
        # so the workbook is loaded once here and once per stream of rows.
        workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as error:  # openpyxl raises many kinds for a damaged workbook
        raise ImportRejected(f"{filename} is not a readable XLSX workbook "
                             f"({type(error).__name__}).") from None
    try:
        sheets = list(workbook.sheetnames)
        chosen = sheet if sheet is not None else (sheets[0] if sheets else None)
        if chosen is None or chosen not in sheets:
            raise ImportRejected(f"{filename} has no sheet {sheet!r} (its sheets: "
                                 f"{', '.join(sheets)}).")
        label = f"Sheet {chosen!r} of {filename}"
        worksheet = workbook[chosen]
        declared = worksheet.max_row
        if declared is not None and declared > max_rows + 1:
            raise _too_many(label, max_rows)
        with zipfile.ZipFile(path) as archive:
            problem = sheetxml.sheet_problem(archive, worksheet._worksheet_path, label)
        if problem is not None:
            raise ImportRejected(problem)
        first, more = _first_rows(_values(worksheet, None))
    finally:
        workbook.close()
    if first is None:
        raise ImportRejected(f"{label} holds no rows.")
    headers = _headers(first, filename)
    if not more:
        raise ImportRejected(f"{label} has a header row but no data rows.")
    width = len(headers)

    def rows() -> Rows:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
        try:
            found_header = False
            count = 0
            for number, cells in _values(book[chosen], width):
                if _blank(cells):
                    continue
                if not found_header:
                    found_header = True
                    continue
                count += 1
                if count > max_rows:
                    raise _too_many(label, max_rows)
                yield number, _fit(cells, width)
        finally:
            book.close()

    row_count = declared - 1 if declared is not None else None
    return SourceTable(filename, "xlsx", chosen, sheets, headers, row_count, rows)


def _values(worksheet: Any, width: int | None) -> Rows:
    """``(row number, values)`` of every row of a read-only worksheet (missing rows come as
    empty ones, so the numbers are the sheet's)."""
    for number, values in enumerate(
            worksheet.iter_rows(min_row=1, max_col=width, values_only=True), start=1):
        yield number, list(values)
