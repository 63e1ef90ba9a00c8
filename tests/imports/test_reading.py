"""Reading uploads: CSV dialects and encodings, XLSX sheets, and every file refused up front."""
from __future__ import annotations

import zipfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest

from labapp.imports.reading import ImportRejected, open_table


def _open(path: Path, **options) -> list[tuple[int, list]]:
    table = open_table(path, path.name, **options)
    return list(table.rows())


def _refused(path: Path, *words: str, **options) -> str:
    with pytest.raises(ImportRejected) as caught:
        open_table(path, path.name, **options)
    message = caught.value.detail
    for word in words:
        assert word in message, message
    assert caught.value.status == 400 and caught.value.code == "import_rejected"
    return message


def _rewrite(path: Path, member: str, change: Callable[[str], str]) -> None:
    """Rewrite one part of an XLSX archive (what openpyxl cannot write: cached values,
    dimensions)."""
    with zipfile.ZipFile(path) as archive:
        parts = {info.filename: archive.read(info.filename) for info in archive.infolist()}
    parts[member] = change(parts[member].decode()).encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)


SHEET = "xl/worksheets/sheet1.xml"


# --- CSV -------------------------------------------------------------------------------

@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
def test_any_delimiter(write_csv, delimiter: str) -> None:
    path = write_csv(f"Name{delimiter}Amount\nS-1{delimiter}1.5\nS-2{delimiter}2\n")
    table = open_table(path, "samples.csv")
    assert table.kind == "csv" and table.headers == ["Name", "Amount"]
    assert table.row_count == 2
    assert list(table.rows()) == [(2, ["S-1", "1.5"]), (3, ["S-2", "2"])]


def test_quoted_cells_with_line_breaks_and_blank_rows_keep_spreadsheet_row_numbers(
        write_csv) -> None:
    path = write_csv('Name,Description\n"S-1","two\nlines"\n\n,\nS-2,x\n')
    assert _open(path) == [(2, ["S-1", "two\nlines"]), (5, ["S-2", "x"])]


def test_utf8_with_bom_and_short_rows_padded(write_csv) -> None:
    path = write_csv("\ufeffName,Volume (µL),Note\nS-µ,5\n")
    table = open_table(path, "bom.csv")
    assert table.headers == ["Name", "Volume (µL)", "Note"]
    assert list(table.rows()) == [(2, ["S-µ", "5", None])]


def test_latin1_is_detected(write_csv) -> None:
    path = write_csv("Name;Volume (µL)\nProbe Müller;5\n", encoding="latin-1")
    assert _open(path) == [(2, ["Probe Müller", "5"])]
    assert open_table(path, "x.csv").headers == ["Name", "Volume (µL)"]


def test_utf16_is_refused_naming_the_encoding(write_csv) -> None:
    _refused(write_csv("Name,Amount\nS-1,5\n", encoding="utf-16"), "UTF-16")
    _refused(write_csv("Name,Amount\nS-1,5\n", encoding="utf-16-le"), "NUL", "UTF-8")


def test_neither_utf8_nor_latin1_is_refused(write_csv) -> None:
    path = write_csv("Name,Amount\n", encoding="ascii")
    path.write_bytes(path.read_bytes() + "S\u20ac-1,5\n".encode("cp1252"))  # € is 0x80
    _refused(path, "neither UTF-8 nor Latin-1", "0x80")


def test_empty_file_is_refused(write_csv) -> None:
    _refused(write_csv(""), "is empty")
    _refused(write_csv("\n\n , \n"), "holds no rows")


def test_header_only_file_is_refused(write_csv) -> None:
    _refused(write_csv("Name,Amount\n"), "header row but no data rows")
    _refused(write_csv("Name,Amount\n,\n\n"), "no data rows")


def test_duplicate_headers_are_refused(write_csv) -> None:
    _refused(write_csv("Name,Amount,name\nS-1,1,x\n"), "'name' appears twice", "A and C")


def test_blank_header_is_refused_but_trailing_blank_columns_are_dropped(write_csv) -> None:
    _refused(write_csv("Name,,Amount\nS-1,x,1\n"), "Column B", "no header")
    table = open_table(write_csv("Name,Amount,,\nS-1,1,,\n"), "t.csv")
    assert table.headers == ["Name", "Amount"]
    assert list(table.rows()) == [(2, ["S-1", "1"])]


def test_too_many_rows_are_refused_before_planning(write_csv) -> None:
    path = write_csv("Name\n" + "".join(f"S-{n}\n" for n in range(11)))
    _refused(path, "more than 10 data rows", max_rows=10)
    assert open_table(path, "ok.csv", max_rows=11).row_count == 11


def test_a_csv_named_like_a_workbook_is_refused(write_csv) -> None:
    _refused(write_csv("Name\nS-1\n", name="samples.xlsx"), "not an XLSX workbook")


def test_rows_can_be_read_twice(write_csv) -> None:
    table = open_table(write_csv("Name\nA\nB\n"), "t.csv")
    assert list(table.rows()) == list(table.rows()) == [(2, ["A"]), (3, ["B"])]


# --- XLSX ------------------------------------------------------------------------------

def test_xlsx_first_sheet_with_typed_cells(write_xlsx) -> None:
    taken = datetime(2026, 3, 1)
    path = write_xlsx([["Name", "Amount", "Date taken"], ["S-1", 1.5, taken], [None, None, None],
                       ["S-2", 2, None]])
    table = open_table(path, "samples.xlsx")
    assert (table.kind, table.sheet, table.sheets) == ("xlsx", "Samples", ["Samples"])
    assert table.headers == ["Name", "Amount", "Date taken"]
    assert list(table.rows()) == [(2, ["S-1", 1.5, taken]), (4, ["S-2", 2, None])]


def test_xlsx_chosen_sheet_and_unknown_sheet(write_xlsx) -> None:
    def second(sheet) -> None:
        other = sheet.parent.create_sheet("Plates")
        other.append(["Name", "Rows"])
        other.append(["P-1", 8])

    path = write_xlsx([["Name"], ["S-1"]], prepare=second)
    table = open_table(path, "book.xlsx", sheet="Plates")
    assert table.sheets == ["Samples", "Plates"] and table.headers == ["Name", "Rows"]
    assert list(table.rows()) == [(2, ["P-1", 8])]
    _refused(path, "no sheet 'Nope'", "Samples, Plates", sheet="Nope")


def test_xlsx_header_only_and_empty_sheets_are_refused(write_xlsx) -> None:
    _refused(write_xlsx([["Name", "Amount"]]), "header row but no data rows")
    _refused(write_xlsx([]), "holds no rows")


def test_xlsx_duplicate_headers_are_refused(write_xlsx) -> None:
    _refused(write_xlsx([["Name", "Barcode", "Name "], ["a", "b", "c"]]), "appears twice")


def test_merged_cells_are_refused(write_xlsx) -> None:
    path = write_xlsx([["Name", "Amount"], ["S-1", 1], ["S-2", 2]],
                      prepare=lambda sheet: sheet.merge_cells("B2:B3"))
    _refused(path, "merged cells")


def test_a_formula_without_a_saved_value_is_refused(write_xlsx) -> None:
    path = write_xlsx([["Name", "Amount"], ["S-1", "=1+2"]])
    _refused(path, "cell B2", "formula", "never calculated")


def test_a_formula_reads_its_saved_value(write_xlsx) -> None:
    path = write_xlsx([["Name", "Amount"], ["S-1", "=1+2"]])
    _rewrite(path, SHEET, lambda xml: xml.replace("<f>1+2</f><v />", "<f>1+2</f><v>3</v>"))
    assert _open(path) == [(2, ["S-1", 3])]


def test_a_sheet_declaring_a_million_rows_is_refused_from_its_dimension(write_xlsx) -> None:
    path = write_xlsx([["Name"], ["S-1"]])
    _rewrite(path, SHEET, lambda xml: xml.replace('<dimension ref="A1:A2" />',
                                                  '<dimension ref="A1:A1048576" />'))
    _refused(path, "more than 200,000 data rows")


def test_xlsx_rows_over_the_limit_without_a_dimension_are_refused_while_read(
        write_xlsx) -> None:
    path = write_xlsx([["Name"], *[[f"S-{n}"] for n in range(5)]])
    _rewrite(path, SHEET, lambda xml: xml.replace('<dimension ref="A1:A6" />', ""))
    table = open_table(path, "t.xlsx", max_rows=4)
    with pytest.raises(ImportRejected, match="more than 4 data rows"):
        list(table.rows())


def test_a_zip_bomb_is_refused_before_openpyxl_opens_it(tmp_path: Path, write_xlsx) -> None:
    bomb = tmp_path / "bomb.xlsx"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(SHEET, b"\0" * (20 * 2**20))  # 20 MiB of zeros: ~20 KiB compressed
    assert bomb.stat().st_size < 100_000
    _refused(bomb, "zip bomb")
    big = write_xlsx([["Name"], ["x" * 5000], ["y" * 5000]])
    _refused(big, "unpacks to", "MiB", max_uncompressed=10_000)


def test_a_damaged_workbook_is_refused(tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.xlsx"
    damaged.write_bytes(b"PK\x03\x04 not really a zip")
    _refused(damaged, "not a valid XLSX")
    nonsense = tmp_path / "nonsense.xlsx"
    with zipfile.ZipFile(nonsense, "w") as archive:
        archive.writestr("hello.txt", "hi")
    _refused(nonsense, "not a readable XLSX")
