"""``GET /api/entity/{eClass}`` as a spreadsheet (issue 21 §3): CSV and XLSX downloads with
the list page's columns and labels, the list's filter, order and visibility, formula text
made harmless, and the list's 400s. Downloads are opened with the csv module and openpyxl."""
from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from typing import Any

import pytest
from openpyxl import load_workbook

from tests.conftest import DEFAULT_DEPARTMENT, ApiClient
from tests.contracts.problem import assert_problem
from tests.entities.conftest import save

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


@pytest.fixture
def samples(admin: ApiClient) -> None:
    """An experiment and four samples, one named like a formula."""
    save(admin, {"eClass": "Experiment", "id": "EX-EXP", "name": "Cold chain"})
    save(admin,
         {"eClass": "Sample", "id": "EX-1", "name": "delta", "amount": 180, "unit": "µL",
          "experimentID": "EX-EXP", "status": "Completed"},
         {"eClass": "Sample", "id": "EX-2", "name": "=HYPERLINK(\"http://x\",\"y\")",
          "amount": 2.5, "attributes": {"colour": "@red"}},
         {"eClass": "Sample", "id": "EX-3", "name": "-alpha", "amount": 3},
         {"eClass": "Sample", "id": "EX-4", "name": "+charlie"})


def csv_rows(response: Any) -> list[list[str]]:
    """The rows of a CSV download, asserting it is one."""
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.mimetype == "text/csv"
    return list(csv.reader(io.StringIO(response.get_data().decode("utf-8-sig"))))


def xlsx_rows(response: Any) -> list[list[Any]]:
    """The cell values of the one sheet of an XLSX download, asserting it is one; a blank
    cell (a row may end early at one) as ``""``."""
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.mimetype == XLSX
    workbook = load_workbook(io.BytesIO(response.get_data()), read_only=True)
    try:
        assert workbook.sheetnames == ["Sample"]
        rows = list(workbook["Sample"].iter_rows(values_only=True))
    finally:
        workbook.close()
    return [["" if value is None else value for value in row]
            + [""] * (len(rows[0]) - len(row)) for row in rows]


COLUMNS = "name,amount,experimentID,attributes.colour"
HEADERS = ["ID", "Name", "Amount", "Experiment", "Experiment ID", "attributes.colour"]


def test_csv_has_the_labels_and_values_the_page_shows(admin: ApiClient, samples: None) -> None:
    response = admin.get("/api/entity/Sample", query_string={
        "$format": "csv", "$select": COLUMNS, "$filter": "startswith(id, 'EX-')"})
    assert re.fullmatch(r'attachment; filename="Sample-\d{8}\.csv"',
                        response.headers["Content-Disposition"])
    assert csv_rows(response) == [
        HEADERS,
        ["EX-1", "delta", "180 µL", "Cold chain", "EX-EXP", ""],
        ["EX-2", "'=HYPERLINK(\"http://x\",\"y\")", "2.5", "", "", "'@red"],
        ["EX-3", "'-alpha", "3", "", "", ""],
        ["EX-4", "'+charlie", "", "", "", ""]]


def test_xlsx_has_the_same_rows_with_formulas_kept_as_text(admin: ApiClient,
                                                           samples: None) -> None:
    response = admin.get("/api/entity/Sample", query_string={
        "$format": "xlsx", "$select": COLUMNS, "$filter": "startswith(id, 'EX-')"})
    assert re.fullmatch(r'attachment; filename="Sample-\d{8}\.xlsx"',
                        response.headers["Content-Disposition"])
    # The amounts mix µL and none: the unit has a column of its own (issue 32 §5).
    assert xlsx_rows(response) == [
        [*HEADERS[:3], "Unit", *HEADERS[3:]],
        ["EX-1", "delta", 180, "µL", "Cold chain", "EX-EXP", ""],
        ["EX-2", "=HYPERLINK(\"http://x\",\"y\")", 2.5, "", "", "", "@red"],
        ["EX-3", "-alpha", 3, "", "", "", ""],
        ["EX-4", "+charlie", "", "", "", "", ""]]


@pytest.mark.parametrize("accept", ["text/csv", XLSX])
def test_the_accept_header_chooses_the_format(admin: ApiClient, samples: None,
                                              accept: str) -> None:
    response = admin.get("/api/entity/Sample", headers={"Accept": accept}, query_string={
        "$select": "name", "$filter": "startswith(id, 'EX-')", "$orderby": "id desc"})
    rows = csv_rows(response) if accept == "text/csv" else xlsx_rows(response)
    assert [row[0] for row in rows] == ["ID", "EX-4", "EX-3", "EX-2", "EX-1"]
    assert "Accept" in response.vary


def test_json_stays_the_default(admin: ApiClient, samples: None) -> None:
    for headers in ({}, {"Accept": "text/html,*/*;q=0.8"}, {"Accept": "application/json"}):
        response = admin.get("/api/entity/Sample?$filter=startswith(id, 'EX-')",
                             headers=headers)
        assert response.status_code == 200 and response.get_json()["total"] == 4
        assert "Accept" in response.vary  # a cache must not answer CSV to a JSON client
    assert admin.get("/api/entity/Sample?$format=json", headers={"Accept": "text/csv"}
                     ).get_json()["total"] >= 4


def test_filter_and_order_are_kept(admin: ApiClient, samples: None) -> None:
    rows = csv_rows(admin.get("/api/entity/Sample", query_string={
        "$format": "csv", "$select": "name,amount", "$orderby": "amount desc",
        "$filter": "startswith(id, 'EX-') and amount ne null"}))
    assert rows == [["ID", "Name", "Amount"], ["EX-1", "delta", "180 µL"],
                    ["EX-3", "'-alpha", "3"],
                    ["EX-2", "'=HYPERLINK(\"http://x\",\"y\")", "2.5"]]


def test_without_select_the_list_pages_default_columns(admin: ApiClient,
                                                       samples: None) -> None:
    rows = csv_rows(admin.get("/api/entity/Sample?$format=csv&$filter=id eq 'EX-1'"))
    assert rows[0] == ["ID", "Name", "Barcode", "Status", "Amount", "Location", "Location ID",
                       "Expiry date"]
    assert rows[1][:2] == ["EX-1", "delta"] and rows[1][3:5] == ["Completed", "180 µL"]


def test_every_matching_row_not_one_page(admin: ApiClient) -> None:
    save(admin, *({"eClass": "Sample", "type": "Many"} for _ in range(1203)))
    rows = csv_rows(admin.get("/api/entity/Sample", query_string={
        "$format": "csv", "$select": "type", "$filter": "type eq 'Many'"}))
    assert len(rows) == 1 + 1203 and {row[1] for row in rows[1:]} == {"Many"}
    assert len({row[0] for row in rows[1:]}) == 1203


def test_top_and_skip_apply_when_given(admin: ApiClient, samples: None) -> None:
    rows = csv_rows(admin.get("/api/entity/Sample", query_string={
        "$format": "csv", "$select": "name", "$filter": "startswith(id, 'EX-')",
        "$orderby": "id", "$top": "2", "$skip": "1"}))
    assert [row[0] for row in rows] == ["ID", "EX-2", "EX-3"]


def test_a_member_exports_only_what_they_may_see(
        admin: ApiClient, department: Callable[..., str],
        member: Callable[..., ApiClient]) -> None:
    away = department("Away")
    save(admin, {"eClass": "Sample", "id": "EX-HOME", "departmentID": DEFAULT_DEPARTMENT},
         {"eClass": "Sample", "id": "EX-AWAY", "departmentID": away})
    alice = member("alice")
    query = {"$select": "name", "$filter": "startswith(id, 'EX-')"}
    assert [row[0] for row in csv_rows(alice.get(
        "/api/entity/Sample", query_string={**query, "$format": "csv"}))] == ["ID", "EX-HOME"]
    assert [row[0] for row in xlsx_rows(alice.get(
        "/api/entity/Sample", query_string={**query, "$format": "xlsx"}))] == ["ID", "EX-HOME"]
    assert [row[0] for row in csv_rows(admin.get(
        "/api/entity/Sample", query_string={**query, "$format": "csv"}))] == [
        "ID", "EX-AWAY", "EX-HOME"]


def test_an_unknown_format_is_400(admin: ApiClient) -> None:
    response = admin.get("/api/entity/Sample?$format=pdf")
    assert_problem(response, 400, "validation_failed", errors=True)


@pytest.mark.parametrize("file_format", ["csv", "xlsx"])
def test_a_bad_filter_is_the_lists_400(admin: ApiClient, file_format: str) -> None:
    listed = admin.get("/api/entity/Sample?$filter=name eq")
    exported = admin.get(f"/api/entity/Sample?$filter=name eq&$format={file_format}")
    assert_problem(exported, 400, "invalid_filter", errors=True)
    assert exported.get_json() == listed.get_json()
    assert_problem(admin.get(f"/api/entity/Sample?$orderby=nothing&$format={file_format}"),
                   400, "invalid_orderby", errors=True)


def test_anonymous_callers_get_no_download(client: Any) -> None:
    assert_problem(client.get("/api/entity/Sample?$format=csv"), 401, "not_authenticated")


def test_the_document_names_the_download_media_types(client: Any) -> None:
    document = client.get("/api/openapi.json").get_json()
    operation = document["paths"]["/api/entity/{eclass}"]["get"]
    assert set(operation["responses"]["200"]["content"]) == {"application/json", "text/csv",
                                                             XLSX}
