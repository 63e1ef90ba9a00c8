"""The filter builder's server side (issue 21 §2, labapp/entities/filter_builder.py and
filter_chips.py): conditions written as ``$filter`` (quoting,
relative dates), filters read back into chips (a round trip, custom expressions), and the
entity list applying a condition and naming references as the viewer may see them. The
list tests run on SQLite and PostgreSQL alike."""
from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from html import unescape
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from labapp.entities.filter_builder import (
    Condition,
    ConditionError,
    add_condition,
    builder_fields,
    condition_text,
    quote,
)
from labapp.entities.filter_chips import read_conditions
from labapp.model.registry import built_in
from tests.conftest import ApiClient
from tests.entities.conftest import save
from tests.helpers.pages import HTMX, page_login

SAMPLE = built_in("Sample")
BUILT = [
    (Condition("status", "eq", "Completed"), "status eq 'Completed'"),
    (Condition("status", "ne", "Discarded"), "status ne 'Discarded'"),
    (Condition("name", "eq", "S1"), "name eq 'S1'"),
    (Condition("name", "contains", "O'Brien"), "contains(name,'O''Brien')"),
    (Condition("barcode", "startswith", "''x"), "startswith(barcode,'''''x')"),
    (Condition("description", "isempty"), "description isempty"),
    (Condition("description", "isnotempty"), "description isnotempty"),
    (Condition("amount", "ge", "2.5"), "amount ge 2.5"),
    (Condition("version", "ne", "-3"), "version ne -3"),
    (Condition("expiryDate", "lt", "2026-01-31"), "expiryDate lt 2026-01-31"),
    (Condition("expiryDate", "eq", "2026-01-31"), "expiryDate eq 2026-01-31"),
    (Condition("expiryDate", "next", "14"),
     "expiryDate ge date(now()) and expiryDate le date(now()) add duration'P14D'"),
    (Condition("dateTaken", "last", "7"),
     "dateTaken ge date(now()) sub duration'P7D' and dateTaken le date(now())"),
    (Condition("createdUtc", "last", "1"),
     "createdUtc ge now() sub duration'P1D' and createdUtc le now()"),
    (Condition("createdUtc", "ge", "2026-01-01"), "createdUtc ge 2026-01-01"),
    (Condition("locationID", "eq", "LOC00005"), "locationID eq 'LOC00005'"),
]


@pytest.mark.parametrize(("condition", "text"), BUILT)
def test_a_condition_is_written_in_the_dialect(condition: Condition, text: str) -> None:
    assert condition_text(SAMPLE, condition) == text


@pytest.mark.parametrize(("condition", "text"), BUILT)
def test_what_the_builder_writes_reads_back_as_the_same_condition(condition: Condition,
                                                                  text: str) -> None:
    assert read_conditions(SAMPLE, text) == [(text, condition)]


def test_quotes_are_doubled() -> None:
    assert quote("it's") == "'it''s'"
    assert quote("''") == "''''''"
    assert quote("") == "''"


def test_conditions_join_with_and_and_read_back_in_order() -> None:
    text = ""
    conditions = [condition for condition, _ in BUILT]
    for condition in conditions:
        text = add_condition(SAMPLE, text, condition)
    assert text == " and ".join(written for _, written in BUILT)
    assert [condition for _, condition in read_conditions(SAMPLE, text)] == conditions


def test_an_or_is_parenthesised_before_a_condition_is_added() -> None:
    added = add_condition(SAMPLE, "name eq 'a' or name eq 'b'",
                          Condition("status", "eq", "Initial"))
    assert added == "(name eq 'a' or name eq 'b') and status eq 'Initial'"
    assert read_conditions(SAMPLE, added) == [
        ("(name eq 'a' or name eq 'b')", None),
        ("status eq 'Initial'", Condition("status", "eq", "Initial"))]


@pytest.mark.parametrize("text", [
    "name eq 'a' or name eq 'b'",
    "tolower(name) eq 'a'",
    "amount gt attributes.x",
    "attributes.ph gt 7",
    "name in ('a', 'b')",
    "expiryDate lt now() add duration'P14D'",
    "expiryDate ge date(now()) and expiryDate le date(now()) sub duration'P3D'",
    "expiryDate ge now() and expiryDate le date(now()) add duration'P3D'",
    "expiryDate ge date(now()) and dateTaken le date(now()) add duration'P3D'",
    "expiryDate le date(now()) add duration'PT12H'",
    "status eq 'NoSuchStatus'",
    "amount eq 'five'",
    "name eq 5",
    "not (name eq 'a')",
    "endswith(name,'a')",
    "userID template '!me'",
    "name eq",
])
def test_what_the_builder_cannot_write_is_a_custom_expression(text: str) -> None:
    parts = read_conditions(SAMPLE, text)
    assert all(condition is None for _, condition in parts)
    assert " and ".join(part for part, _ in parts).replace("(", "").replace(")", "") \
        == text.replace("(", "").replace(")", "")


def test_custom_parts_keep_their_text_beside_the_chips() -> None:
    text = "STATUS EQ 'Completed' and (amount gt 1 or amount lt 0) and contains(name,'x')"
    assert read_conditions(SAMPLE, text) == [
        ("STATUS EQ 'Completed'", Condition("status", "eq", "Completed")),
        ("(amount gt 1 or amount lt 0)", None),
        ("contains(name,'x')", Condition("name", "contains", "x"))]


@pytest.mark.parametrize(("condition", "message"), [
    (Condition("", "eq", "x"), "Choose a field to filter by."),
    (Condition("attributes", "eq", "x"), "Sample has no field 'attributes' to filter by."),
    (Condition("amount", "contains", "1"), "Amount: choose a condition from the list."),
    (Condition("amount", "gt", ""), "Amount: give a value to compare with."),
    (Condition("amount", "gt", "1; drop"), "Amount: '1; drop' is not a number."),
    (Condition("amount", "gt", "nan"), "Amount: 'nan' is not a number."),
    (Condition("expiryDate", "lt", "31/01/2026"),
     "Expiry date: '31/01/2026' is not a date (YYYY-MM-DD)."),
    (Condition("expiryDate", "next", "0"),
     "Expiry date: give the number of days as a whole number from 1 to 36500."),
    (Condition("expiryDate", "next", "1.5"),
     "Expiry date: give the number of days as a whole number from 1 to 36500."),
    (Condition("status", "eq", "Stored'"),
     "Status: choose one of Initial, InProgress, Completed, Canceled, Discarded."),
])
def test_a_condition_the_builder_cannot_write_is_refused(condition: Condition,
                                                         message: str) -> None:
    with pytest.raises(ConditionError) as refused:
        condition_text(SAMPLE, condition)
    assert str(refused.value) == message


def test_fields_are_offered_by_label_with_operators_by_type() -> None:
    fields = {field.name: field for field in builder_fields(SAMPLE)}
    assert "attributes" not in fields and "eClass" not in fields
    assert fields["expiryDate"].label == "Expiry date"
    assert [op for op, _ in fields["expiryDate"].operators] == ["lt", "gt", "eq", "next", "last"]
    assert fields["status"].choices == SAMPLE.workflow.statuses
    assert (fields["locationID"].label, fields["locationID"].kind,
            fields["locationID"].ref) == ("Location", "ref", "Location")
    assert fields["originID"].kind == "text", "a reference to any class is typed as an id"
    assert [op for op, _ in fields["amount"].operators] == ["eq", "ne", "lt", "le", "gt", "ge"]


# ---- The entity list (SQLite and PostgreSQL) --------------------------------------------------

def _today() -> datetime:
    return datetime.now(UTC)


def _chips(html: str) -> list[str]:
    return [unescape(re.sub(r"<[^>]+>", "", chip)).strip()
            for chip in re.findall(r'<span class="chip-label">(.*?)</span>', html, re.S)]


def _names(html: str) -> list[str]:
    """The names in the rows of a table showing the columns ID and name."""
    cells = re.findall(r"<td[^>]*>(.*?)</td>", html, re.S)
    return [unescape(re.sub(r"<[^>]+>", "", cell)).strip() for cell in cells[1::2]]


@pytest.fixture
def member(make_user: Callable[..., str], api_as: Callable[..., ApiClient],
           app: Flask) -> tuple[FlaskClient, ApiClient]:
    """alice, signed in to the pages, and her API client."""
    make_user("alice")
    client = app.test_client()
    assert page_login(client, "alice").status_code == 303
    return client, api_as("alice")


def test_adding_a_relative_date_condition_filters_the_list(
        member: tuple[FlaskClient, ApiClient]) -> None:
    client, api = member
    today = _today().date()
    save(api, *({"eClass": "Sample", "name": name,
                 "expiryDate": (today + timedelta(days)).isoformat()}
                for name, days in (("Past", -2), ("Today", 0), ("Soon", 10), ("Later", 30))))
    args: dict[str, Any] = {"columns": "name", "orderby": "name", "add": "1",
                            "add_field": "expiryDate", "add_op": "next", "add_value": "14"}
    plain = client.get("/entities/Sample", query_string=args)
    assert plain.status_code == 303
    assert "add_" not in plain.headers["Location"]
    assert "add=" not in plain.headers["Location"]
    shown = client.get(plain.headers["Location"])
    assert _names(shown.get_data(as_text=True)) == ["Soon", "Today"]

    htmx = client.get("/entities/Sample", query_string={**args, "filter": "name ne 'Soon'"},
                      headers=HTMX)
    html = htmx.get_data(as_text=True)
    assert htmx.status_code == 200
    assert _names(html) == ["Today"]
    assert _chips(html) == ["Expiry date within the next 14 days",
                            "Custom expression: name ne 'Soon'"]
    assert "add_field" not in htmx.headers["HX-Push-Url"]
    assert "duration" in htmx.headers["HX-Push-Url"]

    past = client.get("/entities/Sample", headers=HTMX, query_string={
        **args, "add_op": "last", "add_value": "3"})
    assert _names(past.get_data(as_text=True)) == ["Past", "Today"]


def test_a_condition_the_builder_cannot_write_is_a_400_and_keeps_the_filter(
        member: tuple[FlaskClient, ApiClient]) -> None:
    client, api = member
    save(api, {"eClass": "Sample", "name": "Only", "amount": 1})
    response = client.get("/entities/Sample", headers=HTMX, query_string={
        "columns": "name", "filter": "amount ge 1", "add": "1", "add_field": "amount",
        "add_op": "gt", "add_value": "lots"})
    html = response.get_data(as_text=True)
    assert response.status_code == 400
    assert re.search(r'<p class="field-error" id="builder-error" role="alert">'
                     r"Amount: &#39;lots&#39; is not a number.</p>", html)
    assert 'value="amount ge 1"' in html, "the filter stays as it was"
    assert _chips(html) == ["Amount ≥ 1"]
    assert _names(html) == ["Only"]
    # Add without a chosen field (Enter in the $filter box): the filter as typed.
    typed = client.get("/entities/Sample", headers=HTMX, query_string={
        "columns": "name", "filter": "amount gt 5", "add": "1", "add_field": ""})
    assert typed.status_code == 200
    assert _names(typed.get_data(as_text=True)) == []


def test_references_are_named_as_the_viewer_may_see_them(
        member: tuple[FlaskClient, ApiClient], admin: ApiClient) -> None:
    client, api = member
    box, = save(api, {"eClass": "Location", "name": "Box 12"})
    elsewhere, = save(admin, {"eClass": "Department", "name": "Elsewhere"})
    hidden, = save(admin, {"eClass": "Location", "name": "Secret room",
                           "departmentID": elsewhere["id"]})
    response = client.get("/entities/Sample", headers=HTMX, query_string={
        "filter": f"locationID eq '{box['id']}' or locationID eq 'x'"
                  f" and locationID ne '{hidden['id']}'"})
    assert _chips(response.get_data(as_text=True)) == [
        f"Custom expression: ({response.request.args['filter']})"]
    response = client.get("/entities/Sample", headers=HTMX, query_string={
        "filter": f"locationID eq '{box['id']}' and locationID ne '{hidden['id']}'"})
    assert _chips(response.get_data(as_text=True)) == [
        "Location is Box 12", f"Location is not {hidden['id']}"]


def test_a_reference_typed_by_name_is_the_one_entity_so_called(
        member: tuple[FlaskClient, ApiClient], admin: ApiClient) -> None:
    client, api = member
    box, _, _ = save(api, {"eClass": "Location", "name": "Box 12"},
                     {"eClass": "Location", "name": "Twin"}, {"eClass": "Location", "name": "twin"})
    save(api, {"eClass": "Sample", "name": "In the box", "locationID": box["id"]},
         {"eClass": "Sample", "name": "Elsewhere"})
    elsewhere, = save(admin, {"eClass": "Department", "name": "Elsewhere"})
    save(admin, {"eClass": "Location", "name": "Secret room", "departmentID": elsewhere["id"]})
    args = {"columns": "name", "add": "1", "add_field": "locationID", "add_op": "eq"}
    named = client.get("/entities/Sample", headers=HTMX,
                       query_string={**args, "add_value": "box 12"})
    html = named.get_data(as_text=True)
    assert named.status_code == 200
    assert _names(html) == ["In the box"] and _chips(html) == ["Location is Box 12"]
    assert f"locationID eq &#39;{box['id']}&#39;" in html
    by_id = client.get("/entities/Sample", headers=HTMX,
                       query_string={**args, "add_value": box["id"]})
    assert _chips(by_id.get_data(as_text=True)) == ["Location is Box 12"]
    for typed, message in (
            ("Twin", "Location: 2 are called &#39;Twin&#39;; choose one from the suggestions."),
            ("Secret room", "Location: nothing you may see is called &#39;Secret room&#39;; "
                            "choose one from the suggestions.")):
        refused = client.get("/entities/Sample", headers=HTMX,
                             query_string={**args, "add_value": typed})
        assert refused.status_code == 400
        assert message in refused.get_data(as_text=True)
