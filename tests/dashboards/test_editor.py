"""The dashboard editor's form and its errors (issue 21 §4): cards to the API body and back,
only each kind's settings, and refusals said at the widget they are about."""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from flask import Flask
from werkzeug.datastructures import MultiDict

from labapp.dashboards.editor import (
    KIND_FIELDS,
    EditorError,
    body_from_form,
    card_of,
    editor_errors,
    new_widget,
)
from tests.conftest import ApiClient
from tests.dashboards.conftest import board, created, listed, widget
from tests.helpers.pages import html, post_form, signed_in

EXPIRING = widget("saved-list", {"eClass": "Sample", "filter": "status eq 'Initial'",
                                 "columns": ["id", "name"], "top": 5, "orderby": "name desc"},
                  x=6, y=4, cols=6, rows=5, header="Expiring")


def form_of(*cards: tuple[int, dict[str, Any]], **extra: str) -> MultiDict[str, Any]:
    """The form the editor posts for ``(number, card_of(widget))`` pairs."""
    items: list[tuple[str, Any]] = [("name", "Board"), *extra.items()]
    for number, card in cards:
        items += [(f"w{number}-plugin", card["plugin"]), (f"w{number}-header", card["header"])]
        items += [(f"w{number}-{key}", str(card[key])) for key in ("x", "y", "cols", "rows")]
        items += [(f"w{number}-{field}", str(value)) for field, _, value in card["fields"]]
    return MultiDict(items)


def test_a_card_posts_back_the_widget_it_shows() -> None:
    note = widget("note", {"markdown": "**hi**"}, y=9, cols=12, rows=2)
    body = body_from_form(form_of((0, card_of(EXPIRING)), (1, card_of(note))))
    assert body["widgets"] == [EXPIRING, note]
    assert body["shares"] == {"userIDs": [], "departmentIDs": [], "projectIDs": [],
                              "userRoles": []}


def test_each_kind_shows_and_posts_only_its_own_settings() -> None:
    assert [field for field, _, _ in card_of(EXPIRING)["fields"]] == [
        "eclass", "filter", "columns", "orderby", "size"]
    assert card_of(widget("my-requests"))["fields"] == []
    assert [label for _, label, _ in card_of(widget("recent-activity"))["fields"]] == ["items"]
    form = form_of((0, card_of(widget("status-counts", {"eClass": "Sample"}))))
    form.add("w0-markdown", "not a setting of a status chart")
    form.add("w0-filter", "id eq 'x'")
    assert body_from_form(form)["widgets"][0]["config"] == {"eClass": "Sample"}


def test_cards_keep_the_order_of_their_numbers_and_removed_ones_are_dropped() -> None:
    cards = [(10, card_of(widget("note", {"markdown": "ten"}))),
             (3, card_of(widget("note", {"markdown": "three"}))),
             (4, card_of(widget("note", {"markdown": "four"})))]
    body = body_from_form(form_of(*cards, **{"w4-remove": "1", "w7-plugin": "unknown-kind"}))
    assert [w["config"]["markdown"] for w in body["widgets"]] == ["three", "ten"]


def test_numbers_that_do_not_parse_reach_the_schema_as_text() -> None:
    card = card_of(widget("recent-activity", {"limit": 5}))
    form = form_of((0, card))
    form.setlist("w0-size", ["lots"])
    form.setlist("w0-x", [" 2 "])
    posted = body_from_form(form)["widgets"][0]
    assert posted["config"] == {"limit": "lots"} and posted["gridster"]["x"] == 2


def test_a_new_widget_goes_below_the_others_and_is_wide_enough() -> None:
    added = new_widget("storage-usage", [EXPIRING])
    assert added["gridster"] == {"x": 0, "y": 9, "cols": 6, "rows": 4}
    assert new_widget("note", [])["config"] == {"markdown": ""}
    assert set(KIND_FIELDS) == {"status-counts", "created-per-week", "saved-list",
                                "storage-usage", "my-requests", "recent-activity", "note",
                                "alerts"}


def test_errors_are_said_of_their_widget() -> None:
    widgets = [widget("note", {"markdown": ""}), EXPIRING]
    said = editor_errors([
        {"field": "widgets.1.config.filter", "message": "unknown field 'colour'"},
        {"field": "widgets.1.config.top", "message": "Must be at most 100."},
        {"field": "widgets.0.gridster.cols", "message": "x + cols must not exceed 12"},
        {"field": "widgets.1.gridster.cols",
         "message": "Widget 'Expiring': a saved list needs more"},
        {"field": "widgets.1", "message": "whole widget"},
        {"field": "widgets.7.header", "message": "no such card"},
        {"field": "name", "message": "Missing data for required field."},
        {"field": "shares.userIDs.0", "message": "no such user"},
        {"field": "", "message": "Something else."}], widgets)
    assert said == [
        EditorError("Widget 'Expiring': filter: unknown field 'colour'", 1, "filter"),
        EditorError("Widget 'Expiring': rows: Must be at most 100.", 1, "size"),
        EditorError("Widget 'Note': width: x + cols must not exceed 12", 0, "cols"),
        EditorError("Widget 'Expiring': a saved list needs more", 1, "cols"),
        EditorError("Widget 'Expiring': whole widget", 1, None),
        EditorError("no such card", None, None),
        EditorError("Name: Missing data for required field.", None, "name"),
        EditorError("Share with users: no such user", None, "shares.userIDs"),
        EditorError("Something else.", None, None)]


def test_a_bad_filter_is_shown_at_its_widget(app: Flask,
                                             member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    browser = signed_in(app, "alice")
    form = form_of((0, card_of(widget("note", {"markdown": "x"}))),
                   (5, card_of({**EXPIRING, "config": {**EXPIRING["config"],
                                                        "filter": "colour eq 'red'"}})))
    answer = post_form(browser, "/dashboards/new", dict(form.items(multi=True)))
    assert answer.status_code == 400
    page = answer.get_data(as_text=True)
    assert "widgets.1" not in page
    card = re.search(r'<section class="editor-widget has-error" id="w1-card".*?</section>',
                     page, re.S)
    assert card is not None and "data-open-settings" in card.group(0)
    assert "Widget &#39;Expiring&#39;: filter: " in card.group(0)
    assert re.search(r'id="w1-filter" name="w1-filter" value="colour eq &#39;red&#39;"\s*'
                     r'aria-invalid="true" aria-describedby="w1-filter-error"', card.group(0))
    assert '<a href="#w1-card">Widget &#39;Expiring&#39;: filter: ' in page
    assert 'id="w0-card"' in page and 'id="w0-card" data-open-settings' not in page
    assert listed(alice) == []


def test_add_widget_without_javascript_posts_back_one_more_card(
        app: Flask, member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    browser = signed_in(app, "alice")
    form = form_of((0, card_of(EXPIRING)), add="1", add_kind="note")
    answer = post_form(browser, "/dashboards/new", dict(form.items(multi=True)))
    assert answer.status_code == 200
    page = answer.get_data(as_text=True)
    assert 'name="w1-plugin" value="note"' in page and 'name="w1-markdown"' in page
    assert re.search(r'name="w1-y" inputmode="numeric" value="9"', page)
    assert listed(alice) == []


def test_the_editor_shows_each_kind_its_settings_and_a_destructive_delete(
        app: Flask, member: Callable[..., ApiClient]) -> None:
    alice = member("alice")
    stored = created(alice, board("Mine", [EXPIRING, widget("note", {"markdown": "hi"})]))
    page = html(signed_in(app, "alice"), f"/dashboards/{stored['id']}/edit")
    first = page[page.index('id="w0-card"'):page.index('id="w1-card"')]
    assert 'name="w0-filter"' in first and 'name="w0-markdown"' not in first
    assert 'value="name desc"' in first
    assert 'name="w1-markdown"' in page and 'name="w1-filter"' not in page
    assert re.search(r'data-confirm="Delete the dashboard “Mine”\? This cannot be undone\."',
                     page)
    assert 'id="delete-dashboard" class="button-danger"' in page
    assert 'id="widget-template-saved-list"' in page and 'id="w__N__-card"' in page


def test_the_editor_opens_a_narrow_chart_at_its_minimum_and_refuses_a_narrower_one(
        app: Flask, member: Callable[..., ApiClient]) -> None:
    """Issue 32 §5: the API stores a chart narrower than its kind (earlier clients did);
    the editor widens it when it opens the dashboard, so saving it back is accepted, and
    refuses a width typed narrower."""
    alice = member("alice")
    stored = created(alice, board("Older", [
        widget("note", {"markdown": "x"}, cols=2),
        widget("storage-usage", {}, x=10, cols=2, header="Freezers")]))
    browser = signed_in(app, "alice")
    page = html(browser, f"/dashboards/{stored['id']}/edit")
    card = page[page.index('id="w1-card"'):]
    assert "data-widened" in card[:300] and 'id="w1-widened"' in card
    assert re.search(r'name="w1-cols" inputmode="numeric" value="6"', card)
    assert re.search(r'name="w1-x" inputmode="numeric" value="6"', card)
    first = page[page.index('id="w0-card"'):page.index('id="w1-card"')]
    assert "data-widened" not in first and re.search(r'name="w0-cols"[^>]*value="2"', first)
    form = form_of((0, card_of(widget("note", {"markdown": "x"}, cols=2))),
                   (1, card_of(widget("storage-usage", {}, x=6, cols=6, header="Freezers"))))
    saved = post_form(browser, f"/dashboards/{stored['id']}/edit", dict(form.items(multi=True)))
    assert saved.status_code == 303
    (mine,) = alice.get("/api/dashboard").get_json()
    assert mine["widgets"][1]["gridster"] == {"x": 6, "y": 0, "cols": 6, "rows": 4}
    form.setlist("w1-cols", ["5"])
    refused = post_form(browser, f"/dashboards/{stored['id']}/edit",
                        dict(form.items(multi=True)))
    assert refused.status_code == 400
    assert "Widget &#39;Freezers&#39;: a storage chart needs at least 6 columns" in (
        refused.get_data(as_text=True))
