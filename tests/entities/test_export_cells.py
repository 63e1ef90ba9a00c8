"""XLSX downloads a manager can sum and filter (issue 32 §5, decisions §20): numbers are
number cells, a unit goes into the header when the column has one and into a column of its
own when it mixes several, moments are date cells in UTC shown in ISO form, empty values
are blank cells, and text stays text however much it looks like a formula or a number. CSV
keeps its text. Every workbook is read back with openpyxl, cell by cell."""
from __future__ import annotations

import csv
import io
from datetime import UTC, date, datetime
from typing import Any

import pytest
from openpyxl import load_workbook
from openpyxl.cell import Cell

from tests.conftest import BACKEND, ApiClient
from tests.entities.conftest import fetch, save

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def sheet_of(api: ApiClient, eclass: str, **query: str) -> list[list[Cell]]:
    """The cells of the XLSX download of ``eClass``'s list asked with ``query`` (OData
    options without their ``$``), rows in order."""
    response = api.get(f"/api/entity/{eclass}", query_string={
        "$format": "xlsx", **{f"${name}": value for name, value in query.items()}})
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.mimetype == XLSX
    workbook = load_workbook(io.BytesIO(response.get_data()))
    assert workbook.sheetnames == [eclass]
    return [list(row) for row in workbook[eclass].iter_rows()]


def csv_of(api: ApiClient, eclass: str, **query: str) -> list[list[str]]:
    response = api.get(f"/api/entity/{eclass}", query_string={
        "$format": "csv", **{f"${name}": value for name, value in query.items()}})
    assert response.status_code == 200, response.get_data(as_text=True)
    return list(csv.reader(io.StringIO(response.get_data().decode("utf-8-sig"))))


def values(row: list[Cell]) -> list[Any]:
    return [cell.value for cell in row]


def is_number(cell: Cell) -> bool:
    return cell.data_type == "n" and type(cell.value) in (int, float)


def is_text(cell: Cell, text: str) -> bool:
    return cell.data_type == "s" and cell.value == text


def test_one_unit_goes_into_the_header_and_the_numbers_sum(admin: ApiClient) -> None:
    save(admin, *({"eClass": "Sample", "id": f"XU-{n}", "name": f"aliquot {n}", "amount": amount,
                   "unit": "µL"} for n, amount in enumerate((180, 2.5, 0.125, 1e-9))))
    query = {"select": "name,amount", "filter": "startswith(id, 'XU-')", "orderby": "id"}
    header, *rows = sheet_of(admin, "Sample", **query)
    assert values(header) == ["ID", "Name", "Amount (µL)"]
    assert all(is_number(row[2]) for row in rows)
    assert [row[2].value for row in rows] == [180, 2.5, 0.125, 1e-9]
    assert sum(row[2].value for row in rows) == 180 + 2.5 + 0.125 + 1e-9
    # CSV keeps today's text, the unit in each cell.
    assert [row[2] for row in csv_of(admin, "Sample", **query)] == [
        "Amount", "180 µL", "2.5 µL", "0.125 µL", "1e-09 µL"]


def test_mixed_units_get_a_column_of_their_own(admin: ApiClient) -> None:
    save(admin,
         {"eClass": "Sample", "id": "XM-1", "amount": 180, "unit": "µL",
          "concentration": 12.5, "concentrationUnit": "ng/µL"},
         {"eClass": "Sample", "id": "XM-2", "amount": 1.5, "unit": "mL",
          "concentration": 3, "concentrationUnit": "ng/µL"},
         {"eClass": "Sample", "id": "XM-3", "amount": 20},  # a number without a unit
         {"eClass": "Sample", "id": "XM-4", "unit": "mL"},  # a unit without a number
         {"eClass": "Sample", "id": "XM-5"})
    header, *rows = sheet_of(admin, "Sample", select="amount,concentration",
                             filter="startswith(id, 'XM-')", orderby="id")
    assert values(header) == ["ID", "Amount", "Unit", "Concentration (ng/µL)"]
    assert [values(row) for row in rows] == [
        ["XM-1", 180, "µL", 12.5], ["XM-2", 1.5, "mL", 3], ["XM-3", 20, None, None],
        ["XM-4", None, None, None], ["XM-5", None, None, None]]
    assert all(is_number(row[1]) for row in rows[:3]) and all(
        row[2].data_type == "s" for row in rows[:2])
    # Empty values are blank cells, which a spreadsheet sums and filters as empty.
    assert all(cell.value is None for row in rows[3:] for cell in row[1:])


def test_a_shown_unit_column_is_not_repeated(admin: ApiClient) -> None:
    save(admin, {"eClass": "Sample", "id": "XS-1", "amount": 5, "unit": "µL"},
         {"eClass": "Sample", "id": "XS-2", "amount": 6, "unit": "mL"})
    header, *rows = sheet_of(admin, "Sample", select="amount,unit",
                             filter="startswith(id, 'XS-')", orderby="id")
    assert values(header) == ["ID", "Amount", "Unit"]
    assert [values(row) for row in rows] == [["XS-1", 5, "µL"], ["XS-2", 6, "mL"]]


def test_moments_are_date_cells_in_utc(admin: ApiClient) -> None:
    saved, = save(admin, {"eClass": "Fermentation", "id": "XD-1", "name": "Run 1",
                          "startTime": "2026-03-05T23:30:15.750+01:00"})
    save(admin, {"eClass": "Fermentation", "id": "XD-2", "name": "Run 2"},
         {"eClass": "Sample", "id": "XD-S", "expiryDate": "2027-02-28"})
    header, *rows = sheet_of(admin, "Fermentation", select="startTime,createdUtc",
                             filter="startswith(id, 'XD-')", orderby="id")
    assert values(header) == ["ID", "Start time (UTC)", "Created (UTC)"]
    started, created = rows[0][1], rows[0][2]
    assert started.is_date and started.value == datetime(2026, 3, 5, 22, 30, 15)
    assert started.number_format == "yyyy-mm-dd hh:mm:ss"
    stored = datetime.fromisoformat(fetch(admin, "Fermentation", "XD-1")["createdUtc"])
    assert created.is_date and created.value == (
        stored.astimezone(UTC).replace(tzinfo=None, microsecond=0))
    assert rows[1][1].value is None and saved["id"] == "XD-1"
    expiry = sheet_of(admin, "Sample", select="expiryDate", filter="id eq 'XD-S'")[1][1]
    assert expiry.is_date and expiry.number_format == "yyyy-mm-dd"
    assert expiry.value == datetime(2027, 2, 28)  # a date cell reads back as midnight
    # CSV keeps ISO 8601 text in UTC.
    assert csv_of(admin, "Fermentation", select="startTime", filter="id eq 'XD-1'")[1] == [
        "XD-1", "2026-03-05T22:30:15Z"]
    assert csv_of(admin, "Sample", select="expiryDate", filter="id eq 'XD-S'")[1] == [
        "XD-S", date(2027, 2, 28).isoformat()]


def test_huge_and_odd_numbers_keep_their_value(admin: ApiClient) -> None:
    save(admin, {"eClass": "Sample", "id": "XN-1", "amount": 1e300, "unit": "µL",
                 "attributes": {"count": 2 ** 70, "exact": 2 ** 53, "sum": 0.1 + 0.2,
                                "delta": -2.5, "flag": True, "code": "007"}})
    header, row = sheet_of(admin, "Sample", filter="id eq 'XN-1'", select=(
        "amount,attributes.count,attributes.exact,attributes.sum,attributes.delta,"
        "attributes.flag,attributes.code"))
    assert values(header)[1] == "Amount (µL)"
    amount, count, exact, total, delta, flag, code = row[1:]
    assert is_number(amount) and amount.value == 1e300
    # Beyond 2⁵³ a spreadsheet would round it: every digit kept as text.
    assert is_text(count, str(2 ** 70))
    assert is_number(exact) and exact.value == 2 ** 53
    assert is_number(total) and total.value == 0.1 + 0.2
    assert is_number(delta) and delta.value == -2.5  # a negative number is no formula
    assert is_text(flag, "yes") and is_text(code, "007")


@pytest.mark.parametrize("text", [
    '=HYPERLINK("http://example.com","click")', "+1", "-2", "@x", "=1+1", "\t=cmd", "\r-3",
])
def test_formula_text_stays_text(admin: ApiClient, text: str) -> None:
    save(admin, {"eClass": "Sample", "id": "XF-1", "name": text, "amount": 3,
                 "unit": text[:32], "attributes": {"note": text}})
    stored = fetch(admin, "Sample", "XF-1")
    header, row = sheet_of(admin, "Sample", select="name,amount,attributes.note",
                           filter="id eq 'XF-1'")
    assert [cell.data_type for cell in row] == ["s", "s", "n", "s"]
    # XML reads a carriage return back as a line feed.
    assert [cell.value for cell in row[1:]] == [
        stored["name"].replace("\r", "\n"), 3, text.replace("\r", "\n")]
    assert header[2].value == f"Amount ({stored['unit'].replace(chr(13), chr(10))})"
    assert header[2].data_type == "s"
    if stored["name"][:1] in "=+-@\t\r":
        assert csv_of(admin, "Sample", select="name", filter="id eq 'XF-1'")[1] == [
            "XF-1", f"'{stored['name']}"]


def test_mixed_units_that_look_like_formulas_stay_text(admin: ApiClient) -> None:
    save(admin, {"eClass": "Sample", "id": "XF-1", "amount": 1, "unit": "=1+1"},
         {"eClass": "Sample", "id": "XF-2", "amount": 2, "unit": "@SUM(A1)"})
    rows = sheet_of(admin, "Sample", select="amount", filter="startswith(id, 'XF-')",
                    orderby="id")
    assert [values(row) for row in rows] == [["ID", "Amount", "Unit"], ["XF-1", 1, "=1+1"],
                                             ["XF-2", 2, "@SUM(A1)"]]
    assert [row[2].data_type for row in rows[1:]] == ["s", "s"]


def test_an_export_of_nothing_has_its_headers(admin: ApiClient) -> None:
    rows = sheet_of(admin, "Sample", select="amount,expiryDate", filter="id eq 'NONE'")
    assert [values(row) for row in rows] == [["ID", "Amount", "Expiry date"]]


def test_numbers_that_are_not_finite_are_written_as_text(admin: ApiClient) -> None:
    response = admin.post("/api/entity", content_type="application/json", data=(
        '{"entities": [{"eClass": "Sample", "id": "XN-2", '
        '"attributes": {"x": NaN, "y": -Infinity}}]}'))
    if BACKEND == "postgresql":  # jsonb holds no NaN: refused, nothing to export
        assert response.status_code == 400
        return
    assert response.status_code == 201
    header, row = sheet_of(admin, "Sample", select="attributes.x,attributes.y",
                           filter="id eq 'XN-2'")
    assert is_text(row[1], "nan") and is_text(row[2], "-inf")
