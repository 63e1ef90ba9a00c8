"""The entity list a lab member reads (issue 21 §2): default columns per class (a Sample's
amount with its unit in one cell, where it is stored as one cell, its expiry; a Request's
assignee by name, status and due date), the column picker, the export of what the table
shows, and expired, overdue, low and empty values marked in words."""
from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from html import unescape
from typing import Any
from urllib.parse import unquote

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.conftest import ApiClient
from tests.dashboards.conftest import board, created, widget
from tests.entities.conftest import body_of, save
from tests.helpers.dates import days_from_today
from tests.helpers.pages import page_login

SAMPLE_HEADERS = ["ID", "Name", "Barcode", "Status", "Amount", "Location", "Expiry date"]


def signed_in(app: Flask, username: str) -> FlaskClient:
    client = app.test_client()
    assert page_login(client, username).status_code == 303
    return client


def page_of(client: FlaskClient, path: str, **query: str) -> str:
    response = client.get(path, query_string=query)
    assert response.status_code == 200, response.get_data(as_text=True)[:2000]
    return response.get_data(as_text=True)


def text_of(fragment: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def headers_of(page: str) -> list[str]:
    head = page.split('<table id="entity-table">', 1)[1].split("</thead>", 1)[0]
    return [text_of(cell).rstrip(" ▲▼") for cell in re.findall(r"<th[^>]*>(.*?)</th>", head, re.S)]


def rows_of(page: str) -> dict[str, list[str]]:
    """The cells of each row of the entity table (as HTML), by the row's id."""
    body = page.split('<table id="entity-table">', 1)[1].split("<tbody>", 1)[1]
    body = body.split("</tbody>", 1)[0]
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
            for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]
    return {text_of(cells[0]): cells for cells in rows}


def marks_in(cell: str) -> list[str]:
    return re.findall(r'<span class="mark mark-(\w+)">(\w+)</span>', cell)


@pytest.fixture
def lab(admin: ApiClient, member: Callable[..., ApiClient],
        department: Callable[..., str]) -> dict[str, Any]:
    """Alice of Physics with a box and samples: stored, expired, empty, low, and a
    discarded one that is both expired and empty."""
    physics = department("Physics")
    alice = member("alice", department_id=physics, name="Alice Liddell")
    box = body_of(admin.post("/api/storage/location", json=[
        {"name": "Box 12", "departmentID": physics, "rows": 2, "columns": 3}]), 201)[0]["id"]
    made = save(
        alice,
        {"eClass": "Sample", "name": "Stored", "barcode": "BC-1", "amount": 180.0,
         "unit": "µL", "expiryDate": days_from_today(1)},
        {"eClass": "Sample", "name": "Expired", "amount": 2.0, "unit": "mL",
         "expiryDate": days_from_today(-1)},
        {"eClass": "Sample", "name": "Empty", "amount": 0.0, "unit": "mL",
         "expiryDate": days_from_today(0)},
        {"eClass": "Sample", "name": "Low", "amount": 5.0, "unit": "uL"},
        {"eClass": "Sample", "name": "Own threshold", "amount": 50.0, "unit": "µL",
         "attributes": {"lowAmount": 100}},
        {"eClass": "Sample", "name": "Gone", "amount": 0.0, "unit": "µL",
         "expiryDate": days_from_today(-1), "status": "Discarded"})
    body_of(admin.post(f"/api/storage/location/{box}/checkin", json=[
        {"eClass": "Sample", "id": made[0]["id"], "position": "A1"}]), 200)
    return {"physics": physics, "box": box, "alice": alice,
            **{sample["name"]: sample["id"] for sample in made}}


def test_sample_list_shows_what_a_lab_member_reads_first(app: Flask,
                                                         lab: dict[str, Any]) -> None:
    page = page_of(signed_in(app, "alice"), "/entities/Sample")
    assert headers_of(page) == SAMPLE_HEADERS, "the unit is no column of its own"
    stored = [text_of(cell) for cell in rows_of(page)[lab["Stored"]]]
    assert stored == [lab["Stored"], "Stored", "BC-1", "Initial", "180 µL",
                      f"Box 12 · A1 {lab['box']}", days_from_today(1)]
    assert f'<time datetime="{days_from_today(1)}">' in page


def test_marks_are_words_beside_the_values(app: Flask, lab: dict[str, Any]) -> None:
    rows = rows_of(page_of(signed_in(app, "alice"), "/entities/Sample"))
    amount, expiry = SAMPLE_HEADERS.index("Amount"), SAMPLE_HEADERS.index("Expiry date")
    marked = {name: (marks_in(rows[lab[name]][amount]), marks_in(rows[lab[name]][expiry]))
              for name in ("Stored", "Expired", "Empty", "Low", "Own threshold", "Gone")}
    assert marked == {
        "Stored": ([], []),
        "Expired": ([], [("expired", "expired")]),
        "Empty": ([("empty", "empty")], []),          # expiring today is not expired yet
        "Low": ([("low", "low")], []),                 # 5 uL, below the µL threshold of 10
        "Own threshold": ([("low", "low")], []),       # its own lowAmount of 100 µL
        "Gone": ([], []),                              # discarded: nothing to act upon
    }


def test_the_detail_page_marks_as_the_list_does(app: Flask, lab: dict[str, Any]) -> None:
    page = page_of(signed_in(app, "alice"), f"/entities/Sample/{lab['Expired']}")
    assert '<span class="mark mark-expired">expired</span>' in page
    low = page_of(signed_in(app, "alice"), f"/entities/Sample/{lab['Low']}")
    assert '5 uL <span class="mark mark-low">low</span>' in low


def test_a_setting_changes_the_thresholds(fresh_app: Callable[..., Flask]) -> None:
    from labapp.model.registry import existing_class
    from labapp.reading.marks import mark_of

    application = fresh_app(LOW_AMOUNT="mL=5")
    with application.app_context():
        sample = existing_class("Sample")
        row = {"amount": 5.0, "unit": "µL", "status": "Initial"}
        assert mark_of(sample, "amount", row) is None, "µL has no threshold now"
        assert mark_of(sample, "amount", {**row, "unit": "ML", "amount": 4.9}) == "low"


def test_request_list_shows_assignee_by_name_and_overdue_while_open(
        app: Flask, admin: ApiClient, lab: dict[str, Any]) -> None:
    made = save(lab["alice"], *({"eClass": "Request", "name": name, "assigneeID": "alice",
                                 "dueDate": due, "priority": "High"}
                                for name, due in (("Open late", days_from_today(-1)),
                                                  ("Open today", days_from_today(0)),
                                                  ("Done late", days_from_today(-1)),
                                                  ("Canceled late", days_from_today(-1)))))
    ids = {request["name"]: request["id"] for request in made}
    for name, moves in (("Done late", ("InProgress", "Completed")),
                        ("Canceled late", ("Canceled",))):
        for status in moves:
            save(lab["alice"], {"eClass": "Request", "id": ids[name], "status": status},
                 status=200)
    page = page_of(signed_in(app, "alice"), "/entities/Request")
    assert headers_of(page) == ["ID", "Name", "Assignee", "Status", "Due date", "Priority"]
    rows = rows_of(page)
    late = rows[ids["Open late"]]
    assert text_of(late[2]) == "Alice Liddell alice"
    assert '<a href="/entities/User/alice">Alice Liddell</a>' in late[2]
    assert marks_in(late[4]) == [("overdue", "overdue")] and text_of(late[5]) == "High"
    for name in ("Open today", "Done late", "Canceled late"):
        assert marks_in(rows[ids[name]][4]) == [], name


def test_other_classes_keep_their_columns_and_the_picker_works(
        app: Flask, lab: dict[str, Any]) -> None:
    save(lab["alice"], {"eClass": "Experiment", "name": "Growth"})
    client = signed_in(app, "alice")
    assert headers_of(page_of(client, "/entities/Experiment")) == [
        "ID", "Name", "Status", "Type", "Modified", "Start date", "End date"]
    chosen = page_of(client, "/entities/Sample", columns="name,unit,expiryDate")
    assert headers_of(chosen) == ["ID", "Name", "Unit", "Expiry date"]
    expired = rows_of(chosen)[lab["Expired"]]
    assert marks_in(expired[3]) == [("expired", "expired")]
    assert re.search(r'<input type="checkbox" name="columns" value="amount"\s+checked>',
                     page_of(client, "/entities/Sample"))


def test_export_of_the_list_has_the_tables_columns(app: Flask, lab: dict[str, Any]) -> None:
    client = signed_in(app, "alice")
    page = page_of(client, "/entities/Sample", orderby="name")
    href = unquote(unescape(re.search(r'id="export-csv" download\s+href="([^"]+)"', page)[1]))
    assert "$select=name,barcode,status,amount,locationID,expiryDate" in href
    response = client.get(href)
    assert response.status_code == 200, response.get_data(as_text=True)
    rows = list(csv.reader(io.StringIO(response.get_data(as_text=True).lstrip("\ufeff"))))
    # The table's headers, the location's id beside its name as every export gives it.
    assert rows[0] == ["ID", "Name", "Barcode", "Status", "Amount", "Location", "Location ID",
                       "Expiry date"]
    stored = next(row for row in rows if row[0] == lab["Stored"])
    assert stored == [lab["Stored"], "Stored", "BC-1", "Initial", "180 µL", "Box 12 · A1",
                      lab["box"], days_from_today(1)]


def test_widgets_mark_the_same_rows(member: Callable[..., ApiClient],
                                    lab: dict[str, Any]) -> None:
    alice2 = member("alice2", department_id=lab["physics"])
    stored = created(alice2, board("Cold", [widget("saved-list", {
        "eClass": "Sample", "columns": ["name", "amount", "expiryDate"], "top": 10})]))
    answer = body_of(alice2.get(f"/api/dashboard/{stored['id']}/widget/0"), 200)["data"]
    marked = {row["cells"][0]["text"]: [cell.get("mark") for cell in row["cells"][1:]]
              for row in answer["cells"]}
    assert marked == {"Stored": [None, None], "Expired": [None, "expired"],
                      "Empty": ["empty", None], "Low": ["low", None],
                      "Own threshold": ["low", None], "Gone": [None, None]}
    assert answer["headers"] == [{"field": "name", "label": "Name"},
                                 {"field": "amount", "label": "Amount"},
                                 {"field": "expiryDate", "label": "Expiry date"}]


def test_the_widget_on_the_dashboard_page_shows_the_marks(
        app: Flask, member: Callable[..., ApiClient], lab: dict[str, Any]) -> None:
    alice2 = member("alice2", department_id=lab["physics"])
    stored = created(alice2, board("Cold", [widget("saved-list", {
        "eClass": "Sample", "columns": ["name", "amount", "expiryDate"], "top": 10})]))
    fragment = page_of(signed_in(app, "alice2"), f"/dashboards/{stored['id']}/widget/0")
    assert sorted(set(marks_in(fragment))) == [
        ("empty", "empty"), ("expired", "expired"), ("low", "low")]
