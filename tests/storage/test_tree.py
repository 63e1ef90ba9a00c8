"""The storage tree at the size of a biobank (issue 24): the page draws whole top levels while
they fit a budget of locations, with counts that roll up through what it does not draw, and a
location opens through a fragment that lists its visible children with their counts."""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import event

from labapp.access.grant_sets import actor_for
from labapp.db import db
from labapp.model import User
from labapp.storage import tree
from tests.conftest import BACKEND, ApiClient
from tests.helpers.pages import html_of
from tests.storage.conftest import check_in, make_items, make_locations, refs

HTMX = {"HX-Request": "true"}


def _entry(page: str, location_id: str) -> str:
    """The start of a location's entry (its controls and fill, up to its children)."""
    found = re.search(rf'<li data-location="{location_id}">(.*?)(?:<ul|</li>)', page, re.S)
    assert found, f"{location_id} is not in the tree"
    return found[1]


@pytest.fixture
def freezer(admin: ApiClient, department: Callable[..., str]) -> dict[str, str]:
    """A freezer with two racks; rack 1 holds a box of 3 tubes and a hidden box of 2 (another
    department's), rack 2 is empty. Ids by name."""
    other = department("Other")
    made = make_locations(admin, {"id": "#f", "name": "Freezer"},
                          {"id": "#r1", "name": "Rack 1", "parentID": "#f"},
                          {"name": "Rack 2", "parentID": "#f"},
                          {"name": "Box", "parentID": "#r1", "rows": 2, "columns": 5},
                          {"name": "Their box", "parentID": "#r1", "departmentID": other})
    ids = {location["name"]: location["id"] for location in made}
    check_in(admin, ids["Box"], refs("Sample", make_items(admin, "Sample", 3)))
    check_in(admin, ids["Their box"], refs("Sample", make_items(admin, "Sample", 2,
                                                                departmentID=other)))
    return ids


def test_the_page_draws_whole_levels_within_the_budget(
        browser: FlaskClient, freezer: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    page = html_of(browser.get("/storage"))  # a small lab: everything, as before
    assert "3 / 10" in _entry(page, freezer["Box"]) and "Their box" not in page
    monkeypatch.setattr(tree, "TREE_BUDGET", 3)  # the freezer and its racks, not the boxes
    page = html_of(browser.get("/storage"))
    assert f'data-location="{freezer["Box"]}"' not in page
    assert "5 stored" in _entry(page, freezer["Freezer"])
    rack = _entry(page, freezer["Rack 1"])
    assert "5 stored" in rack and 'aria-expanded="false"' in rack
    assert f'href="/storage/locations/{freezer["Rack 1"]}"' in rack  # without JavaScript
    assert f'hx-get="/storage/locations/{freezer["Rack 1"]}/children"' in rack
    assert 'aria-expanded="true"' in _entry(page, freezer["Freezer"])
    assert '<a class="tree-toggle"' not in _entry(page, freezer["Rack 2"])  # nothing inside
    monkeypatch.setattr(tree, "TREE_BUDGET", 1)  # the roots are always drawn
    assert f'data-location="{freezer["Freezer"]}"' in html_of(browser.get("/storage"))


def test_opening_a_location_answers_its_entry_with_its_children(
        browser: FlaskClient, freezer: dict[str, str]) -> None:
    response = browser.get(f"/storage/locations/{freezer['Rack 1']}/children", headers=HTMX)
    assert response.status_code == 200
    fragment = html_of(response)
    assert fragment.startswith(f'<li data-location="{freezer["Rack 1"]}">')
    assert "<html" not in fragment and "5 stored" in _entry(fragment, freezer["Rack 1"])
    assert 'aria-expanded="true"' in _entry(fragment, freezer["Rack 1"])
    assert "3 / 10" in _entry(fragment, freezer["Box"]) and "Their box" not in fragment
    # A plain request gets the same fragment (the page links the location's own page).
    assert html_of(browser.get(f"/storage/locations/{freezer['Rack 1']}/children")) == fragment


def test_opening_a_hidden_location_is_404_like_an_unknown_one(
        app: Flask, browser: FlaskClient, freezer: dict[str, str]) -> None:
    assert freezer["Their box"] not in html_of(browser.get("/storage"))
    hidden = browser.get(f"/storage/locations/{freezer['Their box']}/children", headers=HTMX)
    unknown = browser.get("/storage/locations/NO-SUCH/children", headers=HTMX)
    assert hidden.status_code == unknown.status_code == 404
    assert html_of(hidden) == html_of(unknown).replace("NO-SUCH", freezer["Their box"])
    anonymous = app.test_client().get(f"/storage/locations/{freezer['Rack 1']}/children")
    assert anonymous.status_code == 302 and "/login" in anonymous.headers["Location"]


def test_a_location_under_a_hidden_one_is_a_root_and_counts_in_the_visible_above(
        app: Flask, browser: FlaskClient, admin: ApiClient,
        department: Callable[..., str]) -> None:
    project, = make_items(admin, "Project", 1, departmentID=department("Other"))
    room, _, box = make_locations(  # the shelf belongs to a project only (no department)
        admin, {"id": "#room", "name": "Cold room"},
        {"id": "#shelf", "name": "Their shelf", "parentID": "#room", "departmentID": None,
         "projectID": project},
        {"name": "Our box", "parentID": "#shelf", "capacity": 9, "departmentID": "DEP00001"})
    check_in(admin, box["id"], refs("Sample", make_items(admin, "Sample", 4)))
    with app.app_context():
        assert tree.rollup([room["id"], box["id"]]) == {room["id"]: (0, 4),
                                                        box["id"]: (4, 4)}
    page = html_of(browser.get("/storage"))
    assert "4 stored" in _entry(page, room["id"]) and "4 / 9" in _entry(page, box["id"])
    assert "aria-expanded" not in _entry(page, room["id"])  # its only child is hidden
    assert "Their shelf" not in page


def test_locations_sort_by_their_numbers(browser: FlaskClient, admin: ApiClient) -> None:
    names = ["Box 10", "box 3", "Box 2", "Box 1b", "Box 1a", "Box", "Box 02"]
    made = make_locations(admin, {"id": "#r", "name": "Numbered rack"},
                          *({"name": name, "parentID": "#r"} for name in names))
    rack = made[0]["id"]
    expected = ["Box", "Box 1a", "Box 1b", "Box 02", "Box 2", "box 3", "Box 10"]
    listed = admin.get(f"/api/storage/location/{rack}/children")
    assert [location["name"] for location in listed.get_json()] == expected
    fragment = html_of(browser.get(f"/storage/locations/{rack}/children", headers=HTMX))
    drawn = re.findall(r'data-location="[^"]+">.*?>(Box[^<]*|box[^<]*)<', fragment, re.S)
    assert drawn == expected
    page = html_of(browser.get("/storage"))
    assert [name for name in re.findall(r">((?:Box|box)[^<]*)<", page)
            if name in names] == expected


def _drawn(nodes: list[tree.TreeNode] | None) -> list[str]:
    return [name for node in nodes or [] for name in (node.name, *_drawn(node.children))]


def test_a_level_is_drawn_when_its_visible_locations_fit_the_room_left(
        app: Flask, admin: ApiClient, alice: ApiClient,
        department: Callable[..., str]) -> None:
    """The level is read once, cut one past the room: a level that fits exactly is drawn,
    one more is not, and hidden locations take no room. One statement per level."""
    other = department("Other")
    rack, *_ = make_locations(admin, {"id": "#rack", "name": "Budget rack"},
                              *({"name": f"Box {number}", "parentID": "#rack"}
                                for number in range(1, 4)),
                              {"name": "Their box", "parentID": "#rack",
                               "departmentID": other})
    sent: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.lstrip().startswith(("SELECT", "WITH")):
            sent.append(statement)
    with app.app_context():
        actor = actor_for(db.session.get(User, "alice"), method="cookie")
        event.listen(db.engine, "before_cursor_execute", record)
        try:
            fits = tree.top_levels(actor, budget=4)  # the rack and its three visible boxes
            sent_for_two_levels = len(sent)
            one_short = tree.top_levels(actor, budget=3)
        finally:
            event.remove(db.engine, "before_cursor_execute", record)
    assert _drawn(fits) == ["Budget rack", "Box 1", "Box 2", "Box 3"]
    assert fits[0].id == rack["id"] and fits[0].within == 0
    assert _drawn(one_short) == ["Budget rack"] and one_short[0].children is None
    # The two queries of the roots, the level of boxes, the counts.
    assert sent_for_two_levels == 4


@pytest.mark.skipif(BACKEND != "postgresql", reason="SQLite takes the ids as placeholders")
def test_the_counts_send_the_same_statement_whatever_the_number_of_locations(
        app: Flask, admin: ApiClient) -> None:
    """On PostgreSQL the ids go as one array: psycopg parsed the hundreds of placeholders of
    the tree's statements anew on every request."""
    made = make_locations(admin, *({"name": f"Array box {number}"} for number in range(3)))
    sent: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.lstrip().startswith("WITH"):
            sent.append(statement)
    with app.app_context():
        event.listen(db.engine, "before_cursor_execute", record)
        try:
            tree.rollup([made[0]["id"]])
            tree.rollup([location["id"] for location in made])
        finally:
            event.remove(db.engine, "before_cursor_execute", record)
    assert len(sent) == 2 and sent[0] == sent[1]
