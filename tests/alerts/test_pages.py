"""The alert rule form (issue 32 §5) through real HTTP: its filter is built with the entity
list's filter builder (a condition added, a chip removed: the form comes back with the filter
changed, nothing saved until Save), the example rule offered on the list excludes items
already expired, and a name with a control character is refused like in the API."""
from __future__ import annotations

import re
from html import unescape
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from labapp.db import db
from labapp.model import AlertRule
from tests.alerts.conftest import NOW, made, rule_body, states_of, tick
from tests.entities.conftest import body_of, save
from tests.helpers.pages import page_login, post_form

EXAMPLE = "expiryDate ge date(now()) and expiryDate le date(now()) add duration'P14D'"


def _rules(app: Flask) -> list[AlertRule]:
    with app.app_context():
        return list(db.session.scalars(select(AlertRule)))


def _count(app: Flask) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(AlertRule)) or 0


def _filter_of(html: str) -> str:
    found = re.search(r'<textarea id="rule-filter"[^>]*>([^<]*)</textarea>', html)
    assert found, "no filter box"
    return unescape(found.group(1))


def _chips(html: str) -> list[str]:
    return [unescape(label) for label in re.findall(r'<span class="chip-label">([^<]*)', html)]


def _form(**values: Any) -> dict[str, Any]:
    return {"name": "Watch", "eClass": "Sample", "filter": "", "userIDs": ["alice"],
            "channels": "bell", "cadence": "immediate", "active": "true", **values}


def _alice(app: Flask) -> FlaskClient:
    page = app.test_client()
    page_login(page, "alice")
    return page


def test_the_builder_adds_and_removes_conditions_before_saving(app: Flask,
                                                               lab: dict[str, Any]) -> None:
    page = _alice(app)
    added = post_form(page, "/alerts/new", _form(add="1", add_field="amount", add_op="le",
                                                 add_value="5"))
    html = added.get_data(as_text=True)
    assert added.status_code == 200 and _filter_of(html) == "amount le 5"
    assert _chips(html) == ["Amount ≤ 5"] and "autofocus" in html
    assert _count(app) == 0, "not saved yet"

    second = post_form(page, "/alerts/new", _form(filter="amount le 5", add="1",
                                                  add_field="expiryDate", add_op="next",
                                                  add_value="14"))
    html = second.get_data(as_text=True)
    assert _filter_of(html) == f"amount le 5 and {EXAMPLE}"
    assert _chips(html) == ["Amount ≤ 5", "Expiry date within the next 14 days"]
    assert 'name="remove_condition" value="amount le 5"' in html

    removed = post_form(page, "/alerts/new", _form(filter=f"amount le 5 and {EXAMPLE}",
                                                   remove_condition=EXAMPLE))
    assert _filter_of(removed.get_data(as_text=True)) == EXAMPLE
    assert _count(app) == 0

    saved = post_form(page, "/alerts/new", _form(filter=EXAMPLE))
    assert saved.status_code == 303
    assert [(rule.name, rule.filter) for rule in _rules(app)] == [("Watch", EXAMPLE)]


def test_a_condition_the_builder_cannot_write_is_400_with_its_message(
        app: Flask, lab: dict[str, Any]) -> None:
    response = post_form(_alice(app), "/alerts/new", _form(
        filter="amount le 5", add="1", add_field="amount", add_op="le", add_value="lots"))
    html = response.get_data(as_text=True)
    assert response.status_code == 400 and 'id="builder-error"' in html
    assert "Amount: &#39;lots&#39; is not a number." in html
    assert _filter_of(html) == "amount le 5", "the filter unchanged"
    assert _count(app) == 0


def test_enter_saves_and_an_empty_builder_adds_nothing(app: Flask,
                                                       lab: dict[str, Any]) -> None:
    # Enter in the name box sends the form by its first submit button (the hidden Save);
    # Add condition with no field chosen saves too, as the entity list applies its filter.
    page = _alice(app)
    html = page.get("/alerts/new").get_data(as_text=True)
    first = re.search(r"<button[^>]*>", html[html.index('id="rule-form"'):])
    assert first and 'id="default-save"' in first.group(0) and "name=" not in first.group(0)
    assert post_form(page, "/alerts/new", _form(add="1", add_field="")).status_code == 303
    assert post_form(page, "/alerts/new", _form(name="Second")).status_code == 303
    assert sorted(rule.name for rule in _rules(app)) == ["Second", "Watch"]


def test_another_class_gets_its_own_fields(app: Flask, lab: dict[str, Any]) -> None:
    response = post_form(_alice(app), "/alerts/new", _form(eClass="Request", action="refresh"))
    html = response.get_data(as_text=True)
    fields = re.findall(r'<option value="([^"]+)" data-kind=', html)
    assert "dueDate" in fields and "amount" not in fields
    assert _count(app) == 0


def test_the_example_rule_leaves_out_what_has_expired(app: Flask, lab: dict[str, Any]) -> None:
    page = _alice(app)
    listed = page.get("/alerts").get_data(as_text=True)
    assert 'href="/alerts/new?example=1"' in listed
    html = page.get("/alerts/new?example=1").get_data(as_text=True)
    assert _filter_of(html) == EXAMPLE
    assert 'value="Expiring within 14 days"' in html
    assert _chips(html) == ["Expiry date within the next 14 days"]
    assert unescape(re.search(r'<code id="example-filter">([^<]*)', html).group(1)) == EXAMPLE

    dates = {"expired yesterday": "2026-11-24", "today": "2026-11-25",
             "in ten days": "2026-12-05", "in two weeks": "2026-12-09",
             "in twenty days": "2026-12-15"}
    ids = {item["name"]: item["id"] for item in save(lab["alice"], *(
        {"eClass": "Sample", "name": name, "expiryDate": day} for name, day in dates.items()))}
    rule = made(lab["alice"], rule_body("Expiring within 14 days", filter=EXAMPLE))
    tick(app, NOW)
    assert states_of(app, rule["id"]) == {ids["today"], ids["in ten days"], ids["in two weeks"]}


def test_a_name_with_a_line_break_is_refused_by_the_form(app: Flask,
                                                         lab: dict[str, Any]) -> None:
    response = post_form(_alice(app), "/alerts/new",
                         _form(name="Low\r\nBcc: mallory@evil.example"))
    html = response.get_data(as_text=True)
    assert response.status_code == 400 and 'id="rule-name-error"' in html
    assert "must not contain control characters" in html
    assert _count(app) == 0


def test_a_page_of_a_rule_the_caller_may_not_see_is_404_whatever_is_posted(
        app: Flask, lab: dict[str, Any]) -> None:
    rule = made(lab["alice"], rule_body("Alice's"))
    page = app.test_client()
    page_login(page, "bob")
    for extra in ({"action": "test"}, {"action": "refresh"}, {"remove_condition": ""},
                  {"add": "1", "add_field": "amount", "add_op": "le", "add_value": "1"}, {}):
        response = post_form(page, f"/alerts/{rule['id']}", _form(**extra))
        assert response.status_code == 404, extra
        assert "Alice&#39;s" not in response.get_data(as_text=True)
    assert body_of(lab["alice"].get(f"/api/alert-rule/{rule['id']}"), 200)["name"] == "Alice's"
