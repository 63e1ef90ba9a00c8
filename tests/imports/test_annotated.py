"""Annotated results and templates: original rows plus outcome and errors, never a formula."""
from __future__ import annotations

import codecs
import csv
import io
from pathlib import Path

import openpyxl
import pytest

from labapp.imports.annotated import (
    BOM,
    ERRORS_COLUMN,
    OUTCOME_COLUMN,
    annotated_csv,
    annotated_xlsx,
    safe,
    template_csv,
    template_xlsx,
)
from labapp.imports.engine import CellError, RowOutcome
from labapp.imports.mapping import auto_map
from labapp.imports.spreadsheets import open_table
from labapp.model.registry import built_in

RISKY = ["=1+2", "+33 1 23", "-5", "@SUM(A1)", "\tTab", "\rReturn"]


def test_risky_cells_get_a_quote() -> None:
    assert [safe(text) for text in RISKY] == ["'" + text for text in RISKY]
    assert safe("plain") == "plain" and safe(-5) == -5 and safe(None) is None


def _table(write_csv):
    body = "".join(f"{text.strip()}x,{n}\n" if text[0] in "\t\r" else f"{text},{n}\n"
                   for n, text in enumerate(RISKY))
    path = write_csv("Name,Amount\n" + body)
    return open_table(path, path.name)


def _outcomes() -> list[RowOutcome]:
    return [RowOutcome(2, "create", None),
            RowOutcome(3, "error", None, [CellError("Amount", "=HYPERLINK(\"x\")"),
                                          CellError("", "second")])]


def test_annotated_csv_keeps_rows_and_adds_outcome_and_errors(write_csv) -> None:
    text = "".join(annotated_csv(_table(write_csv), _outcomes()))
    assert text.startswith(BOM + "Name,Amount,")
    rows = list(csv.reader(io.StringIO(text.removeprefix(BOM))))
    assert rows[0] == ["Name", "Amount", "Import outcome", "Import errors"]
    assert rows[1] == ["'=1+2", "0", "create", ""]
    assert rows[2] == ["'+33 1 23", "1", "error", 'Amount: =HYPERLINK("x"); second']
    assert rows[3][0] == "'-5" and rows[4][0] == "'@SUM(A1)"
    assert all(not cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row)


@pytest.mark.parametrize("delimiter", [";", "\t", "|", ","])
def test_annotated_csv_keeps_the_uploads_delimiter(write_csv, delimiter: str) -> None:
    source = io.StringIO()
    csv.writer(source, delimiter=delimiter).writerows([
        ["Name", "Volume (mL)", "Note"], ["S-1", "1,5", "a, b; c"], ["S-2", "x", ""]])
    upload = write_csv(source.getvalue())
    table = open_table(upload, upload.name)
    assert table.delimiter == delimiter
    outcomes = [RowOutcome(2, "create", None),
                RowOutcome(3, "error", None, [CellError("Volume (mL)", "not a number"),
                                              CellError("", "second")])]
    content = "".join(annotated_csv(table, outcomes)).encode("utf-8")
    assert content.startswith(codecs.BOM_UTF8)
    annotated = write_csv(content.decode("utf-8"), name=f"annotated-{ord(delimiter)}.csv")
    # The annotated file is an import file again, in the upload's dialect.
    again = open_table(annotated, annotated.name)
    assert again.delimiter == delimiter
    assert again.headers == ["Name", "Volume (mL)", "Note", OUTCOME_COLUMN, ERRORS_COLUMN]
    assert [cells for _, cells in again.rows()] == [
        ["S-1", "1,5", "a, b; c", "create", ""],
        ["S-2", "x", "", "error", "Volume (mL): not a number; second"]]


def test_an_annotated_workbook_as_csv_is_comma_separated(write_xlsx) -> None:
    table = open_table(write_xlsx([["Name", "Amount"], ["A;1", 2.5]]), "u.xlsx")
    text = "".join(annotated_csv(table, [RowOutcome(2, "create", None)]))
    assert text == f'{BOM}Name,Amount,{OUTCOME_COLUMN},{ERRORS_COLUMN}\r\nA;1,2.5,create,\r\n'


def test_annotated_xlsx_writes_values_never_formulas(write_csv, tmp_path: Path) -> None:
    target = tmp_path / "annotated.xlsx"
    annotated_xlsx(_table(write_csv), _outcomes(), target)
    sheet = openpyxl.load_workbook(target).active
    values = [[cell.value for cell in row] for row in sheet.iter_rows()]
    assert values[0] == ["Name", "Amount", "Import outcome", "Import errors"]
    assert values[1] == ["'=1+2", "0", "create", None]
    assert all(cell.data_type != "f" for row in sheet.iter_rows() for cell in row)


def test_an_xlsx_upload_annotated_keeps_typed_cells(write_xlsx, tmp_path: Path) -> None:
    table = open_table(write_xlsx([["Name", "Amount"], ["-x", 2.5]]), "u.xlsx")
    target = tmp_path / "a.xlsx"
    annotated_xlsx(table, [RowOutcome(2, "create", None)], target)
    sheet = openpyxl.load_workbook(target).active
    assert [cell.value for cell in sheet[2]] == ["'-x", 2.5, "create", None]


def test_templates_name_fields_by_label_with_an_example_row(tmp_path: Path) -> None:
    spec = built_in("Sample")
    text = template_csv(spec)
    assert text.startswith(BOM), "µL reads as UTF-8 in a spreadsheet program"
    rows = list(csv.reader(io.StringIO(text.removeprefix(BOM))))
    headers, example = rows
    assert headers[:4] == ["Name", "Barcode", "Type", "Status"]
    assert "Location" in headers and "Position" in headers and "Expiry date" in headers
    assert example[headers.index("Status")] == "Initial"
    assert example[headers.index("Location")] == "Freezer 1 / Rack 2 / Box 12"
    assert auto_map(spec, headers) == {header: auto_map(spec, [header])[header]
                                       for header in headers}
    assert len(auto_map(spec, headers)) == len(headers)
    target = tmp_path / "template.xlsx"
    template_xlsx(spec, target)
    sheet = openpyxl.load_workbook(target).active
    assert [cell.value for cell in sheet[1]] == headers
