"""Reading uploads: CSV dialects and encodings, XLSX sheets, and every file refused up front."""
from __future__ import annotations

import zipfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest

from labapp.imports.limits import ImportRejected
from labapp.imports.spreadsheets import open_table
from tests.imports import hostile


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


def test_control_characters_are_refused_naming_the_line(write_csv) -> None:
    _refused(write_csv("Name,Amount\nS-1,5\nS-\x01,6\n"), "Line 3", "control character",
             "0x01")
    _refused(write_csv("Na\x1bme,Amount\nS-1,5\n"), "Line 1", "0x1B")
    _refused(write_csv("Name,Amount\nS-1,5\x7f\n"), "Line 2", "0x7F")
    table = open_table(write_csv('Name,Note\nS-1,"tab\there\r\nand a line"\n'), "ok.csv")
    assert list(table.rows()) == [(2, ["S-1", "tab\there\r\nand a line"])]


def test_more_columns_than_allowed_are_refused(write_csv) -> None:
    header = ",".join(f"c{n}" for n in range(1001))
    _refused(write_csv(f"{header}\n{'x,' * 1000}x\n"), "1,001 columns", "at most 1,000")
    fits = ",".join(f"c{n}" for n in range(1000))
    assert len(open_table(write_csv(f"{fits}\nx\n"), "ok.csv").headers) == 1000


def test_a_header_longer_than_allowed_is_refused(write_csv) -> None:
    _refused(write_csv(f"Name,{'h' * 256}\nS-1,5\n"), "column B", "256 characters",
             "at most 255")
    assert open_table(write_csv(f"Name,{'h' * 255}\nS-1,5\n"), "ok.csv").headers[1] == "h" * 255


def test_a_cell_longer_than_a_spreadsheet_cell_is_refused(write_csv) -> None:
    _refused(write_csv(f"Name,Note\nS-1,x\nS-2,{'y' * 32_768}\n"), "Row 3, column B",
             "longer than 32,767 characters")
    # Over the csv module's own field limit (131,072) the message is the same.
    _refused(write_csv(f"Name,Note\nS-1,x\nS-2,\"{'y' * 140_000}\"\n"), "Row 3",
             "longer than 32,767 characters")
    table = open_table(write_csv(f"Name,Note\nS-1,{'y' * 32_767}\n"), "ok.csv")
    assert len(next(table.rows())[1][1]) == 32_767


def test_a_row_longer_than_allowed_is_refused_before_it_is_read(tmp_path: Path) -> None:
    _refused(hostile.long_line_csv(tmp_path / "long.csv", 2 * 2**20), "Row 2",
             "longer than 1,048,576 characters")
    _refused(hostile.wide_csv(tmp_path / "wide.csv", 200_000), "header row",
             "longer than 1,048,576 characters", "at most 1,000 columns")
    # A quote never closed makes the rest of the file one row.
    path = tmp_path / "quote.csv"
    path.write_text('Name,Note\nS-1,"open\n' + "S-2,x\n" * 200_000, encoding="utf-8")
    _refused(path, "Row 2", "a quote never closed?")


def test_a_value_right_of_the_last_header_is_refused(write_csv) -> None:
    _refused(write_csv("Name,Note\nS-1,x\nS-2,buffer, pH 7\n"), "Row 3", "column C",
             "right of the last column with a header (B)")
    table = open_table(write_csv("Name,Note\nS-1,x,, \n"), "ok.csv")
    assert list(table.rows()) == [(2, ["S-1", "x"])]


def test_the_delimiter_of_a_hostile_sample_is_refused(write_csv) -> None:
    """csv.Sniffer took 37 s over such a sample; ``bench/guards.py`` measures ours."""
    hostile_sample = write_csv("Name,Amount\n" + ',"' * 40_000 + "\n")
    with pytest.raises(ImportRejected):
        open_table(hostile_sample, "slow.csv")
    assert open_table(write_csv("a;b,c;d\n1;2,5;3\n"), "t.csv").headers == ["a", "b,c", "d"]
    assert open_table(write_csv('a,b\n"1;2;3",4\n'), "t.csv").headers == ["a", "b"]
    assert open_table(write_csv("Name\nS-1\n"), "t.csv").headers == ["Name"]
    spaced = open_table(write_csv('Name, Note\nS-1, "a, b"\n'), "t.csv")
    assert list(spaced.rows()) == [(2, ["S-1", "a, b"])]


def test_an_old_excel_file_is_refused_naming_what_to_do(tmp_path: Path) -> None:
    legacy = tmp_path / "old.xls"
    legacy.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 512)
    _refused(legacy, "Excel 97-2003", "password", "save it as .xlsx")


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


def test_xlsx_rows_over_the_limit_without_a_dimension_are_refused_from_the_sheet_xml(
        write_xlsx) -> None:
    path = write_xlsx([["Name"], *[[f"S-{n}"] for n in range(5)]])
    _rewrite(path, SHEET, lambda xml: xml.replace('<dimension ref="A1:A6" />', ""))
    _refused(path, "more than 4 data rows", max_rows=4)
    assert open_table(path, "t.xlsx", max_rows=5).row_count is None


def test_empty_formatted_rows_count_against_the_limit(write_xlsx) -> None:
    path = write_xlsx([["Name"], ["S-1"]])
    blank = "".join(f'<row r="{n}" ht="30" customHeight="1" />' for n in range(3, 8))
    _rewrite(path, SHEET, lambda xml: xml.replace("</sheetData>", blank + "</sheetData>"))
    _refused(path, "more than 5 data rows", "empty but formatted", max_rows=5)
    assert [row for _, row in open_table(path, "t.xlsx", max_rows=6).rows()] == [["S-1"]]


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
