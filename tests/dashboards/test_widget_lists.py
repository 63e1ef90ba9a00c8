"""Saved-list widgets as a lab member reads them (issue 21 §2): field labels for headers,
references by name (linked, the id beside), numbers with their unit and without float noise,
every row linked to its entity, the configured order, and no name of what the reader may not
see."""
from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.conftest import ApiClient
from tests.dashboards.conftest import board, created, widget
from tests.entities.conftest import body_of, save
from tests.helpers.pages import page_login

COLUMNS = ["name", "amount", "unit", "departmentID", "locationID", "expiryDate", "createdBy"]


def signed_in(app: Flask, username: str) -> FlaskClient:
    client = app.test_client()
    assert page_login(client, username).status_code == 303
    return client


def widget_html(client: FlaskClient, dashboard: dict[str, Any], index: int = 0) -> str:
    response = client.get(f"/dashboards/{dashboard['id']}/widget/{index}")
    assert response.status_code == 200, response.get_data(as_text=True)[:2000]
    return response.get_data(as_text=True)


def text_of(fragment: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def rows_of(page: str) -> list[str]:
    """The text of each body row of the widget's table."""
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [text_of(row) for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


@pytest.fixture
def lab(admin: ApiClient, member: Callable[..., ApiClient],
        department: Callable[..., str]) -> dict[str, str]:
    """Alice's department Physics with a box, and three of her samples (one stored in the
    box at A1); their ids by name."""
    physics = department("Physics")
    alice = member("alice", department_id=physics)
    box = body_of(admin.post("/api/storage/location", json=[
        {"name": "Box 12", "departmentID": physics, "rows": 2, "columns": 3}]), 201)[0]["id"]
    made = save(alice,
                {"eClass": "Sample", "name": "Tube C", "amount": 180.0, "unit": "µL",
                 "expiryDate": "2030-01-31"},
                {"eClass": "Sample", "name": "Tube A", "amount": 0.0, "unit": "mL"},
                {"eClass": "Sample", "name": "Tube B", "amount": 38.14494730136748})
    body_of(admin.post(f"/api/storage/location/{box}/checkin", json=[
        {"eClass": "Sample", "id": made[0]["id"], "position": "A1"}]), 200)
    return {"physics": physics, "box": box,
            **{sample["name"]: sample["id"] for sample in made}}


def test_headers_are_labels_and_values_read_as_on_detail_pages(
        app: Flask, member: Callable[..., ApiClient], lab: dict[str, str]) -> None:
    alice = member("alice2", department_id=lab["physics"])
    stored = created(alice, board("Cold", [widget("saved-list", {
        "eClass": "Sample", "columns": COLUMNS})]))
    page = widget_html(signed_in(app, "alice2"), stored)
    head = text_of(page.split("<thead>", 1)[1].split("</thead>", 1)[0])
    # The unit is shown with its amount, not in a column of its own.
    assert head == "Name Amount Department Location Expiry date Created by"
    assert "EXPIRYDATE" not in page and "LOCATIONID" not in page
    rows = rows_of(page)
    # By name (the list's own order), not by id.
    assert [row.split()[:2] for row in rows] == [["Tube", "A"], ["Tube", "B"], ["Tube", "C"]]
    assert "0 mL" in rows[0] and "38.1449" in rows[1] and "180 µL" in rows[2]
    assert "180.0" not in page and "0.0" not in page
    assert f"Physics {lab['physics']}" in rows[2] and rows[0].endswith("Alice alice")
    assert f"Box 12 · A1 {lab['box']}" in rows[2]
    assert '<time datetime="2030-01-31">' in page
    assert f'href="/entities/Department/{lab["physics"]}"' in page
    assert f'href="/storage/locations/{lab["box"]}?slot=A1"' in page
    for name in ("Tube A", "Tube B", "Tube C"):
        assert f'href="/entities/Sample/{lab[name]}" class="row-link">{name}</a>' in page


def test_configured_order_and_api_cells(member: Callable[..., ApiClient],
                                        lab: dict[str, str]) -> None:
    alice = member("alice2", department_id=lab["physics"])
    stored = created(alice, board("Sorted", [widget("saved-list", {
        "eClass": "Sample", "columns": ["name", "amount", "unit"],
        "orderby": "amount desc"})]))
    answer = body_of(alice.get(f"/api/dashboard/{stored['id']}/widget/0"), 200)["data"]
    assert [row["name"] for row in answer["rows"]] == ["Tube C", "Tube B", "Tube A"]
    assert answer["headers"] == [{"field": "name", "label": "Name"},
                                 {"field": "amount", "label": "Amount"}]
    first = answer["cells"][0]
    assert first["id"] == lab["Tube C"]
    assert [cell["text"] for cell in first["cells"]] == ["Tube C", "180 µL"]
    only_references = created(alice, board("Refs", [widget("saved-list", {
        "eClass": "Sample", "columns": ["departmentID"]})]))
    refs = body_of(alice.get(f"/api/dashboard/{only_references['id']}/widget/0"), 200)["data"]
    assert [header["label"] for header in refs["headers"]] == ["ID", "Department"]
    assert refs["cells"][0]["cells"][0] == {"text": lab["Tube A"]}
    bad = alice.post("/api/dashboard", json=board("Bad", [widget("saved-list", {
        "eClass": "Sample", "orderby": "nosuchfield"})]))
    assert bad.status_code == 400 and "orderby" in bad.get_data(as_text=True)


def test_a_reference_the_reader_may_not_see_shows_no_name(
        app: Flask, admin: ApiClient, member: Callable[..., ApiClient],
        department: Callable[..., str], lab: dict[str, str]) -> None:
    chemistry = department("Chemistry")
    member("bob", department_id=chemistry)
    secret = save(admin, {"eClass": "Sample", "name": "Secret parent",
                          "departmentID": chemistry})[0]["id"]
    save(admin, {"eClass": "Sample", "name": "Child", "parentID": secret,
                 "departmentID": lab["physics"]},
         {"eClass": "Sample", "name": "Sibling", "parentID": lab["Tube A"],
          "departmentID": lab["physics"]})
    carol = member("carol", department_id=lab["physics"])
    stored = created(carol, board("Refs", [widget("saved-list", {
        "eClass": "Sample", "columns": ["name", "parentID"], "filter": "parentID ne null"})]))
    page = widget_html(signed_in(app, "carol"), stored)
    assert rows_of(page) == [f"Child {secret}", f"Sibling Tube A {lab['Tube A']}"]
    assert "Secret parent" not in page and f"/entities/Sample/{secret}" not in page
    assert f'href="/entities/Sample/{lab["Tube A"]}">Tube A</a>' in page
