"""Reading an uploaded spreadsheet (CSV or XLSX) as a header row and streamed data rows.

Everything a file can get wrong is refused here, before a row is planned, with an
:class:`ImportRejected` naming the problem: an empty or header-only file, duplicate or blank
headers, too many columns or rows, an overlong header, row or cell, a control character,
an encoding that is neither UTF-8 nor Latin-1; for XLSX whatever
:mod:`labapp.imports.archive` refuses before openpyxl opens the file (a zip bomb, a
DOCTYPE, parts too large to parse), merged cells and formulas without a saved value (found
by scanning the sheet's XML, not by loading it). The limits, and what each one bounds, are
in :mod:`labapp.imports.limits`.
"""
from __future__ import annotations

import codecs
import csv
import re
import zipfile
from collections.abc import Callable, Generator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from labapp.imports import archive, sheetxml
from labapp.imports.limits import (
    MAX_CELL_LENGTH,
    MAX_COLUMNS,
    MAX_HEADER_LENGTH,
    MAX_ROW_LENGTH,
    MAX_ROWS,
    MAX_SHEET_ROWS,
    MAX_UNCOMPRESSED,
    ImportRejected,
)

_SNIFF_BYTES = 64 * 1024
_SNIFF_LINES = 50
_CHUNK = 2**20
_DELIMITERS = ",;\t|"
# Latin-1 decodes any byte; a file whose bytes are control characters there is in another
# encoding (UTF-16, Windows-1252 punctuation, binary) and is refused rather than garbled.
_NOT_LATIN1 = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# In UTF-8 these bytes are the C0 control characters (but tab and line breaks) and DEL:
# never text, and not allowed in an XLSX cell, so an annotated workbook could not hold them.
_CONTROL = re.compile(rb"[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]")
# An OLE2 compound file: an Excel 97-2003 workbook, or an encrypted (password) XLSX.
_OLE2 = b"\xd0\xcf\x11\xe0"

Cells = list[Any]
# (row number as the spreadsheet shows it, cells), closable to release the file early.
Rows = Generator[tuple[int, Cells], None, None]


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
    if magic == _OLE2:
        raise ImportRejected(f"{filename} is an Excel 97-2003 workbook or a workbook with a "
                             "password; save it as .xlsx without a password, or as CSV.")
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
    """The header row cleaned up: trailing blank columns dropped; blank, overlong or repeated
    names and too many columns refused."""
    names = ["" if cell is None else str(cell).strip() for cell in raw]
    while names and not names[-1]:
        names.pop()
    if not names:
        raise ImportRejected(f"{filename} has no header row: the first row must name the "
                             "columns.")
    if len(names) > MAX_COLUMNS:
        raise ImportRejected(f"{filename} has {len(names):,} columns with a header; at most "
                             f"{MAX_COLUMNS:,} can be imported.")
    seen: dict[str, int] = {}
    for index, name in enumerate(names):
        if not name:
            raise ImportRejected(f"Column {_column_letter(index)} of {filename} has no header.")
        if len(name) > MAX_HEADER_LENGTH:
            raise ImportRejected(f"The header of column {_column_letter(index)} of {filename} "
                                 f"is {len(name):,} characters long; a header may have at "
                                 f"most {MAX_HEADER_LENGTH}.")
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


def _data_rows(records: Rows, width: int) -> Rows:
    """The non-blank rows after the header, padded or cut to ``width`` cells."""
    found_header = False
    for number, cells in records:
        if _blank(cells):
            continue
        if not found_header:
            found_header = True
            continue
        yield number, _fit(cells, width)


def _too_many(filename: str, max_rows: int) -> ImportRejected:
    return ImportRejected(f"{filename} has more than {max_rows:,} data rows; split it into "
                          "smaller files.")


# --- CSV -------------------------------------------------------------------------------

def _encoding(path: Path, filename: str) -> str:
    """``utf-8-sig`` when the whole file is UTF-8 (with or without BOM) without a control
    character, else ``latin-1`` when no byte is a control character there; otherwise
    refused."""
    with path.open("rb") as handle:
        start = handle.read(4)
        if start.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            raise ImportRejected(f"{filename} is encoded as UTF-16; save it as UTF-8 (or "
                                 "Latin-1) CSV.")
        handle.seek(0)
        decoder = codecs.getincrementaldecoder("utf-8")()
        lines = 1
        try:
            while chunk := handle.read(_CHUNK):
                if b"\x00" in chunk:
                    raise ImportRejected(f"{filename} holds NUL bytes: it is not a text file "
                                         "in UTF-8 or Latin-1 (UTF-16 or binary?).")
                control = _CONTROL.search(chunk)
                if control is not None:
                    line = lines + chunk.count(b"\n", 0, control.start())
                    raise ImportRejected(
                        f"Line {line:,} of {filename} holds a control character (byte "
                        f"0x{control.group()[0]:02X}), which is not text; remove it and "
                        "upload the file again.")
                lines += chunk.count(b"\n")
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


def _dialect(sample: str) -> type[csv.Dialect]:
    """Excel's dialect with the delimiter (of ``, ; tab |``) that splits the sample's first
    lines into the most rows as wide as the header, then the widest header; a comma when
    none splits the header. Spaces after the delimiter are skipped when every delimiter of
    the first line has one (``a, "b, c"``), as ``csv.Sniffer`` did. Linear in the sample:
    the sniffer took 37 s over 64 KiB of ``,"``."""
    lines = sample.splitlines(keepends=True)
    lines = lines[:-1] if len(lines) > 1 else lines  # the last line may be cut
    best, score = ",", (0, 1)
    for delimiter in _DELIMITERS:
        dialect = _excel_with(delimiter, spaced=_spaced(lines, delimiter))
        widths = [len(cells) for cells in csv.reader(lines[:_SNIFF_LINES], dialect)
                  if not _blank(cells)]
        if widths and widths[0] > 1:
            candidate = (sum(width == widths[0] for width in widths), widths[0])
            if candidate > score:
                best, score = delimiter, candidate
    return _excel_with(best, spaced=_spaced(lines, best))


def _spaced(lines: list[str], delimiter: str) -> bool:
    first = lines[0] if lines else ""
    return 0 < first.count(delimiter) == first.count(f"{delimiter} ")


def _excel_with(separator: str, *, spaced: bool) -> type[csv.Dialect]:
    class Sniffed(csv.excel):
        delimiter = separator
        skipinitialspace = spaced

    return Sniffed


class _Lines:
    """The lines of a CSV file as ``csv.reader`` asks for them, refusing a row (which may
    span lines inside quotes) that grows past ``MAX_ROW_LENGTH`` characters before it is
    read whole."""

    def __init__(self, handle: IO[str], filename: str) -> None:
        self.handle, self.filename = handle, filename
        self.row, self.length = 1, 0

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        line = self.handle.readline(MAX_ROW_LENGTH - self.length + 1)
        if not line:
            raise StopIteration
        self.length += len(line)
        if self.length > MAX_ROW_LENGTH:
            if self.row == 1:
                raise ImportRejected(
                    f"The header row of {self.filename} is longer than {MAX_ROW_LENGTH:,} "
                    f"characters: at most {MAX_COLUMNS:,} columns with headers of up to "
                    f"{MAX_HEADER_LENGTH} characters can be imported.")
            raise ImportRejected(f"Row {self.row:,} of {self.filename} is longer than "
                                 f"{MAX_ROW_LENGTH:,} characters (a quote never closed, or "
                                 f"cells over the {MAX_CELL_LENGTH:,} characters a cell may "
                                 "hold?).")
        return line

    def next_row(self) -> None:
        self.row, self.length = self.row + 1, 0


def _csv_records(path: Path, filename: str, encoding: str,
                 dialect: type[csv.Dialect]) -> Rows:
    with path.open(encoding=encoding, newline="") as handle:
        lines = _Lines(handle, filename)
        reader = csv.reader(lines, dialect)
        while True:
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as error:
                if "field larger than field limit" in str(error):
                    raise _long_cell(filename, lines.row, None) from None
                raise ImportRejected(f"Row {lines.row:,} of {filename} is not readable CSV: "
                                     f"{error}.") from None
            yield lines.row, cells
            lines.next_row()


def _long_cell(filename: str, row: int, column: int | None) -> ImportRejected:
    """A cell over ``MAX_CELL_LENGTH``; without its column, one the csv module stopped
    reading (usually a quote never closed, which runs on to the end of the file)."""
    where, hint = ((f", column {_column_letter(column)},", "") if column is not None
                   else ("", " (a quote never closed?)"))
    return ImportRejected(f"Row {row:,}{where} of {filename} holds a cell longer than "
                          f"{MAX_CELL_LENGTH:,} characters, more than a cell may hold{hint}.")


def _check_row(number: int, cells: Cells, width: int, filename: str) -> None:
    """Refuse an overlong cell, and a value right of the last column with a header (an
    unquoted delimiter in a value shifts the rest of its row)."""
    if max(map(len, cells)) > MAX_CELL_LENGTH:
        column = next(index for index, cell in enumerate(cells) if len(cell) > MAX_CELL_LENGTH)
        raise _long_cell(filename, number, column)
    extra = next((index for index in range(width, len(cells)) if cells[index].strip()), None)
    if extra is not None:
        raise ImportRejected(
            f"Row {number:,} of {filename} has a value in column {_column_letter(extra)}, right "
            f"of the last column with a header ({_column_letter(width - 1)}): give that column "
            "a header, or quote the value that holds a delimiter.")


def _open_csv(path: Path, filename: str, max_rows: int) -> SourceTable:
    encoding = _encoding(path, filename)
    with path.open(encoding=encoding, newline="") as handle:
        sample = handle.read(_SNIFF_BYTES)
    dialect = _dialect(sample)
    records = _csv_records(path, filename, encoding, dialect)
    try:
        first = next((cells for _, cells in records if not _blank(cells)), None)
        if first is None:
            raise ImportRejected(f"{filename} holds no rows.")
        headers = _headers(first, filename)
        width = len(headers)
        count = 0
        for number, cells in records:  # one cheap pass: the count and the checks of each row
            if not _blank(cells):
                count += 1
                if count > max_rows:
                    raise _too_many(filename, max_rows)
                _check_row(number, cells, width, filename)
    finally:
        records.close()
    if count == 0:
        raise ImportRejected(f"{filename} has a header row but no data rows.")

    def rows() -> Rows:
        with closing(_csv_records(path, filename, encoding, dialect)) as records:
            yield from _data_rows(records, width)

    return SourceTable(filename, "csv", None, [], headers, count, rows,
                       delimiter=dialect.delimiter)


# --- XLSX ------------------------------------------------------------------------------

def _load(path: Path, filename: str) -> Any:
    """The workbook, read-only with the cached values of formulas."""
    import openpyxl

    try:
        return openpyxl.load_workbook(path, read_only=True, data_only=True, keep_links=False)
    except Exception as error:  # openpyxl raises many kinds for a damaged workbook
        raise ImportRejected(f"{filename} is not a readable XLSX workbook "
                             f"({type(error).__name__}).") from None


def _first_rows(rows: Rows) -> tuple[Cells | None, bool]:
    """The first non-blank row of a stream and whether another follows it."""
    first = next((cells for _, cells in rows if not _blank(cells)), None)
    more = first is not None and next(
        (True for _, cells in rows if not _blank(cells)), False)
    return first, more


def _check_sheet(path: Path, found: sheetxml.PartScan | None, member: str, label: str,
                 max_rows: int) -> None:
    """Refuse a sheet with merged cells, more rows than allowed (counted from its XML, so
    rows that are empty but formatted count), or a formula whose value was never saved."""
    if found is None or found.root != sheetxml.SHEET:
        raise ImportRejected(f"{label} is not a worksheet.")
    if found.merged:
        raise ImportRejected(f"{label} has merged cells; unmerge them so that every row holds "
                             "its own values.")
    if found.items > max_rows + 1:
        raise ImportRejected(f"{label} has more than {max_rows:,} data rows (rows that are "
                             "empty but formatted count too); split it into smaller files.")
    if found.formulas:
        with zipfile.ZipFile(path) as workbook:
            cell = sheetxml.formula_without_value(workbook, member, label)
        if cell is not None:
            raise ImportRejected(
                f"{label}: cell {cell} holds a formula whose value was never calculated; "
                "open the file in a spreadsheet program and save it again, or paste the "
                "values.")


def _open_xlsx(path: Path, filename: str, sheet: str | None, max_uncompressed: int,
               max_rows: int) -> SourceTable:
    inspection = archive.inspect(path, filename, max_uncompressed)
    # Loading reads every sheet's dimension (a whole pass over a sheet that lacks one), so
    # the workbook is loaded once here and once per stream of rows.
    workbook = _load(path, filename)
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
        member = worksheet._worksheet_path
        _check_sheet(path, inspection.parts.get(member), member, label, max_rows)
        with closing(_values(worksheet, None, label)) as values:
            first, more = _first_rows(values)
    finally:
        workbook.close()
    if first is None:
        raise ImportRejected(f"{label} holds no rows.")
    headers = _headers(first, filename)
    if not more:
        raise ImportRejected(f"{label} has a header row but no data rows.")
    width = len(headers)

    def rows() -> Rows:
        book = _load(path, filename)
        try:
            with closing(_values(book[chosen], width, label)) as values:
                yield from _data_rows(values, width)
        finally:
            book.close()

    row_count = declared - 1 if declared is not None else None
    return SourceTable(filename, "xlsx", chosen, sheets, headers, row_count, rows)


def _values(worksheet: Any, width: int | None, label: str) -> Rows:
    """``(row number, values)`` of every row of a read-only worksheet (missing rows come as
    empty ones, so the numbers are the sheet's); a sheet openpyxl cannot read, or whose rows
    are numbered beyond a spreadsheet's last, is refused. openpyxl's stream of rows holds
    the sheet's part open: it is closed however this one ends."""
    with closing(worksheet.iter_rows(min_row=1, max_col=width, values_only=True)) as rows:
        number = 0
        while True:
            try:
                values = next(rows)
            except StopIteration:
                return
            except Exception as error:  # openpyxl raises many kinds for a damaged sheet
                raise ImportRejected(f"{label} cannot be read: the workbook is damaged "
                                     f"({type(error).__name__}).") from None
            number += 1
            if number > MAX_SHEET_ROWS:
                raise ImportRejected(f"{label} numbers its rows beyond {MAX_SHEET_ROWS:,}, "
                                     "more than a spreadsheet can hold.")
            yield number, list(values)
